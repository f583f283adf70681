/* schedule.c — the schedule tree of a pipeline (see schedule.h).
 *
 * Shape: a band per unfused stage (band_schedule; a reduction's updates in the order of
 * update_order, privatized rows of bins when they fit); a tiled group's tree
 * (group_schedule: tile_band, the producers' extensions, row blocks, the marks); the
 * parallel dimensions (pm_schedule_parallel_dims); the sequence of the groups.
 */
#include "codegen/schedule.h"

#include "codegen/tile.h"

#include <isl/aff.h> /* before isl_multi_union_pw_aff_* (see DESIGN.md) */
#include <isl/constraint.h>
#include <isl/id.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/schedule_node.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/schedule.h>
#include <isl/set.h>
#include <isl/ilp.h>
#include <isl/val.h>
#include <stdbool.h>
#include <stdlib.h>

/* { S[x0..xn-1] -> [x0..xn-1] } for the statements first..first+n-1, as the band's
 * partial schedule. */
static __isl_give isl_multi_union_pw_aff *identity_band(const pm_poly *poly, int first, int n)
{
    isl_union_map *um = NULL;
    for (int i = first; i < first + n; i++) {
        isl_space *sp = isl_set_get_space(poly->stmts[i].domain);
        isl_map *m = isl_map_identity(isl_space_map_from_set(sp));
        m = isl_map_reset_tuple_id(m, isl_dim_out);
        m = isl_map_intersect_domain(m, isl_set_copy(poly->stmts[i].domain));
        isl_union_map *u = isl_union_map_from_map(m);
        um = um ? isl_union_map_union(um, u) : u;
    }
    return isl_multi_union_pw_aff_from_union_map(um);
}

static __isl_give isl_union_set *domains(const pm_poly *poly, int first, int n)
{
    isl_union_set *us = isl_union_set_empty(isl_space_copy(poly->params));
    for (int i = first; i < first + n; i++)
        us = isl_union_set_add_set(us, isl_set_copy(poly->stmts[i].domain));
    return us;
}

/* Do statements first..first+n-1 have any point (for some parameter values)? */
static bool nonempty(const pm_poly *poly, int first, int n)
{
    isl_union_set *dom = domains(poly, first, n);
    isl_bool empty = isl_union_set_is_empty(dom);
    isl_union_set_free(dom);
    return empty == isl_bool_false;
}

/* The schedule of band node's tree with band member k (and those after it) under a
 * "parallel" mark, the band split there when k > 0; no mark when k < 0. */
static __isl_give isl_schedule *parallel_from(__isl_take isl_schedule_node *node, int k)
{
    if (k >= 0) {
        if (k > 0) {
            node = isl_schedule_node_band_split(node, k);
            node = isl_schedule_node_child(node, 0);
        }
        isl_ctx *ctx = isl_schedule_node_get_ctx(node);
        node = isl_schedule_node_insert_mark(node, isl_id_alloc(ctx, PM_MARK_PARALLEL, NULL));
    }
    isl_schedule *sched = isl_schedule_node_get_schedule(node);
    isl_schedule_node_free(node);
    return sched;
}

/* ---- the order of a reduction's updates ------------------------------------------------ */

/* A window of contributions per cell at most this many updates: moving a cell column
 * loop inside it keeps the window's rows in cache (bilateral grid: 9 x 9). */
enum { PM_UPDATE_WINDOW_MAX = 1024 };

static bool constant_extent(const pm_interval *iv, int64_t *n)
{
    if (iv->lb->kind != PM_EXPR_INT || iv->ub->kind != PM_EXPR_INT || iv->step <= 0)
        return false;
    *n = iv->ub->ival < iv->lb->ival ? 0 : (iv->ub->ival - iv->lb->ival) / iv->step + 1;
    return true;
}

/* The loop order of a reduction's updates, outermost first, into order[]; false when it
 * stays the reduction domain's own. Two moves, each keeping every cell's updates in
 * their order (poly.h: they only move dimensions along which no two updates share a
 * cell):
 *  - the free channel dimension goes innermost: what the channels share (the input
 *    read, a histogram's bin) is computed once per point of the rest once LLVM unrolls
 *    the short channel loop (bilateral grid read and binned its input once per channel);
 *  - when the innermost dimensions are a small constant window of contributions to one
 *    cell, the last cell dimension before them moves inside the window: in the
 *    reduction's own order each update waited for the previous one's read-modify-write
 *    of the same cell (a histogram of a smooth picture bins neighbours alike), inside
 *    the window consecutive updates go to different cells and overlap (bilateral grid's
 *    grid: for each of the 9 x 9 window offsets, a row of cells). The parallel
 *    dimension stays outside. */
static bool update_order(const pm_poly *poly, const pm_plan *plan, const pm_poly_stmt *s,
                         int *order, int *moved)
{
    int si = (int)(s - poly->stmts);
    int n = s->ndims, ch = plan->channel_dim[si];
    *moved = -1;
    const pm_func *f = poly->stages[s->stage].func;
    int column = -1;
    for (int k = n - 1; k > plan->parallel_dim[si] && k >= 0; k--) {
        if (k == ch)
            continue;
        if (k < 32 && (s->distinct_cell_dims & (1u << k))) {
            column = k;
            break;
        }
    }
    if (column >= 0) {
        int64_t window = 1;
        bool inside = false;
        for (int k = column + 1; k < n && column >= 0; k++) {
            int64_t e;
            if (k == ch)
                continue;
            if (!constant_extent(f->rintervals[k], &e) || e > PM_UPDATE_WINDOW_MAX ||
                (window *= e) > PM_UPDATE_WINDOW_MAX)
                column = -1;
            inside = true;
        }
        if (!inside)
            column = -1;
    }
    if (ch < 0 && column < 0)
        return false;
    int j = 0;
    for (int k = 0; k < n; k++)
        if (k != ch && k != column)
            order[j++] = k;
    if (column >= 0)
        order[j++] = column;
    if (ch >= 0)
        order[j++] = ch;
    *moved = column;
    return true;
}

/* Rows of bins (poly.h: bin_extent) accumulate in registers when a column moved inside
 * the window (update_order) and: the bin has at most `lanes` points; no written index
 * but the bin's mentions a window dimension (every contribution to a lane's row of bins
 * is made inside one block of lanes); the channels' rows are distinct; the column has a
 * constant lower bound and unit step (blocks of `lanes` columns from it). The emitter
 * (PM_MARK_PRIVATE) then loads each lane's row of bins once before the window and
 * stores it once after, each update a compare and a masked operation per bin, instead
 * of a gather and a scatter of the cell per update (bilateral grid's histogram: 15 bins,
 * 9 x 9 windows). The order of each cell's updates is unchanged: the block loop only
 * splits the column, which the window's loops already enclosed. */
static bool private_rows(const pm_poly *poly, const pm_plan *plan, const pm_poly_stmt *s,
                         int column, int lanes)
{
    const pm_func *f = poly->stages[s->stage].func;
    int ch = plan->channel_dim[s - poly->stmts];
    if (lanes <= 1 || column < 0 || s->bin_extent <= 0 || s->bin_extent > lanes ||
        f->rintervals[column]->lb->kind != PM_EXPR_INT || f->rintervals[column]->step != 1 ||
        (ch >= 0 && (ch >= 32 || (s->row_free_dims & (1u << ch)))))
        return false;
    for (int k = column + 1; k < s->ndims; k++)
        if (k != ch && (k >= 32 || !(s->row_free_dims & (1u << k))))
            return false;
    return true;
}

/* A band of the statement's domain: dims[i] is the i-th member's reduction dimension,
 * or -1 for the column's block, floor((column - lb) / lanes). */
static __isl_give isl_multi_union_pw_aff *update_band(const pm_poly_stmt *s, const int *dims,
                                                      int n, int column, long long lb, int lanes)
{
    isl_space *sp = isl_set_get_space(s->domain);
    isl_space *range = isl_space_set_from_params(isl_space_params(isl_space_copy(sp)));
    range = isl_space_add_dims(range, isl_dim_set, (unsigned)n);
    isl_space *to = isl_space_map_from_domain_and_range(isl_space_copy(sp), range);
    isl_aff_list *out = isl_aff_list_alloc(isl_space_get_ctx(sp), n);
    for (int j = 0; j < n; j++) {
        int k = dims[j] >= 0 ? dims[j] : column;
        isl_aff *a = isl_aff_var_on_domain(isl_local_space_from_space(isl_space_copy(sp)),
                                           isl_dim_set, (unsigned)k);
        if (dims[j] < 0)
            a = isl_aff_floor(isl_aff_scale_down_ui(isl_aff_add_constant_si(a, (int)-lb),
                                                    (unsigned)lanes));
        out = isl_aff_list_add(out, a);
    }
    isl_space_free(sp);
    isl_map *m = isl_map_from_multi_aff(isl_multi_aff_from_aff_list(to, out));
    m = isl_map_intersect_domain(m, isl_set_copy(s->domain));
    return isl_multi_union_pw_aff_from_union_map(isl_union_map_from_map(m));
}

/* update_order's loops with the column split into blocks of `lanes` (private_rows): the
 * outer dimensions and the block, a PM_MARK_PRIVATE mark, then the window, the column
 * and the channel (unrolled). */
static __isl_give isl_schedule *private_schedule(const pm_poly *poly, const pm_plan *plan,
                                                 int first, const int *order, int column,
                                                 int lanes)
{
    const pm_poly_stmt *s = &poly->stmts[first];
    const pm_func *f = poly->stages[s->stage].func;
    int n = s->ndims, ch = plan->channel_dim[first];
    int outer[2 * PM_MAX_DIMS + 1], inner[2 * PM_MAX_DIMS + 1], no = 0, ni = 0, par = -1;
    for (int j = 0; j < n; j++) {
        int k = order[j];
        if (k == column || k == ch || k > column) {
            inner[ni++] = k;
        } else {
            if (k == plan->parallel_dim[first])
                par = no;
            outer[no++] = k;
        }
    }
    outer[no++] = -1; /* the block */
    long long lb = f->rintervals[column]->lb->ival;
    isl_schedule *sched = isl_schedule_from_domain(domains(poly, first, 1));
    sched = isl_schedule_insert_partial_schedule(
        sched, update_band(s, outer, no, column, lb, lanes));
    isl_schedule_node *node = isl_schedule_get_root(sched);
    isl_schedule_free(sched);
    node = isl_schedule_node_child(isl_schedule_node_child(node, 0), 0);
    node = isl_schedule_node_insert_partial_schedule(
        node, update_band(s, inner, ni, column, lb, lanes));
    if (ch >= 0 && inner[ni - 1] == ch)
        node = isl_schedule_node_band_member_set_ast_loop_type(node, ni - 1, isl_ast_loop_unroll);
    node = isl_schedule_node_insert_mark(
        node, isl_id_alloc(isl_schedule_node_get_ctx(node), PM_MARK_PRIVATE, NULL));
    node = isl_schedule_node_parent(node);
    return parallel_from(node, par);
}

/* The band of a reduction's updates in the order of update_order. */
static __isl_give isl_schedule *update_schedule(const pm_poly *poly, const pm_plan *plan,
                                                int first, const int *order)
{
    const pm_poly_stmt *s = &poly->stmts[first];
    int n = s->ndims;
    isl_space *sp = isl_set_get_space(s->domain);
    isl_space *range = isl_space_set_from_params(isl_space_params(isl_space_copy(sp)));
    range = isl_space_add_dims(range, isl_dim_set, (unsigned)n);
    isl_space *to = isl_space_map_from_domain_and_range(isl_space_copy(sp), range);
    isl_aff_list *out = isl_aff_list_alloc(isl_space_get_ctx(sp), n);
    int par = -1;
    for (int j = 0; j < n; j++) {
        if (order[j] == plan->parallel_dim[first])
            par = j;
        out = isl_aff_list_add(out, isl_aff_var_on_domain(isl_local_space_from_space(isl_space_copy(sp)),
                                                          isl_dim_set, (unsigned)order[j]));
    }
    isl_space_free(sp);
    isl_map *m = isl_map_from_multi_aff(isl_multi_aff_from_aff_list(to, out));
    m = isl_map_intersect_domain(m, isl_set_copy(s->domain));
    isl_multi_union_pw_aff *band =
        isl_multi_union_pw_aff_from_union_map(isl_union_map_from_map(m));
    isl_schedule *sched = isl_schedule_from_domain(domains(poly, first, 1));
    sched = isl_schedule_insert_partial_schedule(sched, band);
    isl_schedule_node *node = isl_schedule_get_root(sched);
    isl_schedule_free(sched);
    node = isl_schedule_node_child(node, 0);
    /* the channel loop unrolled by isl: LLVM's unroller is off (engine), and the
     * channels' shared work (the read, the bin) is common only in straight-line code */
    if (plan->channel_dim[first] >= 0 && order[n - 1] == plan->channel_dim[first])
        node = isl_schedule_node_band_member_set_ast_loop_type(node, n - 1, isl_ast_loop_unroll);
    return parallel_from(node, par);
}

/* A schedule for statements first..first+n-1 sharing one band. */
static __isl_give isl_schedule *band_schedule(const pm_poly *poly, const pm_plan *plan, int first,
                                              int n)
{
    int lanes = plan->o.vector_width;
    const pm_poly_stmt *s = &poly->stmts[first];
    int order[PM_MAX_DIMS + PM_MAX_DIMS], column = -1;
    if (n == 1 && s->kind == PM_STMT_UPDATE && s->ndims <= (int)(sizeof order / sizeof *order) &&
        update_order(poly, plan, s, order, &column) && nonempty(poly, first, 1))
        return private_rows(poly, plan, s, column, lanes)
                   ? private_schedule(poly, plan, first, order, column, lanes)
                   : update_schedule(poly, plan, first, order);
    isl_union_set *dom = domains(poly, first, n);
    /* An empty domain has no space to build a band from (isl fails, and the failure
     * used to drop every earlier stage from the sequence: fuzz seed 18). */
    isl_bool empty = isl_union_set_is_empty(dom);
    isl_schedule *sched = isl_schedule_from_domain(dom);
    if (s->ndims == 0 || empty != isl_bool_false)
        return sched;
    sched = isl_schedule_insert_partial_schedule(sched, identity_band(poly, first, n));
    isl_schedule_node *node = isl_schedule_get_root(sched);
    isl_schedule_free(sched);
    node = isl_schedule_node_child(node, 0);
    for (int d = 0; d < s->ndims; d++)
        node = isl_schedule_node_band_member_set_ast_loop_type(node, d, isl_ast_loop_separate);
    return parallel_from(node, plan->parallel_dim[first]);
}

/* a then b; NULL when either is (a failure never silently drops a part). */
static __isl_give isl_schedule *seq(__isl_take isl_schedule *a, __isl_take isl_schedule *b)
{
    if (!a || !b) {
        isl_schedule_free(a);
        isl_schedule_free(b);
        return NULL;
    }
    return isl_schedule_sequence(a, b);
}

/* The tile band: the live-out's statements to their tile (tile.h). */
static __isl_give isl_union_map *tile_band_map(const pm_plan *plan, const pm_group *gr)
{
    return pm_tile_index_map(plan, gr);
}

/* The only map of a union map, or NULL. */
static __isl_give isl_map *single_map(__isl_keep isl_union_map *um)
{
    isl_map *m = NULL;
    isl_map_list *maps = um ? isl_union_map_get_map_list(um) : NULL;
    if (maps && isl_map_list_n_map(maps) == 1)
        m = isl_map_list_get_map(maps, 0);
    isl_map_list_free(maps);
    return m;
}

/* An identity band over a stage's statements below node. One statement: every member
 * `atomic`, one loop with min/max bounds (separating every tile-boundary case would
 * multiply the code by the pieces of every footprint). Several (case pieces): the
 * innermost member `separate`, so the pieces' conditions stay out of the vector loops,
 * the outer ones `atomic` (a branch per row, not a copy of every row loop per piece). */
static __isl_give isl_schedule_node *point_band(const pm_poly *poly, int stage,
                                                __isl_take isl_schedule_node *node)
{
    const pm_poly_stage *st = &poly->stages[stage];
    int n = poly->stmts[st->first_stmt].ndims;
    if (n == 0 || !nonempty(poly, st->first_stmt, st->nstmts))
        return node; /* no points: no band (isl cannot build one from nothing) */
    node = isl_schedule_node_insert_partial_schedule(node, identity_band(poly, st->first_stmt,
                                                                         st->nstmts));
    for (int d = 0; d < n; d++) {
        bool inner = d == n - 1 && st->nstmts > 1;
        node = isl_schedule_node_band_member_set_ast_loop_type(
            node, d, inner ? isl_ast_loop_separate : isl_ast_loop_atomic);
    }
    return node;
}

/* ---- producers sharing one point loop ------------------------------------------------ */

/* The member's only statement, or NULL (several case pieces, merged ones, or not a
 * case). */
static const pm_poly_stmt *single_stmt(const pm_poly *poly, int stage)
{
    const pm_poly_stage *st = &poly->stages[stage];
    const pm_poly_stmt *s = &poly->stmts[st->first_stmt];
    /* a merged statement's rows split at its parts (llvm/vector.c): its loop alone */
    return st->nstmts == 1 && s->kind == PM_STMT_CASE && s->ndims > 0 && s->nparts == 0 ? s
                                                                                       : NULL;
}

static bool same_set(__isl_keep isl_set *a, __isl_keep isl_set *b)
{
    isl_set *x = isl_set_reset_tuple_id(isl_set_copy(a));
    isl_set *y = isl_set_reset_tuple_id(isl_set_copy(b));
    isl_bool eq = isl_set_is_equal(x, y);
    isl_set_free(x);
    isl_set_free(y);
    return eq == isl_bool_true;
}

static bool same_box(__isl_keep isl_map *a, __isl_keep isl_map *b)
{
    isl_map *x = isl_map_reset_tuple_id(isl_map_copy(a), isl_dim_out);
    isl_map *y = isl_map_reset_tuple_id(isl_map_copy(b), isl_dim_out);
    isl_bool eq = isl_map_is_equal(x, y);
    isl_map_free(x);
    isl_map_free(y);
    return eq == isl_bool_true;
}

/* rel (S[x] -> callee[...]) reads the callee at S's own point. */
static bool reads_same_point(__isl_keep isl_map *rel)
{
    if (!rel)
        return false;
    isl_map *r = isl_map_reset_tuple_id(isl_map_copy(rel), isl_dim_out);
    isl_space *sp = isl_space_domain(isl_map_get_space(r));
    if (isl_space_dim(sp, isl_dim_set) != isl_map_dim(r, isl_dim_out)) {
        isl_space_free(sp);
        isl_map_free(r);
        return false;
    }
    isl_map *id = isl_map_reset_tuple_id(isl_map_identity(isl_space_map_from_set(sp)), isl_dim_out);
    isl_bool sub = isl_map_is_subset(r, id);
    isl_map_free(r);
    isl_map_free(id);
    return sub == isl_bool_true;
}

static bool in_run(const pm_group *gr, int first, int n, const pm_func *f, const pm_poly *poly)
{
    for (int m = first; m < first + n; m++)
        if (poly->stages[gr->members[m]].func == f)
            return true;
    return false;
}

/* Statement s's reads of run members (directly, or through inlined stages, whose reads
 * are in their own coordinates) are all at s's own point: a point loop shared with them
 * runs each producer point before the consumer's same point reads it. */
static bool reads_run_pointwise(const pm_poly *poly, const pm_plan *plan, const pm_group *gr,
                                int first, int n,
                                const pm_poly_stmt *s, bool path_same, int depth)
{
    for (int a = 0; a < s->naccesses; a++) {
        const pm_poly_access *acc = &s->accesses[a];
        bool same = path_same && reads_same_point(acc->rel);
        bool in_place = pm_plan_call_inlined(plan, acc->call);
        if (in_run(gr, first, n, acc->callee, poly) && !same && !in_place)
            return false;
        if (in_place) {
            if (depth > 32)
                return false;
            for (int i = 0; i < poly->nstages; i++)
                for (int k = 0; poly->stages[i].func == acc->callee && k < poly->stages[i].nstmts; k++)
                    if (!reads_run_pointwise(poly, plan, gr, first, n,
                                             &poly->stmts[poly->stages[i].first_stmt + k], same,
                                             depth + 1))
                        return false;
        }
    }
    return true;
}

/* How many producers from member m on share one point loop: single-statement stages
 * with the same domain and the same footprint per tile, each reading the earlier ones
 * only at its own point (Harris: Ix with Iy; Sxx, Syy, Sxy and trace). One loop then
 * loads a shared input once for all of them and keeps the loop overhead of one. */
static int fused_run(const pm_poly *poly, const pm_plan *plan, const pm_group *gr, int m)
{
    const pm_poly_stmt *s0 = single_stmt(poly, gr->members[m]);
    if (!s0)
        return 1;
    int n = 1;
    while (m + n < gr->nmembers - 1) {
        const pm_poly_stmt *s = single_stmt(poly, gr->members[m + n]);
        if (!s || s->ndims != s0->ndims || !same_set(s->domain, s0->domain) ||
            !same_box(gr->fp[m + n].box, gr->fp[m].box) ||
            !reads_run_pointwise(poly, plan, gr, m, n, s, true, 0))
            break;
        n++;
    }
    return n;
}

/* The live-out joins the last run of producers (m .. nmembers-2) in its point loop: one
 * statement, the same domain, reading the run only at its own point, and each run
 * member's per-tile points are exactly the live-out's (no halo). Harris: Sxx, Syy,
 * Sxy, trace and harris in one loop, each value used right after it is computed. */
static bool liveout_joins(const pm_poly *poly, const pm_plan *plan, const pm_group *gr, int m)
{
    int nm = gr->nmembers;
    const pm_poly_stmt *ls = single_stmt(poly, gr->liveout);
    const pm_poly_stmt *s0 = single_stmt(poly, gr->members[m]);
    if (!ls || !s0 || ls->ndims != s0->ndims || !same_set(ls->domain, s0->domain) ||
        !reads_run_pointwise(poly, plan, gr, m, nm - 1 - m, ls, true, 0))
        return false;
    isl_union_map *ti = pm_tile_index_map(plan, gr);
    isl_map *idx = single_map(ti);
    isl_union_map_free(ti);
    if (!idx)
        return false;
    isl_map *mine = isl_map_intersect_range(isl_map_reverse(idx), isl_set_copy(ls->domain));
    mine = isl_map_reset_tuple_id(mine, isl_dim_out);
    bool ok = true;
    for (int k = m; k < nm - 1 && ok; k++) {
        const pm_poly_stmt *s = single_stmt(poly, gr->members[k]);
        isl_map *box = isl_map_intersect_range(isl_map_copy(gr->fp[k].box), isl_set_copy(s->domain));
        box = isl_map_reset_tuple_id(box, isl_dim_out);
        box = isl_map_reset_tuple_id(box, isl_dim_in);
        isl_map *tmp = isl_map_reset_tuple_id(isl_map_copy(mine), isl_dim_in);
        ok = isl_map_is_equal(box, tmp) == isl_bool_true;
        isl_map_free(box);
        isl_map_free(tmp);
    }
    isl_map_free(mine);
    return ok;
}

/* Tiled groups have at most 64 members (tile.c), so a run fits. */
#define PM_SCHED_MAX_RUN 64

/* One band over the single statements of stages[0..n-1] (same domain dimensions), then a
 * sequence of them in that order below it; returns the band. */
static __isl_give isl_schedule_node *shared_band(const pm_poly *poly, const int *stages, int n,
                                                 __isl_take isl_schedule_node *node)
{
    isl_union_map *um = NULL;
    isl_union_set_list *filters = isl_union_set_list_alloc(poly->ctx, n);
    for (int k = 0; k < n; k++) {
        const pm_poly_stmt *s = single_stmt(poly, stages[k]);
        isl_map *id = isl_map_identity(isl_space_map_from_set(isl_set_get_space(s->domain)));
        id = isl_map_reset_tuple_id(id, isl_dim_out);
        isl_union_map *u = isl_union_map_from_map(isl_map_intersect_domain(id, isl_set_copy(s->domain)));
        um = um ? isl_union_map_union(um, u) : u;
        filters = isl_union_set_list_add(filters, isl_union_set_from_set(isl_set_copy(s->domain)));
    }
    int nd = single_stmt(poly, stages[0])->ndims;
    node = isl_schedule_node_insert_partial_schedule(node, isl_multi_union_pw_aff_from_union_map(um));
    for (int d = 0; d < nd; d++)
        node = isl_schedule_node_band_member_set_ast_loop_type(node, d, isl_ast_loop_atomic);
    node = isl_schedule_node_insert_sequence(isl_schedule_node_child(node, 0), filters);
    return isl_schedule_node_parent(node);
}

/* The run of producers m..m+n-1 in one band (nothing when their shared domain is empty). */
static __isl_give isl_schedule_node *fused_band(const pm_poly *poly, const pm_group *gr, int m,
                                                int n, __isl_take isl_schedule_node *node)
{
    const pm_poly_stmt *s0 = single_stmt(poly, gr->members[m]);
    if (!nonempty(poly, (int)(s0 - poly->stmts), 1))
        return node;
    return shared_band(poly, gr->members + m, n, node);
}

/* ---- rows in blocks: producers just in time -------------------------------------------- */

/* The group-space row (the outermost tiled dimension) as member m's own dimension, when
 * the member runs along it at scale 1; -1 otherwise. */
static int member_row_dim(const pm_poly *poly, const pm_group *gr, int m)
{
    int row = gr->tiled_dim[0];
    if (m == gr->nmembers - 1)
        return row;
    const pm_func *f = poly->stages[gr->members[m]].func;
    for (int d = 0; d < f->ndims; d++)
        if (gr->align[m].dim_of[d] == row)
            return gr->align[m].scale[d] == 1.0 ? d : -1;
    return -1;
}

/* The rows per block of the group's tiles, 0 for none; blocks need every member to run
 * along the rows at scale 1 (block_band). */
static int64_t block_rows_of(const pm_poly *poly, const pm_group *gr, int nruns)
{
    if (nruns <= 0 || gr->ntiled <= 0 || gr->block_rows <= 0 || gr->tile[0] % gr->block_rows != 0)
        return 0;
    for (int m = 0; m < gr->nmembers; m++)
        if (member_row_dim(poly, gr, m) < 0)
            return 0;
    return gr->block_rows;
}

/* How many rows past a tile's last row member m computes (its footprint's forward
 * reach, the most over all tiles), or -1 when unbounded or unknown. */
static int64_t forward_reach(const pm_poly *poly, const pm_group *gr, int m, int d)
{
    isl_map *box = isl_map_copy(gr->fp[m].box);
    (void)poly;
    isl_set *w = isl_map_wrap(box);
    isl_space *sp = isl_set_get_space(w);
    int ntile = gr->ntiled;
    isl_local_space *ls = isl_local_space_from_space(sp);
    /* x_d - (S * T0 + o + S - 1), o the tiles' origin */
    isl_aff *obj = isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_set,
                                         (unsigned)(ntile + d));
    isl_aff *t0 = isl_aff_scale_val(isl_aff_var_on_domain(ls, isl_dim_set, 0),
                                    isl_val_int_from_si(isl_set_get_ctx(w), gr->tile[0]));
    obj = isl_aff_sub(obj, t0);
    obj = isl_aff_add_constant_si(obj, -(int)(gr->tile[0] - 1 + gr->tile_origin[0]));
    isl_val *v = isl_set_max_val(w, obj);
    isl_aff_free(obj);
    isl_set_free(w);
    int64_t h = -1;
    if (v && isl_val_is_int(v) && isl_val_cmp_si(v, 1 << 20) < 0)
        h = isl_val_cmp_si(v, 0) > 0 ? isl_val_get_num_si(v) : 0;
    isl_val_free(v);
    return h;
}

/* The block band: statement instance at row r of member m (reach h_m) to block
 * floor((r - h_m - o) / B), o the tiles' origin (blocks start with the tiles). A
 * producer's row is computed in the block of the first live-out row that needs it,
 * before that row (the sequence below keeps members in topological order), so what a
 * block reads was computed in it or in an earlier block of the tile;
 * NULL when some member does not run along the rows at scale 1. Members from `from` on
 * (a box body's producers are not in the tree: pm_schedule_box_blocks). */
static __isl_give isl_multi_union_pw_aff *block_band(const pm_poly *poly, const pm_group *gr,
                                                     int64_t B, int from)
{
    isl_union_map *um = NULL;
    for (int m = from; m < gr->nmembers; m++) {
        int d = member_row_dim(poly, gr, m);
        int64_t h = d < 0 ? -1 : m == gr->nmembers - 1 ? 0 : forward_reach(poly, gr, m, d);
        if (h < 0) {
            isl_union_map_free(um);
            return NULL;
        }
        const pm_poly_stage *st = &poly->stages[gr->members[m]];
        for (int i = st->first_stmt; i < st->first_stmt + st->nstmts; i++) {
            const pm_poly_stmt *sm = &poly->stmts[i];
            isl_space *sp = isl_set_get_space(sm->domain);
            isl_aff *a = isl_aff_var_on_domain(isl_local_space_from_space(isl_space_copy(sp)),
                                               isl_dim_set, (unsigned)d);
            a = isl_aff_add_constant_si(a, -(int)(h + gr->tile_origin[0]));
            a = isl_aff_floor(isl_aff_scale_down_ui(a, (unsigned)B));
            isl_space_free(sp);
            isl_map *mp = isl_map_intersect_domain(isl_map_from_aff(a), isl_set_copy(sm->domain));
            isl_union_map *u = isl_union_map_from_map(mp);
            um = um ? isl_union_map_union(um, u) : u;
        }
    }
    return um ? isl_multi_union_pw_aff_from_union_map(um) : NULL;
}

/* ---- producers as boxes of loops ------------------------------------------------------ */

/* One constraint of a box: it involves at most one out dimension. */
static isl_stat box_constraint(__isl_take isl_constraint *c, void *user)
{
    isl_size n = isl_constraint_dim(c, isl_dim_out);
    int involved = 0;
    for (int d = 0; d < n; d++)
        involved += isl_constraint_involves_dims(c, isl_dim_out, (unsigned)d, 1) == isl_bool_true;
    isl_constraint_free(c);
    if (involved > 1)
        *(bool *)user = false;
    return isl_stat_ok;
}

/* Member m's points per tile are a box: one statement (a case, possibly merged), its
 * footprint intersected with its domain one convex piece (or empty) without
 * existentials whose every constraint bounds one coordinate. */
static bool member_box(const pm_poly *poly, const pm_group *gr, int m)
{
    const pm_poly_stage *st = &poly->stages[gr->members[m]];
    const pm_poly_stmt *s = &poly->stmts[st->first_stmt];
    if (st->nstmts != 1 || s->kind != PM_STMT_CASE || s->ndims <= 0)
        return false;
    isl_map *box = isl_map_set_tuple_id(isl_map_copy(gr->fp[m].box), isl_dim_out,
                                        isl_set_get_tuple_id(s->domain));
    box = isl_map_intersect_range(box, isl_set_copy(s->domain));
    isl_basic_map_list *list = box ? isl_map_get_basic_map_list(box) : NULL;
    isl_map_free(box);
    isl_size n = list ? isl_basic_map_list_n_basic_map(list) : -1;
    bool ok = n == 0;
    if (n == 1) {
        isl_basic_map *b = isl_basic_map_list_get_basic_map(list, 0);
        ok = isl_basic_map_dim(b, isl_dim_div) == 0;
        if (ok && isl_basic_map_foreach_constraint(b, box_constraint, &ok) != isl_stat_ok)
            ok = false;
        isl_basic_map_free(b);
    }
    isl_basic_map_list_free(list);
    return ok;
}

/* The group's producers in runs sharing a point loop (fused_run), topological order:
 * run r is members first[r] .. first[r] + len[r] - 1. The last run joins the live-out's
 * band when it computes exactly the live-out's points per tile (*joined: its length,
 * else 0; it is not among the nruns returned). */
static int producer_runs(const pm_poly *poly, const pm_plan *plan, const pm_group *gr,
                         int *first, int *len, int *joined)
{
    int nm = gr->nmembers, nruns = 0;
    for (int m = 0; m < nm - 1; m += len[nruns++]) {
        first[nruns] = m;
        len[nruns] = fused_run(poly, plan, gr, m);
    }
    *joined = 0;
    if (nruns > 0 && first[nruns - 1] + len[nruns - 1] == nm - 1 &&
        len[nruns - 1] < PM_SCHED_MAX_RUN && liveout_joins(poly, plan, gr, first[nruns - 1]))
        *joined = len[--nruns];
    return nruns;
}


int pm_schedule_box_runs(const pm_poly *poly, const pm_plan *plan, const pm_group *gr,
                         int *first, int *len)
{
    if (!gr->tiled || gr->nmembers < 2)
        return 0;
    int joined;
    int nruns = producer_runs(poly, plan, gr, first, len, &joined);
    bool ok = nruns > 0;
    /* a fused run's members share the first's domain and footprint (fused_run) */
    for (int r = 0; r < nruns && ok; r++)
        ok = member_box(poly, gr, first[r]);
    return ok ? nruns : 0;
}

int64_t pm_schedule_box_blocks(const pm_poly *poly, const pm_group *gr, int *row_dim,
                               int64_t *reach)
{
    int64_t B = block_rows_of(poly, gr, 1);
    for (int m = 0; m < gr->nmembers && B > 0; m++) {
        row_dim[m] = member_row_dim(poly, gr, m);
        reach[m] = row_dim[m] < 0                ? -1
                   : m == gr->nmembers - 1 ? 0
                                           : forward_reach(poly, gr, m, row_dim[m]);
        if (reach[m] < 0)
            B = 0; /* as block_band: no blocks */
    }
    return B;
}

static bool box_body(const pm_poly *poly, const pm_plan *plan, const pm_group *gr)
{
    int nm = gr->nmembers;
    int *first = malloc((size_t)nm * sizeof *first), *len = malloc((size_t)nm * sizeof *len);
    bool ok = first && len && pm_schedule_box_runs(poly, plan, gr, first, len) > 0;
    free(first);
    free(len);
    return ok;
}

/* A tiled group (see schedule.h). */
/* The tile band over the live-out's statements and, when the last run of producers
 * computes exactly the live-out's points per tile, over that run's too (m0 .. m0+n0-1:
 * tiled like the live-out, no extension, nothing recomputed); the node below the band. */
static __isl_give isl_schedule_node *tile_band(const pm_poly *poly, const pm_plan *plan,
                                               const pm_group *gr, __isl_take isl_union_set *dom,
                                               int m0, int n0)
{
    isl_union_map *tiles = tile_band_map(plan, gr);
    if (n0 > 0) {
        isl_map *idx = single_map(tiles);
        for (int k = m0; k < m0 + n0; k++) {
            const pm_poly_stmt *sm = single_stmt(poly, gr->members[k]);
            dom = isl_union_set_add_set(dom, isl_set_copy(sm->domain));
            isl_map *mk = isl_map_set_tuple_id(isl_map_copy(idx), isl_dim_in,
                                               isl_set_get_tuple_id(sm->domain));
            mk = isl_map_intersect_domain(mk, isl_set_copy(sm->domain));
            tiles = isl_union_map_add_map(tiles, mk);
        }
        isl_map_free(idx);
    }
    isl_schedule *sched = isl_schedule_from_domain(dom);
    sched = isl_schedule_insert_partial_schedule(sched, isl_multi_union_pw_aff_from_union_map(tiles));
    isl_schedule_node *node = isl_schedule_get_root(sched);
    isl_schedule_free(sched);
    node = isl_schedule_node_child(node, 0);
    /* one loop per tile dimension: case pieces of the live-out must not split the tiles */
    for (int t = 0; t < gr->ntiled; t++)
        node = isl_schedule_node_band_member_set_ast_loop_type(node, t, isl_ast_loop_atomic);
    node = isl_schedule_node_child(node, 0); /* below the tile band */
    if (n0 > 0) {
        /* one band over the joined run and the live-out, a sequence of them below */
        int stages[PM_SCHED_MAX_RUN + 1], n = 0;
        for (int k = m0; k < m0 + n0; k++)
            stages[n++] = gr->members[k];
        stages[n++] = gr->liveout;
        return shared_band(poly, stages, n, node);
    }
    return point_band(poly, gr->liveout, node);
}

/* Each other run of producers (first[r], len[r] members) before node, introduced by an
 * extension of its footprint per tile. */
static __isl_give isl_schedule_node *graft_producers(const pm_poly *poly, const pm_group *gr,
                                                    const int *first, const int *len,
                                                    int nruns, __isl_take isl_schedule_node *node)
{
    for (int r = 0; r < nruns; r++) {
        int m = first[r], run = len[r];
        isl_union_map *ext = NULL;
        for (int k = m; k < m + run; k++) {
            const pm_poly_stage *ps = &poly->stages[gr->members[k]];
            for (int i = ps->first_stmt; i < ps->first_stmt + ps->nstmts; i++) {
                const pm_poly_stmt *sm = &poly->stmts[i];
                isl_map *e = isl_map_copy(gr->fp[k].box);
                e = isl_map_set_tuple_id(e, isl_dim_out, isl_set_get_tuple_id(sm->domain));
                e = isl_map_intersect_range(e, isl_set_copy(sm->domain));
                isl_union_map *u = isl_union_map_from_map(e);
                ext = ext ? isl_union_map_union(ext, u) : u;
            }
        }
        isl_schedule_node *graft = isl_schedule_node_from_extension(ext);
        graft = isl_schedule_node_child(graft, 0);
        graft = run > 1 ? fused_band(poly, gr, m, run, graft)
                        : point_band(poly, gr->members[m], graft);
        graft = isl_schedule_node_root(graft);
        node = isl_schedule_node_graft_before(node, graft);
    }
    return node;
}

/* The tile's body at node: row blocks when the group runs in them (a "block" mark below
 * the block band for box bodies), the "tile" mark above, "tiles" above the tile band. */
static __isl_give isl_schedule *mark_tile(const pm_poly *poly, const pm_group *gr, int nruns,
                                          bool boxes, int m0, __isl_take isl_schedule_node *node)
{
    isl_ctx *ctx = poly->ctx;
    int nm = gr->nmembers;
    int64_t B = block_rows_of(poly, gr, nruns);
    if (boxes && B > 0) {
        int *row_dim = malloc((size_t)nm * sizeof *row_dim);
        int64_t *reach = malloc((size_t)nm * sizeof *reach);
        B = row_dim && reach ? pm_schedule_box_blocks(poly, gr, row_dim, reach) : 0;
        free(row_dim);
        free(reach);
    }
    isl_multi_union_pw_aff *blocks = B > 0 ? block_band(poly, gr, B, boxes ? m0 : 0) : NULL;
    if (blocks) {
        node = isl_schedule_node_insert_partial_schedule(node, blocks);
        node = isl_schedule_node_band_member_set_ast_loop_type(node, 0, isl_ast_loop_atomic);
        if (boxes) { /* the producers' rows of each block, before the live-out's */
            node = isl_schedule_node_child(node, 0);
            node = isl_schedule_node_insert_mark(node, isl_id_alloc(ctx, PM_MARK_BLOCK, (void *)gr));
            node = isl_schedule_node_parent(node);
        }
    }
    node = isl_schedule_node_insert_mark(node, isl_id_alloc(ctx, PM_MARK_TILE, (void *)gr));
    /* the tiles run in parallel */
    node = isl_schedule_node_child(isl_schedule_node_root(node), 0);
    node = isl_schedule_node_insert_mark(node, isl_id_alloc(ctx, PM_MARK_TILES, (void *)gr));
    isl_schedule *sched = isl_schedule_node_get_schedule(node);
    isl_schedule_node_free(node);
    return sched;
}

/* A tiled group's tree (schedule.h): the tile band, the producers' extensions, the
 * marks. */
static __isl_give isl_schedule *group_schedule(const pm_poly *poly, const pm_plan *plan, int g)
{
    const pm_group *gr = &plan->groups[g];
    const pm_poly_stage *lst = &poly->stages[gr->liveout];
    isl_union_set *dom = domains(poly, lst->first_stmt, lst->nstmts);
    if (isl_union_set_is_empty(dom) != isl_bool_false) /* nothing to tile (see band_schedule) */
        return isl_schedule_from_domain(dom);
    int nm = gr->nmembers;
    int *first = malloc((size_t)nm * sizeof *first), *len = malloc((size_t)nm * sizeof *len);
    if (!first || !len) {
        free(first);
        free(len);
        isl_union_set_free(dom);
        return NULL;
    }
    int n0;
    int nruns = producer_runs(poly, plan, gr, first, len, &n0);
    bool boxes = box_body(poly, plan, gr);
    int m0 = n0 > 0 ? nm - 1 - n0 : nm - 1;
    isl_schedule_node *node = tile_band(poly, plan, gr, dom, m0, n0);
    /* the other producers before it: each computes its footprint (boxes: the AST phase
     * writes their loops, ast.h) */
    if (!boxes)
        node = graft_producers(poly, gr, first, len, nruns, node);
    /* the tile's body: scratchpads are re-based here, above all of it (below the
     * extension that introduces the producers) */
    if (nruns > 0 && !boxes)
        node = isl_schedule_node_parent(isl_schedule_node_parent(node)); /* the sequence */
    free(first);
    free(len);
    return mark_tile(poly, gr, nruns, boxes, m0, node);
}

static __isl_give isl_schedule *group_part(const pm_poly *poly, const pm_plan *plan, int g)
{
    const pm_group *gr = &plan->groups[g];
    if (gr->tiled)
        return group_schedule(poly, plan, g);
    const pm_poly_stage *st = &poly->stages[gr->liveout];
    if (poly->stmts[st->first_stmt].kind == PM_STMT_CASE)
        return band_schedule(poly, plan, st->first_stmt, st->nstmts);
    /* reduction: init over the variable domain, then updates in order */
    return seq(band_schedule(poly, plan, st->first_stmt, 1),
               band_schedule(poly, plan, st->first_stmt + 1, 1));
}

/* ---- which dimension runs in parallel ------------------------------------------------- */

static bool small_constant_extent(const pm_interval *iv)
{
    return iv->lb->kind == PM_EXPR_INT && iv->ub->kind == PM_EXPR_INT &&
           (iv->ub->ival - iv->lb->ival) / iv->step + 1 <= 4;
}

static bool free_at(const pm_poly_stmt *s, int k)
{
    return k >= 0 && k < s->ndims && k < 32 && (s->free_dims & (1u << k));
}

/* A statement's parallel dimension: the outermost free one. A few fixed iterations
 * (colour channels) split badly over threads: when the next dimension is free too, that
 * one runs in parallel instead (an update's channel then runs innermost). */
static void choose_stmt_parallel(const pm_poly *poly, const pm_poly_stmt *s, int *par,
                                 int *channel)
{
    const pm_func *f = poly->stages[s->stage].func;
    *par = -1;
    *channel = -1;
    for (int k = 0; k < s->ndims && *par < 0; k++) {
        if (!free_at(s, k))
            continue;
        const pm_interval *iv = s->kind == PM_STMT_UPDATE ? f->rintervals[k] : f->intervals[k];
        bool few = k + 1 < s->ndims && small_constant_extent(iv) && free_at(s, k + 1);
        if (few && s->kind == PM_STMT_UPDATE)
            *channel = k;
        *par = few ? k + 1 : k;
    }
}

void pm_schedule_parallel_dims(const pm_poly *poly, pm_plan *plan)
{
    for (int i = 0; i < poly->nstmts; i++)
        choose_stmt_parallel(poly, &poly->stmts[i], &plan->parallel_dim[i], &plan->channel_dim[i]);
    /* a function's case statements share a band: the most conservative of their choices */
    for (int g = 0; g < poly->nstages; g++) {
        const pm_poly_stage *st = &poly->stages[g];
        int par = 0;
        bool cases = true;
        for (int i = st->first_stmt; i < st->first_stmt + st->nstmts; i++) {
            cases = cases && poly->stmts[i].kind == PM_STMT_CASE;
            if (plan->parallel_dim[i] < 0 || par < 0)
                par = -1;
            else if (plan->parallel_dim[i] > par)
                par = plan->parallel_dim[i];
        }
        for (int i = st->first_stmt; cases && i < st->first_stmt + st->nstmts; i++)
            plan->parallel_dim[i] = par;
    }
}

__isl_give isl_schedule *pm_schedule_new(const pm_poly *poly, const pm_plan *plan,
                                         isl_schedule **groups, pm_error *err)
{
    isl_schedule *all = isl_schedule_empty(isl_space_copy(poly->params));
    for (int g = 0; g < plan->ngroups; g++) {
        isl_schedule *part = group_part(poly, plan, g);
        if (groups)
            groups[g] = isl_schedule_copy(part);
        all = seq(all, part);
    }
    if (!all)
        pm_error_set(err, PM_ERR_INTERNAL, "%s: isl could not build the schedule",
                        poly->pipeline->name);
    return all;
}
