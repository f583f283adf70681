/* flat.c — where a lookup table is flat (see flat.h for the promise and the rule). */
#include "frontend/flat.h"

#include "frontend/interp.h"

#include <math.h>
#include <stdlib.h>

enum { MONO_FAIL = 2 }; /* mono's answer when it cannot vouch for an order */

typedef struct flat_scan {
    const pm_expr *v;       /* the function's variable                                  */
    int64_t dom_lo, dom_hi; /* its domain                                               */
    int64_t *vars;          /* the evaluator's variables: only v's slot is read        */
    int64_t prefix_end;     /* every clamp so far is constant on dom_lo .. prefix_end  */
    int64_t suffix_start;   /* and on suffix_start .. dom_hi                           */
} flat_scan;

static bool uses(const pm_expr *e, bool (*is)(const pm_expr *, const flat_scan *),
                 const flat_scan *sc)
{
    if (!e)
        return false;
    if (is(e, sc))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (uses(e->args[i], is, sc))
            return true;
    return uses(e->a, is, sc) || uses(e->b, is, sc) || uses(e->c, is, sc);
}

static bool is_v(const pm_expr *e, const flat_scan *sc)
{
    return e->kind == PM_EXPR_VAR && e->id == sc->v->id;
}

static bool is_free(const pm_expr *e, const flat_scan *sc)
{
    (void)sc;
    return e->kind == PM_EXPR_VAR || e->kind == PM_EXPR_PARAM || e->kind == PM_EXPR_CALL;
}

/* No variable, parameter or call: a value known now. */
static bool constant(const pm_expr *e, const flat_scan *sc) { return !uses(e, is_free, sc); }
static bool has_v(const pm_expr *e, const flat_scan *sc) { return uses(e, is_v, sc); }

/* e at v = at, by the interpreter's rules (e reads no parameter and no call). */
static pm_ival eval_at(const flat_scan *sc, const pm_expr *e, int64_t at)
{
    sc->vars[sc->v->id] = at;
    pm_ienv env = {NULL, NULL, sc->vars};
    return pm_interp_eval(e, &env);
}

static bool int_fits(pm_type t, __int128 x)
{
    int bits = pm_type_bits(t);
    if (!pm_type_is_signed(t))
        return x >= 0 && (bits >= 64 || x < ((__int128)1 << bits));
    return x >= -((__int128)1 << (bits - 1)) && x < ((__int128)1 << (bits - 1));
}

/* An integer node's exact value at v = at from its operands' values (which are exact:
 * mono checked them first), so that a wrap anywhere on the domain shows at an end. */
static bool exact_fits(const flat_scan *sc, const pm_expr *e, int64_t at)
{
    if (!pm_type_is_int(e->type))
        return true;
    __int128 x;
    if (e->kind == PM_EXPR_CAST) {
        x = eval_at(sc, e->a, at).i;
    } else if (e->kind == PM_EXPR_UNARY) {
        x = -(__int128)eval_at(sc, e->a, at).i;
    } else {
        __int128 a = eval_at(sc, e->a, at).i, b = eval_at(sc, e->b, at).i;
        switch (e->op) {
        case PM_OP_ADD: x = a + b; break;
        case PM_OP_SUB: x = a - b; break;
        case PM_OP_MUL: x = a * b; break;
        default: return true; /* division by a constant other than 0 and -1 shrinks */
        }
    }
    return int_fits(e->type, x);
}

/* +1 when e never decreases as v grows over the domain, -1 when it never increases, 0
 * when it is a constant; MONO_FAIL when none of these is sure. Values are finite, or
 * infinities of one sign: no NaN appears at some v and not at others. */
static int mono(const flat_scan *sc, const pm_expr *e)
{
    if (constant(e, sc)) {
        if (e->type == PM_BOOL)
            return MONO_FAIL;
        return 0;
    }
    int m, k;
    switch (e->kind) {
    case PM_EXPR_VAR:
        return is_v(e, sc) ? 1 : MONO_FAIL;
    case PM_EXPR_CAST: {
        m = mono(sc, e->a);
        pm_type from = e->a->type, to = e->type;
        if (m == MONO_FAIL || from == PM_BOOL || to == PM_BOOL)
            return MONO_FAIL;
        if (pm_type_is_int(from) && pm_type_is_int(to)) /* wraps unless it fits */
            return exact_fits(sc, e, sc->dom_lo) && exact_fits(sc, e, sc->dom_hi) ? m : MONO_FAIL;
        return m; /* to or from a float: rounding and saturation keep the order */
    }
    case PM_EXPR_UNARY:
        if (e->op != PM_OP_NEG || (m = mono(sc, e->a)) == MONO_FAIL)
            return MONO_FAIL;
        return exact_fits(sc, e, sc->dom_lo) && exact_fits(sc, e, sc->dom_hi) ? -m : MONO_FAIL;
    case PM_EXPR_BINARY:
        break;
    default:
        return MONO_FAIL;
    }
    if (e->op == PM_OP_MIN || e->op == PM_OP_MAX) {
        m = mono(sc, e->a);
        k = mono(sc, e->b);
        if (m == MONO_FAIL || k == MONO_FAIL || m * k < 0)
            return MONO_FAIL;
        return m ? m : k;
    }
    /* v on one side, a constant on the other: no inf - inf or inf * 0 between two
     * parts of v */
    bool va = has_v(e->a, sc);
    const pm_expr *part = va ? e->a : e->b, *cst = va ? e->b : e->a;
    if (!constant(cst, sc) || (m = mono(sc, part)) == MONO_FAIL)
        return MONO_FAIL;
    pm_ival c = eval_at(sc, cst, 0);
    double cv = e->type == PM_F32 ? c.f : e->type == PM_F64 ? c.d : (double)c.i;
    if (!isfinite(cv))
        return MONO_FAIL;
    switch (e->op) {
    case PM_OP_ADD: break;
    case PM_OP_SUB: m = va ? m : -m; break;
    case PM_OP_MUL:
        if (cv == 0)
            return MONO_FAIL;
        m = cv > 0 ? m : -m;
        break;
    case PM_OP_DIV:
    case PM_OP_CDIV: /* v / c only; truncation and flooring keep the order */
        if (!va || cv == 0 || (cv == -1 && pm_type_is_int(e->type)))
            return MONO_FAIL;
        m = cv > 0 ? m : -m;
        break;
    default:
        return MONO_FAIL;
    }
    return exact_fits(sc, e, sc->dom_lo) && exact_fits(sc, e, sc->dom_hi) ? m : MONO_FAIL;
}

typedef struct zone {
    const pm_expr *a;   /* A */
    pm_ival bound;      /* c1 (A <= c1) or c2 (A >= c2) */
    bool below;         /* A <= c1, else A >= c2 */
} zone;

static bool in_zone(const flat_scan *sc, const zone *z, int64_t at)
{
    pm_ival a = eval_at(sc, z->a, at);
    return pm_interp_binop(z->below ? PM_OP_LE : PM_OP_GE, z->a->type, a, z->bound).i != 0;
}

/* The last v of the run of zone z that starts at dom_lo (dom_lo - 1: none), or, with
 * from_top, the first v of the run that ends at dom_hi (dom_hi + 1: none). */
static int64_t run_end(const flat_scan *sc, const zone *z, bool from_top)
{
    int64_t end = from_top ? sc->dom_hi : sc->dom_lo;
    if (!in_zone(sc, z, end))
        return from_top ? end + 1 : end - 1;
    int64_t in = end, out = from_top ? sc->dom_lo - 1 : sc->dom_hi + 1;
    while (in - out > 1 || out - in > 1) {
        int64_t mid = in + (out - in) / 2;
        if (in_zone(sc, z, mid))
            in = mid;
        else
            out = mid;
    }
    return in;
}

/* e = min(max(A, c1), c2) or max(min(A, c2), c1) with constants c1, c2 and a monotone
 * A: records where it is constant. */
static bool clamp_of_monotone(flat_scan *sc, const pm_expr *e)
{
    if (e->kind != PM_EXPR_BINARY || (e->op != PM_OP_MIN && e->op != PM_OP_MAX))
        return false;
    int inner_op = e->op == PM_OP_MIN ? PM_OP_MAX : PM_OP_MIN;
    const pm_expr *in = constant(e->b, sc) ? e->a : e->b, *c_out = in == e->a ? e->b : e->a;
    if (!constant(c_out, sc) || in->kind != PM_EXPR_BINARY || in->op != inner_op)
        return false;
    const pm_expr *a = constant(in->b, sc) ? in->a : in->b, *c_in = a == in->a ? in->b : in->a;
    if (!constant(c_in, sc))
        return false;
    int m = mono(sc, a);
    if (m != 1 && m != -1)
        return false;
    const pm_expr *c1 = e->op == PM_OP_MIN ? c_in : c_out, *c2 = e->op == PM_OP_MIN ? c_out : c_in;
    zone low = {a, eval_at(sc, c1, 0), true}, high = {a, eval_at(sc, c2, 0), false};
    /* A grows with v: A <= c1 holds on a run from dom_lo, A >= c2 on a run to dom_hi */
    const zone *first = m > 0 ? &low : &high, *last = m > 0 ? &high : &low;
    int64_t p = run_end(sc, first, false), s = run_end(sc, last, true);
    if (p < sc->prefix_end)
        sc->prefix_end = p;
    if (s > sc->suffix_start)
        sc->suffix_start = s;
    return true;
}

/* Every occurrence of v in e lies inside a clamp of a monotone expression. */
static bool scan(flat_scan *sc, const pm_expr *e)
{
    if (!e || !has_v(e, sc))
        return true;
    if (clamp_of_monotone(sc, e))
        return true;
    if (e->kind == PM_EXPR_VAR || e->kind == PM_EXPR_CALL)
        return false;
    return scan(sc, e->a) && scan(sc, e->b) && scan(sc, e->c);
}

/* The walks below see a definition as a tree, and a shared node once per path to it:
 * beyond this many nodes (a table defined by many levels of shared subexpressions) the
 * table is read as it is rather than the compile spending time exponential in them. */
#define FLAT_MAX_NODES 1024

/* Counts e's nodes as a tree into *n, stopping past FLAT_MAX_NODES. */
static bool tree_within(const pm_expr *e, int *n)
{
    if (!e)
        return true;
    if (++*n > FLAT_MAX_NODES)
        return false;
    for (int i = 0; i < e->nargs; i++)
        if (!tree_within(e->args[i], n))
            return false;
    return tree_within(e->a, n) && tree_within(e->b, n) && tree_within(e->c, n);
}

bool pm_func_flat_range(const pm_func *f, int64_t *lo, int64_t *hi)
{
    if (f->kind != PM_FUNC_FUNCTION || f->ndims != 1 || !f->defined || f->ncases != 1 ||
        f->cases[0]->cond || f->intervals[0]->step != 1 ||
        f->intervals[0]->lb->kind != PM_EXPR_INT || f->intervals[0]->ub->kind != PM_EXPR_INT)
        return false;
    int nodes = 0;
    if (!tree_within(f->cases[0]->value, &nodes))
        return false;
    flat_scan sc = {f->vars[0], f->intervals[0]->lb->ival, f->intervals[0]->ub->ival, NULL, 0, 0};
    if (sc.dom_lo > sc.dom_hi || sc.dom_lo < INT32_MIN || sc.dom_hi > INT32_MAX)
        return false;
    sc.prefix_end = sc.dom_hi; /* no clamp yet: flat nowhere is flat everywhere */
    sc.suffix_start = sc.dom_lo;
    sc.vars = calloc((size_t)sc.v->id + 1, sizeof *sc.vars);
    bool ok = sc.vars && scan(&sc, f->cases[0]->value);
    free(sc.vars);
    if (!ok)
        return false;
    /* f(v) = f(prefix_end) below prefix_end and f(suffix_start) above suffix_start; runs
     * that meet or overlap leave one value (constant f) */
    *lo = sc.prefix_end > sc.dom_lo ? sc.prefix_end : sc.dom_lo;
    *hi = sc.suffix_start < sc.dom_hi ? sc.suffix_start : sc.dom_hi;
    if (*hi < *lo)
        *hi = *lo;
    return *lo > sc.dom_lo || *hi < sc.dom_hi;
}
