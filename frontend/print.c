/* print.c — readable text of expressions and pipelines, for messages and the "graph" dump.
 * The text is the API's own vocabulary: Ix(x - 1, y), min(a, b), (f32)(v), select(c, a, b). */
#include "frontend/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pm_str_append(pm_str *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (s->len + (size_t)n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (s->len + (size_t)n + 1 > cap)
            cap *= 2;
        char *grown = realloc(s->data, cap);
        if (!grown)
            return;
        s->data = grown;
        s->cap = cap;
    }
    if ((size_t)n < sizeof small) {
        memcpy(s->data + s->len, small, (size_t)n + 1);
    } else {
        va_start(ap, fmt);
        vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    s->len += (size_t)n;
}

void pm_str_free(pm_str *s)
{
    free(s->data);
    s->data = NULL;
    s->len = s->cap = 0;
}

static const char *math_name(int op)
{
    switch (op) {
    case PM_EXP: return "exp";
    case PM_LOG: return "log";
    case PM_SQRT: return "sqrt";
    case PM_SIN: return "sin";
    case PM_COS: return "cos";
    case PM_TAN: return "tan";
    case PM_ATAN: return "atan";
    case PM_TANH: return "tanh";
    case PM_FLOOR: return "floor";
    case PM_CEIL: return "ceil";
    case PM_ROUND: return "round";
    case PM_TRUNC: return "trunc";
    case PM_MATH_POW: return "pow";
    case PM_MATH_ATAN2: return "atan2";
    }
    return "?";
}

static bool is_infix(int op)
{
    return op <= PM_OP_MOD || (op >= PM_OP_BAND && op <= PM_OP_OR);
}

/* A binary operation: infix for arithmetic and logic, parenthesizing nested infix
 * operands only (additive terms need none at the top of a sum); a call for the rest
 * (min, max, ...). */
static void print_binary(pm_str *s, const pm_expr *e)
{
    if (!is_infix(e->op)) {
        pm_str_append(s, "%s(", pm_binop_name(e->op));
        pm_expr_print(s, e->a);
        pm_str_append(s, ", ");
        pm_expr_print(s, e->b);
        pm_str_append(s, ")");
        return;
    }
    bool pa = e->a->kind == PM_EXPR_BINARY && is_infix(e->a->op) &&
              !(e->op <= PM_OP_SUB && e->a->op <= PM_OP_SUB);
    bool pb = e->b->kind == PM_EXPR_BINARY && is_infix(e->b->op);
    pm_str_append(s, pa ? "(" : "");
    pm_expr_print(s, e->a);
    /* a + -3 reads better as a - 3 */
    if (e->op == PM_OP_ADD && e->b->kind == PM_EXPR_INT && e->b->ival < 0) {
        /* negated in unsigned arithmetic: INT64_MIN has no positive int64 */
        pm_str_append(s, pa ? ") - %llu" : " - %llu", 0ull - (unsigned long long)e->b->ival);
        return;
    }
    pm_str_append(s, pa ? ") %s " : " %s ", pm_binop_name(e->op));
    pm_str_append(s, pb ? "(" : "");
    pm_expr_print(s, e->b);
    pm_str_append(s, pb ? ")" : "");
}

/* The expressions written as calls: select(c, a, b), a math function, a function's call. */
static void print_call_like(pm_str *s, const pm_expr *e)
{
    switch (e->kind) {
    case PM_EXPR_SELECT:
        pm_str_append(s, "select(");
        pm_expr_print(s, e->a);
        pm_str_append(s, ", ");
        pm_expr_print(s, e->b);
        pm_str_append(s, ", ");
        pm_expr_print(s, e->c);
        pm_str_append(s, ")");
        break;
    case PM_EXPR_MATH:
        pm_str_append(s, "%s(", math_name(e->op));
        pm_expr_print(s, e->a);
        if (e->b) {
            pm_str_append(s, ", ");
            pm_expr_print(s, e->b);
        }
        pm_str_append(s, ")");
        break;
    case PM_EXPR_CALL:
        pm_str_append(s, "%s(", e->callee->name);
        for (int i = 0; i < e->nargs; i++) {
            if (i)
                pm_str_append(s, ", ");
            pm_expr_print(s, e->args[i]);
        }
        pm_str_append(s, ")");
        break;
    default:
        break;
    }
}

void pm_expr_print(pm_str *s, const pm_expr *e)
{
    if (!e) {
        pm_str_append(s, "(null)");
        return;
    }
    switch (e->kind) {
    case PM_EXPR_INT:
        pm_str_append(s, "%lld", (long long)e->ival);
        break;
    case PM_EXPR_FLOAT:
        pm_str_append(s, "%.9g", e->fval);
        if (e->type == PM_F32 && !e->is_weak)
            pm_str_append(s, "f");
        break;
    case PM_EXPR_VAR:
    case PM_EXPR_PARAM:
        pm_str_append(s, "%s", e->name);
        break;
    case PM_EXPR_UNARY:
        pm_str_append(s, "%s", e->op == PM_OP_NEG ? "-(" : e->op == PM_OP_NOT ? "!(" : "abs(");
        pm_expr_print(s, e->a);
        pm_str_append(s, ")");
        break;
    case PM_EXPR_BINARY:
        print_binary(s, e);
        break;
    case PM_EXPR_CAST:
        pm_str_append(s, "(%s)(", pm_type_name(e->type));
        pm_expr_print(s, e->a);
        pm_str_append(s, ")");
        break;
    case PM_EXPR_SELECT:
    case PM_EXPR_MATH:
    case PM_EXPR_CALL:
        print_call_like(s, e);
        break;
    }
}

const char *pm_expr_to_cstr(pm_ctx *ctx, const pm_expr *e)
{
    pm_str s = {0};
    pm_expr_print(&s, e);
    const char *copy = pm_ctx_strdup(ctx, s.data ? s.data : "");
    pm_str_free(&s);
    return copy ? copy : "?";
}

static void print_domain(pm_str *s, int n, pm_expr **vars, pm_interval **ivs)
{
    pm_str_append(s, "(");
    for (int d = 0; d < n; d++) {
        pm_str_append(s, "%s%s in [", d ? ", " : "", vars[d]->name);
        pm_expr_print(s, ivs[d]->lb);
        pm_str_append(s, ", ");
        pm_expr_print(s, ivs[d]->ub);
        pm_str_append(s, "]");
        if (ivs[d]->step != 1)
            pm_str_append(s, " step %lld", (long long)ivs[d]->step);
    }
    pm_str_append(s, ")");
}

static const char *reduce_name(pm_reduce_op op)
{
    static const char *names[] = {"+", "*", "min", "max", "&", "|"};
    return names[op];
}

void pm_func_print(pm_str *s, const pm_func *f)
{
    switch (f->kind) {
    case PM_FUNC_IMAGE:
        pm_str_append(s, "image %s : %s [", f->name, pm_type_name(f->type));
        for (int d = 0; d < f->ndims; d++) {
            pm_str_append(s, d ? ", " : "");
            pm_expr_print(s, f->extents[d]);
        }
        pm_str_append(s, "]\n");
        break;
    case PM_FUNC_FUNCTION:
        pm_str_append(s, "function %s : %s ", f->name, pm_type_name(f->type));
        print_domain(s, f->ndims, f->vars, f->intervals);
        pm_str_append(s, "\n");
        for (int i = 0; i < f->ncases; i++) {
            pm_str_append(s, "  case ");
            if (f->cases[i]->cond)
                pm_expr_print(s, f->cases[i]->cond);
            else
                pm_str_append(s, "(everywhere)");
            pm_str_append(s, ":\n    ");
            pm_expr_print(s, f->cases[i]->value);
            pm_str_append(s, "\n");
        }
        break;
    case PM_FUNC_REDUCTION:
        pm_str_append(s, "reduction %s : %s ", f->name, pm_type_name(f->type));
        print_domain(s, f->ndims, f->vars, f->intervals);
        pm_str_append(s, " over ");
        print_domain(s, f->nrdims, f->rvars, f->rintervals);
        pm_str_append(s, "\n  initial ");
        pm_expr_print(s, f->initial);
        if (f->defined) {
            pm_str_append(s, "\n  %s(", f->name);
            for (int d = 0; d < f->ndims; d++) {
                pm_str_append(s, d ? ", " : "");
                pm_expr_print(s, f->rindex[d]);
            }
            pm_str_append(s, ") %s= ", reduce_name(f->reduce_op));
            pm_expr_print(s, f->rvalue);
        }
        pm_str_append(s, "\n");
        break;
    }
}

char *pm_pipeline_to_string(pm_pipeline *p)
{
    if (!p)
        return NULL;
    pm_str s = {0};
    pm_str_append(&s, "pipeline %s\n  parameters:", p->name);
    for (int i = 0; i < p->nparams; i++)
        pm_str_append(&s, " %s:%s", p->params[i]->name, pm_type_name(p->params[i]->type));
    pm_str_append(&s, "\n  outputs:");
    for (int i = 0; i < p->noutputs; i++)
        pm_str_append(&s, " %s", p->outputs[i]->name);
    pm_str_append(&s, "\n");
    for (int i = 0; i < p->ninputs; i++)
        pm_func_print(&s, p->inputs[i]);
    for (int i = 0; i < p->nstages; i++)
        pm_func_print(&s, p->stages[i]);
    return s.data;
}
