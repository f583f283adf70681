/* cases.c — a function's cases shaped into statements (see cases.h).
 *
 * Shape: pm_cases_shape moves each stage's statements into a fresh array in stage order
 * and shapes them there, the stage's last statement always at the array's end: merges
 * (merge_strided_cases, merge_row_cases), splits into convex pieces (split_pieces), then
 * the parts (merge_parts).
 */
#include "codegen/cases.h"

#include "frontend/error.h"
#include "frontend/isl_expr.h"

#include <isl/aff.h>
#include <isl/constraint.h>
#include <isl/id.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/val.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The innermost dimension is a property of the band shared by a function's case
 * statements: vectorizable only when it is free in all of them. */
static void stage_agree(pm_poly *poly, pm_poly_stage *st)
{
    bool vec = true;
    for (int i = 0; i < st->nstmts; i++) {
        pm_poly_stmt *s = &poly->stmts[st->first_stmt + i];
        if (s->kind != PM_STMT_CASE)
            return;
        vec = vec && s->vectorizable;
    }
    for (int i = 0; i < st->nstmts; i++)
        poly->stmts[st->first_stmt + i].vectorizable = vec;
}

/* ---- strided cases merged --------------------------------------------------------- */

/* The domain has a stride or residue constraint involving its innermost dimension. */
static bool strided_inner(__isl_keep isl_set *dom, int ndims)
{
    isl_set *plain = isl_set_remove_divs_involving_dims(isl_set_copy(dom), isl_dim_set,
                                                        (unsigned)ndims - 1, 1);
    isl_bool eq = isl_set_is_equal(plain, dom);
    isl_set_free(plain);
    return eq == isl_bool_false;
}

/* s without existentials when it has no stride or residue (its convex hull, when that
 * holds the same points: floor(y / 2) <= K is y <= 2K + 1), else NULL. Takes s. */
static __isl_give isl_set *stride_free_form(__isl_take isl_set *s)
{
    s = isl_set_coalesce(s);
    isl_set *plain = isl_set_from_basic_set(isl_set_polyhedral_hull(isl_set_copy(s)));
    isl_bool eq = isl_set_is_equal(plain, s);
    isl_set_free(s);
    if (eq != isl_bool_true) {
        isl_set_free(plain);
        return NULL;
    }
    return isl_set_coalesce(plain);
}

/* The union of the domains of statements first .. first + n - 1 when it has no stride at
 * all, in a form without existentials; else NULL. */
static __isl_give isl_set *stride_free_union(const pm_poly *poly, int first, int n)
{
    isl_set *u = isl_set_copy(poly->stmts[first].domain);
    for (int i = 1; i < n; i++) {
        isl_set *d = isl_set_copy(poly->stmts[first + i].domain);
        d = isl_set_set_tuple_id(d, isl_set_get_tuple_id(u));
        u = isl_set_union(u, d);
    }
    return stride_free_form(u);
}

/* The points of dom where every read of m that its own case's statement proved in
 * bounds stays inside its callee's box (m evaluates every merged case at every point). */
static __isl_give isl_set *merged_reads_inside(const pm_poly *poly, const pm_poly_stmt *m,
                                               int first, int n, __isl_take isl_set *dom)
{
    for (int a = 0; a < m->naccesses && dom; a++) {
        const pm_poly_access *acc = &m->accesses[a];
        if (acc->in_bounds)
            continue;
        bool needed = false;
        for (int i = first; i < first + n && !needed; i++) {
            const pm_poly_stmt *s = &poly->stmts[i];
            for (int b = 0; b < s->naccesses; b++)
                needed = needed || (s->accesses[b].call == acc->call && s->accesses[b].in_bounds);
        }
        if (!needed)
            continue;
        if (!acc->rel) {
            isl_set_free(dom);
            return NULL;
        }
        const pm_poly_storage *cs = pm_poly_storage_of(poly, acc->callee);
        isl_map *r = isl_map_intersect_domain(isl_map_copy(acc->rel), isl_set_copy(dom));
        r = isl_map_intersect_range(r, isl_set_copy(cs->box));
        dom = isl_set_intersect(dom, isl_map_domain(r)); /* reads are single-valued */
    }
    return dom ? isl_set_coalesce(dom) : NULL;
}

enum { MERGE_MAX = 8 };

/* A case statement merge_strided_cases may take: one case, no run-time condition, a
 * stride or residue on the innermost dimension. */
static bool inner_case(const pm_poly *poly, const pm_poly_stmt *s)
{
    (void)poly;
    return s->ncases == 1 && s->nresidual == 0 && s->ndims > 0 &&
           strided_inner(s->domain, s->ndims);
}

/* The most statements from first on (at least 2, at most MERGE_MAX, before end), each
 * taken by takes, whose union has no stride: their count, and that union in *dom; 0
 * when no two do. */
static int longest_run(const pm_poly *poly, int first, int end,
                       bool (*takes)(const pm_poly *, const pm_poly_stmt *),
                       __isl_give isl_set **dom)
{
    int best = 0;
    *dom = NULL;
    for (int n = 2; n <= MERGE_MAX && first + n <= end; n++) {
        if (!takes(poly, &poly->stmts[first + n - 1]))
            break;
        isl_set *u = stride_free_union(poly, first, n);
        if (u) {
            isl_set_free(*dom);
            *dom = u;
            best = n;
        }
    }
    return best;
}

/* The statement of cases i .. i+best-1 (the first at head) over dom (taken), valued by
 * the first case whose condition holds, restricted to where every read its cases proved
 * stays inside; *made false when no such point is left. */
static pm_status merged_stmt(pm_poly *poly, const pm_func *f, int i, int best,
                             __isl_take isl_set *best_dom, pm_poly_stmt *out, bool *made,
                             pm_error *err)
{
    pm_poly_stmt m = poly->stmts[i];
    *made = false;
    m.ncases = best;
    m.naccesses = 0;
    m.accesses = NULL;
    snprintf(m.name, sizeof m.name, "%s_c%d_%d", f->name, m.case_index,
             m.case_index + best - 1);
    m.domain = isl_set_set_tuple_name(best_dom, m.name);
    const pm_expr *roots[2 * MERGE_MAX];
    int nroots = 0;
    for (int c = 0; c < best; c++) {
        const pm_case *k = f->cases[m.case_index + c];
        roots[nroots++] = k->value;
        if (k->cond)
            roots[nroots++] = k->cond;
    }
    pm_status stt = pm_poly_stmt_accesses(poly, &m, roots, nroots, err);
    if (stt != PM_OK) {
        pm_poly_stmt_clear(&m);
        return stt;
    }
    isl_set *inside = merged_reads_inside(poly, &m, i, best, isl_set_copy(m.domain));
    bool whole = inside && isl_set_is_equal(inside, m.domain) == isl_bool_true;
    inside = inside ? stride_free_form(inside) : NULL;
    if (!inside || isl_set_is_empty(inside) != isl_bool_false) {
        isl_set_free(inside);
        pm_poly_stmt_clear(&m);
        return PM_OK;
    }
    if (!whole) { /* the accesses again, proven over the smaller domain */
        for (int a = 0; a < m.naccesses; a++)
            isl_map_free(m.accesses[a].rel);
        free(m.accesses);
        m.accesses = NULL;
        m.naccesses = 0;
        isl_set_free(m.domain);
        m.domain = inside;
        inside = NULL;
        stt = pm_poly_stmt_accesses(poly, &m, roots, nroots, err);
        if (stt != PM_OK) {
            pm_poly_stmt_clear(&m);
            return stt;
        }
    }
    isl_set_free(inside);
    pm_poly_stmt_dependences(poly, &m);
    *out = m;
    *made = true;
    return PM_OK;
}

/* Merges runs of consecutive case statements of stage st (statements st->first_stmt ..
 * *next_stmt - 1) whose domains each have a stride or residue on the innermost dimension
 * and whose union has none: one statement, valued by the first case (in order) whose
 * condition holds (cases never overlap, so that is the one that holds), over the part of
 * the union where every read proven in bounds on its own case's points stays in bounds
 * when all the cases are evaluated; the cases keep their own statements for the rest
 * (the edges). A run stays apart when a case has run-time conditions or that part is
 * empty or strided. The array has room for one more statement per run (pm_poly_new). */
static pm_status merge_strided_cases(pm_poly *poly, pm_poly_stage *st, int *next_stmt,
                                     pm_error *err)
{
    pm_func *f = st->func;
    for (int i = st->first_stmt; i + 1 < *next_stmt; i++) {
        const pm_poly_stmt *head = &poly->stmts[i];
        if (!inner_case(poly, head))
            continue;
        isl_set *best_dom = NULL;
        int best = longest_run(poly, i, *next_stmt, inner_case, &best_dom);
        if (!best)
            continue;
        pm_poly_stmt m;
        bool made = false;
        pm_status stt = merged_stmt(poly, f, i, best, best_dom, &m, &made, err);
        if (stt != PM_OK)
            return stt;
        if (!made)
            continue;
        /* the cases' own statements keep what the merged one does not cover */
        pm_poly_stmt rest[MERGE_MAX];
        int nrest = 0;
        for (int k = i; k < i + best; k++) {
            pm_poly_stmt *s = &poly->stmts[k];
            isl_set *covered = isl_set_set_tuple_id(isl_set_copy(m.domain),
                                                    isl_set_get_tuple_id(s->domain));
            s->domain = isl_set_coalesce(isl_set_subtract(s->domain, covered));
            if (isl_set_is_empty(s->domain) == isl_bool_true)
                pm_poly_stmt_clear(s);
            else
                rest[nrest++] = *s;
        }
        int add = 1 + nrest - best; /* statements gained (<= 1) */
        memmove(&poly->stmts[i + 1 + nrest], &poly->stmts[i + best],
                (size_t)(*next_stmt - i - best) * sizeof *poly->stmts);
        poly->stmts[i] = m;
        memcpy(&poly->stmts[i + 1], rest, (size_t)nrest * sizeof *rest);
        *next_stmt += add;
        if (add < 0)
            memset(&poly->stmts[*next_stmt], 0, (size_t)(-add) * sizeof *poly->stmts);
        i += nrest; /* past the edges */
    }
    return PM_OK;
}


/* ---- cases split by residue along an outer dimension: one statement, a branch ------- */

typedef struct mention {
    const pm_expr *var;
    bool found;
} mention;

static bool find_var_or_call(const pm_expr *e, void *user)
{
    mention *m = user;
    if (e->kind == PM_EXPR_CALL || (e->kind == PM_EXPR_VAR && e->id == m->var->id))
        m->found = true;
    return !m->found;
}

/* A case statement that merge_row_cases may take: a condition of its own that reads no
 * function and does not involve the innermost dimension (so it holds for a whole row),
 * and a domain with a stride or residue along some outer dimension only. */
static bool row_case(const pm_poly *poly, const pm_poly_stmt *s)
{
    const pm_func *f = poly->stages[s->stage].func;
    if (s->kind != PM_STMT_CASE || s->ncases != 1 || s->nresidual > 0 || s->ndims < 2)
        return false;
    const pm_expr *cond = f->cases[s->case_index]->cond;
    mention m = {s->vars[s->ndims - 1], false};
    if (!cond || !pm_expr_walk(cond, find_var_or_call, &m) || m.found ||
        strided_inner(s->domain, s->ndims))
        return false;
    isl_set *plain = stride_free_form(isl_set_copy(s->domain));
    isl_set_free(plain);
    return plain == NULL;
}

/* Merges runs of consecutive statements of stage st that row_case takes and whose union
 * has no stride (upsampling's even and odd rows): one statement over the union whose
 * body branches, per point, to the first case whose condition holds. Unlike
 * merge_strided_cases' select nothing else is evaluated, so each case keeps its own
 * access records (relations on its own points, proofs unchanged) and the merged
 * statement covers the whole union. isl builds one loop nest where it built one per
 * residue, each with its stride: pyramid blending's tiled group, 43 statements, took
 * 288 ms of AST with them and 149 with its 18 row cases merged into 9. */
static pm_status merge_row_cases(pm_poly *poly, pm_poly_stage *st, int *next_stmt,
                                 pm_error *err)
{
    pm_func *f = st->func;
    for (int i = st->first_stmt; i + 1 < *next_stmt; i++) {
        if (!row_case(poly, &poly->stmts[i]))
            continue;
        isl_set *best_dom = NULL;
        int best = longest_run(poly, i, *next_stmt, row_case, &best_dom);
        if (!best)
            continue;
        pm_poly_stmt m = poly->stmts[i];
        m.ncases = best;
        m.branch_cases = true;
        snprintf(m.name, sizeof m.name, "%s_c%d_%d", f->name, m.case_index,
                 m.case_index + best - 1);
        m.domain = isl_set_set_tuple_name(best_dom, m.name);
        m.naccesses = 0;
        for (int k = i; k < i + best; k++)
            m.naccesses += poly->stmts[k].naccesses;
        m.accesses = calloc(m.naccesses ? (size_t)m.naccesses : 1, sizeof *m.accesses);
        if (!m.domain || !m.accesses) {
            isl_set_free(m.domain);
            free(m.accesses);
            return pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", f->name);
        }
        int a = 0;
        for (int k = i; k < i + best; k++) {
            pm_poly_stmt *s = &poly->stmts[k];
            for (int b = 0; b < s->naccesses; b++, a++) {
                m.accesses[a] = s->accesses[b];
                if (s->accesses[b].rel)
                    m.accesses[a].rel = isl_map_set_tuple_name(isl_map_copy(s->accesses[b].rel),
                                                               isl_dim_in, m.name);
            }
            pm_poly_stmt_clear(s);
        }
        pm_poly_stmt_dependences(poly, &m);
        memmove(&poly->stmts[i + 1], &poly->stmts[i + best],
                (size_t)(*next_stmt - i - best) * sizeof *poly->stmts);
        poly->stmts[i] = m;
        *next_stmt -= best - 1;
        memset(&poly->stmts[*next_stmt], 0, (size_t)(best - 1) * sizeof *poly->stmts);
    }
    return PM_OK;
}

/* ---- border pieces: one statement per convex piece ------------------------------------ */

#define SPLIT_MAX_PIECES 8

typedef struct piece_list {
    isl_basic_set *piece[SPLIT_MAX_PIECES];
    int n;
    bool too_many;
} piece_list;

static isl_stat add_piece(__isl_take isl_basic_set *b, void *user)
{
    piece_list *l = user;
    if (l->n == SPLIT_MAX_PIECES) {
        l->too_many = true;
        isl_basic_set_free(b);
        return isl_stat_error;
    }
    l->piece[l->n++] = b;
    return isl_stat_ok;
}

/* The coefficients of constraint c over every variable but set dimension skip, and its
 * constant, as isl values appended to out (n of them; NULL on failure). */
static isl_val **others(__isl_keep isl_constraint *c, int skip, int *n)
{
    static const enum isl_dim_type kinds[] = {isl_dim_param, isl_dim_set, isl_dim_div};
    int total = 1;
    for (int k = 0; k < 3; k++)
        total += (int)isl_constraint_dim(c, kinds[k]);
    isl_val **v = calloc((size_t)total, sizeof *v);
    int m = 0;
    for (int k = 0; v && k < 3; k++)
        for (int i = 0; i < (int)isl_constraint_dim(c, kinds[k]); i++)
            if (!(kinds[k] == isl_dim_set && i == skip))
                v[m++] = isl_constraint_get_coefficient_val(c, kinds[k], i);
    if (v)
        v[m++] = isl_constraint_get_constant_val(c);
    *n = m;
    return v;
}

static void vals_free(isl_val **v, int n)
{
    for (int i = 0; v && i < n; i++)
        isl_val_free(v[i]);
    free(v);
}

/* Does piece pc bound dimension d to at most 4 points by itself: an equality fixing it
 * (x = 0, y = N - 1), or a lower and an upper bound whose sum is a constant c with
 * c / k <= 3 (0 <= x <= 1, R + 2 <= x <= R + 3)? Constraints one at a time and in pairs
 * only: no integer programming (a strip bounded any other way is left vectorized). */
static bool narrow_dim(__isl_keep isl_constraint_list *cl, int d)
{
    isl_size n = isl_constraint_list_n_constraint(cl);
    bool narrow = false;
    for (int a = 0; a < n && !narrow; a++) {
        isl_constraint *ca = isl_constraint_list_get_constraint(cl, a);
        isl_val *ka = isl_constraint_get_coefficient_val(ca, isl_dim_set, d);
        int na = 0;
        isl_val **va = isl_val_is_zero(ka) == isl_bool_false ? others(ca, d, &na) : NULL;
        if (va && isl_constraint_is_equality(ca) == isl_bool_true) {
            /* fixed by parameters alone: every set and div coefficient zero */
            bool fixed = true;
            int np = (int)isl_constraint_dim(ca, isl_dim_param);
            for (int i = np; i < na - 1 && fixed; i++)
                fixed = isl_val_is_zero(va[i]) == isl_bool_true;
            narrow = fixed;
        }
        for (int b = 0; va && !narrow && b < n && isl_constraint_is_equality(ca) == isl_bool_false;
             b++) {
            isl_constraint *cb = isl_constraint_list_get_constraint(cl, b);
            isl_val *kb = isl_constraint_get_coefficient_val(cb, isl_dim_set, d);
            int nb = 0;
            isl_val *minus_kb = isl_val_neg(isl_val_copy(kb));
            bool pair = isl_constraint_is_equality(cb) == isl_bool_false &&
                        isl_val_is_pos(ka) == isl_bool_true &&
                        isl_val_eq(ka, minus_kb) == isl_bool_true;
            isl_val_free(minus_kb);
            isl_val **vb = pair ? others(cb, d, &nb) : NULL;
            bool cancel = vb && nb == na;
            for (int i = 0; cancel && i < na - 1; i++) {
                isl_val *sum = isl_val_add(isl_val_copy(va[i]), isl_val_copy(vb[i]));
                cancel = isl_val_is_zero(sum) == isl_bool_true;
                isl_val_free(sum);
            }
            if (cancel) { /* k x >= -c_a and k x <= c_b: (c_a + c_b) / k + 1 points */
                isl_val *width = isl_val_div(isl_val_add(isl_val_copy(va[na - 1]),
                                                         isl_val_copy(vb[nb - 1])),
                                             isl_val_copy(ka));
                narrow = width && isl_val_cmp_si(width, 3) <= 0;
                isl_val_free(width);
            }
            vals_free(vb, nb);
            isl_val_free(kb);
            isl_constraint_free(cb);
        }
        vals_free(va, na);
        isl_val_free(ka);
        isl_constraint_free(ca);
    }
    return narrow;
}

/* Bit d set when the piece spans at most 4 points along dimension d for every parameter
 * value, as its own constraints show (narrow_dim). */
static unsigned narrow_dims(__isl_keep isl_basic_set *piece, int ndims)
{
    unsigned bits = 0;
    isl_constraint_list *cl = isl_basic_set_get_constraint_list(piece);
    for (int d = 0; cl && d < ndims && d < 32; d++)
        if (narrow_dim(cl, d))
            bits |= 1u << d;
    isl_constraint_list_free(cl);
    return bits;
}

/* Statement i (a case whose domain is a union, such as a border case holding on the first
 * and last rows and columns) as one statement per disjoint convex piece of its domain,
 * named f_cK_pJ, each with the case's value and a copy of its accesses (relations are over
 * the whole statement space, as stmt_accesses builds them, so every proof stays true).
 * isl then builds every piece's loops from a convex set: local Laplacian's fused AST takes
 * 920 ms instead of 1319, and a border piece becomes a short loop of its own instead of a
 * branch in every row of the interior's loop. Returns the statements now in its place
 * (1 when left whole: convex, more than SPLIT_MAX_PIECES pieces, a name too long, or out
 * of memory), -1 when isl failed. */
static int split_pieces(pm_poly *poly, int i, int *next_stmt, int *cap)
{
    pm_poly_stmt *s = &poly->stmts[i];
    isl_size nb = isl_set_n_basic_set(s->domain);
    if (nb < 0)
        return -1;
    if (s->kind != PM_STMT_CASE || nb <= 1 || strlen(s->name) > 80)
        return 1;
    isl_set *disjoint = isl_set_make_disjoint(isl_set_copy(s->domain));
    piece_list l = {.n = 0};
    isl_stat ok = disjoint ? isl_set_foreach_basic_set(disjoint, add_piece, &l) : isl_stat_error;
    isl_set_free(disjoint);
    int k = l.n;
    bool whole = l.too_many || k <= 1;
    if (!whole) { /* k - 1 more than reserved: the later stages keep their reservations */
        pm_poly_stmt *grown = realloc(poly->stmts, (size_t)(*cap + k - 1) * sizeof *grown);
        if (grown) {
            memset(grown + *cap, 0, (size_t)(k - 1) * sizeof *grown);
            poly->stmts = grown;
            *cap += k - 1;
        }
        whole = !grown;
    }
    s = &poly->stmts[i]; /* the array may have moved */
    pm_poly_access *acc[SPLIT_MAX_PIECES] = {NULL};
    for (int j = 0; j < k && !whole; j++) {
        acc[j] = calloc(s->naccesses ? (size_t)s->naccesses : 1, sizeof *acc[j]);
        whole = !acc[j];
    }
    if (ok != isl_stat_ok && !l.too_many)
        k = -1;
    if (whole || k < 0) {
        for (int j = 0; j < l.n; j++) {
            isl_basic_set_free(l.piece[j]);
            free(acc[j]);
        }
        return k < 0 ? -1 : 1;
    }
    pm_poly_stmt whole_stmt = *s;
    memmove(&poly->stmts[i + k], &poly->stmts[i + 1],
            (size_t)(*next_stmt - i - 1) * sizeof *poly->stmts);
    for (int j = 0; j < k; j++) {
        pm_poly_stmt *p = &poly->stmts[i + j];
        *p = whole_stmt;
        snprintf(p->name, sizeof p->name, "%.80s_p%d", whole_stmt.name, j);
        p->piece = j;
        p->border_dims = narrow_dims(l.piece[j], p->ndims);
        p->domain = isl_set_set_tuple_name(isl_set_from_basic_set(l.piece[j]), p->name);
        p->accesses = acc[j];
        for (int a = 0; a < whole_stmt.naccesses; a++) {
            p->accesses[a] = whole_stmt.accesses[a];
            if (whole_stmt.accesses[a].rel)
                p->accesses[a].rel = isl_map_set_tuple_name(
                    isl_map_copy(whole_stmt.accesses[a].rel), isl_dim_in, p->name);
        }
    }
    pm_poly_stmt_clear(&whole_stmt);
    *next_stmt += k - 1;
    for (int j = 0; j < k; j++)
        if (!poly->stmts[i + j].domain)
            return -1;
    return k;
}

/* ---- a stage's cases as one statement ------------------------------------------------ */

#define PARTS_MAX 16

/* Statement s may be a part of a merged statement: a case without run-time conditions
 * that reads no value of its own function (so the order of a row's points is free), on
 * one convex piece with no stride or residue along the innermost dimension (so each
 * row holds one interval of it). */
static bool part_ok(const pm_poly *poly, const pm_poly_stmt *s)
{
    const pm_func *f = poly->stages[s->stage].func;
    if (s->kind != PM_STMT_CASE || s->nresidual > 0 || s->ndims < 1 || !s->domain)
        return false;
    for (int a = 0; a < s->naccesses; a++)
        if (s->accesses[a].callee == f)
            return false;
    return isl_set_n_basic_set(s->domain) == 1 && !strided_inner(s->domain, s->ndims);
}

/* dom (taken) with m's outer dimensions as the parameters m->row_id, no tuple: a set of
 * the innermost coordinate alone. */
static __isl_give isl_set *rows_as_params(const pm_poly_stmt *m, __isl_take isl_set *dom)
{
    int outer = m->ndims - 1;
    for (int d = 0; d < outer; d++)
        dom = isl_set_set_dim_id(dom, isl_dim_set, (unsigned)d, isl_id_copy(m->row_id[d]));
    dom = isl_set_reset_tuple_id(dom);
    isl_size np = isl_set_dim(dom, isl_dim_param);
    return np < 0 ? isl_set_free(dom)
                  : isl_set_move_dims(dom, isl_dim_param, (unsigned)np, isl_dim_set, 0,
                                      (unsigned)outer);
}

typedef struct bounds_walk {
    pm_poly_part_bounds *b;
    int cap;
    bool ok;
    isl_aff_list *known;     /* conditions every row of the merged statement meets */
} bounds_walk;

/* Is the row condition aff >= 0 one of w->known, so always met (an equality is kept)? A
 * plain comparison (isl_set_gist_params per part cost local Laplacian 30 ms). */
static bool known_row(const bounds_walk *w, __isl_keep isl_aff *aff, bool eq)
{
    isl_size n = isl_aff_list_size(w->known);
    for (int i = 0; !eq && i < n; i++) {
        isl_aff *k = isl_aff_list_get_at(w->known, i);
        isl_bool same = isl_aff_plain_is_equal(k, aff);
        isl_aff_free(k);
        if (same == isl_bool_true)
            return true;
    }
    return false;
}

static isl_stat add_known(__isl_take isl_constraint *c, void *user)
{
    isl_aff_list **list = user;
    bool eq = isl_constraint_is_equality(c) == isl_bool_true;
    isl_aff *aff = isl_constraint_get_aff(c);
    isl_constraint_free(c);
    if (eq) /* e == 0: both e >= 0 and -e >= 0 */
        *list = isl_aff_list_add(*list, isl_aff_neg(isl_aff_copy(aff)));
    *list = isl_aff_list_add(*list, aff);
    return *list ? isl_stat_ok : isl_stat_error;
}

/* The conditions of rows' constraints (a parameter set of one convex piece), as affine
 * expressions that are >= 0; an empty list when rows has several pieces. */
static __isl_give isl_aff_list *known_rows(__isl_keep isl_set *rows)
{
    isl_aff_list *list = isl_aff_list_alloc(isl_set_get_ctx(rows), 8);
    isl_basic_set_list *bl = isl_set_get_basic_set_list(rows);
    if (bl && isl_basic_set_list_n_basic_set(bl) == 1) {
        isl_basic_set *bs = isl_basic_set_list_get_basic_set(bl, 0);
        if (isl_basic_set_foreach_constraint(bs, add_known, &list) != isl_stat_ok)
            list = isl_aff_list_clear(list);
        isl_basic_set_free(bs);
    }
    isl_basic_set_list_free(bl);
    return list;
}

static void bounds_add(bounds_walk *w, __isl_take isl_aff *aff, int kind)
{
    pm_poly_part_bounds *b = w->b;
    if (w->ok && b->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 8;
        isl_aff **a = realloc(b->aff, (size_t)w->cap * sizeof *a);
        b->aff = a ? a : b->aff;
        int *k = a ? realloc(b->kind, (size_t)w->cap * sizeof *k) : NULL;
        b->kind = k ? k : b->kind;
        w->ok = a && k;
    }
    /* the innermost coordinate (coefficient 0 here) leaves the expression's space */
    if (aff && isl_aff_dim(aff, isl_dim_in) > 0)
        aff = isl_aff_project_domain_on_params(aff);
    w->ok = w->ok && aff;
    if (!w->ok) {
        isl_aff_free(aff);
        return;
    }
    b->aff[b->n] = aff;
    b->kind[b->n++] = kind;
}

static isl_stat bound_of_constraint(__isl_take isl_constraint *c, void *user)
{
    bounds_walk *w = user;
    isl_val *k = isl_constraint_get_coefficient_val(c, isl_dim_set, 0);
    bool eq = isl_constraint_is_equality(c) == isl_bool_true;
    if (!k) {
        w->ok = false;
    } else if (isl_val_is_zero(k) == isl_bool_true) {
        isl_aff *row = isl_aff_project_domain_on_params(isl_constraint_get_aff(c));
        if (row && known_row(w, row, eq))
            isl_aff_free(row);
        else
            bounds_add(w, row, eq ? PM_BOUND_ROW_EQ : PM_BOUND_ROW_GE);
    } else {
        bool lower = eq || isl_val_is_pos(k) == isl_bool_true;
        bool upper = eq || !lower;
        isl_aff *bound = isl_constraint_get_bound(c, isl_dim_set, 0);
        if (lower)
            bounds_add(w, isl_aff_ceil(isl_aff_copy(bound)), PM_BOUND_LOWER);
        if (upper)
            bounds_add(w, isl_aff_floor(isl_aff_copy(bound)), PM_BOUND_UPPER);
        isl_aff_free(bound);
    }
    isl_val_free(k);
    isl_constraint_free(c);
    return w->ok ? isl_stat_ok : isl_stat_error;
}

/* The bounds of a part (one convex piece, its outer dimensions as parameters: a set of
 * the innermost coordinate alone) read off its constraints, those on the row that the
 * merged statement's own rows (`known`) state left out, without isl's parametric
 * optimum (a dim_min and dim_max per part cost local Laplacian 480 ms, the AST
 * expressions of the bounds 30 ms). False when the part has an existential isl cannot
 * express, no lower or no upper bound, or isl failed. */
static bool part_bounds(__isl_keep isl_aff_list *known, __isl_take isl_set *part,
                        pm_poly_part_bounds *b)
{
    isl_basic_set_list *list = part ? isl_set_get_basic_set_list(part) : NULL;
    isl_set_free(part);
    isl_basic_set *bs = list && isl_basic_set_list_n_basic_set(list) == 1
                            ? isl_basic_set_list_get_basic_set(list, 0)
                            : NULL;
    isl_basic_set_list_free(list);
    isl_local_space *ls = bs ? isl_basic_set_get_local_space(bs) : NULL;
    bool ok = ls != NULL;
    isl_size ndiv = ls ? isl_local_space_dim(ls, isl_dim_div) : 0;
    for (int i = 0; ok && i < ndiv; i++) {
        isl_aff *d = isl_local_space_get_div(ls, i);
        ok = d && isl_aff_is_nan(d) == isl_bool_false;
        isl_aff_free(d);
    }
    isl_local_space_free(ls);
    bounds_walk w = {.b = b, .ok = ok, .known = known};
    if (ok)
        ok = isl_basic_set_foreach_constraint(bs, bound_of_constraint, &w) == isl_stat_ok && w.ok;
    isl_basic_set_free(bs);
    bool lower = false, upper = false;
    for (int i = 0; i < b->n; i++) {
        lower = lower || b->kind[i] == PM_BOUND_LOWER;
        upper = upper || b->kind[i] == PM_BOUND_UPPER;
    }
    return ok && lower && upper;
}

/* m's access records: one per call of its parts, proven in bounds when every part that
 * makes it proved it; its relation restricted to the part's points when one part makes
 * the call, else as the parts have it, over the whole space (pieces of one case: their
 * union would cost a coalescing per call). False when out of memory. */
static bool parts_accesses(pm_poly_stmt *m)
{
    int total = 0;
    for (int p = 0; p < m->nparts; p++)
        total += m->parts[p].naccesses;
    m->accesses = calloc(total ? (size_t)total : 1, sizeof *m->accesses);
    int *by = calloc(total ? (size_t)total : 1, sizeof *by); /* the part, or -1 for several */
    bool ok = m->accesses && by;
    for (int p = 0; p < m->nparts && ok; p++) {
        const pm_poly_stmt *s = &m->parts[p];
        for (int a = 0; a < s->naccesses; a++) {
            const pm_poly_access *acc = &s->accesses[a];
            int j = 0;
            while (j < m->naccesses && m->accesses[j].call != acc->call)
                j++;
            if (j == m->naccesses) {
                m->accesses[m->naccesses++] = *acc;
                by[j] = p;
            } else {
                m->accesses[j].in_bounds = m->accesses[j].in_bounds && acc->in_bounds;
                by[j] = -1;
            }
        }
    }
    for (int j = 0; j < m->naccesses; j++) { /* the parts' relations, copied */
        pm_poly_access *acc = &m->accesses[j];
        bool affine = acc->rel != NULL;
        isl_map *r = ok ? isl_map_copy(acc->rel) : NULL;
        if (r && by[j] >= 0)
            r = isl_map_intersect_domain(r, isl_set_copy(m->parts[by[j]].domain));
        acc->rel = r ? isl_map_set_tuple_name(r, isl_dim_in, m->name) : NULL;
        ok = ok && (acc->rel || !affine);
    }
    free(by);
    return ok;
}

static int row_marker[PM_MAX_DIMS]; /* the row ids' user pointers: not a pm_expr */

/* The statements of stage st, when they are two or more cases that part_ok takes (a
 * body and the border pieces of its frame, the cases of an up-sampling and its edges),
 * become the parts of one statement over the function's box (poly.h). isl builds
 * loops for one statement instead of one per piece: its AST costs 2-6 ms per statement
 * in a tiled group, and interpolate's and local Laplacian's frames of zeros were a
 * body and four border pieces per stage (interpolate's compile 738 -> 423 ms, local
 * Laplacian's 1328 -> 773, their AST 430 -> 95 and 595 -> 81 ms; run 1-3% slower at
 * one thread: a row runs a loop per part). The LLVM phase splits each row's loop at
 * the parts' intervals (llvm/vector.c, pm_llvm_parts_for). Left as they are when a
 * part's bounds cannot be read off its constraints (part_bounds). */
static void merge_parts(pm_poly *poly, pm_poly_stage *st, int *next_stmt)
{
    int first = st->first_stmt, n = *next_stmt - first;
    if (n < 2 || n > PARTS_MAX)
        return;
    for (int i = 0; i < n; i++)
        if (!part_ok(poly, &poly->stmts[first + i]))
            return;
    const pm_poly_stmt *head = &poly->stmts[first];
    pm_poly_stmt m = {.stage = head->stage, .kind = PM_STMT_CASE,
                      .case_index = head->case_index, .ncases = 1, .ndims = head->ndims,
                      .vars = head->vars, .nparts = n};
    snprintf(m.name, sizeof m.name, "%s", st->func->name);
    /* the function's box, not the parts' union (its coalescing cost local Laplacian 25
     * ms): a point no part holds computes nothing */
    m.domain = pm_poly_var_domain(poly, &poly->storage[st->storage], m.name);
    m.parts = malloc((size_t)n * sizeof *m.parts);
    m.part_bounds = calloc((size_t)n, sizeof *m.part_bounds);
    bool ok = m.domain && m.parts && m.part_bounds;
    if (ok)
        memcpy(m.parts, head, (size_t)n * sizeof *m.parts);
    ok = ok && parts_accesses(&m);
    for (int d = 0; ok && d < m.ndims - 1; d++)
        ok = (m.row_id[d] = isl_id_alloc(poly->ctx, m.vars[d]->name, &row_marker[d])) != NULL;
    isl_set *rows = ok ? isl_set_params(rows_as_params(&m, isl_set_copy(m.domain))) : NULL;
    isl_aff_list *known = rows ? known_rows(rows) : NULL;
    ok = ok && known;
    for (int p = 0; p < n && ok; p++)
        ok = part_bounds(known, rows_as_params(&m, isl_set_copy(m.parts[p].domain)),
                         &m.part_bounds[p]);
    isl_aff_list_free(known);
    isl_set_free(rows);
    if (!ok) { /* the parts stay the stage's statements */
        int np = m.nparts;
        m.nparts = 0;
        for (int p = 0; m.part_bounds && p < np; p++)
            pm_poly_part_bounds_clear(&m.part_bounds[p]);
        pm_poly_stmt_clear(&m);
        return;
    }
    pm_poly_stmt_dependences(poly, &m);
    poly->stmts[first] = m;
    memmove(&poly->stmts[first + 1], &poly->stmts[first + n],
            (size_t)(*next_stmt - first - n) * sizeof *poly->stmts);
    *next_stmt -= n - 1;
    memset(&poly->stmts[*next_stmt], 0, (size_t)(n - 1) * sizeof *poly->stmts);
}


/* A function's statements (at the array's end) merged and split. */
static pm_status shape_stage(pm_poly *poly, pm_poly_stage *st, int *next, pm_error *err)
{
    const pm_func *f = st->func;
    if (f->kind == PM_FUNC_FUNCTION) {
        pm_status merged = merge_strided_cases(poly, st, next, err);
        if (merged == PM_OK)
            merged = merge_row_cases(poly, st, next, err);
        if (merged != PM_OK)
            return merged;
        for (int i = st->first_stmt; i < *next; i++) {
            int k = split_pieces(poly, i, next, &poly->stmts_cap);
            if (k < 0)
                return pm_error_set(err, PM_ERR_INTERNAL, "%s: isl could not split %s",
                                    f->name, poly->stmts[i].name);
            i += k - 1;
        }
        merge_parts(poly, st, next);
    }
    st->nstmts = *next - st->first_stmt;
    stage_agree(poly, st);
    return PM_OK;
}

pm_status pm_cases_shape(pm_poly *poly, pm_error *err)
{
    pm_poly_stmt *raw = poly->stmts;
    int nraw = poly->nstmts;
    poly->stmts = calloc((size_t)poly->stmts_cap, sizeof *poly->stmts);
    if (!poly->stmts) {
        poly->stmts = raw;
        return pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", poly->pipeline->name);
    }
    /* each stage's statements move (with what they own) to the end of the fresh array */
    int next = 0;
    pm_status s = PM_OK;
    for (int i = 0; i < poly->nstages && s == PM_OK; i++) {
        pm_poly_stage *st = &poly->stages[i];
        memcpy(&poly->stmts[next], &raw[st->first_stmt], (size_t)st->nstmts * sizeof *raw);
        memset(&raw[st->first_stmt], 0, (size_t)st->nstmts * sizeof *raw);
        st->first_stmt = next;
        next += st->nstmts;
        poly->nstmts = next;
        s = shape_stage(poly, st, &next, err);
        poly->nstmts = next;
    }
    for (int i = 0; i < nraw; i++) /* left behind by a failure */
        pm_poly_stmt_clear(&raw[i]);
    free(raw);
    return s;
}
