/* interp_eval.c — the scalar semantics of polymage.h and a tree-walking evaluator of
 * expressions, for the reference interpreter (see interp.h for the rules). */
#include "frontend/interp.h"

#include <math.h>
#include <string.h>

int64_t pm_interp_wrap(pm_type t, int64_t v)
{
    switch (t) {
    case PM_BOOL: return v != 0;
    case PM_U8: return (uint8_t)v;
    case PM_I8: return (int8_t)v;
    case PM_U16: return (uint16_t)v;
    case PM_I16: return (int16_t)v;
    case PM_U32: return (uint32_t)v;
    case PM_I32: return (int32_t)v;
    default: return v;
    }
}

/* Two's-complement arithmetic on uint64 never overflows in C; wrapping the result to the
 * type afterwards gives the right low bits for every narrower type. */
static int64_t from_bits(uint64_t u)
{
    int64_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    if (b == -1) /* INT64_MIN / -1 overflows in C: wrap like the narrower types do */
        return from_bits(0 - (uint64_t)a);
    int64_t q = a / b;
    if (a % b != 0 && (a < 0) != (b < 0))
        q--;
    return q;
}

static int64_t floor_mod(int64_t a, int64_t b)
{
    if (b == 0 || b == -1)
        return 0;
    int64_t r = a % b;
    if (r != 0 && (r < 0) != (b < 0))
        r += b;
    return r;
}

static int64_t trunc_div(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    if (b == -1)
        return from_bits(0 - (uint64_t)a);
    return a / b;
}

static int64_t trunc_mod(int64_t a, int64_t b)
{
    return b == 0 || b == -1 ? 0 : a % b;
}

static int64_t shift_right(pm_type t, int64_t a, int s)
{
    if (!pm_type_is_signed(t))
        return from_bits((uint64_t)a >> s); /* canonical unsigned values are >= 0 */
    /* Arithmetic shift spelled without relying on >> of a negative number. */
    return a < 0 ? ~(~a >> s) : a >> s;
}

static pm_ival int_binop(int op, pm_type t, int64_t a, int64_t b)
{
    pm_ival r;
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int64_t v;
    switch (op) {
    case PM_OP_ADD: v = from_bits(ua + ub); break;
    case PM_OP_SUB: v = from_bits(ua - ub); break;
    case PM_OP_MUL: v = from_bits(ua * ub); break;
    case PM_OP_DIV: v = floor_div(a, b); break;
    case PM_OP_MOD: v = floor_mod(a, b); break;
    case PM_OP_CDIV: v = trunc_div(a, b); break;
    case PM_OP_CMOD: v = trunc_mod(a, b); break;
    case PM_OP_MIN: v = a < b ? a : b; break;
    case PM_OP_MAX: v = a > b ? a : b; break;
    case PM_OP_ABSD: v = from_bits(a > b ? ua - ub : ub - ua); break;
    case PM_OP_BAND: v = a & b; break;
    case PM_OP_BOR: v = a | b; break;
    case PM_OP_BXOR: v = a ^ b; break;
    case PM_OP_SHL: v = from_bits(ua << (b & (pm_type_bits(t) - 1))); break;
    case PM_OP_SHR: v = shift_right(t, a, (int)(b & (pm_type_bits(t) - 1))); break;
    case PM_OP_LT: r.i = a < b; return r;
    case PM_OP_LE: r.i = a <= b; return r;
    case PM_OP_EQ: r.i = a == b; return r;
    case PM_OP_NE: r.i = a != b; return r;
    case PM_OP_GE: r.i = a >= b; return r;
    case PM_OP_GT: r.i = a > b; return r;
    case PM_OP_AND: r.i = a && b; return r;
    case PM_OP_OR: r.i = a || b; return r;
    default: v = 0; break;
    }
    r.i = pm_interp_wrap(t, v);
    return r;
}

/* Every f32 operation is rounded to float at each step, as compiled f32 code is. */
static pm_ival f32_binop(int op, float a, float b)
{
    pm_ival r;
    switch (op) {
    case PM_OP_ADD: r.f = a + b; break;
    case PM_OP_SUB: r.f = a - b; break;
    case PM_OP_MUL: r.f = a * b; break;
    case PM_OP_DIV: r.f = a / b; break;
    case PM_OP_MOD: {
        float q = floorf(a / b);
        float p = b * q;
        r.f = a - p;
        break;
    }
    case PM_OP_MIN: r.f = a < b ? a : b; break;
    case PM_OP_MAX: r.f = a > b ? a : b; break;
    case PM_OP_ABSD: r.f = fabsf(a - b); break;
    case PM_OP_LT: r.i = a < b; break;
    case PM_OP_LE: r.i = a <= b; break;
    case PM_OP_EQ: r.i = a == b; break;
    case PM_OP_NE: r.i = a != b; break;
    case PM_OP_GE: r.i = a >= b; break;
    case PM_OP_GT: r.i = a > b; break;
    default: r.f = 0; break; /* bitwise and C division are integer-only (builder checks) */
    }
    return r;
}

static pm_ival f64_binop(int op, double a, double b)
{
    pm_ival r;
    switch (op) {
    case PM_OP_ADD: r.d = a + b; break;
    case PM_OP_SUB: r.d = a - b; break;
    case PM_OP_MUL: r.d = a * b; break;
    case PM_OP_DIV: r.d = a / b; break;
    case PM_OP_MOD: {
        double q = floor(a / b);
        double p = b * q;
        r.d = a - p;
        break;
    }
    case PM_OP_MIN: r.d = a < b ? a : b; break;
    case PM_OP_MAX: r.d = a > b ? a : b; break;
    case PM_OP_ABSD: r.d = fabs(a - b); break;
    case PM_OP_LT: r.i = a < b; break;
    case PM_OP_LE: r.i = a <= b; break;
    case PM_OP_EQ: r.i = a == b; break;
    case PM_OP_NE: r.i = a != b; break;
    case PM_OP_GE: r.i = a >= b; break;
    case PM_OP_GT: r.i = a > b; break;
    default: r.d = 0; break;
    }
    return r;
}

pm_ival pm_interp_binop(int op, pm_type t, pm_ival a, pm_ival b)
{
    if (t == PM_F32)
        return f32_binop(op, a.f, b.f);
    if (t == PM_F64)
        return f64_binop(op, a.d, b.d);
    return int_binop(op, t, a.i, b.i);
}

/* Truncate toward zero, then saturate at t's range; NaN gives 0 (LLVM's fptosi.sat). */
static int64_t float_to_int(pm_type t, double d)
{
    if (isnan(d))
        return 0;
    int64_t lo, hi;
    switch (t) {
    case PM_U8: lo = 0; hi = UINT8_MAX; break;
    case PM_I8: lo = INT8_MIN; hi = INT8_MAX; break;
    case PM_U16: lo = 0; hi = UINT16_MAX; break;
    case PM_I16: lo = INT16_MIN; hi = INT16_MAX; break;
    case PM_U32: lo = 0; hi = UINT32_MAX; break;
    case PM_I32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: lo = INT64_MIN; hi = INT64_MAX; break;
    }
    d = trunc(d);
    /* Compare in double: lo and hi are exact or round up to 2^63, which is out of range
     * for the conversion below and so belongs to the saturated side. */
    if (d <= (double)lo)
        return lo;
    if (d >= (double)hi)
        return hi;
    return (int64_t)d;
}

pm_ival pm_interp_convert(pm_ival v, pm_type from, pm_type to)
{
    pm_ival r;
    if (from == to)
        return v;
    bool from_float = pm_type_is_float(from);
    if (to == PM_F32) {
        r.f = from == PM_F64 ? (float)v.d : (float)v.i; /* one rounding from the integer */
    } else if (to == PM_F64) {
        r.d = from == PM_F32 ? (double)v.f : (double)v.i;
    } else if (from_float) {
        r.i = float_to_int(to, from == PM_F32 ? (double)v.f : v.d);
    } else {
        r.i = pm_interp_wrap(to, v.i); /* bool is 0 / 1 already */
    }
    return r;
}

pm_ival pm_interp_load(pm_type t, const char *data, int64_t offset)
{
    pm_ival v;
    size_t size = pm_type_size(t);
    const char *p = data + offset * (int64_t)size;
    /* memcpy: a caller's view need not be aligned to its element type. */
    switch (t) {
    case PM_U8: { uint8_t x; memcpy(&x, p, 1); v.i = x; break; }
    case PM_I8: { int8_t x; memcpy(&x, p, 1); v.i = x; break; }
    case PM_U16: { uint16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case PM_I16: { int16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case PM_U32: { uint32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case PM_I32: { int32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case PM_I64: { int64_t x; memcpy(&x, p, 8); v.i = x; break; }
    case PM_F32: memcpy(&v.f, p, 4); break;
    case PM_F64: memcpy(&v.d, p, 8); break;
    default: v.i = 0; break;
    }
    return v;
}

void pm_interp_store(pm_type t, char *data, int64_t offset, pm_ival v)
{
    size_t size = pm_type_size(t);
    char *p = data + offset * (int64_t)size;
    switch (t) {
    case PM_U8: { uint8_t x = (uint8_t)v.i; memcpy(p, &x, 1); break; }
    case PM_I8: { int8_t x = (int8_t)v.i; memcpy(p, &x, 1); break; }
    case PM_U16: { uint16_t x = (uint16_t)v.i; memcpy(p, &x, 2); break; }
    case PM_I16: { int16_t x = (int16_t)v.i; memcpy(p, &x, 2); break; }
    case PM_U32: { uint32_t x = (uint32_t)v.i; memcpy(p, &x, 4); break; }
    case PM_I32: { int32_t x = (int32_t)v.i; memcpy(p, &x, 4); break; }
    case PM_I64: memcpy(p, &v.i, 8); break;
    case PM_F32: memcpy(p, &v.f, 4); break;
    case PM_F64: memcpy(p, &v.d, 8); break;
    default: break;
    }
}

static pm_ival eval_unary(const pm_expr *e, const pm_ienv *env)
{
    pm_ival a = pm_interp_eval(e->a, env), r;
    pm_type t = e->type;
    switch (e->op) {
    case PM_OP_NOT:
        r.i = !a.i;
        break;
    case PM_OP_NEG:
        if (t == PM_F32)
            r.f = -a.f;
        else if (t == PM_F64)
            r.d = -a.d;
        else
            r.i = pm_interp_wrap(t, from_bits(0 - (uint64_t)a.i));
        break;
    case PM_OP_ABS:
        if (t == PM_F32)
            r.f = fabsf(a.f);
        else if (t == PM_F64)
            r.d = fabs(a.d);
        else /* the most negative value wraps to itself */
            r.i = a.i < 0 ? pm_interp_wrap(t, from_bits(0 - (uint64_t)a.i)) : a.i;
        break;
    default:
        r.i = 0;
        break;
    }
    return r;
}

static float math_f32(int fn, float a, float b)
{
    switch (fn) {
    case PM_EXP: return expf(a);
    case PM_LOG: return logf(a);
    case PM_SQRT: return sqrtf(a);
    case PM_SIN: return sinf(a);
    case PM_COS: return cosf(a);
    case PM_TAN: return tanf(a);
    case PM_ATAN: return atanf(a);
    case PM_TANH: return tanhf(a);
    case PM_FLOOR: return floorf(a);
    case PM_CEIL: return ceilf(a);
    case PM_ROUND: return roundf(a); /* half away from zero */
    case PM_TRUNC: return truncf(a);
    case PM_MATH_POW: return powf(a, b);
    case PM_MATH_ATAN2: return atan2f(a, b);
    default: return 0;
    }
}

static double math_f64(int fn, double a, double b)
{
    switch (fn) {
    case PM_EXP: return exp(a);
    case PM_LOG: return log(a);
    case PM_SQRT: return sqrt(a);
    case PM_SIN: return sin(a);
    case PM_COS: return cos(a);
    case PM_TAN: return tan(a);
    case PM_ATAN: return atan(a);
    case PM_TANH: return tanh(a);
    case PM_FLOOR: return floor(a);
    case PM_CEIL: return ceil(a);
    case PM_ROUND: return round(a);
    case PM_TRUNC: return trunc(a);
    case PM_MATH_POW: return pow(a, b);
    case PM_MATH_ATAN2: return atan2(a, b);
    default: return 0;
    }
}

static pm_ival eval_math(const pm_expr *e, const pm_ienv *env)
{
    pm_ival a = pm_interp_eval(e->a, env), r;
    pm_ival b = e->b ? pm_interp_eval(e->b, env) : a;
    if (e->type == PM_F64)
        r.d = math_f64(e->op, a.d, b.d);
    else
        r.f = math_f32(e->op, a.f, b.f);
    return r;
}

static pm_ival eval_call(const pm_expr *e, const pm_ienv *env)
{
    const pm_ibuf *buf = env->bufs[e->callee->id];
    int64_t offset = 0;
    for (int d = 0; d < e->nargs; d++) {
        int64_t c = pm_interp_eval(e->args[d], env).i;
        int64_t n = buf->extent[d];
        if (n <= 0) { /* nothing to read: an empty callee */
            pm_ival zero;
            memset(&zero, 0, sizeof zero);
            return zero;
        }
        /* Clamp into the callee's box: only data-dependent indices get here (static
         * out-of-box reads are rejected by validation), and they must stay in bounds.
         * Comparing before subtracting keeps extreme values from overflowing. */
        int64_t lb = buf->lb[d], last = lb + (n - 1) * buf->step[d];
        int64_t k = c <= lb ? 0 : c >= last ? n - 1 : (c - lb) / buf->step[d];
        offset += k * buf->stride[d];
    }
    return pm_interp_load(buf->type, buf->data, offset);
}

pm_ival pm_interp_eval(const pm_expr *e, const pm_ienv *env)
{
    pm_ival r;
    switch (e->kind) {
    case PM_EXPR_INT:
        if (e->type == PM_F32)
            r.f = (float)e->ival;
        else if (e->type == PM_F64)
            r.d = (double)e->ival;
        else
            r.i = pm_interp_wrap(e->type, e->ival);
        return r;
    case PM_EXPR_FLOAT:
        if (e->type == PM_F64)
            r.d = e->fval;
        else if (e->type == PM_F32)
            r.f = (float)e->fval;
        else
            r.i = float_to_int(e->type, e->fval);
        return r;
    case PM_EXPR_VAR:
        r.i = env->vars[e->id];
        return r;
    case PM_EXPR_PARAM:
        return env->params[e->id];
    case PM_EXPR_UNARY:
        return eval_unary(e, env);
    case PM_EXPR_BINARY:
        if (e->op == PM_OP_AND) {
            r.i = pm_interp_eval(e->a, env).i && pm_interp_eval(e->b, env).i;
            return r;
        }
        if (e->op == PM_OP_OR) {
            r.i = pm_interp_eval(e->a, env).i || pm_interp_eval(e->b, env).i;
            return r;
        }
        /* Operands already have their common type (the builder inserted casts); for
         * comparisons e->type is PM_BOOL, so the operand type is the one to use. */
        return pm_interp_binop(e->op, e->a->type, pm_interp_eval(e->a, env),
                               pm_interp_eval(e->b, env));
    case PM_EXPR_CAST:
        return pm_interp_convert(pm_interp_eval(e->a, env), e->a->type, e->type);
    case PM_EXPR_SELECT:
        /* Both branches are pure, so evaluating only the chosen one is the same value. */
        return pm_interp_eval(e->a, env).i ? pm_interp_eval(e->b, env) : pm_interp_eval(e->c, env);
    case PM_EXPR_MATH:
        return eval_math(e, env);
    case PM_EXPR_CALL:
        return eval_call(e, env);
    }
    r.i = 0;
    return r;
}
