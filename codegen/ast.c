/* ast.c — isl AST generation (see ast.h).
 *
 * Shape: the mark callbacks annotate "tile" and "block" marks with their origins and
 * indices (after_mark); each part's AST is built in an isl context of its own on a
 * worker thread (part_*, build_parts), the heaviest in the calling thread; box bodies
 * get one loop template per shape and their runs' bounds (boxes_new); then the text.
 */
/* pthreads: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L
#include "codegen/ast.h"

#include "codegen/schedule.h"
#include "codegen/tile.h"

#include <isl/constraint.h>
#include <isl/local_space.h>

#include <isl/aff.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/map.h>
#include <isl/ast_build.h>
#include <isl/val.h>
#include <isl/schedule_node.h>
#include <pthread.h>
#include <isl/id.h>
#include <isl/options.h>
#include <isl/printer.h>
#include <isl/space.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

static void origins_free(void *user)
{
    pm_tile_origins *o = user;
    if (!o)
        return;
    for (int i = 0; i < o->n; i++)
        for (int d = 0; d < PM_MAX_DIMS; d++) {
            isl_ast_expr_free(o->lb[i][d]);
            isl_ast_expr_free(o->own_lb[i][d]);
            isl_ast_expr_free(o->own_ub[i][d]);
        }
    for (int d = 0; d < o->ntile; d++)
        isl_ast_expr_free(o->tile[d]);
    isl_ast_expr_free(o->first_block);
    free(o->storage);
    free(o->lb);
    free(o->own_lb);
    free(o->own_ub);
    free(o);
}

/* Where the marks' callback finds a tiled group's isl objects, in the build's context:
 * the poly's own (one context), or copies parsed into a worker's context. */
typedef struct group_objects {
    const pm_group *group;
    isl_union_set *liveout;   /* the live-out's statement domains                        */
    isl_union_map *tiles;     /* pm_tile_index_map                                        */
    isl_pw_aff **lb;          /* member m, dimension d at [m * PM_MAX_DIMS + d]; then an
                                 exported member's own part's bounds (bound_slot)        */
} group_objects;

/* Where member m's bound `kind` (0: the scratchpad's origin, 1 and 2: the lower and
 * upper bound of an exported member's own part) along d sits in group_objects.lb, and
 * the slots a group's bounds take. */
static int bound_slot(const pm_group *gr, int kind, int m, int d)
{
    return (kind * gr->nmembers + m) * PM_MAX_DIMS + d;
}
static int bound_slots(const pm_group *gr) { return 3 * gr->nmembers * PM_MAX_DIMS; }

static void group_objects_clear(group_objects *go)
{
    isl_union_set_free(go->liveout);
    isl_union_map_free(go->tiles);
    for (int i = 0; go->lb && go->group && i < bound_slots(go->group); i++)
        isl_pw_aff_free(go->lb[i]);
    free(go->lb);
    memset(go, 0, sizeof *go);
}

/* The group's objects from the poly's context (copies). */
static bool group_objects_own(const pm_plan *plan, const pm_group *gr, group_objects *go)
{
    const pm_poly *poly = plan->poly;
    const pm_poly_stage *st = &poly->stages[gr->liveout];
    memset(go, 0, sizeof *go);
    go->group = gr;
    go->liveout = isl_union_set_empty(isl_space_copy(poly->params));
    for (int i = st->first_stmt; i < st->first_stmt + st->nstmts; i++)
        go->liveout = isl_union_set_add_set(go->liveout, isl_set_copy(poly->stmts[i].domain));
    go->tiles = pm_tile_index_map(plan, gr);
    go->lb = calloc((size_t)bound_slots(gr), sizeof *go->lb);
    bool ok = go->liveout && go->tiles && go->lb;
    for (int m = 0; ok && m < gr->nmembers - 1; m++) {
        int s = poly->stages[gr->members[m]].storage;
        bool exported = gr->exported && gr->exported[m];
        for (int d = 0; d < poly->storage[s].ndims && ok; d++) {
            ok = (go->lb[bound_slot(gr, 0, m, d)] = isl_pw_aff_copy(gr->fp[m].lb[d])) != NULL;
            if (ok && exported)
                ok = (go->lb[bound_slot(gr, 1, m, d)] = isl_pw_aff_copy(gr->fp[m].own_lb[d])) &&
                     (go->lb[bound_slot(gr, 2, m, d)] = isl_pw_aff_copy(gr->fp[m].own_ub[d]));
        }
    }
    return ok;
}

typedef struct mark_ctx {
    const pm_poly *poly;
    const pm_plan *plan;
    group_objects *objects;   /* the tiled group of a worker's part, or NULL: the poly's  */
    bool failed;
    const int *nboxes;        /* pm_ast's: per group, its box body's runs (0: none)       */
    const int64_t *block_rows; /* pm_ast's                                                */
} mark_ctx;

/* The tile T of the instances below a mark, as a function of the mark's schedule space:
 * the build's schedule of the live-out's instances, reversed, then each instance's tile.
 * (isl may have dropped tile loops it resolved to one value, so the schedule space is
 * not simply the tile space.) */
static __isl_give isl_pw_multi_aff *tile_of_schedule(const group_objects *go,
                                                     __isl_keep isl_ast_build *build)
{
    isl_union_map *sched = isl_union_map_intersect_domain(isl_ast_build_get_schedule(build),
                                                          isl_union_set_copy(go->liveout));
    isl_union_map *rel = isl_union_map_apply_range(isl_union_map_reverse(sched),
                                                   isl_union_map_copy(go->tiles));
    if (isl_union_map_n_map(rel) != 1) {
        isl_union_map_free(rel);
        return NULL;
    }
    isl_map *m = isl_map_from_union_map(rel);
    return isl_map_lexmin_pw_multi_aff(m);
}

static void block_index_free(void *user)
{
    pm_block_index *b = user;
    if (b)
        isl_ast_expr_free(b->block);
    free(b);
}

/* At a "block" mark: the block index (the innermost schedule dimension: the block band's). */
static __isl_give isl_ast_node *block_mark(__isl_take isl_ast_node *node,
                                           __isl_keep isl_ast_build *build, mark_ctx *mc,
                                           const pm_group *gr)
{
    pm_block_index *b = gr ? calloc(1, sizeof *b) : NULL;
    if (b)
        b->group = gr;
    isl_space *sp = isl_ast_build_get_schedule_space(build);
    isl_size n = sp ? isl_space_dim(sp, isl_dim_set) : -1;
    isl_pw_aff *pa = n > 0 ? isl_pw_aff_from_aff(isl_aff_var_on_domain(
                                 isl_local_space_from_space(isl_space_copy(sp)), isl_dim_set,
                                 (unsigned)(n - 1)))
                           : NULL;
    isl_space_free(sp);
    if (b)
        b->block = pa ? isl_ast_build_expr_from_pw_aff(build, pa) : NULL;
    else
        isl_pw_aff_free(pa);
    if (!b || !b->block) {
        block_index_free(b);
        mc->failed = true;
        return node;
    }
    isl_id *ann = isl_id_alloc(isl_ast_node_get_ctx(node), PM_MARK_BLOCK, b);
    ann = isl_id_set_free_user(ann, block_index_free);
    return isl_ast_node_set_annotation(node, ann);
}

static isl_stat add_rows(__isl_take isl_map *m, void *user)
{
    struct { int row; isl_map *rows; } *r = user;
    isl_size n = isl_map_dim(m, isl_dim_out);
    m = isl_map_reset_tuple_id(m, isl_dim_out);
    if (n > r->row + 1)
        m = isl_map_project_out(m, isl_dim_out, (unsigned)(r->row + 1), (unsigned)(n - r->row - 1));
    m = isl_map_project_out(m, isl_dim_out, 0, (unsigned)r->row);
    r->rows = r->rows ? isl_map_union(r->rows, m) : m;
    return r->rows ? isl_stat_ok : isl_stat_error;
}

/* The tile's first row block (pm_tile_origins.first_block): floor((first live-out row -
 * origin) / B), as the block band numbers them, as an expression of the tile loops. */
static __isl_give isl_ast_expr *first_block(const group_objects *go,
                                            __isl_keep isl_pw_multi_aff *tmap,
                                            __isl_keep isl_ast_build *build, int row, int64_t B,
                                            int64_t origin)
{
    struct { int row; isl_map *rows; } r = {row, NULL};
    isl_union_map *rev = isl_union_map_reverse(isl_union_map_copy(go->tiles));
    if (isl_union_map_foreach_map(rev, add_rows, &r) != isl_stat_ok)
        r.rows = isl_map_free(r.rows);
    isl_union_map_free(rev);
    if (!r.rows)
        return NULL;
    isl_pw_multi_aff *least = isl_map_lexmin_pw_multi_aff(r.rows);
    isl_pw_aff *pa = least ? isl_pw_multi_aff_get_pw_aff(least, 0) : NULL;
    isl_pw_multi_aff_free(least);
    isl_val *rows = isl_val_int_from_si(isl_union_map_get_ctx(go->tiles), B);
    if (pa)
        pa = isl_pw_aff_add_constant_val(
            pa, isl_val_int_from_si(isl_union_map_get_ctx(go->tiles), -(long)origin));
    pa = isl_pw_aff_floor(isl_pw_aff_scale_down_val(pa, rows));
    pa = isl_pw_aff_align_params(pa, isl_pw_multi_aff_get_space(tmap));
    pa = isl_pw_aff_pullback_pw_multi_aff(pa, isl_pw_multi_aff_copy(tmap));
    return pa ? isl_ast_build_expr_from_pw_aff(build, pa) : NULL;
}

/* A tile mark's annotation, empty, for group gr's producers; NULL when out of memory. */
static pm_tile_origins *origins_new(const pm_group *gr)
{
    pm_tile_origins *o = calloc(1, sizeof *o);
    int n = gr->nmembers - 1;
    if (o) {
        o->group = gr;
        o->storage = calloc((size_t)n + 1, sizeof *o->storage);
        o->lb = calloc((size_t)n + 1, sizeof *o->lb);
        o->own_lb = calloc((size_t)n + 1, sizeof *o->own_lb);
        o->own_ub = calloc((size_t)n + 1, sizeof *o->own_ub);
    }
    if (!o || !o->storage || !o->lb || !o->own_lb || !o->own_ub) {
        origins_free(o);
        return NULL;
    }
    return o;
}

/* One scratchpad origin as an AST expression of the tile loops: pa (taken; NULL and
 * empty when it was sent as "") pulled back through tmap. NULL when isl fails. */
static __isl_give isl_ast_expr *origin_expr(__isl_take isl_pw_aff *pa, bool empty,
                                            __isl_keep isl_pw_multi_aff *tmap,
                                            __isl_keep isl_ast_build *build, isl_ctx *ctx,
                                            long none_value)
{
    pa = isl_pw_aff_align_params(pa, isl_pw_multi_aff_get_space(tmap));
    pa = isl_pw_aff_pullback_pw_multi_aff(pa, isl_pw_multi_aff_copy(tmap));
    /* a member may compute nothing in these tiles (its reads sit in an empty case
     * piece): any origin will do, and isl has no expression for an empty piecewise
     * function */
    isl_set *where = pa ? isl_pw_aff_domain(isl_pw_aff_copy(pa)) : NULL;
    isl_bool none = empty ? isl_bool_true : where ? isl_set_is_empty(where) : isl_bool_error;
    isl_set_free(where);
    if (none == isl_bool_true) {
        isl_pw_aff_free(pa);
        return isl_ast_expr_from_val(isl_val_int_from_si(ctx, none_value));
    }
    return pa ? isl_ast_build_expr_from_pw_aff(build, pa) : NULL;
}

/* o->storage and o->lb: each producer's scratchpad origin per dimension, from go's
 * lower bounds through tmap (NULL: none, isl failed before). */
static void member_origins(mark_ctx *mc, const group_objects *go, pm_tile_origins *o,
                           __isl_keep isl_pw_multi_aff *tmap, __isl_keep isl_ast_build *build,
                           isl_ctx *ctx)
{
    const pm_poly *poly = mc->poly;
    const pm_group *gr = o->group;
    for (int m = 0; m < gr->nmembers - 1 && tmap; m++) {
        int s = poly->stages[gr->members[m]].storage;
        o->storage[o->n] = s;
        bool exported = gr->exported && gr->exported[m];
        for (int d = 0; d < poly->storage[s].ndims; d++) {
            isl_pw_aff *pa = isl_pw_aff_copy(go->lb[bound_slot(gr, 0, m, d)]);
            bool empty = !pa && mc->objects; /* sent as "" (part_prepare) */
            o->lb[o->n][d] = origin_expr(pa, empty, tmap, build, ctx, 0);
            if (!o->lb[o->n][d])
                mc->failed = true;
            if (!exported)
                continue;
            /* no own part in these tiles: the empty range 1 .. 0 */
            for (int k = 1; k <= 2; k++) {
                pa = isl_pw_aff_copy(go->lb[bound_slot(gr, k, m, d)]);
                empty = !pa && mc->objects;
                isl_ast_expr *e = origin_expr(pa, empty, tmap, build, ctx, k == 1 ? 1 : 0);
                if (k == 1)
                    o->own_lb[o->n][d] = e;
                else
                    o->own_ub[o->n][d] = e;
                if (!e)
                    mc->failed = true;
            }
        }
        o->n++;
    }
}

/* o->tile: the tile indices, for a group with a box body (its producers are bounded by
 * the tile index, pm_ast_box); o->first_block for a group in row blocks. */
static void tile_exprs(mark_ctx *mc, const group_objects *go, pm_tile_origins *o,
                       __isl_keep isl_pw_multi_aff *tmap, __isl_keep isl_ast_build *build)
{
    const pm_group *gr = o->group;
    int g = (int)(gr - mc->plan->groups);
    isl_size ntile = tmap && mc->nboxes[g] > 0 ? isl_pw_multi_aff_dim(tmap, isl_dim_out) : 0;
    for (int d = 0; d < ntile && d < PM_MAX_DIMS; d++) {
        isl_pw_aff *pa = isl_pw_multi_aff_get_pw_aff(tmap, d);
        o->tile[o->ntile++] = pa ? isl_ast_build_expr_from_pw_aff(build, pa) : NULL;
        if (!o->tile[d])
            mc->failed = true;
    }
    if (tmap && mc->block_rows[g] > 0 &&
        !(o->first_block = first_block(go, tmap, build, gr->tiled_dim[0], mc->block_rows[g],
                                       gr->tile_origin[0])))
        mc->failed = true;
}

/* At each "tile" mark: the origins of the group's scratchpads as AST expressions of
 * the tile loops' iterators, kept as the mark node's annotation (at a "block" mark,
 * block_mark's). */
static __isl_give isl_ast_node *after_mark(__isl_take isl_ast_node *node,
                                           __isl_keep isl_ast_build *build, void *user)
{
    mark_ctx *mc = user;
    isl_id *id = isl_ast_node_mark_get_id(node);
    if (id && strcmp(isl_id_get_name(id), PM_MARK_BLOCK) == 0) {
        const pm_group *bg = mc->objects ? mc->objects->group : isl_id_get_user(id);
        isl_id_free(id);
        return block_mark(node, build, mc, bg);
    }
    bool tile = id && strcmp(isl_id_get_name(id), PM_MARK_TILE) == 0;
    const pm_group *gr = !tile ? NULL : mc->objects ? mc->objects->group : isl_id_get_user(id);
    isl_id_free(id);
    if (!gr)
        return node;
    group_objects own = {0};
    const group_objects *go = mc->objects;
    if (!go) {
        if (!group_objects_own(mc->plan, gr, &own))
            mc->failed = true;
        go = &own;
    }
    pm_tile_origins *o = origins_new(gr);
    if (!o) {
        group_objects_clear(&own);
        mc->failed = true;
        return node;
    }
    isl_pw_multi_aff *tmap = mc->failed ? NULL : tile_of_schedule(go, build);
    if (!tmap)
        mc->failed = true;
    member_origins(mc, go, o, tmap, build, isl_ast_node_get_ctx(node));
    tile_exprs(mc, go, o, tmap, build);
    isl_pw_multi_aff_free(tmap);
    group_objects_clear(&own);
    isl_id *ann = isl_id_alloc(isl_ast_node_get_ctx(node), PM_MARK_TILE, o);
    ann = isl_id_set_free_user(ann, origins_free);
    return isl_ast_node_set_annotation(node, ann);
}

/* One AST from one schedule, in the schedule's context. */
static __isl_give isl_ast_node *build_ast(mark_ctx *mc, __isl_take isl_schedule *sched,
                                          __isl_take isl_space *params)
{
    isl_ctx *ctx = isl_schedule_get_ctx(sched);
    /* min/max in bounds instead of disjunctive guards: simpler loop conditions. */
    isl_options_set_ast_build_detect_min_max(ctx, 1);
    isl_ast_build *build = isl_ast_build_from_context(isl_set_universe(params));
    build = isl_ast_build_set_after_each_mark(build, after_mark, mc);
    isl_ast_node *ast = isl_ast_build_node_from_schedule(build, sched);
    isl_ast_build_free(build);
    if (ast && mc->failed)
        ast = isl_ast_node_free(ast);
    return ast;
}

/* ---- one part per group on worker threads ------------------------------------------- */

/* A part of the AST: a run of consecutive groups, given to a worker as text (an isl
 * context serves one thread at a time; objects cross contexts only as text). */
typedef struct ast_part {
    const pm_poly *poly;
    const pm_plan *plan;
    isl_schedule *const *group_sched; /* each group's schedule (the poly's context)       */
    int first, n;             /* groups first .. first + n - 1                            */
    char *sched;              /* their schedule, printed                                  */
    const pm_group *tiled;    /* the tiled group among them (at most one), or NULL        */
    const int *nboxes;        /* pm_ast's                                                  */
    const int64_t *block_rows; /* pm_ast's                                                 */
    char *liveout, *tiles;    /* its objects, printed                                     */
    char **lb;                /* [m * PM_MAX_DIMS + d], NULL where the member has no dim  */
    double weight;            /* work estimate (make_parts), heaviest first               */
    isl_ctx *ctx;             /* the worker's context: owns ast                           */
    isl_ast_node *ast;
    char error[256];
} ast_part;

static void part_clear(ast_part *pt)
{
    free(pt->sched);
    free(pt->liveout);
    free(pt->tiles);
    for (int i = 0; pt->lb && pt->tiled && i < bound_slots(pt->tiled); i++)
        free(pt->lb[i]);
    free(pt->lb);
    pt->sched = pt->liveout = pt->tiles = NULL;
    pt->lb = NULL;
}

/* The part's groups' schedules in sequence, in the poly's context (NULL if isl fails). */
static __isl_give isl_schedule *part_schedule(const ast_part *pt)
{
    isl_schedule *s = isl_schedule_empty(isl_space_copy(pt->poly->params));
    for (int g = pt->first; g < pt->first + pt->n && s; g++) {
        isl_schedule *one = isl_schedule_copy(pt->group_sched[g]);
        s = one ? isl_schedule_sequence(s, one) : isl_schedule_free(s);
    }
    return s;
}

/* Prints the part's inputs (the calling thread, in the poly's context). */
static bool part_prepare(ast_part *pt)
{
    isl_schedule *s = part_schedule(pt);
    pt->sched = s ? isl_schedule_to_str(s) : NULL;
    isl_schedule_free(s);
    if (!pt->sched)
        return false;
    if (!pt->tiled)
        return true;
    group_objects go;
    bool ok = group_objects_own(pt->plan, pt->tiled, &go);
    pt->liveout = ok ? isl_union_set_to_str(go.liveout) : NULL;
    pt->tiles = ok ? isl_union_map_to_str(go.tiles) : NULL;
    pt->lb = calloc((size_t)bound_slots(pt->tiled), sizeof *pt->lb);
    ok = ok && pt->liveout && pt->tiles && pt->lb;
    for (int i = 0; ok && i < bound_slots(pt->tiled); i++)
        if (go.lb[i]) /* an empty function prints without its space: sent as "" */
            ok = (pt->lb[i] = isl_pw_aff_n_piece(go.lb[i]) == 0 ? calloc(1, 1)
                                                                : isl_pw_aff_to_str(go.lb[i])) != NULL;
    group_objects_clear(&go);
    return ok;
}

/* A worker's part: parses its text into a context of its own and builds its AST. */
static void part_build(ast_part *pt)
{
    isl_ctx *ctx = pt->ctx = isl_ctx_alloc();
    if (!ctx) {
        snprintf(pt->error, sizeof pt->error, "out of memory");
        return;
    }
    /* as the poly's context (driver.c): errors are values, not text on stderr */
    isl_options_set_on_error(ctx, pt->plan->o.isl_abort ? ISL_ON_ERROR_ABORT
                                                        : ISL_ON_ERROR_CONTINUE);
    isl_schedule *sched = isl_schedule_read_from_str(ctx, pt->sched);
    isl_union_set *dom = sched ? isl_schedule_get_domain(sched) : NULL;
    isl_space *params = dom ? isl_union_set_get_space(dom) : NULL;
    isl_union_set_free(dom);
    group_objects go = {0};
    bool ok = sched && params;
    if (ok && pt->tiled) {
        go.group = pt->tiled;
        go.liveout = isl_union_set_read_from_str(ctx, pt->liveout);
        go.tiles = isl_union_map_read_from_str(ctx, pt->tiles);
        go.lb = calloc((size_t)bound_slots(pt->tiled), sizeof *go.lb);
        ok = go.liveout && go.tiles && go.lb;
        for (int i = 0; ok && i < bound_slots(pt->tiled); i++)
            if (pt->lb[i] && *pt->lb[i]) /* "" (empty) stays NULL: after_mark's origin 0 */
                ok = (go.lb[i] = isl_pw_aff_read_from_str(ctx, pt->lb[i])) != NULL;
    }
    mark_ctx mc = {pt->poly, pt->plan, pt->tiled ? &go : NULL, !ok, pt->nboxes, pt->block_rows};
    if (ok)
        pt->ast = build_ast(&mc, sched, params);
    else {
        isl_schedule_free(sched);
        isl_space_free(params);
    }
    group_objects_clear(&go);
    if (!pt->ast) {
        const char *msg = isl_ctx_last_error_msg(ctx);
        snprintf(pt->error, sizeof pt->error, "%s", msg ? msg : "no AST");
    }
}

/* ---- box bodies ------------------------------------------------------------------------ */

static bool bounds_push(pm_poly_part_bounds *b, __isl_take isl_aff *aff, int kind)
{
    isl_aff **a = aff ? realloc(b->aff, (size_t)(b->n + 1) * sizeof *a) : NULL;
    if (a)
        b->aff = a;
    int *k = a ? realloc(b->kind, (size_t)(b->n + 1) * sizeof *k) : NULL;
    if (k)
        b->kind = k;
    if (!k) {
        isl_aff_free(aff);
        return false;
    }
    b->aff[b->n] = aff;
    b->kind[b->n++] = kind;
    return true;
}

typedef struct box_walk {
    pm_ast_box *box;
    int ndims;
    bool ok;
} box_walk;

/* A constraint of the box: a bound of the one coordinate it involves, or a guard. */
static isl_stat box_bound(__isl_take isl_constraint *c, void *user)
{
    box_walk *w = user;
    bool eq = isl_constraint_is_equality(c) == isl_bool_true;
    int dim = -1, involved = 0;
    for (int d = 0; d < w->ndims; d++)
        if (isl_constraint_involves_dims(c, isl_dim_set, (unsigned)d, 1) == isl_bool_true) {
            dim = d;
            involved++;
        }
    if (involved > 1) {
        w->ok = false; /* pm_schedule_box_runs said otherwise */
    } else if (dim < 0) {
        isl_aff *a = isl_aff_project_domain_on_params(isl_constraint_get_aff(c));
        w->ok = w->ok && bounds_push(&w->box->guard, a, eq ? PM_BOUND_ROW_EQ : PM_BOUND_ROW_GE);
    } else {
        isl_val *k = isl_constraint_get_coefficient_val(c, isl_dim_set, dim);
        bool lower = eq || isl_val_is_pos(k) == isl_bool_true, upper = eq || !lower;
        isl_val_free(k);
        isl_aff *bound = isl_aff_project_domain_on_params(
            isl_constraint_get_bound(c, isl_dim_set, dim));
        if (lower)
            w->ok = w->ok && bounds_push(&w->box->dim[dim], isl_aff_ceil(isl_aff_copy(bound)),
                                         PM_BOUND_LOWER);
        if (upper)
            w->ok = w->ok && bounds_push(&w->box->dim[dim], isl_aff_floor(isl_aff_copy(bound)),
                                         PM_BOUND_UPPER);
        isl_aff_free(bound);
    }
    isl_constraint_free(c);
    return w->ok ? isl_stat_ok : isl_stat_error;
}

/* The box of the run of producers m .. m + n - 1 (pm_ast_box): the first's footprint per
 * tile within its domain (the others' are the same), the tile index as parameters named
 * by tile_id. */
static bool box_of(pm_ast *ast, const pm_poly *poly, const pm_group *gr, int m, int n,
                   pm_ast_box *box)
{
    box->stmts = calloc((size_t)n, sizeof *box->stmts);
    if (!box->stmts)
        return false;
    box->nstmts = n;
    for (int k = 0; k < n; k++)
        box->stmts[k] = &poly->stmts[poly->stages[gr->members[m + k]].first_stmt];
    const pm_poly_stmt *s = box->stmts[0];
    isl_map *b = isl_map_set_tuple_id(isl_map_copy(gr->fp[m].box), isl_dim_out,
                                      isl_set_get_tuple_id(s->domain));
    b = isl_map_intersect_range(b, isl_set_copy(s->domain));
    isl_size np = isl_map_dim(b, isl_dim_param), nin = isl_map_dim(b, isl_dim_in);
    if (np < 0 || nin < 0 || nin > PM_MAX_DIMS) {
        isl_map_free(b);
        return false;
    }
    b = isl_map_move_dims(b, isl_dim_param, (unsigned)np, isl_dim_in, 0, (unsigned)nin);
    for (int d = 0; d < nin; d++)
        b = isl_map_set_dim_id(b, isl_dim_param, (unsigned)(np + d), isl_id_copy(ast->tile_id[d]));
    isl_set *set = isl_map_range(b);
    isl_basic_set_list *list = set ? isl_set_get_basic_set_list(set) : NULL;
    isl_set_free(set);
    isl_size npieces = list ? isl_basic_set_list_n_basic_set(list) : -1;
    box_walk w = {box, s->ndims, npieces == 0 || npieces == 1};
    box->empty = npieces == 0;
    if (npieces == 1) {
        isl_basic_set *bs = isl_basic_set_list_get_basic_set(list, 0);
        w.ok = bs && isl_basic_set_dim(bs, isl_dim_div) == 0 &&
               isl_basic_set_foreach_constraint(bs, box_bound, &w) == isl_stat_ok && w.ok;
        isl_basic_set_free(bs);
        for (int d = 0; d < s->ndims && w.ok; d++) {
            bool lower = false, upper = false;
            for (int i = 0; i < box->dim[d].n; i++) {
                lower = lower || box->dim[d].kind[i] == PM_BOUND_LOWER;
                upper = upper || box->dim[d].kind[i] == PM_BOUND_UPPER;
            }
            w.ok = lower && upper;
        }
    }
    isl_basic_set_list_free(list);
    return w.ok;
}

/* for (c0 = lo0; c0 <= hi0; c0++) ... { pm_box0(c0, ..., c{n-1}); ... pm_box{k-1}(...); } */
static __isl_give isl_ast_node *box_template(isl_ctx *ctx, int n, int k)
{
    pm_str dom = {0}, sched = {0}, iters = {0}, cond = {0};
    pm_str_append(&dom, "[");
    for (int d = 0; d < n; d++) {
        pm_str_append(&dom, "%spm_box_lo%d, pm_box_hi%d", d ? ", " : "", d, d);
        pm_str_append(&iters, "%si%d", d ? ", " : "", d);
        pm_str_append(&cond, "%spm_box_lo%d <= i%d <= pm_box_hi%d", d ? " and " : "", d, d, d);
    }
    pm_str_append(&dom, "] -> {");
    pm_str_append(&sched, "{");
    for (int j = 0; j < k && iters.data && cond.data; j++) {
        pm_str_append(&dom, "%s pm_box%d[%s] : %s", j ? ";" : "", j, iters.data, cond.data);
        pm_str_append(&sched, "%s pm_box%d[%s] -> [%s, %d]", j ? ";" : "", j, iters.data, iters.data, j);
    }
    pm_str_append(&dom, " }");
    pm_str_append(&sched, " }");
    isl_union_set *domain = dom.data ? isl_union_set_read_from_str(ctx, dom.data) : NULL;
    isl_union_map *map = sched.data ? isl_union_map_read_from_str(ctx, sched.data) : NULL;
    free(dom.data);
    free(sched.data);
    free(iters.data);
    free(cond.data);
    isl_space *params = domain ? isl_union_set_get_space(domain) : NULL;
    map = isl_union_map_intersect_domain(map, domain);
    isl_ast_build *build = isl_ast_build_from_context(isl_set_universe(params));
    isl_ast_node *node = isl_ast_build_node_from_schedule_map(build, map);
    isl_ast_build_free(build);
    return node;
}

/* The template for n dimensions and k statements, built on first use (NULL when isl
 * or memory fails). */
static isl_ast_node *template_for(pm_ast *ast, isl_ctx *ctx, int n, int k)
{
    int key = n * 1024 + k;
    for (int i = 0; i < ast->ntemplates; i++)
        if (ast->template_key[i] == key)
            return ast->templates[i];
    int cap = ast->ntemplates + 1;
    isl_ast_node **t = realloc(ast->templates, (size_t)cap * sizeof *t);
    if (t)
        ast->templates = t;
    int *keys = t ? realloc(ast->template_key, (size_t)cap * sizeof *keys) : NULL;
    if (keys)
        ast->template_key = keys;
    isl_ast_node *node = keys ? box_template(ctx, n, k) : NULL;
    if (!node)
        return NULL;
    ast->templates[ast->ntemplates] = node;
    ast->template_key[ast->ntemplates++] = key;
    return node;
}

/* The box bodies' runs and the templates they need, in the poly's context. */
static bool boxes_new(pm_ast *ast, const pm_poly *poly, const pm_plan *plan)
{
    int ng = plan->ngroups;
    ast->nboxes = calloc(ng ? (size_t)ng : 1, sizeof *ast->nboxes);
    ast->boxes = calloc(ng ? (size_t)ng : 1, sizeof *ast->boxes);
    ast->block_rows = calloc(ng ? (size_t)ng : 1, sizeof *ast->block_rows);
    bool ok = ast->nboxes && ast->boxes && ast->block_rows;
    char name[32];
    for (int d = 0; d < PM_MAX_DIMS && ok; d++) {
        snprintf(name, sizeof name, "pm_tile%d", d);
        ok = (ast->tile_id[d] = isl_id_alloc(poly->ctx, name, NULL)) != NULL;
        snprintf(name, sizeof name, "pm_box_lo%d", d);
        ok = ok && (ast->box_lo[d] = isl_id_alloc(poly->ctx, name, NULL)) != NULL;
        snprintf(name, sizeof name, "pm_box_hi%d", d);
        ok = ok && (ast->box_hi[d] = isl_id_alloc(poly->ctx, name, NULL)) != NULL;
    }
    ok = ok && (ast->first_block_id = isl_id_alloc(poly->ctx, "pm_first_block", NULL)) != NULL;
    for (int g = 0; g < ng && ok; g++) {
        const pm_group *gr = &plan->groups[g];
        int nm = gr->nmembers;
        int *first = malloc((size_t)nm * sizeof *first), *len = malloc((size_t)nm * sizeof *len);
        int k = first && len ? pm_schedule_box_runs(poly, plan, gr, first, len) : 0;
        ok = first && len;
        if (k > 0) {
            ok = (ast->boxes[g] = calloc((size_t)k, sizeof *ast->boxes[g])) != NULL;
            ast->nboxes[g] = ok ? k : 0;
        }
        int *row_dim = k > 0 ? malloc((size_t)nm * sizeof *row_dim) : NULL;
        int64_t *reach = k > 0 ? malloc((size_t)nm * sizeof *reach) : NULL;
        ok = ok && (k == 0 || (row_dim && reach));
        if (k > 0 && ok)
            ast->block_rows[g] = pm_schedule_box_blocks(poly, gr, row_dim, reach);
        for (int r = 0; r < k && ok; r++) {
            pm_ast_box *b = &ast->boxes[g][r];
            b->row_dim = ast->block_rows[g] > 0 ? row_dim[first[r]] : -1;
            b->reach = ast->block_rows[g] > 0 ? reach[first[r]] : 0;
            ok = box_of(ast, poly, gr, first[r], len[r], b);
            if (ok && !b->empty)
                ok = (b->loops = template_for(ast, poly->ctx, b->stmts[0]->ndims, len[r])) != NULL;
        }
        free(first);
        free(len);
        free(row_dim);
        free(reach);
    }
    return ok;
}

static void boxes_free(pm_ast *ast)
{
    for (int g = 0; ast->boxes && ast->plan && g < ast->plan->ngroups; g++) {
        for (int m = 0; ast->boxes[g] && m < ast->nboxes[g]; m++) {
            for (int d = 0; d < PM_MAX_DIMS; d++)
                pm_poly_part_bounds_clear(&ast->boxes[g][m].dim[d]);
            pm_poly_part_bounds_clear(&ast->boxes[g][m].guard);
            free(ast->boxes[g][m].stmts);
        }
        free(ast->boxes[g]);
    }
    free(ast->boxes);
    free(ast->nboxes);
    free(ast->block_rows);
    for (int d = 0; d < PM_MAX_DIMS; d++) {
        isl_id_free(ast->tile_id[d]);
        isl_id_free(ast->box_lo[d]);
        isl_id_free(ast->box_hi[d]);
    }
    isl_id_free(ast->first_block_id);
    for (int i = 0; i < ast->ntemplates; i++)
        isl_ast_node_free(ast->templates[i]);
    free(ast->templates);
    free(ast->template_key);
}

void pm_ast_free(pm_ast *ast)
{
    if (!ast)
        return;
    boxes_free(ast);
    for (int i = 0; i < ast->n; i++) {
        isl_ast_node_free(ast->root[i]);
        if (ast->own_ctx[i])
            isl_ctx_free(ast->own_ctx[i]);
    }
    free(ast->root);
    free(ast->own_ctx);
    free(ast);
}

typedef struct part_queue {
    pthread_mutex_t lock;
    ast_part *parts;
    int *order;               /* heaviest first                                           */
    int next, n;
} part_queue;

static void *part_worker(void *arg)
{
    part_queue *q = arg;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        int k = q->next < q->n ? q->order[q->next++] : -1;
        pthread_mutex_unlock(&q->lock);
        if (k < 0)
            return NULL;
        part_build(&q->parts[k]);
    }
}

/* order[]: the parts' indices, heaviest first (insertion sort: a few dozen parts). */
static void order_by_weight(const ast_part *parts, int *order, int n)
{
    for (int i = 0; i < n; i++) {
        int k = i;
        order[k] = i;
        while (k > 0 && parts[order[k - 1]].weight < parts[i].weight) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
}

/* The parts: each tiled group alone, runs of up to 8 untiled groups together (few
 * contexts, yet shares small enough to balance the workers). */
static int make_parts(const pm_poly *poly, const pm_plan *plan,
                      isl_schedule *const *group_sched, const int *nboxes,
                      const int64_t *block_rows, ast_part *parts)
{
    int n = 0;
    for (int g = 0; g < plan->ngroups; g++) {
        const pm_group *gr = &plan->groups[g];
        bool join = n > 0 && !gr->tiled && !parts[n - 1].tiled && parts[n - 1].n < 8;
        if (!join)
            parts[n++] = (ast_part){.poly = poly, .plan = plan, .group_sched = group_sched,
                                    .first = g, .n = 0, .tiled = gr->tiled ? gr : NULL,
                                    .nboxes = nboxes, .block_rows = block_rows};
        parts[n - 1].n++;
        /* the work: isl's AST time grows with the statements it places, a tiled
         * group's (with their footprints in the tile's extension) more */
        if (nboxes[g] > 0) /* its boxes cost isl nothing: the live-out's band */
            parts[n - 1].weight += 3.0 * poly->stages[gr->liveout].nstmts;
        for (int m = 0; m < gr->nmembers && nboxes[g] == 0; m++)
            parts[n - 1].weight += (gr->tiled ? 3.0 : 1.0) *
                                   poly->stages[gr->members[m]].nstmts;
    }
    return n;
}

/* An empty pm_ast with room for cap roots, its box bodies decided (boxes_new); NULL,
 * with the error in err, when out of memory or isl cannot bound them. */
static pm_ast *ast_alloc(const pm_poly *poly, const pm_plan *plan, int cap, pm_error *err)
{
    pm_ast *ast = calloc(1, sizeof *ast);
    if (ast) {
        ast->root = calloc((size_t)cap, sizeof *ast->root);
        ast->own_ctx = calloc((size_t)cap, sizeof *ast->own_ctx);
    }
    if (!ast || !ast->root || !ast->own_ctx) {
        pm_ast_free(ast);
        pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", poly->pipeline->name);
        return NULL;
    }
    ast->plan = plan;
    if (!boxes_new(ast, poly, plan)) {
        pm_ast_free(ast);
        pm_error_set(err, PM_ERR_INTERNAL, "%s: isl could not bound the tiles' producers",
                     poly->pipeline->name);
        return NULL;
    }
    return ast;
}

/* One AST of the whole schedule, on this thread in the poly's context; NULL (ast
 * freed, the error in err) when isl fails. */
static pm_ast *ast_serial(pm_ast *ast, const pm_poly *poly, const pm_plan *plan,
                          __isl_keep isl_schedule *sched, pm_error *err)
{
    mark_ctx mc = {poly, plan, NULL, false, ast->nboxes, ast->block_rows};
    ast->root[0] = build_ast(&mc, isl_schedule_copy(sched), isl_space_copy(poly->params));
    ast->n = ast->root[0] ? 1 : 0;
    if (!ast->n) {
        pm_ast_free(ast);
        pm_error_set(err, PM_ERR_INTERNAL, "%s: isl could not build the AST",
                     poly->pipeline->name);
        return NULL;
    }
    return ast;
}

/* Starts workers 1 .. nworkers - 1 (at most 63) on q's parts; started[w]: worker w
 * runs in tid[w]. */
static void start_workers(part_queue *q, int nworkers, pthread_t *tid, bool *started)
{
    pthread_attr_t attr;
    bool attr_ok = pthread_attr_init(&attr) == 0;
    if (attr_ok) /* isl recurses over the tree; give it the main thread's room */
        pthread_attr_setstacksize(&attr, 8u << 20);
    for (int w = 1; w < nworkers && w < 64; w++)
        started[w] = pthread_create(&tid[w], attr_ok ? &attr : NULL, part_worker, q) == 0;
    if (attr_ok)
        pthread_attr_destroy(&attr);
}

/* The parts' ASTs (their inputs printed, order heaviest first): the heaviest built on
 * this thread in the poly's context from the poly's own objects, the others parsed
 * and built by up to threads workers (this thread among them) from a queue. */
static void build_parts(const pm_poly *poly, const pm_plan *plan, const pm_ast *ast,
                        ast_part *parts, int *order, int nparts, int threads)
{
    part_queue q = {.parts = parts, .order = order, .next = 1, .n = nparts};
    pthread_mutex_init(&q.lock, NULL);
    int nworkers = threads < nparts ? threads : nparts;
    pthread_t tid[64];
    bool started[64] = {false};
    start_workers(&q, nworkers, tid, started);
    ast_part *heavy = &parts[order[0]];
    isl_schedule *own = part_schedule(heavy);
    mark_ctx mc = {poly, plan, NULL, false, ast->nboxes, ast->block_rows};
    heavy->ast = own ? build_ast(&mc, own, isl_space_copy(poly->params)) : NULL;
    if (!heavy->ast)
        snprintf(heavy->error, sizeof heavy->error, "%s",
                 isl_ctx_last_error_msg(poly->ctx) ? isl_ctx_last_error_msg(poly->ctx)
                                                   : "no AST");
    part_worker(&q); /* then it takes parts from the queue too */
    for (int w = 1; w < nworkers && w < 64; w++)
        if (started[w])
            pthread_join(tid[w], NULL);
    pthread_mutex_destroy(&q.lock);
}

/* The parts' roots and contexts into ast (which frees them from then on); false, with
 * the first failed part's error in err, when ok is false or some part has no AST. */
static bool collect_parts(pm_ast *ast, const pm_poly *poly, const ast_part *parts,
                          int nparts, bool ok, pm_error *err)
{
    for (int k = 0; k < nparts; k++) {
        ast->root[k] = parts[k].ast;
        ast->own_ctx[k] = parts[k].ctx;
        ast->n = k + 1;
        if (ok && !parts[k].ast) {
            ok = false;
            pm_error_set(err, PM_ERR_INTERNAL, "%s: isl could not build the AST of group %d: %s",
                         poly->pipeline->name, parts[k].first, parts[k].error);
        }
    }
    return ok;
}

pm_ast *pm_ast_new(const pm_poly *poly, const pm_plan *plan, __isl_keep isl_schedule *sched,
                   isl_schedule *const *group_sched, int threads, pm_error *err)
{
    int ngroups = plan->ngroups;
    bool parallel = threads > 1 && ngroups > 1 && group_sched;
    pm_ast *ast = ast_alloc(poly, plan, parallel ? ngroups : 1, err);
    if (!ast)
        return NULL;
    if (!parallel)
        return ast_serial(ast, poly, plan, sched, err);
    ast_part *parts = calloc((size_t)ngroups, sizeof *parts);
    int *order = calloc((size_t)ngroups, sizeof *order);
    int nparts = parts && order ? make_parts(poly, plan, group_sched, ast->nboxes, ast->block_rows, parts) : 0;
    bool ok = parts && order;
    if (ok)
        order_by_weight(parts, order, nparts);
    /* The heaviest part is this thread's, built in the poly's context from the poly's
     * own objects (no text): the others are printed first, since the poly's context
     * then belongs to this thread's isl work alone. */
    for (int i = 1; ok && i < nparts; i++)
        ok = part_prepare(&parts[order[i]]);
    if (ok)
        build_parts(poly, plan, ast, parts, order, nparts, threads);
    ok = collect_parts(ast, poly, parts, nparts, ok, err);
    for (int k = 0; k < nparts; k++)
        part_clear(&parts[k]);
    free(parts);
    free(order);
    if (!ok) {
        if (err && err->status == PM_OK)
            pm_error_set(err, PM_ERR_INTERNAL, "%s: isl could not build the AST",
                         poly->pipeline->name);
        pm_ast_free(ast);
        return NULL;
    }
    return ast;
}

const pm_poly_stmt *pm_ast_stmt(const pm_poly *poly, __isl_keep isl_ast_expr *call)
{
    isl_ast_expr *fn = isl_ast_expr_op_get_arg(call, 0);
    isl_id *id = isl_ast_expr_id_get_id(fn);
    isl_ast_expr_free(fn);
    const char *name = id ? isl_id_get_name(id) : NULL;
    const pm_poly_stmt *found = NULL;
    for (int i = 0; name && i < poly->nstmts && !found; i++)
        if (strcmp(poly->stmts[i].name, name) == 0)
            found = &poly->stmts[i];
    isl_id_free(id);
    return found;
}

/* "// group G's tile, run M as a box: S(d0, d1) T(d0, d1): d0 >= e, d0 <= e, ...; if e >= 0" */
static void box_to_string(pm_str *out, int g, int m, const pm_ast_box *b, int64_t block_rows,
                          int64_t origin)
{
    int n = b->stmts[0]->ndims;
    pm_str_append(out, "// group %d's tile, run %d as a box:", g, m);
    for (int k = 0; k < b->nstmts; k++) {
        pm_str_append(out, " %s(", b->stmts[k]->name);
        for (int d = 0; d < n; d++)
            pm_str_append(out, "%sd%d", d ? ", " : "", d);
        pm_str_append(out, ")");
    }
    if (b->empty) {
        pm_str_append(out, " with no points\n");
        return;
    }
    const char *sep = ": ";
    for (int d = 0; d <= n && d <= PM_MAX_DIMS; d++) {
        const pm_poly_part_bounds *pb = d < n ? &b->dim[d] : &b->guard;
        if (d == n && pb->n > 0) {
            pm_str_append(out, "; if ");
            sep = "";
        }
        for (int i = 0; i < pb->n; i++) {
            isl_printer *p = isl_printer_to_str(isl_aff_get_ctx(pb->aff[i]));
            p = isl_printer_set_output_format(p, ISL_FORMAT_C);
            p = isl_printer_print_aff(p, pb->aff[i]);
            char *t = isl_printer_get_str(p);
            isl_printer_free(p);
            static const char *const rel[] = {">=", "<=", ">=", "=="};
            if (d < n)
                pm_str_append(out, "%sd%d %s %s", sep, d, rel[pb->kind[i]], t ? t : "?");
            else
                pm_str_append(out, "%s%s %s 0", sep, t ? t : "?", rel[pb->kind[i]]);
            sep = d < n ? ", " : " and ";
            free(t);
        }
    }
    if (block_rows > 0)
        pm_str_append(out, "; in each block of %lld rows, d%d from %lld * block + %lld",
                      (long long)block_rows, b->row_dim, (long long)block_rows,
                      (long long)(origin + b->reach)); /* loops.c: blocks from the origin */
    pm_str_append(out, "\n");
}

char *pm_ast_to_string(const pm_ast *ast)
{
    pm_str out = {0};
    for (int i = 0; i < ast->n; i++) {
        isl_printer *p = isl_printer_to_str(isl_ast_node_get_ctx(ast->root[i]));
        p = isl_printer_set_output_format(p, ISL_FORMAT_C);
        p = isl_printer_print_ast_node(p, ast->root[i]);
        char *s = isl_printer_get_str(p);
        isl_printer_free(p);
        if (s)
            pm_str_append(&out, "%s", s);
        free(s);
    }
    for (int g = 0; ast->plan && g < ast->plan->ngroups; g++)
        for (int m = 0; m < ast->nboxes[g]; m++)
            box_to_string(&out, g, m, &ast->boxes[g][m], ast->block_rows[g],
                          ast->plan->groups[g].tile_origin[0]);
    return out.data;
}
