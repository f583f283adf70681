/* expr.c — the expression builders of polymage.h: constants, variables, parameters,
 * arithmetic, conditions, casts, math and calls.
 *
 * Every builder checks its operands at once (NULL, context, type) and records the first
 * error in the context, returning NULL; NULL operands propagate silently, so the first
 * error stays the one reported. Operands of binary operations are converted to their
 * common type here (explicit PM_EXPR_CAST nodes), so later phases never re-derive types.
 */
#include "frontend/ir.h"

#include <math.h>

static pm_expr *new_expr(pm_ctx *ctx, pm_expr_kind kind, pm_type type)
{
    pm_expr *e = pm_ctx_alloc(ctx, sizeof *e);
    if (!e)
        return NULL;
    e->ctx = ctx;
    e->kind = kind;
    e->type = type;
    return e;
}

pm_expr *pm_int(pm_ctx *ctx, int64_t value)
{
    if (!ctx)
        return NULL;
    pm_expr *e = new_expr(ctx, PM_EXPR_INT, PM_I32);
    if (e) {
        e->ival = value;
        e->is_weak = true;
    }
    return e;
}

pm_expr *pm_float(pm_ctx *ctx, double value)
{
    if (!ctx)
        return NULL;
    pm_expr *e = new_expr(ctx, PM_EXPR_FLOAT, PM_F32);
    if (e) {
        e->fval = value;
        e->is_weak = true;
    }
    return e;
}

pm_expr *pm_f64(pm_ctx *ctx, double value)
{
    if (!ctx)
        return NULL;
    pm_expr *e = new_expr(ctx, PM_EXPR_FLOAT, PM_F64);
    if (e)
        e->fval = value;
    return e;
}

pm_expr *pm_const(pm_ctx *ctx, pm_type type, double value)
{
    if (!ctx)
        return NULL;
    if (!pm_type_valid(type) || type == PM_BOOL) {
        pm_ctx_error(ctx, PM_ERR_TYPE, "pm_const: %d is not a storage type", (int)type);
        return NULL;
    }
    pm_expr *e = new_expr(ctx, pm_type_is_float(type) ? PM_EXPR_FLOAT : PM_EXPR_INT, type);
    if (!e)
        return NULL;
    if (pm_type_is_float(type))
        e->fval = type == PM_F32 ? (double)(float)value : value;
    else
        e->ival = (int64_t)value;
    return e;
}

pm_expr *pm_var(pm_ctx *ctx, const char *name)
{
    if (!ctx)
        return NULL;
    if (!name || !*name) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "pm_var: a variable needs a name");
        return NULL;
    }
    pm_expr *e = new_expr(ctx, PM_EXPR_VAR, PM_I32);
    if (!e)
        return NULL;
    e->name = pm_ctx_strdup(ctx, name);
    e->id = pm_ctx_next_var_id(ctx);
    return e;
}

pm_expr *pm_param(pm_ctx *ctx, pm_type type, const char *name)
{
    if (!ctx)
        return NULL;
    if (!name || !*name) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "pm_param: a parameter needs a name");
        return NULL;
    }
    if (!pm_type_valid(type) || type == PM_BOOL) {
        pm_ctx_error(ctx, PM_ERR_TYPE, "parameter %s: type must be an integer or float type",
                     name);
        return NULL;
    }
    pm_expr *e = new_expr(ctx, PM_EXPR_PARAM, type);
    if (!e)
        return NULL;
    e->name = pm_ctx_strdup(ctx, name);
    e->id = pm_ctx_add_param(ctx, e);
    return e->id < 0 ? NULL : e;
}

/* ---- operand checks ------------------------------------------------------------------ */

/* NULL operands: if a context is known and it has no error yet, the NULL came from the
 * caller, not from an earlier failed builder: record it. */
static bool operands_ok(const char *op, pm_expr *a, pm_expr *b, pm_expr *c, int n)
{
    pm_expr *ops[3] = {a, b, c};
    pm_ctx *ctx = NULL;
    bool have_null = false;
    for (int i = 0; i < n; i++) {
        if (!ops[i])
            have_null = true;
        else if (!ctx)
            ctx = ops[i]->ctx;
    }
    if (have_null) {
        if (ctx && pm_ctx_recorded(ctx) == PM_OK)
            pm_ctx_error(ctx, PM_ERR_MISUSE, "%s: operand is NULL", op);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (ops[i]->ctx != ctx) {
            pm_ctx_error(ctx, PM_ERR_MISUSE, "%s: operands belong to different contexts", op);
            return false;
        }
    }
    return true;
}

/* e converted to type (a cast node unless it is already that type). Literals fold. */
static pm_expr *convert(pm_expr *e, pm_type type)
{
    if (!e)
        return NULL;
    if (e->type == type) {
        if (!e->is_weak)
            return e;
    }
    if (e->kind == PM_EXPR_INT && e->is_weak) {
        pm_expr *k = new_expr(e->ctx, pm_type_is_float(type) ? PM_EXPR_FLOAT : PM_EXPR_INT, type);
        if (!k)
            return NULL;
        if (pm_type_is_float(type))
            k->fval = type == PM_F32 ? (double)(float)e->ival : (double)e->ival;
        else
            k->ival = e->ival;
        return k;
    }
    if (e->kind == PM_EXPR_FLOAT && e->is_weak && pm_type_is_float(type)) {
        pm_expr *k = new_expr(e->ctx, PM_EXPR_FLOAT, type);
        if (k)
            k->fval = type == PM_F32 ? (double)(float)e->fval : e->fval;
        return k;
    }
    if (e->type == type)
        return e;
    pm_expr *c = new_expr(e->ctx, PM_EXPR_CAST, type);
    if (c)
        c->a = e;
    return c;
}

pm_expr *pm_expr_convert(pm_expr *e, pm_type type)
{
    return convert(e, type);
}

static const char *binop_name(pm_binop op)
{
    static const char *names[] = {
        [PM_OP_ADD] = "+", [PM_OP_SUB] = "-", [PM_OP_MUL] = "*", [PM_OP_DIV] = "/",
        [PM_OP_MOD] = "%", [PM_OP_CDIV] = "cdiv", [PM_OP_CMOD] = "cmod",
        [PM_OP_MIN] = "min", [PM_OP_MAX] = "max", [PM_OP_ABSD] = "absd",
        [PM_OP_BAND] = "&", [PM_OP_BOR] = "|", [PM_OP_BXOR] = "^",
        [PM_OP_SHL] = "<<", [PM_OP_SHR] = ">>", [PM_OP_LT] = "<", [PM_OP_LE] = "<=",
        [PM_OP_EQ] = "==", [PM_OP_NE] = "!=", [PM_OP_GE] = ">=", [PM_OP_GT] = ">",
        [PM_OP_AND] = "&&", [PM_OP_OR] = "||",
    };
    return names[op];
}

int pm_reduce_binop(pm_reduce_op op)
{
    switch (op) {
    case PM_REDUCE_SUM: return PM_OP_ADD;
    case PM_REDUCE_PRODUCT: return PM_OP_MUL;
    case PM_REDUCE_MIN: return PM_OP_MIN;
    case PM_REDUCE_MAX: return PM_OP_MAX;
    case PM_REDUCE_AND: return PM_OP_BAND;
    case PM_REDUCE_OR: return PM_OP_BOR;
    }
    return PM_OP_ADD;
}

const char *pm_binop_name(int op)
{
    return binop_name((pm_binop)op);
}

static pm_expr *binary(pm_binop op, pm_expr *a, pm_expr *b)
{
    if (!operands_ok(binop_name(op), a, b, NULL, 2))
        return NULL;
    pm_ctx *ctx = a->ctx;
    bool logical = op == PM_OP_AND || op == PM_OP_OR;
    bool compare = op >= PM_OP_LT && op <= PM_OP_GT;
    bool bitwise = op >= PM_OP_BAND && op <= PM_OP_SHR;
    bool int_only = bitwise || op == PM_OP_CDIV || op == PM_OP_CMOD;
    if (logical) {
        if (a->type != PM_BOOL || b->type != PM_BOOL) {
            pm_ctx_error(ctx, PM_ERR_TYPE, "'%s' needs conditions, got %s %s %s",
                         binop_name(op), pm_expr_to_cstr(ctx, a), binop_name(op),
                         pm_expr_to_cstr(ctx, b));
            return NULL;
        }
        pm_expr *e = new_expr(ctx, PM_EXPR_BINARY, PM_BOOL);
        if (e) {
            e->op = op;
            e->a = a;
            e->b = b;
        }
        return e;
    }
    if (a->type == PM_BOOL || b->type == PM_BOOL) {
        pm_ctx_error(ctx, PM_ERR_TYPE, "'%s' is not defined on conditions: %s %s %s",
                     binop_name(op), pm_expr_to_cstr(ctx, a), binop_name(op),
                     pm_expr_to_cstr(ctx, b));
        return NULL;
    }
    pm_type t = pm_type_promote(a, b);
    if (int_only && pm_type_is_float(t)) {
        pm_ctx_error(ctx, PM_ERR_TYPE, "'%s' needs integer operands, got %s and %s in %s %s %s",
                     binop_name(op), pm_type_name(a->type), pm_type_name(b->type),
                     pm_expr_to_cstr(ctx, a), binop_name(op), pm_expr_to_cstr(ctx, b));
        return NULL;
    }
    pm_expr *e = new_expr(ctx, PM_EXPR_BINARY, compare ? PM_BOOL : t);
    if (!e)
        return NULL;
    e->op = op;
    e->a = convert(a, t);
    e->b = convert(b, t);
    /* Two literals make a literal-like result: keep it weak so (1 + 2) * x adapts. */
    e->is_weak = !compare && a->is_weak && b->is_weak;
    return e->a && e->b ? e : NULL;
}

pm_expr *pm_add(pm_expr *a, pm_expr *b) { return binary(PM_OP_ADD, a, b); }
pm_expr *pm_sub(pm_expr *a, pm_expr *b) { return binary(PM_OP_SUB, a, b); }
pm_expr *pm_mul(pm_expr *a, pm_expr *b) { return binary(PM_OP_MUL, a, b); }
pm_expr *pm_div(pm_expr *a, pm_expr *b) { return binary(PM_OP_DIV, a, b); }
pm_expr *pm_mod(pm_expr *a, pm_expr *b) { return binary(PM_OP_MOD, a, b); }
pm_expr *pm_cdiv(pm_expr *a, pm_expr *b) { return binary(PM_OP_CDIV, a, b); }
pm_expr *pm_cmod(pm_expr *a, pm_expr *b) { return binary(PM_OP_CMOD, a, b); }
pm_expr *pm_min(pm_expr *a, pm_expr *b) { return binary(PM_OP_MIN, a, b); }
pm_expr *pm_max(pm_expr *a, pm_expr *b) { return binary(PM_OP_MAX, a, b); }
pm_expr *pm_absd(pm_expr *a, pm_expr *b) { return binary(PM_OP_ABSD, a, b); }
pm_expr *pm_band(pm_expr *a, pm_expr *b) { return binary(PM_OP_BAND, a, b); }
pm_expr *pm_bor(pm_expr *a, pm_expr *b) { return binary(PM_OP_BOR, a, b); }
pm_expr *pm_bxor(pm_expr *a, pm_expr *b) { return binary(PM_OP_BXOR, a, b); }
pm_expr *pm_shl(pm_expr *a, pm_expr *b) { return binary(PM_OP_SHL, a, b); }
pm_expr *pm_shr(pm_expr *a, pm_expr *b) { return binary(PM_OP_SHR, a, b); }
pm_expr *pm_lt(pm_expr *a, pm_expr *b) { return binary(PM_OP_LT, a, b); }
pm_expr *pm_le(pm_expr *a, pm_expr *b) { return binary(PM_OP_LE, a, b); }
pm_expr *pm_eq(pm_expr *a, pm_expr *b) { return binary(PM_OP_EQ, a, b); }
pm_expr *pm_ne(pm_expr *a, pm_expr *b) { return binary(PM_OP_NE, a, b); }
pm_expr *pm_ge(pm_expr *a, pm_expr *b) { return binary(PM_OP_GE, a, b); }
pm_expr *pm_gt(pm_expr *a, pm_expr *b) { return binary(PM_OP_GT, a, b); }
pm_expr *pm_and(pm_expr *a, pm_expr *b) { return binary(PM_OP_AND, a, b); }
pm_expr *pm_or(pm_expr *a, pm_expr *b) { return binary(PM_OP_OR, a, b); }

pm_expr *pm_addi(pm_expr *a, int64_t b) { return a ? pm_add(a, pm_int(a->ctx, b)) : NULL; }
pm_expr *pm_muli(pm_expr *a, int64_t b) { return a ? pm_mul(a, pm_int(a->ctx, b)) : NULL; }
pm_expr *pm_divi(pm_expr *a, int64_t b) { return a ? pm_div(a, pm_int(a->ctx, b)) : NULL; }
pm_expr *pm_modi(pm_expr *a, int64_t b) { return a ? pm_mod(a, pm_int(a->ctx, b)) : NULL; }
pm_expr *pm_addf(pm_expr *a, double b) { return a ? pm_add(a, pm_float(a->ctx, b)) : NULL; }
pm_expr *pm_mulf(pm_expr *a, double b) { return a ? pm_mul(a, pm_float(a->ctx, b)) : NULL; }

pm_expr *pm_clamp(pm_expr *a, pm_expr *lo, pm_expr *hi)
{
    return pm_min(pm_max(a, lo), hi);
}

pm_expr *pm_between(pm_expr *a, pm_expr *lo, pm_expr *hi)
{
    return pm_and(pm_le(lo, a), pm_le(a, hi));
}

static pm_expr *unary(pm_unop op, const char *name, pm_expr *a)
{
    if (!operands_ok(name, a, NULL, NULL, 1))
        return NULL;
    if ((op == PM_OP_NOT) != (a->type == PM_BOOL)) {
        pm_ctx_error(a->ctx, PM_ERR_TYPE, "%s: operand %s has type %s", name,
                     pm_expr_to_cstr(a->ctx, a), pm_type_name(a->type));
        return NULL;
    }
    pm_expr *e = new_expr(a->ctx, PM_EXPR_UNARY, a->type);
    if (e) {
        e->op = op;
        e->a = a;
        e->is_weak = a->is_weak;
    }
    return e;
}

pm_expr *pm_neg(pm_expr *a) { return unary(PM_OP_NEG, "negation", a); }
pm_expr *pm_not(pm_expr *a) { return unary(PM_OP_NOT, "not", a); }
pm_expr *pm_abs(pm_expr *a) { return unary(PM_OP_ABS, "abs", a); }

pm_expr *pm_cast(pm_type type, pm_expr *a)
{
    if (!operands_ok("cast", a, NULL, NULL, 1))
        return NULL;
    if (!pm_type_valid(type) || type == PM_BOOL) {
        pm_ctx_error(a->ctx, PM_ERR_TYPE, "cast of %s: target %d is not a storage type",
                     pm_expr_to_cstr(a->ctx, a), (int)type);
        return NULL;
    }
    if (a->type == PM_BOOL) {
        /* A condition becomes 1 or 0: spelled as a select so every phase knows it. */
        return pm_select(a, pm_const(a->ctx, type, 1), pm_const(a->ctx, type, 0));
    }
    if (a->type == type && !a->is_weak)
        return a;
    pm_expr *e = new_expr(a->ctx, PM_EXPR_CAST, type);
    if (e)
        e->a = a;
    return e;
}

pm_expr *pm_select(pm_expr *cond, pm_expr *then_value, pm_expr *else_value)
{
    if (!operands_ok("select", cond, then_value, else_value, 3))
        return NULL;
    pm_ctx *ctx = cond->ctx;
    if (cond->type != PM_BOOL) {
        pm_ctx_error(ctx, PM_ERR_TYPE, "select: condition %s has type %s, not a condition",
                     pm_expr_to_cstr(ctx, cond), pm_type_name(cond->type));
        return NULL;
    }
    pm_type t = then_value->type == PM_BOOL && else_value->type == PM_BOOL
                    ? PM_BOOL
                    : pm_type_promote(then_value, else_value);
    if (t != PM_BOOL && (then_value->type == PM_BOOL || else_value->type == PM_BOOL)) {
        pm_ctx_error(ctx, PM_ERR_TYPE, "select: cannot mix a condition and a value in %s, %s",
                     pm_expr_to_cstr(ctx, then_value), pm_expr_to_cstr(ctx, else_value));
        return NULL;
    }
    pm_expr *e = new_expr(ctx, PM_EXPR_SELECT, t);
    if (!e)
        return NULL;
    e->a = cond;
    e->b = convert(then_value, t);
    e->c = convert(else_value, t);
    e->is_weak = then_value->is_weak && else_value->is_weak;
    return e->b && e->c ? e : NULL;
}

pm_expr *pm_math(pm_math_fn fn, pm_expr *a)
{
    if (!operands_ok("math function", a, NULL, NULL, 1))
        return NULL;
    if ((int)fn < PM_EXP || (int)fn > PM_TRUNC) {
        pm_ctx_error(a->ctx, PM_ERR_MISUSE, "pm_math: unknown function %d", (int)fn);
        return NULL;
    }
    if (a->type == PM_BOOL) {
        pm_ctx_error(a->ctx, PM_ERR_TYPE, "math function of condition %s",
                     pm_expr_to_cstr(a->ctx, a));
        return NULL;
    }
    pm_type t = pm_type_is_float(a->type) && !a->is_weak ? a->type : PM_F32;
    pm_expr *e = new_expr(a->ctx, PM_EXPR_MATH, t);
    if (!e)
        return NULL;
    e->op = fn;
    e->a = convert(a, t);
    return e->a ? e : NULL;
}

pm_expr *pm_exp(pm_expr *a) { return pm_math(PM_EXP, a); }
pm_expr *pm_log(pm_expr *a) { return pm_math(PM_LOG, a); }
pm_expr *pm_sqrt(pm_expr *a) { return pm_math(PM_SQRT, a); }
pm_expr *pm_sin(pm_expr *a) { return pm_math(PM_SIN, a); }
pm_expr *pm_cos(pm_expr *a) { return pm_math(PM_COS, a); }
pm_expr *pm_floor(pm_expr *a) { return pm_math(PM_FLOOR, a); }
pm_expr *pm_ceil(pm_expr *a) { return pm_math(PM_CEIL, a); }

static pm_expr *math2(int op, const char *name, pm_expr *a, pm_expr *b)
{
    if (!operands_ok(name, a, b, NULL, 2))
        return NULL;
    if (a->type == PM_BOOL || b->type == PM_BOOL) {
        pm_ctx_error(a->ctx, PM_ERR_TYPE, "%s of a condition", name);
        return NULL;
    }
    pm_type t = pm_type_promote(a, b);
    if (!pm_type_is_float(t))
        t = PM_F32;
    pm_expr *e = new_expr(a->ctx, PM_EXPR_MATH, t);
    if (!e)
        return NULL;
    e->op = op;
    e->a = convert(a, t);
    e->b = convert(b, t);
    return e->a && e->b ? e : NULL;
}

pm_expr *pm_pow(pm_expr *base, pm_expr *exponent) { return math2(PM_MATH_POW, "pow", base, exponent); }
pm_expr *pm_atan2(pm_expr *y, pm_expr *x) { return math2(PM_MATH_ATAN2, "atan2", y, x); }

pm_expr *pm_call_n(pm_func *f, int nargs, pm_expr *const *args)
{
    if (!f)
        return NULL;
    pm_ctx *ctx = f->ctx;
    if (nargs != f->ndims) {
        pm_ctx_error(ctx, PM_ERR_INVALID, "call of %s with %d argument%s: %s has %d dimension%s",
                     f->name, nargs, nargs == 1 ? "" : "s", f->name, f->ndims,
                     f->ndims == 1 ? "" : "s");
        return NULL;
    }
    if (nargs > 0 && !args) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "call of %s: argument list is NULL", f->name);
        return NULL;
    }
    pm_expr **copy = pm_ctx_alloc(ctx, sizeof(pm_expr *) * (size_t)(nargs ? nargs : 1));
    if (!copy)
        return NULL;
    for (int i = 0; i < nargs; i++) {
        pm_expr *arg = args[i];
        if (!arg) {
            if (pm_ctx_recorded(ctx) == PM_OK)
                pm_ctx_error(ctx, PM_ERR_MISUSE, "call of %s: argument %d is NULL", f->name, i + 1);
            return NULL;
        }
        if (arg->ctx != ctx) {
            pm_ctx_error(ctx, PM_ERR_MISUSE, "call of %s: argument %d belongs to another context",
                         f->name, i + 1);
            return NULL;
        }
        if (!pm_type_is_int(arg->type)) {
            pm_ctx_error(ctx, PM_ERR_TYPE,
                         "call of %s: argument %d (%s) has type %s; indices must be integers "
                         "(cast a data-dependent index with pm_cast)",
                         f->name, i + 1, pm_expr_to_cstr(ctx, arg), pm_type_name(arg->type));
            return NULL;
        }
        copy[i] = arg->type == PM_I64 || (arg->type == PM_I32 && !arg->is_weak) ? arg
                                                                              : convert(arg, PM_I32);
        if (!copy[i])
            return NULL;
    }
    pm_expr *e = new_expr(ctx, PM_EXPR_CALL, f->type);
    if (!e)
        return NULL;
    e->callee = f;
    e->nargs = nargs;
    e->args = copy;
    return e;
}

/* ---- walking ------------------------------------------------------------------------ */

bool pm_expr_walk(const pm_expr *e, bool (*visit)(const pm_expr *e, void *user), void *user)
{
    if (!e)
        return true;
    if (!visit(e, user))
        return false;
    if (!pm_expr_walk(e->a, visit, user) || !pm_expr_walk(e->b, visit, user) ||
        !pm_expr_walk(e->c, visit, user))
        return false;
    for (int i = 0; i < e->nargs; i++)
        if (!pm_expr_walk(e->args[i], visit, user))
            return false;
    return true;
}
