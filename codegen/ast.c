/* ast.c — isl AST generation (see ast.h). */
#include "codegen/ast.h"

#include "codegen/schedule.h"
#include "codegen/tile.h"

#include <isl/aff.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/map.h>
#include <isl/ast_build.h>
#include <isl/val.h>
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
        for (int d = 0; d < PM_MAX_DIMS; d++)
            isl_ast_expr_free(o->lb[i][d]);
    free(o->storage);
    free(o->lb);
    free(o);
}

typedef struct mark_ctx {
    const pm_poly *poly;
    const pm_plan *plan;
    bool failed;
} mark_ctx;

/* The tile T of the instances below a mark, as a function of the mark's schedule space:
 * the build's schedule of the live-out's instances, reversed, then each instance's tile.
 * (isl may have dropped tile loops it resolved to one value, so the schedule space is
 * not simply the tile space.) */
static __isl_give isl_pw_multi_aff *tile_of_schedule(const pm_plan *plan, const pm_group *gr,
                                                     __isl_keep isl_ast_build *build)
{
    const pm_poly *poly = plan->poly;
    const pm_poly_stage *st = &poly->stages[gr->liveout];
    isl_union_set *dom = isl_union_set_empty(isl_space_copy(poly->params));
    for (int i = st->first_stmt; i < st->first_stmt + st->nstmts; i++)
        dom = isl_union_set_add_set(dom, isl_set_copy(poly->stmts[i].domain));
    isl_union_map *sched = isl_union_map_intersect_domain(isl_ast_build_get_schedule(build), dom);
    isl_union_map *rel = isl_union_map_apply_range(isl_union_map_reverse(sched),
                                                   pm_tile_index_map(plan, gr));
    if (isl_union_map_n_map(rel) != 1) {
        isl_union_map_free(rel);
        return NULL;
    }
    isl_map *m = isl_map_from_union_map(rel);
    return isl_map_lexmin_pw_multi_aff(m);
}

/* At each "tile" mark: the origins of the group's scratchpads as AST expressions of
 * the tile loops' iterators, kept as the mark node's annotation. */
static __isl_give isl_ast_node *after_mark(__isl_take isl_ast_node *node,
                                           __isl_keep isl_ast_build *build, void *user)
{
    mark_ctx *mc = user;
    isl_id *id = isl_ast_node_mark_get_id(node);
    bool tile = id && strcmp(isl_id_get_name(id), PM_MARK_TILE) == 0;
    const pm_group *gr = tile ? isl_id_get_user(id) : NULL;
    isl_id_free(id);
    if (!gr)
        return node;
    const pm_poly *poly = mc->poly;
    pm_tile_origins *o = calloc(1, sizeof *o);
    int n = gr->nmembers - 1;
    if (o) {
        o->group = gr;
        o->storage = calloc((size_t)n + 1, sizeof *o->storage);
        o->lb = calloc((size_t)n + 1, sizeof *o->lb);
    }
    if (!o || !o->storage || !o->lb) {
        origins_free(o);
        mc->failed = true;
        return node;
    }
    isl_pw_multi_aff *tmap = tile_of_schedule(mc->plan, gr, build);
    if (!tmap)
        mc->failed = true;
    for (int m = 0; m < n && tmap; m++) {
        int s = poly->stages[gr->members[m]].storage;
        o->storage[o->n] = s;
        for (int d = 0; d < poly->storage[s].ndims; d++) {
            isl_pw_aff *pa = isl_pw_aff_copy(gr->fp[m].lb[d]);
            pa = isl_pw_aff_align_params(pa, isl_pw_multi_aff_get_space(tmap));
            pa = isl_pw_aff_pullback_pw_multi_aff(pa, isl_pw_multi_aff_copy(tmap));
            /* a member may compute nothing in these tiles (its reads sit in an empty
             * case piece): any origin will do, and isl has no expression for an empty
             * piecewise function */
            isl_set *where = pa ? isl_pw_aff_domain(isl_pw_aff_copy(pa)) : NULL;
            isl_bool none = where ? isl_set_is_empty(where) : isl_bool_error;
            isl_set_free(where);
            if (none == isl_bool_true) {
                isl_pw_aff_free(pa);
                o->lb[o->n][d] = isl_ast_expr_from_val(isl_val_zero(isl_ast_node_get_ctx(node)));
            } else {
                o->lb[o->n][d] = pa ? isl_ast_build_expr_from_pw_aff(build, pa) : NULL;
            }
            if (!o->lb[o->n][d])
                mc->failed = true;
        }
        o->n++;
    }
    isl_pw_multi_aff_free(tmap);
    isl_id *ann = isl_id_alloc(isl_ast_node_get_ctx(node), PM_MARK_TILE, o);
    ann = isl_id_set_free_user(ann, origins_free);
    return isl_ast_node_set_annotation(node, ann);
}

__isl_give isl_ast_node *pm_ast_new(const pm_poly *poly, const pm_plan *plan,
                                    __isl_keep isl_schedule *sched, pm_error *err)
{
    isl_ctx *ctx = poly->ctx;
    /* min/max in bounds instead of disjunctive guards: simpler loop conditions. */
    isl_options_set_ast_build_detect_min_max(ctx, 1);
    isl_set *context = isl_set_universe(isl_space_copy(poly->params));
    isl_ast_build *build = isl_ast_build_from_context(context);
    mark_ctx mc = {poly, plan, false};
    build = isl_ast_build_set_after_each_mark(build, after_mark, &mc);
    isl_ast_node *ast = isl_ast_build_node_from_schedule(build, isl_schedule_copy(sched));
    isl_ast_build_free(build);
    if (ast && mc.failed)
        ast = isl_ast_node_free(ast);
    if (!ast)
        pm_error_set(err, PM_ERR_INTERNAL, "%s: isl could not build the AST",
                        poly->pipeline->name);
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

char *pm_ast_to_string(__isl_keep isl_ast_node *ast)
{
    isl_printer *p = isl_printer_to_str(isl_ast_node_get_ctx(ast));
    p = isl_printer_set_output_format(p, ISL_FORMAT_C);
    p = isl_printer_print_ast_node(p, ast);
    char *s = isl_printer_get_str(p);
    isl_printer_free(p);
    return s;
}
