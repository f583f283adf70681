/* types.c — element types and the promotion rule of polymage.h, in one place. */
#include "frontend/ir.h"

size_t pm_type_size(pm_type type)
{
    switch (type) {
    case PM_U8: case PM_I8: return 1;
    case PM_U16: case PM_I16: return 2;
    case PM_U32: case PM_I32: case PM_F32: return 4;
    case PM_I64: case PM_F64: return 8;
    default: return 0;
    }
}

const char *pm_type_name(pm_type type)
{
    switch (type) {
    case PM_BOOL: return "bool";
    case PM_U8: return "u8";
    case PM_I8: return "i8";
    case PM_U16: return "u16";
    case PM_I16: return "i16";
    case PM_U32: return "u32";
    case PM_I32: return "i32";
    case PM_I64: return "i64";
    case PM_F32: return "f32";
    case PM_F64: return "f64";
    }
    return "?";
}

bool pm_type_is_float(pm_type t)
{
    return t == PM_F32 || t == PM_F64;
}

bool pm_type_is_int(pm_type t)
{
    return t >= PM_U8 && t <= PM_I64;
}

bool pm_type_is_signed(pm_type t)
{
    return t == PM_I8 || t == PM_I16 || t == PM_I32 || t == PM_I64 || pm_type_is_float(t);
}

int pm_type_bits(pm_type t)
{
    return t == PM_BOOL ? 1 : (int)pm_type_size(t) * 8;
}

bool pm_type_valid(int t)
{
    return t >= PM_BOOL && t <= PM_F64;
}

/* The rule (polymage.h): weak literals adapt to the other side; a float beats an
 * integer and the wider float wins; between integers the wider wins, and at equal width
 * the unsigned one. A weak float next to an integer becomes f32. */
pm_type pm_type_promote(const pm_expr *a, const pm_expr *b)
{
    pm_type ta = a->type, tb = b->type;
    if (a->is_weak && b->is_weak) {
        if (pm_type_is_float(ta) || pm_type_is_float(tb))
            return PM_F32;
        return PM_I32;
    }
    if (a->is_weak || b->is_weak) {
        const pm_expr *weak = a->is_weak ? a : b;
        pm_type strong = a->is_weak ? tb : ta;
        if (pm_type_is_float(weak->type) && !pm_type_is_float(strong))
            return PM_F32;
        return strong;
    }
    if (ta == tb)
        return ta;
    if (pm_type_is_float(ta) || pm_type_is_float(tb)) {
        if (pm_type_is_float(ta) && pm_type_is_float(tb))
            return ta == PM_F64 || tb == PM_F64 ? PM_F64 : PM_F32;
        return pm_type_is_float(ta) ? ta : tb;
    }
    int ba = pm_type_bits(ta), bb = pm_type_bits(tb);
    if (ba != bb)
        return ba > bb ? ta : tb;
    return pm_type_is_signed(ta) ? tb : ta;
}
