/* schedule.c — the schedule tree of a pipeline (see schedule.h). */
#include "codegen/schedule.h"

#include <isl/aff.h> /* before isl_multi_union_pw_aff_* (see DESIGN.md) */
#include <isl/id.h>
#include <isl/schedule_node.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>

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

/* A schedule for statements first..first+n-1 sharing one band. */
static __isl_give isl_schedule *band_schedule(const pm_poly *poly, int first, int n)
{
    const pm_poly_stmt *s = &poly->stmts[first];
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
    int k = s->parallel_dim;
    if (k >= 0) {
        if (k > 0) {
            node = isl_schedule_node_band_split(node, k);
            node = isl_schedule_node_child(node, 0);
        }
        isl_ctx *ctx = isl_schedule_node_get_ctx(node);
        node = isl_schedule_node_insert_mark(node, isl_id_alloc(ctx, PM_MARK_PARALLEL, NULL));
    }
    sched = isl_schedule_node_get_schedule(node);
    isl_schedule_node_free(node);
    return sched;
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

__isl_give isl_schedule *pm_schedule_new(const pm_poly *poly, pm_error *err)
{
    isl_schedule *all = isl_schedule_empty(isl_space_copy(poly->params));
    for (int i = 0; i < poly->nstages; i++) {
        const pm_poly_stage *st = &poly->stages[i];
        isl_schedule *s;
        if (poly->stmts[st->first_stmt].kind == PM_STMT_CASE) {
            s = band_schedule(poly, st->first_stmt, st->nstmts);
        } else {
            /* reduction: init over the variable domain, then updates in order */
            s = seq(band_schedule(poly, st->first_stmt, 1),
                    band_schedule(poly, st->first_stmt + 1, 1));
        }
        all = seq(all, s);
    }
    if (!all)
        pm_error_set(err, PM_ERR_INTERNAL, "%s: isl could not build the schedule",
                        poly->pipeline->name);
    return all;
}
