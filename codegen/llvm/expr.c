/* llvm/expr.c — pipeline expressions to LLVM values (see llvm.h).
 *
 * One emitter for one point (scalars) and W consecutive points (<W x T>): LLVM's
 * arithmetic, compare, select and cast instructions all work lane-wise, so only leaves
 * (constants, variables, parameters, reads) and library calls care about W.
 * The typing rules are those of polymage.h, shared with the interpreter:
 *   integers wrap in their type; pm_div/pm_mod are floor division/modulo, pm_cdiv/
 *   pm_cmod truncate, and every integer division or remainder by zero gives 0 (the
 *   divisor is replaced by 1 before dividing and the result selected afterwards, so no
 *   lane ever traps; -1 is replaced too since MIN/-1 traps on x86);
 *   float -> integer casts truncate and saturate (NaN gives 0; float_to_int_sat);
 *   shift amounts are taken modulo the bit width (x86's rule, so no poison).
 */
#include "codegen/llvm/llvm.h"

#include <math.h>
#include <string.h>

static bool is_vec(LLVMValueRef v)
{
    return LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind;
}

/* The type t with pt's lanes. */

/* v in each of W lanes: a constant vector for constants, else insert + shuffle. */
LLVMValueRef pm_llvm_splat_n(pm_llvm *g, unsigned W, LLVMValueRef v)
{
    if (LLVMIsConstant(v)) {
        LLVMValueRef el[64];
        for (unsigned l = 0; l < W; l++)
            el[l] = v;
        return LLVMConstVector(el, W);
    }
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), W);
    LLVMValueRef one = LLVMBuildInsertElement(g->B, LLVMGetPoison(vt), v,
                                              LLVMConstInt(g->t_i32, 0, 0), "");
    LLVMValueRef mask = LLVMConstNull(LLVMVectorType(g->t_i32, W));
    return LLVMBuildShuffleVector(g->B, one, LLVMGetPoison(vt), mask, "");
}

LLVMValueRef pm_llvm_splat(pm_llvm *g, const pm_point *pt, LLVMValueRef v)
{
    if (pt->W <= 1 || is_vec(v))
        return v;
    return pm_llvm_splat_n(g, (unsigned)pt->W, v);
}

LLVMValueRef pm_llvm_const(pm_llvm *g, const pm_point *pt, pm_type t, double f, int64_t i)
{
    LLVMTypeRef ty = pm_llvm_type(g, t);
    LLVMValueRef c;
    if (pm_type_is_float(t))
        c = LLVMConstReal(ty, f);
    else
        c = LLVMConstInt(ty, (unsigned long long)i, pm_type_is_signed(t));
    return pm_llvm_splat(g, pt, c);
}

static LLVMValueRef zero_like(pm_llvm *g, LLVMValueRef v)
{
    return LLVMConstNull(LLVMTypeOf(v));
}

static LLVMValueRef const_like(pm_llvm *g, LLVMValueRef v, int64_t k)
{
    LLVMTypeRef ty = LLVMTypeOf(v);
    if (is_vec(v)) {
        LLVMTypeRef el = LLVMGetElementType(ty);
        return pm_llvm_splat_n(g, LLVMGetVectorSize(ty), LLVMConstInt(el, (unsigned long long)k, 1));
    }
    return LLVMConstInt(ty, (unsigned long long)k, 1);
}

LLVMValueRef pm_llvm_param(pm_llvm *g, const pm_expr *param)
{
    int slot = g->poly->pipeline->param_slot[param->id];
    if (slot < 0) {
        pm_error_set(g->err, PM_ERR_INVALID, "parameter %s is not in the pipeline's signature",
                     param->name);
        return LLVMConstInt(g->t_i64, 0, 0);
    }
    LLVMValueRef raw = g->env.param_raw[slot];
    if (!pm_type_is_int(param->type) || param->type == PM_I64)
        return raw;
    /* the value as its type sees it, widened back */
    LLVMValueRef t = LLVMBuildTrunc(g->B, raw, pm_llvm_type(g, param->type), "");
    return pm_type_is_signed(param->type) ? LLVMBuildSExt(g->B, t, g->t_i64, "")
                                          : LLVMBuildZExt(g->B, t, g->t_i64, "");
}

static LLVMValueRef param_typed(pm_llvm *g, const pm_point *pt, const pm_expr *e)
{
    int slot = g->poly->pipeline->param_slot[e->id];
    if (slot < 0) {
        pm_error_set(g->err, PM_ERR_INVALID, "parameter %s is not in the pipeline's signature",
                     e->name);
        return pm_llvm_const(g, pt, e->type, 0, 0);
    }
    LLVMValueRef raw = g->env.param_raw[slot];
    LLVMValueRef v;
    if (pm_type_is_float(e->type)) {
        v = LLVMBuildBitCast(g->B, raw, g->t_f64, "");
        if (e->type == PM_F32)
            v = LLVMBuildFPTrunc(g->B, v, g->t_f32, "");
    } else {
        v = LLVMBuildTrunc(g->B, raw, pm_llvm_type(g, e->type), "");
        if (e->type == PM_I64)
            v = raw;
    }
    return pm_llvm_splat(g, pt, v);
}

static LLVMValueRef call_intrinsic(pm_llvm *g, const char *name, LLVMTypeRef *tys, int ntys,
                                   LLVMValueRef *args, int nargs)
{
    LLVMTypeRef fnty;
    LLVMValueRef fn = pm_llvm_intrinsic(g, name, tys, ntys, &fnty);
    if (!fn)
        return LLVMGetUndef(LLVMTypeOf(args[0]));
    return LLVMBuildCall2(g->B, fnty, fn, args, (unsigned)nargs, "");
}

/* ---- conversions ------------------------------------------------------------------- */

/* The float constant c in v's shape. */
static LLVMValueRef fconst_like(LLVMValueRef v, double c)
{
    LLVMTypeRef ty = LLVMTypeOf(v);
    if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind)
        return LLVMConstReal(ty, c);
    unsigned W = LLVMGetVectorSize(ty);
    LLVMValueRef el[64], one = LLVMConstReal(LLVMGetElementType(ty), c);
    for (unsigned l = 0; l < W; l++)
        el[l] = one;
    return LLVMConstVector(el, W);
}

/* Float v (type from) to integer type `to` (LLVM type ty), truncating toward zero and
 * saturating at to's range, NaN -> 0: the semantics of llvm.fpto[su]i.sat, which the x86
 * backend expands lane by lane (a scalar conversion and two branches per lane). Written
 * as clamp-in-float + plain conversion instead, it stays a vector conversion (vcvttps2dq)
 * with min/max and blends. The clamp's bounds are the range's ends as floats; when the
 * top end is not a float (2^31 - 1 in f32), the clamp stops at the largest float below
 * 2^n and values >= 2^n select the top end. */
static LLVMValueRef float_to_int_sat(pm_llvm *g, LLVMValueRef v, pm_type from, pm_type to,
                                     LLVMTypeRef ty)
{
    LLVMBuilderRef B = g->B;
    int bits = pm_type_bits(to);
    bool sgn = pm_type_is_signed(to);
    int magnitude_bits = sgn ? bits - 1 : bits;
    double top = ldexp(1.0, magnitude_bits); /* one past the largest value */
    double lo = sgn ? -top : 0.0;
    bool f32 = pm_type_bits(from) == 32;
    /* 2^n - 1 is a float when the significand has n bits (24 in f32, 53 in f64) */
    bool exact = magnitude_bits <= (f32 ? 24 : 53);
    double hi = exact ? top - 1 : 0;
    double clamp_hi = exact ? hi : (f32 ? (double)nextafterf((float)top, 0.0f) : nextafter(top, 0.0));
    LLVMValueRef c = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, v, fconst_like(v, lo), ""),
                                     fconst_like(v, lo), v, "");
    c = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, c, fconst_like(v, clamp_hi), ""),
                        fconst_like(v, clamp_hi), c, "");
    c = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNO, v, v, ""), fconst_like(v, 0), c, "");
    LLVMValueRef r = sgn ? LLVMBuildFPToSI(B, c, ty, "") : LLVMBuildFPToUI(B, c, ty, "");
    if (!exact) {
        LLVMValueRef big = LLVMBuildFCmp(B, LLVMRealOGE, v, fconst_like(v, top), "");
        LLVMValueRef max = LLVMConstInt(LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMGetElementType(ty) : ty,
                                        sgn ? (unsigned long long)INT64_MAX >> (64 - bits)
                                            : ~0ULL >> (64 - bits), 0);
        if (LLVMGetTypeKind(ty) == LLVMVectorTypeKind)
            max = pm_llvm_splat_n(g, LLVMGetVectorSize(ty), max);
        r = LLVMBuildSelect(B, big, max, r, "");
    }
    return r;
}

LLVMValueRef pm_llvm_convert(pm_llvm *g, LLVMValueRef v, pm_type from, pm_type to)
{
    if (from == to)
        return v;
    LLVMTypeRef vt = LLVMTypeOf(v);
    unsigned W = is_vec(v) ? LLVMGetVectorSize(vt) : 0;
    LLVMTypeRef tt = pm_llvm_type(g, to);
    LLVMTypeRef ty = W ? LLVMVectorType(tt, W) : tt;
    LLVMBuilderRef B = g->B;
    if (to == PM_BOOL) {
        if (pm_type_is_float(from))
            return LLVMBuildFCmp(B, LLVMRealUNE, v, LLVMConstNull(vt), "");
        return LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstNull(vt), "");
    }
    if (from == PM_BOOL)
        return pm_type_is_float(to) ? LLVMBuildUIToFP(B, v, ty, "") : LLVMBuildZExt(B, v, ty, "");
    bool ff = pm_type_is_float(from), tf = pm_type_is_float(to);
    if (ff && tf)
        return pm_type_bits(to) > pm_type_bits(from) ? LLVMBuildFPExt(B, v, ty, "")
                                                     : LLVMBuildFPTrunc(B, v, ty, "");
    if (!ff && tf)
        return pm_type_is_signed(from) ? LLVMBuildSIToFP(B, v, ty, "") : LLVMBuildUIToFP(B, v, ty, "");
    if (ff && !tf)
        return float_to_int_sat(g, v, from, to, ty);
    int fb = pm_type_bits(from), tb = pm_type_bits(to);
    if (tb < fb)
        return LLVMBuildTrunc(B, v, ty, "");
    if (tb > fb)
        return pm_type_is_signed(from) ? LLVMBuildSExt(B, v, ty, "") : LLVMBuildZExt(B, v, ty, "");
    return v; /* same width: the bits are the value */
}

/* ---- arithmetic -------------------------------------------------------------------- */

/* Integer division and remainder with the rules of the header. */
static LLVMValueRef int_divmod(pm_llvm *g, int op, bool is_signed, LLVMValueRef a, LLVMValueRef b)
{
    LLVMBuilderRef B = g->B;
    LLVMValueRef zero = zero_like(g, a), one = const_like(g, a, 1);
    LLVMValueRef bzero = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
    if (!is_signed) {
        LLVMValueRef d = LLVMBuildSelect(B, bzero, one, b, "");
        LLVMValueRef r = (op == PM_OP_DIV || op == PM_OP_CDIV) ? LLVMBuildUDiv(B, a, d, "")
                                                               : LLVMBuildURem(B, a, d, "");
        return LLVMBuildSelect(B, bzero, zero, r, "");
    }
    LLVMValueRef mone = const_like(g, a, -1);
    LLVMValueRef bmone = LLVMBuildICmp(B, LLVMIntEQ, b, mone, "");
    LLVMValueRef d = LLVMBuildSelect(B, LLVMBuildOr(B, bzero, bmone, ""), one, b, "");
    LLVMValueRef r;
    if (op == PM_OP_DIV || op == PM_OP_CDIV) {
        LLVMValueRef q = LLVMBuildSDiv(B, a, d, "");
        if (op == PM_OP_DIV) {
            /* floor: step down when the remainder is nonzero and signs differ */
            LLVMValueRef rem = LLVMBuildSRem(B, a, d, "");
            LLVMValueRef adj = LLVMBuildAnd(
                B, LLVMBuildICmp(B, LLVMIntNE, rem, zero, ""),
                LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, rem, d, ""), zero, ""), "");
            q = LLVMBuildSub(B, q, LLVMBuildZExt(B, adj, LLVMTypeOf(a), ""), "");
        }
        r = LLVMBuildSelect(B, bmone, LLVMBuildNeg(B, a, ""), q, "");
    } else {
        LLVMValueRef rem = LLVMBuildSRem(B, a, d, ""); /* 0 when d was forced to 1 */
        if (op == PM_OP_MOD) {
            LLVMValueRef adj = LLVMBuildAnd(
                B, LLVMBuildICmp(B, LLVMIntNE, rem, zero, ""),
                LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, rem, d, ""), zero, ""), "");
            rem = LLVMBuildSelect(B, adj, LLVMBuildAdd(B, rem, d, ""), rem, "");
        }
        r = rem;
    }
    return LLVMBuildSelect(B, bzero, zero, r, "");
}

static LLVMValueRef float_intrinsic1(pm_llvm *g, const char *name, LLVMValueRef a)
{
    LLVMTypeRef t = LLVMTypeOf(a);
    return call_intrinsic(g, name, &t, 1, &a, 1);
}

/* Outside exact code (pm_llvm.exact), a float add, subtract or multiply may contract
 * with another into one fused multiply-add: one rounding instead of two, within the
 * float tolerance (docs/jit.md); the poly phase decides where code is exact. */
static LLVMValueRef may_contract(pm_llvm *g, LLVMValueRef v)
{
    if (g->exact <= 0 && LLVMIsAInstruction(v))
        LLVMSetFastMathFlags(v, LLVMFastMathAllowContract);
    return v;
}

/* op on a and b of type t (for comparisons, t is the operands' type). */
LLVMValueRef pm_llvm_binop(pm_llvm *g, int op, pm_type t, LLVMValueRef a, LLVMValueRef b)
{
    LLVMBuilderRef B = g->B;
    bool fl = pm_type_is_float(t), sg = pm_type_is_signed(t);
    if (t == PM_BOOL) {
        switch (op) {
        case PM_OP_AND: case PM_OP_BAND: case PM_OP_MIN: return LLVMBuildAnd(B, a, b, "");
        case PM_OP_OR: case PM_OP_BOR: case PM_OP_MAX: return LLVMBuildOr(B, a, b, "");
        case PM_OP_BXOR: case PM_OP_NE: return LLVMBuildXor(B, a, b, "");
        case PM_OP_EQ: return LLVMBuildICmp(B, LLVMIntEQ, a, b, "");
        default: break;
        }
        /* other operations on booleans: as unsigned integers */
        sg = false;
    }
    if (fl) {
        switch (op) {
        case PM_OP_ADD: return may_contract(g, LLVMBuildFAdd(B, a, b, ""));
        case PM_OP_SUB: return may_contract(g, LLVMBuildFSub(B, a, b, ""));
        case PM_OP_MUL: return may_contract(g, LLVMBuildFMul(B, a, b, ""));
        case PM_OP_DIV: case PM_OP_CDIV: return LLVMBuildFDiv(B, a, b, "");
        case PM_OP_CMOD: return LLVMBuildFRem(B, a, b, "");
        case PM_OP_MOD: {
            LLVMValueRef q = float_intrinsic1(g, "llvm.floor", LLVMBuildFDiv(B, a, b, ""));
            return LLVMBuildFSub(B, a, LLVMBuildFMul(B, b, q, ""), "");
        }
        case PM_OP_MIN:
            return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, a, b, ""), a, b, "");
        case PM_OP_MAX:
            return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, a, b, ""), a, b, "");
        case PM_OP_ABSD: return float_intrinsic1(g, "llvm.fabs", LLVMBuildFSub(B, a, b, ""));
        case PM_OP_LT: return LLVMBuildFCmp(B, LLVMRealOLT, a, b, "");
        case PM_OP_LE: return LLVMBuildFCmp(B, LLVMRealOLE, a, b, "");
        case PM_OP_EQ: return LLVMBuildFCmp(B, LLVMRealOEQ, a, b, "");
        case PM_OP_NE: return LLVMBuildFCmp(B, LLVMRealUNE, a, b, "");
        case PM_OP_GE: return LLVMBuildFCmp(B, LLVMRealOGE, a, b, "");
        case PM_OP_GT: return LLVMBuildFCmp(B, LLVMRealOGT, a, b, "");
        default:
            pm_error_set(g->err, PM_ERR_UNSUPPORTED, "%s: bitwise operation %d on a float",
                         g->poly->pipeline->name, op);
            return a;
        }
    }
    switch (op) {
    case PM_OP_ADD: return LLVMBuildAdd(B, a, b, "");
    case PM_OP_SUB: return LLVMBuildSub(B, a, b, "");
    case PM_OP_MUL: return LLVMBuildMul(B, a, b, "");
    case PM_OP_DIV: case PM_OP_MOD: case PM_OP_CDIV: case PM_OP_CMOD:
        return int_divmod(g, op, sg, a, b);
    case PM_OP_MIN:
        return LLVMBuildSelect(B, LLVMBuildICmp(B, sg ? LLVMIntSLT : LLVMIntULT, a, b, ""), a, b, "");
    case PM_OP_MAX:
        return LLVMBuildSelect(B, LLVMBuildICmp(B, sg ? LLVMIntSGT : LLVMIntUGT, a, b, ""), a, b, "");
    case PM_OP_ABSD:
        return LLVMBuildSelect(B, LLVMBuildICmp(B, sg ? LLVMIntSGT : LLVMIntUGT, a, b, ""),
                               LLVMBuildSub(B, a, b, ""), LLVMBuildSub(B, b, a, ""), "");
    case PM_OP_BAND: case PM_OP_AND: return LLVMBuildAnd(B, a, b, "");
    case PM_OP_BOR: case PM_OP_OR: return LLVMBuildOr(B, a, b, "");
    case PM_OP_BXOR: return LLVMBuildXor(B, a, b, "");
    case PM_OP_SHL: case PM_OP_SHR: {
        LLVMValueRef amt = LLVMBuildAnd(B, b, const_like(g, b, pm_type_bits(t) - 1), "");
        if (op == PM_OP_SHL)
            return LLVMBuildShl(B, a, amt, "");
        return sg ? LLVMBuildAShr(B, a, amt, "") : LLVMBuildLShr(B, a, amt, "");
    }
    case PM_OP_LT: return LLVMBuildICmp(B, sg ? LLVMIntSLT : LLVMIntULT, a, b, "");
    case PM_OP_LE: return LLVMBuildICmp(B, sg ? LLVMIntSLE : LLVMIntULE, a, b, "");
    case PM_OP_EQ: return LLVMBuildICmp(B, LLVMIntEQ, a, b, "");
    case PM_OP_NE: return LLVMBuildICmp(B, LLVMIntNE, a, b, "");
    case PM_OP_GE: return LLVMBuildICmp(B, sg ? LLVMIntSGE : LLVMIntUGE, a, b, "");
    case PM_OP_GT: return LLVMBuildICmp(B, sg ? LLVMIntSGT : LLVMIntUGT, a, b, "");
    }
    pm_error_set(g->err, PM_ERR_UNSUPPORTED, "%s: binary operation %d", g->poly->pipeline->name, op);
    return a;
}

/* ---- math ---------------------------------------------------------------------------- */

/* A libm function applied lane by lane (LLVM has no intrinsic we can rely on). */
static LLVMValueRef libm_call(pm_llvm *g, const char *name32, const char *name64,
                              LLVMValueRef *args, int nargs)
{
    LLVMTypeRef vt = LLVMTypeOf(args[0]);
    bool vec = is_vec(args[0]);
    LLVMTypeRef et = vec ? LLVMGetElementType(vt) : vt;
    LLVMTypeRef ps[2] = {et, et};
    LLVMTypeRef fnty = LLVMFunctionType(et, ps, (unsigned)nargs, 0);
    LLVMValueRef fn = pm_llvm_declare(g, et == g->t_f32 ? name32 : name64, fnty);
    if (!vec)
        return LLVMBuildCall2(g->B, fnty, fn, args, (unsigned)nargs, "");
    LLVMValueRef out = LLVMGetUndef(vt);
    unsigned W = LLVMGetVectorSize(vt);
    for (unsigned l = 0; l < W; l++) {
        LLVMValueRef lane = LLVMConstInt(g->t_i32, l, 0);
        LLVMValueRef s[2];
        for (int k = 0; k < nargs; k++)
            s[k] = LLVMBuildExtractElement(g->B, args[k], lane, "");
        LLVMValueRef r = LLVMBuildCall2(g->B, fnty, fn, s, (unsigned)nargs, "");
        out = LLVMBuildInsertElement(g->B, out, r, lane, "");
    }
    return out;
}

static LLVMValueRef math(pm_llvm *g, const pm_point *pt, const pm_expr *e)
{
    pm_type ft = pm_type_is_float(e->type) ? e->type : PM_F32;
    LLVMValueRef a = pm_llvm_convert(g, pm_llvm_expr(g, pt, e->a), e->a->type, ft);
    LLVMValueRef b = NULL;
    if (e->b)
        b = pm_llvm_convert(g, pm_llvm_expr(g, pt, e->b), e->b->type, ft);
    const char *intr = NULL;
    switch (e->op) {
    case PM_EXP: intr = "llvm.exp"; break;
    case PM_LOG: intr = "llvm.log"; break;
    case PM_SQRT: intr = "llvm.sqrt"; break;
    case PM_SIN: intr = "llvm.sin"; break;
    case PM_COS: intr = "llvm.cos"; break;
    case PM_FLOOR: intr = "llvm.floor"; break;
    case PM_CEIL: intr = "llvm.ceil"; break;
    case PM_ROUND: intr = "llvm.round"; break; /* C round: halves away from zero */
    case PM_TRUNC: intr = "llvm.trunc"; break;
    case PM_TAN: return libm_call(g, "tanf", "tan", &a, 1);
    case PM_ATAN: return libm_call(g, "atanf", "atan", &a, 1);
    case PM_TANH: return libm_call(g, "tanhf", "tanh", &a, 1);
    case PM_MATH_POW: {
        LLVMValueRef ab[2] = {a, b};
        LLVMTypeRef t = LLVMTypeOf(a);
        return call_intrinsic(g, "llvm.pow", &t, 1, ab, 2);
    }
    case PM_MATH_ATAN2: {
        LLVMValueRef ab[2] = {a, b};
        return libm_call(g, "atan2f", "atan2", ab, 2);
    }
    default:
        pm_error_set(g->err, PM_ERR_UNSUPPORTED, "%s: math function %d is not supported",
                     g->poly->pipeline->name, e->op);
        return a;
    }
    return float_intrinsic1(g, intr, a);
}

/* ---- the emitter ----------------------------------------------------------------------- */

static LLVMValueRef var_value(pm_llvm *g, const pm_point *pt, const pm_expr *e)
{
    const pm_poly_stmt *s = pt->stmt;
    for (int d = 0; d < s->ndims; d++) {
        if (s->vars[d]->id != e->id)
            continue;
        if (pt->W > 1 && pt->lanes[d])
            return pt->lanes[d];
        LLVMValueRef v = pm_llvm_splat(g, pt, pt->var[d]);
        if (pt->W > 1 && pt->lane_step[d]) {
            LLVMValueRef iota[64];
            for (int l = 0; l < pt->W; l++)
                iota[l] = LLVMConstInt(g->t_i32, (unsigned long long)((int64_t)l * pt->lane_step[d]), 1);
            v = LLVMBuildAdd(g->B, v, LLVMConstVector(iota, (unsigned)pt->W), "");
        }
        return v;
    }
    pm_error_set(g->err, PM_ERR_INVALID, "%s: variable %s is not a dimension of %s",
                 g->poly->pipeline->name, e->name, s->name);
    return pm_llvm_const(g, pt, PM_I32, 0, 0);
}

/* Two points give the same values: same statement, width and coordinates. */
static bool same_point(const pm_point *a, const pm_point *b)
{
    if (a->stmt != b->stmt || a->W != b->W || a->where != b->where)
        return false;
    for (int d = 0; d < a->stmt->ndims; d++)
        if (a->var[d] != b->var[d] || a->pos[d] != b->pos[d] ||
            a->lane_step[d] != b->lane_step[d] || a->lanes[d] != b->lanes[d])
            return false;
    return true;
}

LLVMValueRef pm_llvm_cond(pm_llvm *g, const pm_point *pt, const pm_expr *cond)
{
    g->exact++;
    LLVMValueRef v = pm_llvm_convert(g, pm_llvm_expr(g, pt, cond), cond->type, PM_BOOL);
    g->exact--;
    return v;
}

void pm_llvm_memo_reset(pm_llvm *g)
{
    g->nmemo = -1;
    if (!g->memo || !g->memo_slot)
        return; /* not allocated: every node is emitted where used */
    g->nmemo = 0;
    if (++g->memo_gen == 0) { /* wrapped: slots of generation 0 would look current */
        memset(g->memo_slot, 0, 2 * PM_LLVM_MEMO * sizeof *g->memo_slot);
        g->memo_gen = 1;
    }
}

void pm_llvm_memo_off(pm_llvm *g) { g->nmemo = -1; }

/* The index slot where (e, pt), emitted as exactly as now needed, is or would go: its
 * hash mixes the node, the statement and the innermost variable (points of one node in
 * one statement differ mostly there), probed linearly. */
static pm_llvm_memo_slot *memo_find(pm_llvm *g, const pm_point *pt, const pm_expr *e)
{
    const pm_poly_stmt *s = pt->stmt;
    uintptr_t h = (uintptr_t)e * 0x9E3779B97F4A7C15u;
    h ^= ((uintptr_t)s + (uintptr_t)pt->W) * 0xC2B2AE3D27D4EB4Fu;
    if (s && s->ndims > 0)
        h ^= (uintptr_t)pt->var[s->ndims - 1] * 0x165667B19E3779F9u;
    size_t mask = 2 * PM_LLVM_MEMO - 1, i = (size_t)(h >> 17) & mask;
    for (;; i = (i + 1) & mask) {
        pm_llvm_memo_slot *slot = &g->memo_slot[i];
        if (slot->gen != g->memo_gen)
            return slot;
        /* an exact value serves anywhere, one that may have fused only where exactness
         * is not needed (bilateral grid's weight: exact in the test, reused as the
         * divisor rather than gathered again) */
        const pm_llvm_memo *m = &g->memo[slot->idx];
        if (m->e == e && (m->exact || g->exact <= 0) && same_point(&m->pt, pt))
            return slot;
    }
}

/* pm_llvm_expr's value of a node, emitted once per statement and point (pm_llvm.memo). */
static LLVMValueRef expr_value(pm_llvm *g, const pm_point *pt, const pm_expr *e);

/* expr_value, with a discrete result's float operands rounding as the interpreter's
 * do (poly.h). */
static LLVMValueRef value_in_context(pm_llvm *g, const pm_point *pt, const pm_expr *e)
{
    bool discrete = pm_poly_discrete_of_float(e);
    g->exact += discrete;
    LLVMValueRef v = expr_value(g, pt, e);
    g->exact -= discrete;
    return v;
}

LLVMValueRef pm_llvm_expr(pm_llvm *g, const pm_point *pt, const pm_expr *e)
{
    /* constants are LLVM constants: nothing to remember */
    if (g->nmemo < 0 || e->kind == PM_EXPR_INT || e->kind == PM_EXPR_FLOAT ||
        g->err->status != PM_OK)
        return value_in_context(g, pt, e);
    pm_llvm_memo_slot *slot = memo_find(g, pt, e);
    if (slot->gen == g->memo_gen)
        return g->memo[slot->idx].v;
    LLVMValueRef v = value_in_context(g, pt, e);
    /* the evaluation may have remembered others: find the slot again; the index stays
     * at most half full, so probes end */
    if (g->nmemo >= 0 && g->nmemo < PM_LLVM_MEMO) {
        slot = memo_find(g, pt, e);
        g->memo[g->nmemo] = (pm_llvm_memo){.e = e, .pt = *pt, .exact = g->exact > 0, .v = v};
        *slot = (pm_llvm_memo_slot){.idx = g->nmemo, .gen = g->memo_gen};
        g->nmemo++;
    }
    return v;
}

static LLVMValueRef expr_value(pm_llvm *g, const pm_point *pt, const pm_expr *e)
{
    if (g->err->status != PM_OK)
        return pm_llvm_const(g, pt, e->type == PM_BOOL ? PM_U8 : e->type, 0, 0);
    LLVMBuilderRef B = g->B;
    switch (e->kind) {
    case PM_EXPR_INT:
        if (e->type == PM_BOOL)
            return pm_llvm_splat(g, pt, LLVMConstInt(g->t_i1, e->ival != 0, 0));
        return pm_llvm_const(g, pt, e->type, (double)e->ival, e->ival);
    case PM_EXPR_FLOAT:
        return pm_llvm_const(g, pt, e->type, e->fval, (int64_t)e->fval);
    case PM_EXPR_VAR:
        return var_value(g, pt, e);
    case PM_EXPR_PARAM:
        return param_typed(g, pt, e);
    case PM_EXPR_UNARY: {
        LLVMValueRef a = pm_llvm_expr(g, pt, e->a);
        switch (e->op) {
        case PM_OP_NEG:
            return pm_type_is_float(e->type) ? LLVMBuildFNeg(B, a, "") : LLVMBuildNeg(B, a, "");
        case PM_OP_NOT:
            if (e->a->type != PM_BOOL)
                return LLVMBuildNot(B, a, "");
            return LLVMBuildXor(B, a, pm_llvm_splat(g, pt, LLVMConstInt(g->t_i1, 1, 0)), "");
        case PM_OP_ABS:
            if (pm_type_is_float(e->type))
                return float_intrinsic1(g, "llvm.fabs", a);
            if (!pm_type_is_signed(e->type))
                return a;
            return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, zero_like(g, a), ""),
                                   LLVMBuildNeg(B, a, ""), a, "");
        }
        break;
    }
    case PM_EXPR_BINARY: {
        bool cmp = e->op >= PM_OP_LT && e->op <= PM_OP_GT;
        pm_type t = cmp || e->op == PM_OP_AND || e->op == PM_OP_OR ? e->a->type : e->type;
        if (e->a->type != e->b->type && cmp)
            t = pm_type_promote(e->a, e->b);
        LLVMValueRef a = pm_llvm_convert(g, pm_llvm_expr(g, pt, e->a), e->a->type, t);
        LLVMValueRef b = pm_llvm_convert(g, pm_llvm_expr(g, pt, e->b), e->b->type, t);
        return pm_llvm_binop(g, e->op, t, a, b);
    }
    case PM_EXPR_CAST:
        return pm_llvm_convert(g, pm_llvm_expr(g, pt, e->a), e->a->type, e->type);
    case PM_EXPR_SELECT: {
        /* Both sides are evaluated: they have no side effects, cannot trap (division is
         * guarded) and their reads are clamped unless proven in bounds. */
        LLVMValueRef c = pm_llvm_cond(g, pt, e->a);
        LLVMValueRef x = pm_llvm_convert(g, pm_llvm_expr(g, pt, e->b), e->b->type, e->type);
        LLVMValueRef y = pm_llvm_convert(g, pm_llvm_expr(g, pt, e->c), e->c->type, e->type);
        return LLVMBuildSelect(B, c, x, y, "");
    }
    case PM_EXPR_MATH:
        return math(g, pt, e);
    case PM_EXPR_CALL:
        return pm_llvm_load(g, pt, e);
    }
    pm_error_set(g->err, PM_ERR_UNSUPPORTED, "%s: expression kind %d", g->poly->pipeline->name,
                 (int)e->kind);
    return pm_llvm_const(g, pt, PM_I32, 0, 0);
}
