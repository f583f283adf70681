/* test_footprints.c — the tile phase's per-member footprints (pm_tile_footprints) against
 * the exact footprints isl computes from the statements' read relations, tile by tile.
 *
 * For a fused group at fixed parameters and a tile T of its live-out, the exact footprint
 * is built here from scratch, from the live-out back: the live-out's points in T (its
 * tile box, from the tiles' origin, within its statements' domains); then, stage by stage (members and the
 * stages inlined into them), the images of each statement's instances under its affine
 * read relations; a member keeps what falls in its own box. The tile phase's box for the
 * member at T must
 *  - contain the exact footprint (sound: the scratchpad holds every value read);
 *  - equal its bounding box on interior tiles (tight: each stage its own halo, as in the
 *    tight overlapped tiles paper; at the image's borders the phase may keep a larger box,
 *    since it propagates its consumers' boxes unclipped in the tiled dimensions);
 *  - fit the scratchpad's extents (gr->fp[m].ext) on every tile.
 * An exported member (pm_group.exported) also computes its own part of each tile, which
 * the tile copies to its full buffer: its box must contain that part, equal the bounding
 * box of the relaxed footprint and the part on interior tiles, and the parts of all
 * tiles must cover its domain once (no point copied twice, none missed).
 * Groups that read some member at data-dependent points (no affine relation) or hold a
 * reduction are counted as skipped; every app must check at least one group.
 */
#include "check.h"
#include "plan_fixture.h"
#include "samples.h"

#include <isl/map.h>
#include <isl/point.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/val.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parameter values est as an isl set of the poly's parameter space. */
static __isl_give isl_set *fixed_params(const pm_poly *poly, const pm_value *est)
{
    isl_set *s = isl_set_universe(isl_space_params(isl_space_copy(poly->params)));
    int np = (int)isl_set_dim(s, isl_dim_param);
    for (int i = 0; i < np; i++) {
        isl_id *id = isl_set_get_dim_id(s, isl_dim_param, i);
        const pm_expr *param = id ? isl_id_get_user(id) : NULL;
        isl_id_free(id);
        if (param && param->id >= 0 && poly->pipeline->param_slot[param->id] >= 0)
            s = isl_set_fix_si(s, isl_dim_param, (unsigned)i,
                               (int)est[poly->pipeline->param_slot[param->id]].i);
    }
    return s;
}

static __isl_give isl_set *retuple(__isl_take isl_set *s, __isl_keep isl_set *like)
{
    return isl_set_set_tuple_id(s, isl_set_get_tuple_id(like));
}

/* The least (or greatest) coordinate d of s, whose parameters are fixed; INT64_MIN when
 * s is empty or unbounded there. */
static int64_t dim_bound(__isl_keep isl_set *s, int d, bool max)
{
    int nd = (int)isl_set_dim(s, isl_dim_set);
    isl_set *line = isl_set_project_out(isl_set_copy(s), isl_dim_set, (unsigned)d + 1,
                                        (unsigned)(nd - d - 1));
    line = isl_set_project_out(line, isl_dim_set, 0, (unsigned)d);
    line = max ? isl_set_lexmax(line) : isl_set_lexmin(line);
    isl_point *pt = isl_set_sample_point(line);
    int64_t r = INT64_MIN;
    if (pt && isl_point_is_void(pt) == isl_bool_false) {
        isl_val *v = isl_point_get_coordinate_val(pt, isl_dim_set, 0);
        if (v && isl_val_is_int(v) == isl_bool_true)
            r = (int64_t)isl_val_get_num_si(v);
        isl_val_free(v);
    }
    isl_point_free(pt);
    return r;
}

/* The value of pa (over the tile space) at tile T and the parameters P, or INT64_MIN
 * where it is undefined. */
static int64_t eval_at_tile(__isl_keep isl_pw_aff *pa, __isl_keep isl_set *P, const int64_t *T,
                            int ntiled)
{
    isl_set *at = isl_set_universe(isl_pw_aff_get_domain_space(pa));
    at = isl_set_intersect_params(at, isl_set_copy(P));
    for (int k = 0; k < ntiled; k++)
        at = isl_set_fix_si(at, isl_dim_set, (unsigned)k, (int)T[k]);
    isl_point *pt = isl_set_sample_point(at);
    isl_val *v = pt && isl_point_is_void(pt) == isl_bool_false
                     ? isl_pw_aff_eval(isl_pw_aff_copy(pa), isl_point_copy(pt))
                     : NULL;
    int64_t r = v && isl_val_is_int(v) == isl_bool_true ? (int64_t)isl_val_get_num_si(v) : INT64_MIN;
    isl_val_free(v);
    isl_point_free(pt);
    return r;
}

/* Exported member m's own part of tile T at P (inside its domain), or NULL when m is not
 * exported. */
static __isl_give isl_set *own_part(const fixture *f, const pm_group *gr, int m,
                                    __isl_keep isl_set *P, const int64_t *T)
{
    if (!gr->exported || !gr->exported[m])
        return NULL;
    const pm_poly *poly = f->poly;
    const pm_poly_storage *st = &poly->storage[poly->stages[gr->members[m]].storage];
    isl_set *own = isl_set_intersect_params(isl_set_copy(st->box), isl_set_copy(P));
    for (int d = 0; d < st->ndims; d++) {
        int64_t lo = eval_at_tile(gr->fp[m].own_lb[d], P, T, gr->ntiled);
        int64_t hi = eval_at_tile(gr->fp[m].own_ub[d], P, T, gr->ntiled);
        if (lo == INT64_MIN || hi == INT64_MIN || lo > hi)
            return isl_set_subtract(isl_set_copy(own), own); /* empty */
        own = isl_set_lower_bound_si(own, isl_dim_set, (unsigned)d, (int)lo);
        own = isl_set_upper_bound_si(own, isl_dim_set, (unsigned)d, (int)hi);
    }
    return own;
}

typedef struct tally {
    int groups, skipped, tiles, interior, members;
    int interior_members, case_tight; /* interior footprints; those also F's bounding box */
    int exported;                     /* exported members whose own parts were checked     */
} tally;

/* The exact footprints of tile T of group gr (in each stage's box space, NULL where the
 * tile reads nothing), into F; false when some read on the way is not affine or a stage
 * is not plain cases (then the group is skipped). */
static bool exact_footprints(const fixture *f, const pm_group *gr, const int64_t *T,
                             __isl_keep isl_set *P, bool relax, isl_set **F, bool *interior)
{
    const pm_poly *poly = f->poly;
    const pm_plan *plan = f->plan;
    int L = gr->liveout;
    const pm_poly_storage *lst = &poly->storage[poly->stages[L].storage];
    /* the live-out's tile box, unclipped */
    isl_set *tile = isl_set_intersect_params(isl_set_copy(lst->box), isl_set_copy(P));
    for (int t = 0; t < gr->ntiled; t++) {
        int d = gr->tiled_dim[t];
        int64_t from = gr->tile_origin[t] + T[t] * gr->tile[t];
        tile = isl_set_lower_bound_si(tile, isl_dim_set, (unsigned)d, (int)from);
        tile = isl_set_upper_bound_si(tile, isl_dim_set, (unsigned)d, (int)(from + gr->tile[t] - 1));
    }
    /* interior: the unclipped tile lies inside the live-out's domain (a box here) */
    isl_set *domain = NULL;
    const pm_poly_stage *ls = &poly->stages[L];
    for (int k = 0; k < ls->nstmts; k++) {
        isl_set *dk = retuple(isl_set_intersect_params(
                                  isl_set_copy(poly->stmts[ls->first_stmt + k].domain),
                                  isl_set_copy(P)),
                              lst->box);
        domain = domain ? isl_set_union(domain, dk) : dk;
    }
    *interior = domain != NULL;
    for (int t = 0; t < gr->ntiled && *interior; t++) {
        int d = gr->tiled_dim[t];
        int64_t from = gr->tile_origin[t] + T[t] * gr->tile[t];
        *interior = from >= dim_bound(domain, d, false) &&
                    from + gr->tile[t] - 1 <= dim_bound(domain, d, true);
    }
    isl_set_free(domain);
    F[L] = tile;
    bool ok = true;
    for (int s = L; s >= 0 && ok; s--) {
        if (!F[s])
            continue;
        const pm_poly_stage *st = &poly->stages[s];
        if (!plan->inlined[s] && plan->group_of[s] != plan->group_of[L])
            continue; /* read from its full buffer */
        for (int m = 0; m < gr->nmembers - 1; m++) /* an exported member's own part too */
            if (gr->members[m] == s && gr->exported && gr->exported[m])
                F[s] = isl_set_union(F[s], own_part(f, gr, m, P, T));
        const pm_poly_storage *sst = &poly->storage[st->storage];
        for (int k = 0; k < st->nstmts && ok; k++) {
            const pm_poly_stmt *sm = &poly->stmts[st->first_stmt + k];
            if (sm->kind != PM_STMT_CASE) {
                ok = false;
                break;
            }
            /* merged cases chosen by a select evaluate every case at every point: each
             * case's reads hold on the whole statement (chosen by a branch, or one case:
             * on the relation's own domain) */
            bool every_case = sm->ncases > 1 && !sm->branch_cases;
            /* relaxed, as the tile phase reads: every statement's reads at every point
             * of the stage's box that is read */
            isl_set *inst =
                relax ? retuple(isl_set_intersect(isl_set_copy(F[s]),
                                                  isl_set_intersect_params(
                                                      isl_set_copy(sst->box), isl_set_copy(P))),
                                sm->domain)
                      : isl_set_intersect(
                            retuple(isl_set_copy(F[s]), sm->domain),
                            isl_set_intersect_params(isl_set_copy(sm->domain), isl_set_copy(P)));
            for (int a = 0; a < sm->naccesses && ok; a++) {
                const pm_poly_access *acc = &sm->accesses[a];
                int c = pm_plan_stage_of(plan, acc->callee);
                if (c < 0 || c >= s || (!plan->inlined[c] && plan->group_of[c] != plan->group_of[L]))
                    continue; /* an input, another group's buffer (or itself) */
                if (!acc->rel) {
                    ok = false;
                    break;
                }
                const pm_poly_storage *cst = &poly->storage[poly->stages[c].storage];
                isl_map *rel = isl_map_copy(acc->rel);
                if (every_case || relax)
                    rel = isl_map_drop_constraints_not_involving_dims(
                        rel, isl_dim_out, 0, isl_map_dim(rel, isl_dim_out));
                isl_set *img = retuple(isl_set_apply(isl_set_copy(inst), rel), cst->box);
                F[c] = F[c] ? isl_set_union(F[c], img) : img;
            }
            isl_set_free(inst);
        }
    }
    return ok;
}

/* The checks of member m's box at tile T against its exact footprint F (soundness, the
 * scratchpad's extents) and the relaxed one R (tightness on interior tiles); counts in *t
 * the interior footprints whose box is also F's bounding box. */
static void check_member(const char *what, const fixture *f, int g, int m, const int64_t *T,
                         __isl_keep isl_set *P, isl_set **F, isl_set **R, bool interior,
                         tally *t)
{
    const pm_poly *poly = f->poly;
    const pm_group *gr = &f->plan->groups[g];
    int s = gr->members[m];
    const char *name = poly->stages[s].func->name;
    const pm_poly_storage *st = &poly->storage[poly->stages[s].storage];
    isl_set *own = isl_set_intersect_params(isl_set_copy(st->box), isl_set_copy(P));
    isl_set *exact = F[s] ? isl_set_intersect(isl_set_copy(F[s]), isl_set_copy(own)) : NULL;
    isl_set *relaxed = R[s] ? isl_set_intersect(isl_set_copy(R[s]), isl_set_copy(own)) : NULL;
    isl_set_free(own);
    isl_map *bm = isl_map_intersect_params(isl_map_copy(gr->fp[m].box), isl_set_copy(P));
    for (int k = 0; k < gr->ntiled; k++)
        bm = isl_map_fix_si(bm, isl_dim_in, (unsigned)k, (int)T[k]);
    isl_set *box = retuple(isl_map_range(bm), st->box);
    long long T0 = (long long)T[0], T1 = (long long)(gr->ntiled > 1 ? T[1] : 0);
    isl_set *part = own_part(f, gr, m, P, T);
    if (part && !CHECK(isl_set_is_subset(part, box) == isl_bool_true))
        fprintf(stderr, "  %s: group %d, tile (%lld, %lld): %s's box misses its own part\n",
                what, g, T0, T1, name);
    if (exact && isl_set_is_empty(exact) == isl_bool_false) {
        t->members++;
        if (!CHECK(isl_set_is_subset(exact, box) == isl_bool_true))
            fprintf(stderr, "  %s: group %d, tile (%lld, %lld): %s's box misses points its "
                            "readers need\n", what, g, T0, T1, name);
        bool case_tight = true;
        for (int d = 0; d < st->ndims; d++) {
            int64_t blo = dim_bound(box, d, false), bhi = dim_bound(box, d, true);
            int64_t step = st->step[d] > 0 ? st->step[d] : 1;
            if (!CHECK((bhi - blo) / step + 1 <= gr->fp[m].ext[d]))
                fprintf(stderr, "  %s: group %d: %s's box %lld..%lld in dim %d outgrows its "
                                "scratchpad extent %lld\n", what, g, name, (long long)blo,
                        (long long)bhi, d, (long long)gr->fp[m].ext[d]);
            case_tight = case_tight && dim_bound(exact, d, false) == blo &&
                         dim_bound(exact, d, true) == bhi;
            if (!interior)
                continue;
            int64_t rlo = dim_bound(relaxed, d, false), rhi = dim_bound(relaxed, d, true);
            if (!CHECK(rlo == blo && rhi == bhi))
                fprintf(stderr, "  %s: group %d, interior tile (%lld, %lld): %s dim %d: box "
                                "%lld..%lld, relaxed reads' footprint %lld..%lld\n", what, g,
                        T0, T1, name, d, (long long)blo, (long long)bhi, (long long)rlo,
                        (long long)rhi);
        }
        if (interior) {
            t->interior_members++;
            t->case_tight += case_tight;
        }
    }
    isl_set_free(exact);
    isl_set_free(relaxed);
    isl_set_free(box);
    isl_set_free(part);
}

/* The own parts of exported member m over all tiles cover its domain at P once: their
 * union is the domain and their sizes add up to its size. */
static void check_own_parts(const char *what, const fixture *f, int g, int m,
                            __isl_keep isl_set *P, const int64_t *lo, const int64_t *count,
                            int64_t ntiles, tally *t)
{
    const pm_group *gr = &f->plan->groups[g];
    const pm_poly_storage *st = &f->poly->storage[f->poly->stages[gr->members[m]].storage];
    isl_set *dom = isl_set_intersect_params(isl_set_copy(st->box), isl_set_copy(P));
    isl_set *all = isl_set_subtract(isl_set_copy(dom), isl_set_copy(dom));
    long long sum = 0;
    for (int64_t i = 0; i < ntiles; i++) {
        int64_t T[PM_MAX_DIMS], r = i;
        for (int k = gr->ntiled - 1; k >= 0; k--) {
            T[k] = lo[k] + r % count[k];
            r /= count[k];
        }
        isl_set *part = own_part(f, gr, m, P, T);
        isl_val *n = isl_set_count_val(part);
        sum += n ? isl_val_get_num_si(n) : -1;
        isl_val_free(n);
        all = isl_set_union(all, part);
    }
    isl_val *n = isl_set_count_val(dom);
    long long want = n ? isl_val_get_num_si(n) : -2;
    isl_val_free(n);
    bool covered = isl_set_is_equal(all, dom) == isl_bool_true;
    if (!CHECK(covered && sum == want))
        fprintf(stderr, "  %s: group %d: %s's own parts %s its domain, %lld points in all "
                        "for its %lld\n", what, g, f->poly->stages[gr->members[m]].func->name,
                covered ? "cover" : "do not cover", sum, want);
    t->exported++;
    isl_set_free(all);
    isl_set_free(dom);
}

/* Checks every tiled group of the plan at params est on every tile; adds to *t. */
static void check_plan(const char *what, const fixture *f, const pm_value *est, tally *t)
{
    const pm_poly *poly = f->poly;
    int n = poly->nstages;
    isl_set *P = fixed_params(poly, est);
    for (int g = 0; g < f->plan->ngroups; g++) {
        const pm_group *gr = &f->plan->groups[g];
        if (!gr->tiled || gr->nmembers < 2)
            continue;
        int L = gr->liveout;
        const pm_poly_storage *lst = &poly->storage[poly->stages[L].storage];
        isl_set *lbox = isl_set_intersect_params(isl_set_copy(lst->box), isl_set_copy(P));
        int64_t lo[PM_MAX_DIMS], hi[PM_MAX_DIMS], count[PM_MAX_DIMS], ntiles = 1;
        for (int k = 0; k < gr->ntiled; k++) {
            int d = gr->tiled_dim[k];
            lo[k] = dim_bound(lbox, d, false) - gr->tile_origin[k];
            hi[k] = dim_bound(lbox, d, true) - gr->tile_origin[k];
            lo[k] = lo[k] >= 0 ? lo[k] / gr->tile[k] : -((-lo[k] + gr->tile[k] - 1) / gr->tile[k]);
            hi[k] = hi[k] >= 0 ? hi[k] / gr->tile[k] : -((-hi[k] + gr->tile[k] - 1) / gr->tile[k]);
            count[k] = hi[k] - lo[k] + 1;
            ntiles *= count[k];
        }
        isl_set_free(lbox);
        bool skipped = false;
        for (int64_t i = 0; i < ntiles && !skipped; i++) {
            int64_t T[PM_MAX_DIMS], r = i;
            for (int k = gr->ntiled - 1; k >= 0; k--) {
                T[k] = lo[k] + r % count[k];
                r /= count[k];
            }
            isl_set **F = calloc((size_t)n, sizeof *F), **R = calloc((size_t)n, sizeof *R);
            bool interior = false;
            if (!exact_footprints(f, gr, T, P, false, F, &interior) ||
                !exact_footprints(f, gr, T, P, true, R, &interior)) {
                skipped = true;
            } else {
                t->tiles++;
                t->interior += interior;
                for (int m = 0; m < gr->nmembers - 1; m++)
                    check_member(what, f, g, m, T, P, F, R, interior, t);
            }
            for (int s = 0; s < n; s++) {
                isl_set_free(F[s]);
                isl_set_free(R[s]);
            }
            free(F);
            free(R);
        }
        for (int m = 0; m < gr->nmembers - 1 && !skipped; m++)
            if (gr->exported && gr->exported[m])
                check_own_parts(what, f, g, m, P, lo, count, ntiles, t);
        t->groups += !skipped;
        t->skipped += skipped;
    }
    isl_set_free(P);
}

/* app at rows x cols (its estimates and its run sizes) with tiles `tile` (0: the model's). */
static void check_app(const pm_sample_app *app, int64_t rows, int64_t cols, int t0, int t1,
                      int threads, tally *total)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app->build(ctx);
    if (!CHECK(p != NULL)) {
        pm_ctx_free(ctx);
        return;
    }
    pm_value est[16];
    app->params(rows, cols, est);
    pm_options o = pm_options_default();
    o.vector_width = 16;
    o.threads = threads;
    o.tile_size[0] = t0;
    o.tile_size[1] = t1;
    fixture f;
    char what[96];
    snprintf(what, sizeof what, "%s %lldx%lld tiles %dx%d", app->name, (long long)rows,
             (long long)cols, t0, t1);
    tally t = {0};
    if (CHECK(fixture_new(p, est, &o, true, &f)))
        check_plan(what, &f, est, &t);
    fixture_free(&f);
    printf("footprints: %-44s %d groups (%d skipped), %d tiles (%d interior), %d member "
           "footprints\n", what, t.groups, t.skipped, t.tiles, t.interior, t.members);
    total->groups += t.groups;
    total->skipped += t.skipped;
    total->tiles += t.tiles;
    total->interior += t.interior;
    total->members += t.members;
    total->interior_members += t.interior_members;
    total->case_tight += t.case_tight;
    total->exported += t.exported;
    pm_ctx_free(ctx);
}

/* Tiles start where the live-out does: unsharp mask's mask(c, x, y) starts at x = y = 2,
 * so 48 x 64 in tiles of 8 x 16 is 6 x 4 tiles (from 0, 7 x 5, slivers of 2 included). */
static void check_tile_origin(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = pm_sample_unsharp_mask.build(ctx);
    pm_value est[8];
    pm_sample_unsharp_mask.params(48, 64, est);
    pm_options o = pm_options_default();
    o.vector_width = 16;
    o.tile_size[0] = 8;
    o.tile_size[1] = 16;
    fixture f;
    if (CHECK(p != NULL) && CHECK(fixture_new(p, est, &o, true, &f)) && CHECK(f.plan->ngroups == 1)) {
        const pm_group *gr = &f.plan->groups[0];
        CHECK(gr->tiled && gr->ntiled == 2);
        CHECK(gr->tile_origin[0] == 2 && gr->tile_origin[1] == 2);
        tally t = {0};
        check_plan("unsharp_mask 48x64 tiles 8x16 (origin)", &f, est, &t);
        if (!CHECK(t.tiles == 24 && t.interior == 24))
            fprintf(stderr, "  unsharp_mask 48x64 in 8x16 tiles: %d tiles, %d interior; want 24\n",
                    t.tiles, t.interior);
    }
    if (p)
        fixture_free(&f);
    pm_ctx_free(ctx);
}

int main(void)
{
    check_tile_origin();
    int napps = 0;
    const pm_sample_app *apps = pm_sample_apps(&napps);
    tally total = {0};
    for (int a = 0; a < napps; a++) {
        const pm_sample_app *app = &apps[a];
        tally before = total;
        /* small images whose tiles leave interior ones: the model's tiles, odd tiles and
         * tiles smaller than a stencil's reach */
        int64_t r = app->min_rows > 48 ? app->min_rows : 48, c = app->min_cols > 64 ? app->min_cols : 64;
        check_app(app, r, c, 0, 0, 2, &total);
        check_app(app, r, c, 8, 16, 2, &total);
        check_app(app, r + 5, c + 3, 5, 11, 1, &total);
        check_app(app, r, c, 2, 3, 1, &total);
        check_app(app, 160, 200, 8, 16, 2, &total); /* room for interior tiles */
        if (!CHECK(total.members > before.members))
            fprintf(stderr, "  %s: no footprint checked\n", app->name);
    }
    printf("footprints: %d groups, %d skipped, %d tiles, %d interior, %d member footprints; "
           "on interior tiles %d of %d boxes are also the bounding box of the exact "
           "footprint (the rest: reads of cases relaxed to the whole box); %d exported "
           "members' own parts\n",
           total.groups, total.skipped, total.tiles, total.interior, total.members,
           total.case_tight, total.interior_members, total.exported);
    CHECK(total.interior > 0);
    CHECK(total.exported > 0); /* the pyramids' levels */
    return check_finish("footprints");
}
