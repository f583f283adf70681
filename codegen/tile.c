/* tile.c — tile sizes from a model, footprints from isl (see tile.h).
 *
 * Shape: the model propagates a candidate tile's intervals from the live-out back to
 * the producers at the estimates (model_eval) and scores its time; tile_model searches
 * the candidates (model_search) and records the best; pm_tile_footprints then takes each
 * member's exact footprint per tile from isl and bounds it by a box.
 */
#include "codegen/tile.h"

#include "codegen/costs.h"

#include "codegen/align.h"
#include "frontend/isl_expr.h"

#include <isl/aff.h>
#include <isl/constraint.h>
#include <isl/id.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/point.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/val.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the model: interval propagation at the estimates ---------------------------------- */

typedef struct model_in {
    const pm_plan *plan;
    const pm_group *gr;
    pm_read *reads;  /* reads of every member by every member                        */
    int nreads;
    bool outside_only[64]; /* per member: it reads no member (all it reads streams from
                              memory); groups of more than 64 members are not tiled     */
    int row_dim[64];       /* per member: its dimension along the outermost tiled one, at
                              scale 1; all >= 0 when the tile may run in row blocks     */
    bool blocks;
    double row_points;     /* the live-out's inner tiled extent at the estimates        */
    /* the affine reads of a member by a member, grouped by consumer: those of member m
     * are by_consumer[first[m] .. first[m + 1] - 1] (indices into reads), producer_of
     * their producer's member index (the model's pass is then linear in the reads: a
     * search per read and member cost local Laplacian's grouping 69 ms) */
    int *by_consumer, *producer_of;
    int first[65];
    /* per member: operations per point and points at the estimates (fixed for the
     * group, and a walk of the definition each: 80% of pyramid blending's grouping when
     * computed per candidate tile) */
    double cost[64], volume[64];
} model_in;

typedef struct model_out {
    double lo[64][PM_MAX_DIMS], hi[64][PM_MAX_DIMS];
    double redundancy;
    double scratch;
    double ntiles;
    double time;  /* estimated run time of the group, in vector operations            */
} model_out;

static int member_of(const pm_group *gr, int stage)
{
    for (int m = 0; m < gr->nmembers; m++)
        if (gr->members[m] == stage)
            return m;
    return -1;
}

static double est_lb(const pm_plan *plan, int s, int d) { return plan->est_lb[s * PM_MAX_DIMS + d]; }
static double est_ub(const pm_plan *plan, int s, int d) { return plan->est_ub[s * PM_MAX_DIMS + d]; }

/* fmin and fmax without their NaN rules (no NaN reaches the model): the grouping
 * search evaluates the model hundreds of thousands of times, and libm's calls were a
 * fifth of that time. */
static inline double min_d(double a, double b) { return a < b ? a : b; }
static inline double max_d(double a, double b) { return a > b ? a : b; }

static int64_t round_up(int64_t v, int64_t k)
{
    return k > 1 ? (v + k - 1) / k * k : v;
}

static int elem_lanes(const pm_plan *plan)
{
    return plan->o.vector_width > 1 ? plan->o.vector_width : 1;
}

/* Rows per block of a tile whose outermost tiled dimension is tile[0] rows, or 0 when it
 * runs whole (schedule.c's row blocks). */
static int64_t block_rows_for(const model_in *in, const int64_t *tile)
{
    /* only strips of whole long rows: the rows stream from memory in long runs (the
     * gain); bilateral grid's 256-cell tiles in blocks let a different grouping fit,
     * 1.025x slower */
    if (!in->blocks || tile[0] < 2 * pm_costs.block_rows || tile[0] % pm_costs.block_rows != 0 ||
        in->row_points < 1024 || (double)tile[1] < in->row_points)
        return 0;
    return pm_costs.block_rows;
}

/* The live-out's interior tile: out->lo/hi of the live-out over the tile in the middle
 * of its domain (its whole extent along the untiled dimensions), every other member's
 * footprint empty, and out->ntiles. model_eval's first step. */
static void model_live_out_tile(const model_in *in, const int64_t *tile, bool clip,
                                model_out *out)
{
    const pm_plan *plan = in->plan;
    const pm_group *gr = in->gr;
    int L = gr->liveout, nm = gr->nmembers;
    const pm_func *lf = plan->poly->stages[L].func;
    for (int m = 0; m < nm; m++)
        for (int d = 0; d < PM_MAX_DIMS; d++) {
            out->lo[m][d] = INFINITY;
            out->hi[m][d] = -INFINITY;
        }
    out->ntiles = 1;
    for (int d = 0; d < lf->ndims; d++) {
        double lb = est_lb(plan, L, d), ub = est_ub(plan, L, d);
        out->lo[nm - 1][d] = lb;
        out->hi[nm - 1][d] = ub;
        for (int t = 0; t < gr->ntiled; t++)
            if (gr->tiled_dim[t] == d) {
                /* the tile in the middle of the domain: an interior one */
                double mid = floor((lb + ub) / 2 / (double)tile[t]) * (double)tile[t];
                out->lo[nm - 1][d] = clip ? fmax(lb, mid) : mid;
                out->hi[nm - 1][d] = clip ? fmin(ub, mid + (double)tile[t] - 1)
                                          : mid + (double)tile[t] - 1;
                out->ntiles *= ceil((ub - lb + 1) / (double)tile[t]);
            }
    }
}

/* Exported member m's own part of the interior tile (pm_group.exported), its interval
 * per dimension into lo/hi: along a dimension that follows a tiled one at scale s, the
 * live-out's tile [a, b] becomes [ceil(s*a), ceil(s*(b + 1)) - 1]; along the others,
 * the member's whole domain at the estimates. */
static void model_own_part(const model_in *in, const model_out *out, int m, double *lo, double *hi)
{
    const pm_plan *plan = in->plan;
    const pm_group *gr = in->gr;
    int s = gr->members[m], L = gr->nmembers - 1;
    const pm_func *f = plan->poly->stages[s].func;
    for (int d = 0; d < f->ndims; d++) {
        int ld = gr->align[m].dim_of[d];
        bool tiled = false;
        for (int t = 0; t < gr->ntiled && ld >= 0; t++)
            tiled = tiled || gr->tiled_dim[t] == ld;
        if (!tiled) {
            lo[d] = est_lb(plan, s, d);
            hi[d] = est_ub(plan, s, d);
            continue;
        }
        double sc = gr->align[m].scale[d];
        lo[d] = ceil(sc * out->lo[L][ld] - 1e-9);
        hi[d] = ceil(sc * (out->hi[L][ld] + 1) - 1e-9) - 1;
    }
}

/* Propagates the footprints backwards, each consumer's to its producers through the
 * affine reads (an interval per dimension and side); with clip, each producer's
 * footprint is clipped to its own domain at the estimates. An exported member's
 * footprint covers its own part too. model_eval's second step. */
static void model_propagate(const model_in *in, bool clip, model_out *out)
{
    const pm_plan *plan = in->plan;
    const pm_group *gr = in->gr;
    int nm = gr->nmembers;
    for (int m = nm - 1; m >= 0; m--) {
        int c = gr->members[m];
        if (gr->exported && gr->exported[m]) {
            double lo[PM_MAX_DIMS], hi[PM_MAX_DIMS];
            model_own_part(in, out, m, lo, hi);
            for (int d = 0; d < plan->poly->stages[c].func->ndims; d++) {
                out->lo[m][d] = min_d(out->lo[m][d], lo[d]);
                out->hi[m][d] = max_d(out->hi[m][d], hi[d]);
            }
        }
        for (int i = in->first[m]; i < in->first[m + 1]; i++) {
            const pm_read *rd = &in->reads[in->by_consumer[i]];
            int pm = in->producer_of[in->by_consumer[i]];
            for (int k = 0; k < rd->nargs; k++) {
                const pm_lin *a = &rd->arg[k];
                double lo, hi;
                if (a->var < 0) {
                    lo = a->lo;
                    hi = a->hi;
                } else {
                    lo = a->coef * out->lo[m][a->var] + a->lo;
                    hi = a->coef * out->hi[m][a->var] + a->hi;
                }
                lo = ceil(lo - 1e-9);
                hi = floor(hi + 1e-9);
                out->lo[pm][k] = min_d(out->lo[pm][k], lo);
                out->hi[pm][k] = max_d(out->hi[pm][k], hi);
            }
        }
        if (clip && m < nm - 1) { /* clip to the member's own domain */
            const pm_func *f = plan->poly->stages[c].func;
            for (int d = 0; d < f->ndims; d++) {
                out->lo[m][d] = max_d(out->lo[m][d], est_lb(plan, c, d));
                out->hi[m][d] = min_d(out->hi[m][d], est_ub(plan, c, d));
            }
        }
    }
}

/* A member's footprint as the cost model counts it: points, rows (every dimension but
 * the innermost), vector steps along a row, and scratch bytes (rows padded to the
 * vector width). */
typedef struct member_size {
    double vol, rows, steps, bytes;
} member_size;

/* Member m's member_size from its footprint in out. */
static member_size member_size_of(const model_in *in, const model_out *out, int m)
{
    const pm_plan *plan = in->plan;
    const pm_poly *poly = plan->poly;
    const pm_poly_storage *st = &poly->storage[poly->stages[in->gr->members[m]].storage];
    double W = elem_lanes(plan);
    member_size z = {1, 1, 0, (double)pm_type_size(st->type)};
    for (int d = 0; d < st->ndims; d++) {
        double e = floor((out->hi[m][d] - out->lo[m][d]) / (double)st->step[d]) + 1;
        if (e < 0)
            e = 0;
        z.vol *= e;
        z.bytes *= d == st->ndims - 1 ? (double)round_up((int64_t)e, elem_lanes(plan)) : e;
        if (d < st->ndims - 1)
            z.rows *= e;
        else /* the vector loop: vectors (the last one overlapping), or scalars when
                the row is shorter than a vector (codegen/llvm/vector.c) */
            z.steps = e >= W ? ceil(e / W) : e;
    }
    if (st->ndims == 0)
        z.steps = 1;
    return z;
}

/* Producer m's scratch bytes in row blocks: what is in use at once is a block's rows
 * plus the halo the next blocks read again; the rows before were read for the last
 * time. bytes unchanged when the tile does not run in row blocks. */
static double block_live_bytes(const model_in *in, const int64_t *tile, const model_out *out,
                               int m, double bytes)
{
    int rd = in->row_dim[m];
    double b = block_rows_for(in, tile);
    if (b > 0 && rd >= 0) {
        double e = floor(out->hi[m][rd] - out->lo[m][rd]) + 1;
        double live = b + fmax(0, e - (double)tile[0]);
        if (e > 0 && live < e)
            bytes *= live / e;
    }
    return bytes;
}

/* Footprint of every member for tile sizes tile[] (per tiled dimension), and from them
 * the redundancy, scratch bytes and estimated time of the group in out. */
static void model_eval(const model_in *in, const int64_t *tile, bool clip, model_out *out)
{
    const pm_group *gr = in->gr;
    int nm = gr->nmembers;
    model_live_out_tile(in, tile, clip, out);
    model_propagate(in, clip, out);
    double tiled = 0, full = 0, scratch = 0, time = 0;
    for (int m = 0; m < nm; m++) {
        member_size z = member_size_of(in, out, m);
        double cost = in->cost[m];
        tiled += cost * z.vol * out->ntiles;
        full += cost * in->volume[m];
        /* per tile: each row's vector steps plus a start-up cost per row (loop entry,
         * address set-up, the hardware prefetcher's ramp) and per stage (its call) */
        time += out->ntiles * (z.rows * (cost * z.steps + pm_costs.row_cost) +
                               pm_costs.stage_call_cost);
        if (m == nm - 1 || in->outside_only[m])
            time += out->ntiles * z.rows * pm_costs.stream_row_cost;
        if (gr->exported && gr->exported[m]) {
            /* the copy of its own part: a row from the scratchpad to memory */
            double lo[PM_MAX_DIMS], hi[PM_MAX_DIMS], rows = 1, steps = 1;
            model_own_part(in, out, m, lo, hi);
            int nd = in->plan->poly->stages[gr->members[m]].func->ndims;
            for (int d = 0; d < nd; d++) {
                double e = fmax(0, floor(hi[d] - lo[d]) + 1);
                if (d < nd - 1)
                    rows *= e;
                else
                    steps = ceil(e / elem_lanes(in->plan));
            }
            time += out->ntiles * rows * (steps + pm_costs.row_cost + pm_costs.stream_row_cost);
        }
        if (m < nm - 1)
            scratch += block_live_bytes(in, tile, out, m, z.bytes);
    }
    out->redundancy = full > 0 ? fmax(0, tiled / full - 1) : 0;
    out->scratch = scratch;
    out->time = time;
}

static const int64_t kOuter[] = {4, 8, 16, 32, 64, 128};
static const int64_t kInner[] = {64, 128, 256, 512, 1024, 2048, 4096};
#define N_INNER (sizeof kInner / sizeof kInner[0])

/* Does every producer compute exactly the tile's rows (tile_rows of them) along the
 * outer tiled dimension, no halo (the model's footprint of an interior tile)? */
static bool no_row_halo(const model_in *in, const model_out *out, int64_t tile_rows)
{
    for (int m = 0; m < in->gr->nmembers - 1; m++) {
        int rd = in->row_dim[m];
        if (rd < 0 || floor(out->hi[m][rd] - out->lo[m][rd]) + 1 != (double)tile_rows)
            return false;
    }
    return true;
}

/* Whether the live-out's dimension d has bounds that depend on the parameters. */
static bool parametric_dim(const pm_poly_storage *lst, int d)
{
    return isl_pw_aff_is_cst(lst->lb[d]) != isl_bool_true ||
           isl_pw_aff_is_cst(lst->ub[d]) != isl_bool_true;
}

/* The value of pa when it is one constant on its whole (universe) domain. */
static bool constant_of(__isl_keep isl_pw_aff *pa, int64_t *v)
{
    if (isl_pw_aff_isa_aff(pa) != isl_bool_true)
        return false;
    isl_aff *a = isl_pw_aff_as_aff(isl_pw_aff_copy(pa));
    isl_val *c = isl_aff_is_cst(a) == isl_bool_true ? isl_aff_get_constant_val(a) : NULL;
    bool ok = c && isl_val_is_int(c) == isl_bool_true &&
              isl_val_cmp_si(c, INT32_MAX) <= 0 && isl_val_cmp_si(c, INT32_MIN) >= 0;
    if (ok)
        *v = isl_val_get_num_si(c);
    isl_val_free(c);
    isl_aff_free(a);
    return ok;
}

/* The live-out's lower bound along dimension d when it is one constant (the tiles'
 * origin: unsharp mask's output starts at column 2; tiles from 0 left each row a 2046-
 * column tile and a 2-column one, and streamed rows unaligned), else 0. */
static int64_t tile_origin(const pm_poly_storage *st, int d)
{
    int64_t o = 0; /* bounded: the tile constraints add it to ints */
    return st->lb[d] && constant_of(st->lb[d], &o) && o > -(1 << 20) && o < (1 << 20) ? o : 0;
}

/* Chooses gr->tiled_dim: the two innermost dimensions of the live-out with a large
 * extent, preferring those whose bounds depend on the parameters (an untiled dimension
 * must have constant bounds: it is computed whole in every tile; bilateral grid's 11
 * intensity bins stay whole while its grid rows and columns are tiled). False when
 * there is none, or when an untiled dimension has parametric bounds. */
static bool choose_tiled_dims(const pm_plan *plan, pm_group *gr)
{
    const pm_poly *poly = plan->poly;
    int L = gr->liveout;
    const pm_func *lf = poly->stages[L].func;
    const pm_poly_storage *lst = &poly->storage[poly->stages[L].storage];
    gr->ntiled = 0;
    int dims[PM_MAX_DIMS], nd = 0;
    for (int pass = 0; pass < 2 && nd == 0; pass++)
        for (int d = 0; d < lf->ndims; d++)
            if (est_ub(plan, L, d) - est_lb(plan, L, d) + 1 > 4 &&
                (pass == 1 || parametric_dim(lst, d)))
                dims[nd++] = d;
    if (nd == 0)
        return false;
    int first = nd > 2 ? nd - 2 : 0;
    for (int i = first; i < nd; i++) {
        gr->tile_origin[gr->ntiled] = tile_origin(lst, dims[i]);
        gr->tiled_dim[gr->ntiled++] = dims[i];
    }
    /* untiled dimensions must have constant bounds (computed whole in every tile) */
    for (int d = 0; d < lf->ndims; d++) {
        bool tiled = false;
        for (int t = 0; t < gr->ntiled; t++)
            tiled = tiled || gr->tiled_dim[t] == d;
        if (!tiled && parametric_dim(lst, d))
            return false;
    }
    return true;
}

/* in->row_dim and in->blocks: row blocks need 2-D tiles, every member along the outer
 * tiled dimension at scale 1 (a producer's row then maps to one block), and producers
 * to interleave. */
static void model_row_dims(model_in *in)
{
    const pm_group *gr = in->gr;
    /* an exported member's copy runs at the end of the tile, from the whole footprint */
    in->blocks = gr->ntiled == 2 && gr->nmembers > 1 && !pm_group_exports(gr);
    for (int m = 0; m < gr->nmembers; m++) {
        in->row_dim[m] = -1;
        if (m == gr->nmembers - 1) {
            in->row_dim[m] = gr->tiled_dim[0];
            continue;
        }
        const pm_func *f = in->plan->poly->stages[gr->members[m]].func;
        for (int d = 0; d < f->ndims; d++)
            if (gr->align[m].dim_of[d] == gr->tiled_dim[0] && gr->align[m].scale[d] == 1.0)
                in->row_dim[m] = d;
        in->blocks = in->blocks && in->row_dim[m] >= 0;
    }
}

/* Indexes in->reads by consumer (in->first, in->by_consumer, in->producer_of) and marks
 * the members that read another member (in->outside_only), so that the model's pass is
 * linear in the reads; false when out of memory. */
static bool model_index_reads(model_in *in)
{
    const pm_group *gr = in->gr;
    in->by_consumer = malloc((size_t)(in->nreads + 1) * sizeof *in->by_consumer);
    in->producer_of = malloc((size_t)(in->nreads + 1) * sizeof *in->producer_of);
    int *consumer_of = malloc((size_t)(in->nreads + 1) * sizeof *consumer_of);
    if (!in->by_consumer || !in->producer_of || !consumer_of) {
        free(consumer_of);
        return false;
    }
    memset(in->first, 0, sizeof in->first);
    for (int r = 0; r < in->nreads; r++) {
        int c = member_of(gr, in->reads[r].consumer), p = member_of(gr, in->reads[r].producer);
        if (c >= 0 && p >= 0)
            in->outside_only[c] = false;
        /* outside the group (alignment keeps data-dependent reads out): not propagated */
        consumer_of[r] =
            c >= 0 && p >= 0 && (in->reads[r].affine || in->reads[r].bounded) ? c : -1;
        in->producer_of[r] = p;
        if (consumer_of[r] >= 0)
            in->first[c + 1]++;
    }
    for (int m = 0; m < gr->nmembers; m++)
        in->first[m + 1] += in->first[m];
    int fill[64];
    memcpy(fill, in->first, sizeof fill);
    for (int r = 0; r < in->nreads; r++) /* in their order within a consumer */
        if (consumer_of[r] >= 0)
            in->by_consumer[fill[consumer_of[r]]++] = r;
    free(consumer_of);
    return true;
}

/* The model's inputs that stay fixed for the group (in->plan and in->gr set): its
 * reads, each member's cost, volume and row dimension, the reads indexed by consumer.
 * False when a member's reads do not align or out of memory; model_in_free either way. */
static bool model_in_init(model_in *in)
{
    const pm_plan *plan = in->plan;
    const pm_group *gr = in->gr;
    for (int m = 0; m < gr->nmembers; m++)
        if (!pm_align_reads(plan, gr->members[m], &in->reads, &in->nreads))
            return false;
    for (int m = 0; m < gr->nmembers; m++) {
        in->outside_only[m] = true;
        in->cost[m] = pm_plan_stage_cost(plan, gr->members[m]);
        in->volume[m] = pm_plan_stage_volume(plan, gr->members[m]);
    }
    model_row_dims(in);
    return model_index_reads(in);
}

/* Frees what model_in_init allocated. */
static void model_in_free(model_in *in)
{
    free(in->reads);
    free(in->by_consumer);
    free(in->producer_of);
}

/* The inner tile sizes to try, into inner[] (at most 2 * N_INNER + 1); their number.
 * Sets in->row_points. */
static int inner_candidates(model_in *in, int64_t *inner)
{
    const pm_plan *plan = in->plan;
    const pm_group *gr = in->gr;
    int L = gr->liveout;
    /* the inner sizes, and the live-out's whole inner extent at the estimates when that
     * is a long row (1024 or more): a strip of whole rows recomputes nothing along them
     * (interpolate at 2560 x 1536: strips of 8 rows took 0.77x the time of the 16 x 512
     * tiles chosen before, bench/pm_sweep). Shorter rows keep the plain candidates: with
     * pyramid blending's 259-point level-3 rows a candidate too, its greedy merges took
     * another path, 10% slower. */
    int ni = 0;
    /* each size and one less: a member read at twice the live-out's coordinates with a
     * reach of two (a pyramid's down-sampling) then has rows of whole vectors. Local
     * Laplacian's gPyramid_L0, gathers from its remap table, in 63-point tiles: rows of
     * 128 points, 8 vectors (in 64-point tiles 130, 9 vectors, the last overlapping):
     * 0.96x the time at 1 and 2 threads (bench/pm_sweep, 30 interleaved rounds). The
     * model's time decides between them; on a tie the power of two stays. */
    for (size_t j = 0; j < N_INNER; j++) {
        inner[ni++] = kInner[j];
        inner[ni++] = kInner[j] - 1;
    }
    int id = gr->tiled_dim[gr->ntiled - 1];
    double whole = est_ub(plan, L, id) - est_lb(plan, L, id) + 1;
    in->row_points = gr->ntiled == 2 ? whole : 0;
    double largest = (double)kInner[N_INNER - 1];
    if (whole >= 1024 && whole != largest && (whole < largest || in->blocks))
        inner[ni++] = (int64_t)whole;
    return ni;
}

/* A candidate's tile sizes from an outer and an inner size: the options' where they
 * give them. */
static void candidate_tile(const pm_plan *plan, const pm_group *gr, int64_t outer,
                           int64_t inner, int64_t *tile)
{
    if (gr->ntiled == 2) {
        tile[0] = plan->o.tile_size[0] > 0 ? plan->o.tile_size[0] : outer;
        tile[1] = plan->o.tile_size[1] > 0 ? plan->o.tile_size[1] : inner;
    } else {
        tile[0] = plan->o.tile_size[0] > 0 ? plan->o.tile_size[0] : inner;
    }
}

/* Models one candidate into out (footprints clipped to the domains, scratch as
 * allocated: for any image size). *ok1: it keeps the overlap threshold and the cache
 * budget (unless the options gave the size); *ok0: that, and it is not a strip beyond
 * one L2 (the first pass's rule); *strip: it is a strip of whole long rows. */
static void candidate_eval(model_in *in, const int64_t *tile, model_out *out, bool *ok0,
                           bool *ok1, bool *strip)
{
    const pm_plan *plan = in->plan;
    /* redundancy at the estimates; scratch as allocated: for any image size */
    model_eval(in, tile, false, out);
    double scratch = out->scratch;
    *strip = in->gr->ntiled == 2 && in->row_points >= 1024 && (double)tile[1] >= in->row_points;
    double budget = (double)plan->o.cache_bytes * (*strip ? pm_costs.strip_budget : 1.0);
    bool fits = scratch <= budget;
    /* the options decide: keep it; but a member exported by the DP's choice is its
     * choice too, and the options' tiles scaled to a pyramid's finest level (local
     * Laplacian at 4096 x 4096: 275 GB of scratchpads) need not be taken for it */
    bool user = plan->o.tile_size[0] > 0 && !pm_group_exports(in->gr);
    if (!fits && !user) { /* out of the budget: no verdict needs the clipped model */
        *ok0 = *ok1 = false;
        return;
    }
    model_eval(in, tile, true, out);
    out->scratch = scratch;
    bool big_strip = *strip && scratch > (double)plan->o.cache_bytes * pm_costs.strip_l2;
    /* strips that fit only in row blocks: no taller than pm_costs.block_max_rows */
    if (fits && block_rows_for(in, tile) > 0 && tile[0] > pm_costs.block_max_rows &&
        plan->o.tile_size[0] <= 0) {
        model_out whole;
        in->blocks = false;
        model_eval(in, tile, false, &whole);
        in->blocks = true;
        fits = whole.scratch <= (double)plan->o.cache_bytes;
    }
    *ok1 = !(out->redundancy > plan->o.overlap_threshold || (!user && !fits));
    *ok0 = *ok1 && !big_strip;
}

/* The search's best candidate so far. */
typedef struct model_best {
    bool found, par; /* par: every thread gets at least two tiles                       */
    double time;
    int64_t tile[2];
    model_out *out;
} model_best;

/* One candidate's verdicts and the numbers the choice compares. */
typedef struct candidate {
    int64_t tile[2];
    bool ok[2], strip, par;
    double time, scratch;
} candidate;

/* The best of the candidates that pass `pass` into *best (its out not filled): parallel
 * first, then the least estimated time, then the smaller scratch. */
static void choose_candidate(const candidate *c, int nc, int pass, model_best *best)
{
    best->found = best->par = false;
    best->time = INFINITY;
    double best_scratch = 0;
    for (int k = 0; k < nc; k++) {
        if (!c[k].ok[pass])
            continue;
        bool better = !best->found || (c[k].par && !best->par) ||
                      (c[k].par == best->par && c[k].time < best->time) ||
                      (c[k].par == best->par && c[k].time == best->time && c[k].scratch < best_scratch);
        if (better) {
            *best = (model_best){true, c[k].par, c[k].time, {c[k].tile[0], c[k].tile[1]}, best->out};
            best_scratch = c[k].scratch;
        }
    }
}

/* Every candidate (outer x inner sizes) through the model once, the best into *best;
 * with first_fit, the first that passes the second pass's rules. The first pass leaves
 * out strips beyond one L2; a strip found there is taken (see pm_costs.strip_l2), else
 * the second pass sees every candidate. */
static void model_search(model_in *in, const int64_t *inner, int ni, bool first_fit,
                         model_out *out, model_best *best)
{
    const pm_plan *plan = in->plan;
    int no = in->gr->ntiled == 2 ? (int)(sizeof kOuter / sizeof kOuter[0]) : 1;
    candidate c[sizeof kOuter / sizeof kOuter[0] * (2 * N_INNER + 1)];
    int nc = 0;
    bool strip_found = false;
    best->found = false;
    for (int i = 0; i < no; i++)
        for (int j = 0; j < ni; j++) {
            candidate *k = &c[nc];
            k->tile[0] = k->tile[1] = 0;
            candidate_tile(plan, in->gr, kOuter[i], inner[j], k->tile);
            candidate_eval(in, k->tile, out, &k->ok[0], &k->ok[1], &k->strip);
            k->par = out->ntiles >= 2.0 * plan->o.threads;
            k->time = out->time;
            k->scratch = out->scratch;
            if (first_fit && k->ok[1]) {
                *best = (model_best){true, k->par, k->time, {k->tile[0], k->tile[1]}, best->out};
                *best->out = *out;
                return;
            }
            strip_found = strip_found || (k->ok[0] && k->strip);
            nc++;
        }
    choose_candidate(c, nc, strip_found ? 0 : 1, best);
    if (best->found) { /* the chosen candidate's footprints, for model_record */
        bool ok0, ok1, strip;
        candidate_eval(in, best->tile, best->out, &ok0, &ok1, &strip);
    }
}

/* A run's time over its threads as the time of one fully parallel run: time spread over
 * `units` parallel pieces (tiles, rows) on the options' threads, times the threads. A
 * group of fewer pieces than threads leaves threads idle, and costs more. */
static double parallel_time(const pm_plan *plan, double time, double units)
{
    double threads = plan->o.threads > 1 ? plan->o.threads : 1;
    double busy = units < threads ? fmax(units, 1) : threads;
    return time * threads / busy;
}

/* The chosen candidate into the group: tile sizes, row blocks, redundancy, scratch and
 * each member's modelled extents. */
static void model_record(pm_group *gr, const model_in *in, const model_best *best)
{
    const pm_plan *plan = in->plan;
    for (int t = 0; t < gr->ntiled; t++)
        gr->tile[t] = best->tile[t];
    gr->block_rows = block_rows_for(in, best->tile);
    /* Blocks when no producer reaches past the tile's rows are tiles of a block's
     * rows: the same loops and scratch, while isl's AST of a block band costs
     * (unsharp mask: 12 ms with blocks of 8 in 32-row strips, 7 with 8-row strips) */
    bool blocks_as_tiles = gr->block_rows > 0 && plan->o.tile_size[0] <= 0 &&
                           no_row_halo(in, best->out, best->tile[0]);
    if (blocks_as_tiles) {
        gr->tile[0] = gr->block_rows;
        gr->block_rows = 0;
    }
    gr->redundancy = best->out->redundancy;
    gr->scratch_bytes = (int64_t)best->out->scratch;
    gr->time = parallel_time(plan, best->out->time, best->out->ntiles);
    for (int m = 0; m < gr->nmembers; m++) {
        const pm_func *f = plan->poly->stages[gr->members[m]].func;
        for (int d = 0; d < f->ndims; d++)
            gr->fp[m].model_ext[d] = blocks_as_tiles && d == in->row_dim[m]
                                         ? (double)gr->tile[0]
                                         : best->out->hi[m][d] - best->out->lo[m][d] + 1;
    }
}

/* The model; with first_fit, it stops at the first candidate that passes (the group's
 * tile fields then hold that candidate, not the choice). */
/* A member's scale as num / den, den the least power of two up to 2^20 that makes it
 * whole within 1e-9 (tile_edge's rounding); false when none does or it is not positive. */
static bool scale_fraction(double scale, int64_t *num, int64_t *den)
{
    int64_t q = 1;
    while (q < (1 << 20) && fabs(scale * (double)q - floor(scale * (double)q + 0.5)) > 1e-9)
        q *= 2;
    *den = q;
    *num = (int64_t)floor(scale * (double)q + 0.5);
    return *num > 0 && fabs(scale * (double)q - (double)*num) <= 1e-9;
}

/* Can the tiles copy each exported member's own part (the footprints' own_lb/own_ub):
 * unit steps, and each dimension that follows a tiled one at a scale num / den? */
static bool exports_tileable(const pm_plan *plan, const pm_group *gr)
{
    for (int m = 0; gr->exported && m < gr->nmembers - 1; m++) {
        if (!gr->exported[m])
            continue;
        const pm_poly *poly = plan->poly;
        const pm_poly_storage *st = &poly->storage[poly->stages[gr->members[m]].storage];
        for (int d = 0; d < st->ndims; d++) {
            int64_t num, den;
            if (st->step[d] != 1 ||
                (gr->align[m].dim_of[d] >= 0 && !scale_fraction(gr->align[m].scale[d], &num, &den)))
                return false;
        }
    }
    return true;
}

static bool tile_model(const pm_plan *plan, pm_group *gr, bool first_fit)
{
    if (gr->nmembers > 64 || !choose_tiled_dims(plan, gr) || !exports_tileable(plan, gr))
        return false;
    model_in in = {.plan = plan, .gr = gr};
    if (!model_in_init(&in)) {
        model_in_free(&in);
        return false;
    }
    int64_t inner[2 * N_INNER + 1];
    int ni = inner_candidates(&in, inner);
    model_out *out = malloc(sizeof *out);
    model_best best = {.out = malloc(sizeof *best.out)};
    if (out && best.out)
        model_search(&in, inner, ni, first_fit, out, &best);
    gr->block_rows = 0;
    if (best.found)
        model_record(gr, &in, &best);
    free(out);
    free(best.out);
    model_in_free(&in);
    return best.found;
}

bool pm_tile_model(const pm_plan *plan, pm_group *gr) { return tile_model(plan, gr, false); }

double pm_tile_stage_time(const pm_plan *plan, int s)
{
    const pm_poly *poly = plan->poly;
    const pm_poly_storage *st = &poly->storage[poly->stages[s].storage];
    double W = elem_lanes(plan), rows = 1, steps = 1, outer = 1;
    for (int d = 0; d < st->ndims; d++) {
        double e = fmax(1, floor((est_ub(plan, s, d) - est_lb(plan, s, d)) / (double)st->step[d]) + 1);
        if (d == 0)
            outer = e;
        if (d < st->ndims - 1)
            rows *= e;
        else
            steps = e >= W ? ceil(e / W) : e;
    }
    /* the rows stream from memory and back to it: the stage's and its producers' */
    double time = rows * (pm_plan_stage_cost(plan, s) * steps + pm_costs.row_cost +
                          2 * pm_costs.stream_row_cost) +
                  pm_costs.stage_call_cost;
    return parallel_time(plan, time, outer);
}

bool pm_tile_feasible(const pm_plan *plan, pm_group *gr) { return tile_model(plan, gr, true); }

/* ---- isl footprints ---------------------------------------------------------------------- */

/* A stage's function space (tuple named after the function). */
static __isl_give isl_space *func_space(const pm_plan *plan, int s)
{
    const pm_poly *poly = plan->poly;
    return isl_set_get_space(poly->storage[poly->stages[s].storage].box);
}

/* An access relation as a function on the whole space: the constraints of its statement's
 * domain dropped (they only clip; clipping here would put the domain's parity and
 * boundary pieces into every footprint bound). */
static __isl_give isl_map *relaxed(__isl_keep isl_map *rel)
{
    isl_map *r = isl_map_copy(rel);
    int nout = (int)isl_map_dim(r, isl_dim_out);
    return isl_map_drop_constraints_not_involving_dims(r, isl_dim_out, 0, (unsigned)nout);
}


/* bounded_read's common case, as one basic map: every argument's bounds one affine
 * piece, equal on both sides (an exact argument: x / 8 + 1) or a constant interval (a
 * clamped level); NULL otherwise. Through isl's bound maps, each exact argument was
 * compared twice with its own divisions: bilateral grid's trilinear corners took 53.6
 * of the 95.1 million instructions of its footprints (callgrind), 12.0 of 53.9 so. */
static __isl_give isl_map *affine_box(__isl_keep isl_space *msp, __isl_keep isl_pw_aff_list *los,
                                      __isl_keep isl_pw_aff_list *his)
{
    int n = (int)isl_pw_aff_list_n_pw_aff(los);
    int64_t clo[PM_MAX_DIMS], chi[PM_MAX_DIMS];
    bool interval[PM_MAX_DIMS];
    if (n > PM_MAX_DIMS)
        return NULL;
    isl_multi_aff *ma = isl_multi_aff_zero(isl_space_copy(msp));
    for (int d = 0; d < n && ma; d++) {
        isl_pw_aff *lo = isl_pw_aff_list_get_pw_aff(los, d);
        isl_pw_aff *hi = isl_pw_aff_list_get_pw_aff(his, d);
        interval[d] = false;
        if (isl_pw_aff_plain_is_equal(lo, hi) == isl_bool_true &&
            isl_pw_aff_isa_aff(lo) == isl_bool_true) {
            ma = isl_multi_aff_set_aff(ma, d, isl_pw_aff_as_aff(isl_pw_aff_copy(lo)));
        } else if (constant_of(lo, &clo[d]) && constant_of(hi, &chi[d])) {
            interval[d] = true;
        } else {
            isl_multi_aff_free(ma);
            ma = NULL;
        }
        isl_pw_aff_free(lo);
        isl_pw_aff_free(hi);
    }
    if (!ma)
        return NULL;
    isl_map *box = isl_map_from_multi_aff(ma);
    for (int d = 0; d < n; d++) {
        if (!interval[d])
            continue;
        box = isl_map_drop_constraints_involving_dims(box, isl_dim_out, (unsigned)d, 1);
        box = isl_map_lower_bound_si(box, isl_dim_out, (unsigned)d, (int)clo[d]);
        box = isl_map_upper_bound_si(box, isl_dim_out, (unsigned)d, (int)chi[d]);
    }
    return box;
}

/* A data-dependent read (no access relation) as the box of every point it may read:
 * statement point -> the points between its arguments' bounds (pm_isl_pw_aff_bounds;
 * exact for the affine ones, a clamp's interval for a clamped index). NULL when some
 * argument has no bounds or runs along a strided dimension. Only a group whose reads
 * are bounded (align.h) has such a read on a path to a member: its footprint then takes
 * the member whole along the data-dependent dimension. */
static __isl_give isl_map *bounded_read(const pm_plan *plan, const pm_poly_stmt *sm,
                                        const pm_poly_access *acc)
{
    const pm_expr *call = acc->call;
    const pm_poly_storage *cs = pm_poly_storage_of(plan->poly, acc->callee);
    if (!cs || call->nargs == 0 || call->nargs != cs->ndims)
        return NULL;
    isl_space *sp = isl_set_get_space(sm->domain);
    pm_isl_env env = {sp, sm->ndims, sm->vars, NULL};
    isl_ctx *ctx = isl_space_get_ctx(sp);
    isl_pw_aff_list *los = isl_pw_aff_list_alloc(ctx, call->nargs);
    isl_pw_aff_list *his = isl_pw_aff_list_alloc(ctx, call->nargs);
    bool ok = true;
    for (int d = 0; d < call->nargs && ok; d++) {
        isl_pw_aff *lo = NULL, *hi = NULL;
        pm_isl_pw_aff_bounds(&env, call->args[d], &lo, &hi);
        ok = lo && hi && (cs->step[d] == 1 || isl_pw_aff_is_equal(lo, hi) == isl_bool_true);
        los = isl_pw_aff_list_add(los, lo);
        his = isl_pw_aff_list_add(his, hi);
    }
    isl_space *msp = isl_space_map_from_domain_and_range(sp, isl_set_get_space(cs->box));
    isl_map *box = ok ? affine_box(msp, los, his) : NULL;
    if (box) {
        isl_pw_aff_list_free(los);
        isl_pw_aff_list_free(his);
        isl_space_free(msp);
        return box;
    }
    /* statement point -> every point between the bounds, dimension by dimension */
    if (ok) {
        box = isl_map_universe(isl_space_copy(msp));
        box = isl_map_lower_bound_multi_pw_aff(
            box, isl_multi_pw_aff_from_pw_aff_list(isl_space_copy(msp), los));
        box = isl_map_upper_bound_multi_pw_aff(
            box, isl_multi_pw_aff_from_pw_aff_list(isl_space_copy(msp), his));
    } else {
        isl_pw_aff_list_free(los);
        isl_pw_aff_list_free(his);
    }
    isl_space_free(msp);
    return box;
}

/* Adds to *acc the relation from rel's domain to stage p's function space through the
 * reads of callee (rel's range), looking through inlined stages. False when a read on
 * the way is not affine. */
typedef struct map_list {
    int n, cap;
    isl_map **m;
} map_list;

static bool map_list_add(map_list *l, __isl_take isl_map *m)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        isl_map **grown = realloc(l->m, (size_t)cap * sizeof *grown);
        if (!grown) {
            isl_map_free(m);
            return false;
        }
        l->m = grown;
        l->cap = cap;
    }
    l->m[l->n++] = m;
    return m != NULL;
}

static void map_list_clear(map_list *l)
{
    for (int i = 0; i < l->n; i++)
        isl_map_free(l->m[i]);
    l->n = 0;
}

/* Whether a read may lead to stage p's points within a tile: a read of p itself, or of
 * a stage inlined at that call that reads p. A read of another member leads there only
 * through that member's own footprint (its reads are imaged from it), not through this
 * read. */
static bool on_path(const pm_plan *plan, const pm_poly_access *acc, int p)
{
    int c = pm_plan_stage_of(plan, acc->callee);
    if (c < 0)
        return false;
    if (pm_plan_call_inlined(plan, acc->call))
        return c != p && pm_plan_reads(plan, c, p);
    return c == p;
}

static bool reads_to(const pm_plan *plan, __isl_take isl_map *rel, const pm_expr *call, int p,
                     map_list *acc, int depth)
{
    const pm_func *callee = call->callee;
    int c = pm_plan_stage_of(plan, callee);
    bool in_place = pm_plan_call_inlined(plan, call);
    if (c == p && !in_place)
        return map_list_add(acc, rel);
    if (c < 0 || !in_place || depth > 32) {
        isl_map_free(rel);
        return true; /* not a path to p */
    }
    const pm_poly_stage *st = &plan->poly->stages[c];
    bool ok = true;
    for (int k = 0; k < st->nstmts && ok; k++) {
        const pm_poly_stmt *sm = &plan->poly->stmts[st->first_stmt + k];
        for (int a = 0; a < sm->naccesses && ok; a++) {
            isl_map *r = NULL;
            if (!sm->accesses[a].rel) {
                /* a data-dependent read: its bounds on a path to p, else fine only off
                 * every path to p */
                if (!on_path(plan, &sm->accesses[a], p))
                    continue;
                r = bounded_read(plan, sm, &sm->accesses[a]);
                ok = r != NULL;
                if (!ok)
                    continue;
            } else {
                r = relaxed(sm->accesses[a].rel);
            }
            isl_map *in = isl_map_copy(rel);
            in = isl_map_set_tuple_id(in, isl_dim_out, isl_map_get_tuple_id(r, isl_dim_in));
            ok = reads_to(plan, isl_map_apply_range(in, r), sm->accesses[a].call, p, acc,
                          depth + 1);
        }
    }
    isl_map_free(rel);
    return ok;
}

static isl_stat add_basic_read(__isl_take isl_basic_map *b, void *user)
{
    return map_list_add(user, isl_map_from_basic_map(b)) ? isl_stat_ok : isl_stat_error;
}

/* The reads replaced by the pieces of their union, coalesced: a stencil's taps (one
 * relation per offset) become one relation over a box of offsets, and equal reads
 * (x * x, two sums over one producer's taps: Harris's 54 paths to Ix) one, so the
 * footprint takes one image where it took one per read. The same points: the same
 * bounds. Reads in different spaces stay as they are. */
static bool merge_reads(map_list *l)
{
    isl_map *u = isl_map_copy(l->m[0]);
    for (int r = 1; r < l->n && u; r++) {
        isl_space *a = isl_map_get_space(u), *b = isl_map_get_space(l->m[r]);
        isl_bool same = isl_space_is_equal(a, b);
        isl_space_free(a);
        isl_space_free(b);
        if (same != isl_bool_true) {
            isl_map_free(u);
            return same == isl_bool_false; /* keep the list */
        }
        u = isl_map_union(u, isl_map_copy(l->m[r]));
    }
    u = isl_map_coalesce(u);
    if (!u)
        return false;
    map_list_clear(l);
    isl_stat st = isl_map_foreach_basic_map(u, add_basic_read, l);
    isl_map_free(u);
    return st == isl_stat_ok;
}

/* { [T] -> s_stmt[x] }: m (in function space) moved to the statement's space. */
static __isl_give isl_map *on_stmt(__isl_keep isl_map *m, const pm_poly_stmt *sm)
{
    isl_map *r = isl_map_copy(m);
    return isl_map_set_tuple_id(r, isl_dim_out, isl_set_get_tuple_id(sm->domain));
}

/* extreme's quick path: every piece of a bound's difference is a constant when the bound
 * is its tile edge plus a halo (the common case), and then the optimum is the best
 * constant of a piece whose domain is not empty, with no parametric optimum to solve
 * (a third of pyramid blending's footprint time). */
typedef struct constant_pieces {
    bool want_max;
    bool all_constant; /* false: some piece varies (or isl failed); use the general path */
    bool any;          /* some piece has points */
    int64_t best;
} constant_pieces;

static isl_stat scan_constant_piece(__isl_take isl_set *set, __isl_take isl_aff *aff, void *user)
{
    constant_pieces *s = user;
    isl_val *v = isl_aff_is_cst(aff) == isl_bool_true ? isl_aff_get_constant_val(aff) : NULL;
    if (!v || isl_val_is_int(v) != isl_bool_true) {
        s->all_constant = false;
    } else {
        int64_t c = isl_val_get_num_si(v);
        if (!s->any || (s->want_max ? c > s->best : c < s->best)) {
            isl_bool empty = isl_set_is_empty(set);
            if (empty < 0)
                s->all_constant = false;
            else if (!empty)
                s->best = c, s->any = true;
        }
    }
    isl_val_free(v);
    isl_set_free(set);
    isl_aff_free(aff);
    return s->all_constant ? isl_stat_ok : isl_stat_error;
}

/* The max (or min) over all tiles and parameter values of pa (taken); false when
 * unbounded or not a single constant. */
static bool extreme(__isl_take isl_pw_aff *pa, bool want_max, int64_t *out)
{
    constant_pieces cp = {want_max, true, false, 0};
    isl_pw_aff_foreach_piece(pa, scan_constant_piece, &cp);
    if (pa && cp.all_constant) {
        isl_pw_aff_free(pa);
        *out = cp.best;
        return cp.any;
    }
    isl_set *w = isl_map_wrap(isl_map_from_pw_aff(pa));
    int np = (int)isl_set_dim(w, isl_dim_param);
    w = isl_set_move_dims(w, isl_dim_set, 0, isl_dim_param, 0, (unsigned)np);
    int pos = (int)isl_set_dim(w, isl_dim_set) - 1;
    bool ok = false;
    if (w && isl_set_is_empty(w) == isl_bool_false) {
        /* an unbounded optimum is an isl error here: keep it off stderr */
        isl_ctx *ctx = isl_set_get_ctx(w);
        int on_error = isl_options_get_on_error(ctx);
        isl_options_set_on_error(ctx, ISL_ON_ERROR_CONTINUE);
        isl_pw_aff *mx = want_max ? isl_set_dim_max(isl_set_copy(w), pos)
                                  : isl_set_dim_min(isl_set_copy(w), pos);
        isl_options_set_on_error(ctx, on_error);
        isl_ctx_reset_error(ctx);
        if (mx && isl_pw_aff_is_cst(mx) == isl_bool_true && isl_pw_aff_n_piece(mx) == 1) {
            isl_set *dom = isl_pw_aff_domain(isl_pw_aff_copy(mx));
            isl_point *pt = isl_set_sample_point(dom);
            isl_val *v = isl_pw_aff_eval(isl_pw_aff_copy(mx), pt);
            if (v && isl_val_is_int(v) == isl_bool_true) {
                *out = isl_val_get_num_si(v);
                ok = true;
            }
            isl_val_free(v);
        }
        isl_pw_aff_free(mx);
    }
    isl_set_free(w);
    return ok;
}

/* Max over all tiles and parameter values of the index extent ub - lb (in steps) + 1;
 * -1 when unbounded. */
static int64_t max_extent(__isl_keep isl_pw_aff *lb, __isl_keep isl_pw_aff *ub, int64_t step)
{
    int64_t span;
    isl_pw_aff *d = isl_pw_aff_sub(isl_pw_aff_copy(ub), isl_pw_aff_copy(lb));
    if (isl_pw_aff_is_empty(d) == isl_bool_true) {
        isl_pw_aff_free(d);
        return 1;
    }
    return extreme(d, true, &span) ? span / step + 1 : -1;
}

/* floor(scale * (tile * T_t + off)) over the tile space: where a member's coordinate
 * that follows tiled dimension t starts (off the origin) or ends (the origin plus tile - 1)
 * in tile T. */
static __isl_give isl_pw_aff *tile_edge(__isl_keep isl_space *tsp, int t, int64_t tile,
                                        double scale, int64_t off)
{
    int64_t num, den;
    (void)scale_fraction(scale, &num, &den); /* the nearest such fraction either way */
    isl_ctx *ctx = isl_space_get_ctx(tsp);
    isl_aff *a = isl_aff_var_on_domain(isl_local_space_from_space(isl_space_copy(tsp)),
                                       isl_dim_set, (unsigned)t);
    a = isl_aff_scale_val(a, isl_val_int_from_si(ctx, (long)(tile * num)));
    a = isl_aff_add_constant_val(a, isl_val_int_from_si(ctx, (long)(off * num)));
    a = isl_aff_floor(isl_aff_scale_down_ui(a, (unsigned)den));
    return isl_pw_aff_from_aff(a);
}

/* An exact footprint bound replaced by the tile's edge at the member's scale plus a
 * constant halo (its extreme over all tiles): an outer bound of one affine piece, so
 * the footprints of a deep group do not pile up the pieces and divisions of every
 * stage before them. The exact bound comes back when no constant halo bounds it.
 * With `inner` (a group with exported members, whose first and last tiles compute the
 * ends of their domains: pm_group.exported), the halo is the extreme over the inner
 * tiles, and the exact bound stays where it reaches further (the outer tiles). */
static __isl_give isl_pw_aff *simple_bound(const pm_group *gr, int m, int d,
                                           __isl_keep isl_space *tsp,
                                           __isl_take isl_pw_aff *exact, bool upper,
                                           bool *simple, __isl_keep isl_set *inner)
{
    *simple = false;
    int j = gr->align[m].dim_of[d];
    int t = -1;
    for (int k = 0; k < gr->ntiled; k++)
        if (gr->tiled_dim[k] == j)
            t = k;
    if (j < 0 || t < 0 || gr->align[m].scale[d] <= 0)
        return exact;
    isl_pw_aff *edge = tile_edge(tsp, t, gr->tile[t], gr->align[m].scale[d],
                                 gr->tile_origin[t] + (upper ? gr->tile[t] - 1 : 0));
    edge = isl_pw_aff_align_params(edge, isl_pw_aff_get_space(exact));
    int64_t halo;
    isl_pw_aff *diff = isl_pw_aff_sub(isl_pw_aff_copy(exact), isl_pw_aff_copy(edge));
    if (inner)
        diff = isl_pw_aff_intersect_domain(diff, isl_set_copy(inner));
    if (!extreme(diff, upper, &halo)) {
        isl_pw_aff_free(edge);
        return exact;
    }
    isl_ctx *ctx = isl_pw_aff_get_ctx(edge);
    *simple = !inner; /* else pieces of the exact bound stay: gist them */
    edge = isl_pw_aff_add_constant_val(edge, isl_val_int_from_si(ctx, (long)halo));
    if (!inner) {
        isl_pw_aff_free(exact);
        return edge;
    }
    return upper ? isl_pw_aff_union_max(edge, exact) : isl_pw_aff_union_min(edge, exact);
}

/* box without the constraints on member m's tiled dimensions: what bounds its untiled
 * ones (a tile box bounds only the tiled). */
static __isl_give isl_set *untiled_part(const pm_group *gr, int m, const pm_func *f,
                                        __isl_take isl_set *box)
{
    for (int d = 0; d < f->ndims; d++) {
        int j = gr->align[m].dim_of[d];
        for (int t = 0; t < gr->ntiled; t++)
            if (j >= 0 && gr->tiled_dim[t] == j)
                box = isl_set_drop_constraints_involving_dims(box, isl_dim_set, (unsigned)d, 1);
    }
    return box;
}

/* pm_tile_footprints' state, shared by its steps. */
typedef struct fp_ctx {
    const pm_plan *plan;
    pm_group *gr;
    isl_space *tsp;   /* the tile space: { [T_0, ..] } over the parameters               */
    /* M[m]: what member m computes per tile (its footprint clipped to its box); U[m]:
     * the same unclipped in the tiled dimensions. Reads are imaged from U: clipping
     * there would carry the min/max pieces of every stage's box edges into every
     * producer's bounds (interpolate's 27-stage group: 385 of 580 ms, against 33
     * unclipped); the unclipped image is a superset, clipped once by the producer's own
     * box (member_box). */
    isl_map **M, **U;
    isl_set *tiles;   /* the tiles that exist: some point of the live-out's box in them  */
    isl_set *inner;   /* with exported members: the tiles neither first nor last along
                         any tiled dimension (simple_bound), else NULL                  */
    isl_pw_aff *own_box[2][PM_MAX_DIMS]; /* the member's own part as its box grows by it
                         (member_own_part to member_bounds): the lower and upper bounds */
    map_list reads;   /* one statement's reads of a member (stmt_read_bounds)            */
} fp_ctx;

/* The live-out's tile T: { [T] -> L[x] : o_j + t_j*T_j <= x_dj <= o_j + t_j*T_j + t_j - 1 }
 * (o_j the origin). */
static __isl_give isl_map *live_out_tile_map(const fp_ctx *c)
{
    const pm_group *gr = c->gr;
    isl_space *msp = isl_space_map_from_domain_and_range(isl_space_copy(c->tsp),
                                                         func_space(c->plan, gr->liveout));
    isl_map *ml = isl_map_universe(isl_space_copy(msp));
    isl_local_space *ls = isl_local_space_from_space(msp);
    for (int t = 0; t < gr->ntiled; t++) {
        int d = gr->tiled_dim[t];
        isl_constraint *lo = isl_constraint_alloc_inequality(isl_local_space_copy(ls));
        lo = isl_constraint_set_coefficient_si(lo, isl_dim_out, d, 1);
        lo = isl_constraint_set_coefficient_si(lo, isl_dim_in, t, -(int)gr->tile[t]);
        lo = isl_constraint_set_constant_si(lo, -(int)gr->tile_origin[t]);
        isl_constraint *hi = isl_constraint_alloc_inequality(isl_local_space_copy(ls));
        hi = isl_constraint_set_coefficient_si(hi, isl_dim_out, d, -1);
        hi = isl_constraint_set_coefficient_si(hi, isl_dim_in, t, (int)gr->tile[t]);
        hi = isl_constraint_set_constant_si(hi, (int)(gr->tile[t] - 1 + gr->tile_origin[t]));
        ml = isl_map_add_constraint(ml, lo);
        ml = isl_map_add_constraint(ml, hi);
    }
    isl_local_space_free(ls);
    return ml;
}

/* The live-out's M and U, and c->tiles; false when isl fails. */
static bool live_out_footprint(fp_ctx *c)
{
    const pm_poly *poly = c->plan->poly;
    int nm = c->gr->nmembers, L = c->gr->liveout;
    isl_map *ml = live_out_tile_map(c);
    /* footprints are clipped only to each function's box (convex: affine bounds with
     * min/max); each member computes its box inside its own domain (the schedule's
     * extension intersects) */
    isl_set *lbox = poly->storage[poly->stages[L].storage].box;
    c->U[nm - 1] = isl_map_intersect_range(
        isl_map_copy(ml), untiled_part(c->gr, nm - 1, poly->stages[L].func, isl_set_copy(lbox)));
    c->M[nm - 1] = isl_map_intersect_range(ml, isl_set_copy(lbox));
    bool ok = c->M[nm - 1] != NULL && c->U[nm - 1] != NULL;
    /* the tiles that exist: some point of the live-out's box in them (bounds are only
     * ever evaluated there; elsewhere a small image's clipped pieces would make them
     * unbounded) */
    c->tiles = ok ? isl_map_domain(isl_map_copy(c->M[nm - 1])) : NULL;
    return ok;
}

/* Adds to lbs/ubs (per dimension of member m) and *needed the images of consumer cm's
 * footprint (U[cm]) under statement sm's reads that lead to member m (looking through
 * inlined stages, a stencil's taps merged). False when isl fails or a read on the way
 * has no bounds. */
static bool stmt_read_bounds(fp_ctx *c, int m, int cm, const pm_poly_stmt *sm,
                             isl_pw_aff **lbs, isl_pw_aff **ubs, isl_set **needed)
{
    const pm_poly *poly = c->plan->poly;
    int p = c->gr->members[m];
    const pm_func *f = poly->stages[p].func;
    const pm_poly_storage *st = &poly->storage[poly->stages[p].storage];
    bool ok = true;
    map_list_clear(&c->reads);
    for (int a = 0; a < sm->naccesses && ok; a++) {
        if (!on_path(c->plan, &sm->accesses[a], p))
            continue;
        isl_map *r = sm->accesses[a].rel ? relaxed(sm->accesses[a].rel)
                                          : bounded_read(c->plan, sm, &sm->accesses[a]);
        if (!r)
            return false;
        ok = reads_to(c->plan, r, sm->accesses[a].call, p, &c->reads, 0);
    }
    if (ok && c->reads.n > 1)
        ok = merge_reads(&c->reads);
    for (int r = 0; r < c->reads.n && ok; r++) {
        isl_map *img = isl_map_apply_range(on_stmt(c->U[cm], sm), isl_map_copy(c->reads.m[r]));
        img = isl_map_set_tuple_id(img, isl_dim_out, isl_set_get_tuple_id(st->box));
        isl_set *nd = isl_map_domain(
            isl_map_intersect_range(isl_map_copy(img), isl_set_copy(st->box)));
        *needed = *needed ? isl_set_union(*needed, nd) : nd;
        for (int d = 0; d < f->ndims; d++) {
            isl_pw_aff *lo = isl_map_dim_min(isl_map_copy(img), d);
            isl_pw_aff *hi = isl_map_dim_max(isl_map_copy(img), d);
            lbs[d] = lbs[d] ? isl_pw_aff_union_min(lbs[d], lo) : lo;
            ubs[d] = ubs[d] ? isl_pw_aff_union_max(ubs[d], hi) : hi;
        }
        isl_map_free(img);
    }
    return ok;
}

/* Per dimension of member m, the bounds of every read's image of its consumers' boxes,
 * into lbs/ubs, and the tiles that need it into *needed: one convex image at a time (a
 * union of images makes isl's optimum exponential). False when isl fails. */
static bool member_read_bounds(fp_ctx *c, int m, isl_pw_aff **lbs, isl_pw_aff **ubs,
                               isl_set **needed)
{
    const pm_poly *poly = c->plan->poly;
    bool ok = true;
    for (int cm = m + 1; cm < c->gr->nmembers && ok; cm++) {
        const pm_poly_stage *cs = &poly->stages[c->gr->members[cm]];
        for (int k = 0; k < cs->nstmts && ok; k++) {
            const pm_poly_stmt *sm = &poly->stmts[cs->first_stmt + k];
            if (sm->piece > 0)
                continue; /* the same reads as its piece 0, and U is per member */
            ok = stmt_read_bounds(c, m, cm, sm, lbs, ubs, needed);
        }
    }
    map_list_clear(&c->reads);
    return ok;
}

/* Member m's box bounds from its reads' bounds (lbs/ubs, taken and set to NULL as they
 * are used), appended to *lbl and *ubl, with gr->fp[m].ext and .lb. False when an
 * extent has no constant bound over all tiles. */
static bool member_bounds(fp_ctx *c, int m, isl_pw_aff **lbs, isl_pw_aff **ubs,
                          __isl_keep isl_set *needed, isl_pw_aff_list **lbl,
                          isl_pw_aff_list **ubl)
{
    const pm_poly *poly = c->plan->poly;
    pm_group *gr = c->gr;
    int p = gr->members[m];
    const pm_func *f = poly->stages[p].func;
    const pm_poly_storage *st = &poly->storage[poly->stages[p].storage];
    bool ok = true;
    for (int d = 0; d < f->ndims && ok; d++) {
        isl_pw_aff *lb = isl_pw_aff_coalesce(lbs[d]);
        isl_pw_aff *ub = isl_pw_aff_coalesce(ubs[d]);
        lbs[d] = ubs[d] = NULL;
        /* the halo over the tiles that need the member (the exact bound's domain);
         * an exact bound that stays, simplified where it is needed (the gist of
         * every bound was two thirds of interpolate's footprints, 20 of 31 ms) */
        bool simple_lb, simple_ub;
        lb = simple_bound(gr, m, d, c->tsp, isl_pw_aff_intersect_domain(lb, isl_set_copy(c->tiles)),
                          false, &simple_lb, c->inner);
        ub = simple_bound(gr, m, d, c->tsp, isl_pw_aff_intersect_domain(ub, isl_set_copy(c->tiles)),
                          true, &simple_ub, c->inner);
        if (!simple_lb)
            lb = isl_pw_aff_gist(lb, isl_set_copy(needed));
        if (!simple_ub)
            ub = isl_pw_aff_gist(ub, isl_set_copy(needed));
        if (gr->exported && gr->exported[m]) {
            /* after the simplification: the first and last tiles' parts may reach to the
             * domain's ends, which a constant halo would give every tile */
            lb = isl_pw_aff_union_min(lb, c->own_box[0][d]);
            ub = isl_pw_aff_union_max(ub, c->own_box[1][d]);
            c->own_box[0][d] = c->own_box[1][d] = NULL;
        }
        int64_t e = lb && ub ? max_extent(lb, ub, st->step[d]) : -1;
        if (e < 1)
            ok = false;
        gr->fp[m].ext[d] = e;
        gr->fp[m].lb[d] = isl_pw_aff_copy(lb);
        *lbl = isl_pw_aff_list_add(*lbl, lb);
        *ubl = isl_pw_aff_list_add(*ubl, ub);
    }
    return ok;
}

/* What member m computes per tile, the box between lbl and ubl (taken) inside its
 * domain: M[m] and gr->fp[m].box; U[m] the same unclipped in the tiled dimensions.
 * False when isl fails. */
static bool member_box(fp_ctx *c, int m, __isl_keep isl_space *bsp,
                       __isl_take isl_pw_aff_list *lbl, __isl_take isl_pw_aff_list *ubl)
{
    const pm_poly *poly = c->plan->poly;
    int p = c->gr->members[m];
    const pm_poly_storage *st = &poly->storage[poly->stages[p].storage];
    isl_map *box = isl_map_universe(isl_space_copy(bsp));
    box = isl_map_lower_bound_multi_pw_aff(
        box, isl_multi_pw_aff_from_pw_aff_list(isl_space_copy(bsp), lbl));
    box = isl_map_upper_bound_multi_pw_aff(
        box, isl_multi_pw_aff_from_pw_aff_list(isl_space_copy(bsp), ubl));
    c->U[m] = isl_map_intersect_range(isl_map_copy(box),
                                      untiled_part(c->gr, m, poly->stages[p].func,
                                                   isl_set_copy(st->box)));
    box = isl_map_intersect_range(box, isl_set_copy(st->box));
    c->M[m] = isl_map_coalesce(box);
    c->gr->fp[m].box = isl_map_copy(c->M[m]);
    return c->M[m] != NULL && c->U[m] != NULL;
}

/* f, a function of the parameters alone, as one of the tile space's points. */
static __isl_give isl_pw_aff *on_tiles(const fp_ctx *c, __isl_take isl_pw_aff *f)
{
    f = isl_pw_aff_align_params(f, isl_space_params(isl_space_copy(c->tsp)));
    isl_space *dom = f ? isl_pw_aff_get_domain_space(f) : NULL;
    isl_bool params = dom ? isl_space_is_params(dom) : isl_bool_error;
    isl_space_free(dom);
    if (params == isl_bool_true) /* isl_set_dim_min's, for one */
        return isl_pw_aff_insert_domain(f, isl_space_copy(c->tsp));
    isl_space *none = isl_space_set_from_params(isl_space_params(isl_space_copy(c->tsp)));
    isl_multi_aff *ma = isl_multi_aff_zero(
        isl_space_map_from_domain_and_range(isl_space_copy(c->tsp), none));
    return isl_pw_aff_pullback_multi_aff(f, ma);
}

/* ceil(num/den * (origin + size * (t + k))) over the tile space: where tile t + k starts,
 * in a member's coordinates at scale num / den. */
static __isl_give isl_pw_aff *scaled_tile_start(const fp_ctx *c, int t, int k, int64_t num,
                                                int64_t den)
{
    const pm_group *gr = c->gr;
    isl_aff *a = isl_aff_var_on_domain(isl_local_space_from_space(isl_space_copy(c->tsp)),
                                       isl_dim_set, (unsigned)t);
    a = isl_aff_add_constant_si(a, k);
    a = isl_aff_scale_val(a, isl_val_int_from_si(isl_aff_get_ctx(a), gr->tile[t] * num));
    a = isl_aff_add_constant_val(a, isl_val_int_from_si(isl_aff_get_ctx(a), gr->tile_origin[t] * num));
    a = isl_aff_scale_down_ui(a, (unsigned)den);
    return isl_pw_aff_from_aff(isl_aff_ceil(a));
}

/* Exported member m's own part of each tile, per dimension into gr->fp[m].own_lb and
 * own_ub (pm_group.exported): along a dimension that follows tiled dimension t at scale
 * num/den, from where tile t starts to where the next one does, the first tile from the
 * member's lower bound and the last one to its upper bound (so that the tiles' parts
 * cover its domain once); along the others, the whole domain. Adds the tiles with some
 * of it to *needed (member_bounds adds the part to the box). False when isl fails. */
static bool member_own_part(fp_ctx *c, int m, isl_set **needed)
{
    const pm_poly *poly = c->plan->poly;
    pm_group *gr = c->gr;
    const pm_poly_storage *st = &poly->storage[poly->stages[gr->members[m]].storage];
    isl_set *some = isl_set_copy(c->tiles);
    bool ok = true;
    for (int d = 0; d < st->ndims && ok; d++) {
        isl_pw_aff *lo = on_tiles(c, isl_pw_aff_copy(st->lb[d]));
        isl_pw_aff *hi = on_tiles(c, isl_pw_aff_copy(st->ub[d]));
        isl_pw_aff *box_lo = NULL, *box_hi = NULL;
        int ld = gr->align[m].dim_of[d], t = -1;
        for (int k = 0; k < gr->ntiled && ld >= 0; k++)
            if (gr->tiled_dim[k] == ld)
                t = k;
        int64_t num, den;
        if (t >= 0 && scale_fraction(gr->align[m].scale[d], &num, &den)) {
            /* the first and last tiles along t: none before or after them exists */
            isl_set *first = isl_set_copy(c->tiles), *last = isl_set_copy(c->tiles);
            isl_pw_aff *tmin = isl_set_dim_min(isl_set_copy(c->tiles), t);
            isl_pw_aff *tmax = isl_set_dim_max(isl_set_copy(c->tiles), t);
            isl_pw_aff *tv = isl_pw_aff_var_on_domain(
                isl_local_space_from_space(isl_space_copy(c->tsp)), isl_dim_set, (unsigned)t);
            first = isl_set_intersect(first, isl_pw_aff_le_set(isl_pw_aff_copy(tv), on_tiles(c, tmin)));
            last = isl_set_intersect(last, isl_pw_aff_ge_set(tv, on_tiles(c, tmax)));
            isl_pw_aff *start = scaled_tile_start(c, t, 0, num, den);
            isl_pw_aff *next = scaled_tile_start(c, t, 1, num, den);
            isl_pw_aff *end = isl_pw_aff_add_constant_val(next, isl_val_negone(isl_pw_aff_get_ctx(next)));
            /* the scaled tiles reach past the member's domain at both ends (a pyramid's
             * levels): the parts are the scaled tiles in the domain, and the box grows
             * by one affine piece; else the first and last tiles take the rest */
            isl_set *short_lo = isl_set_intersect(isl_set_copy(first), isl_pw_aff_lt_set(
                                    isl_pw_aff_copy(lo), isl_pw_aff_copy(start)));
            isl_set *short_hi = isl_set_intersect(isl_set_copy(last), isl_pw_aff_gt_set(
                                    isl_pw_aff_copy(hi), isl_pw_aff_copy(end)));
            isl_bool covered_lo = isl_set_is_empty(short_lo), covered_hi = isl_set_is_empty(short_hi);
            isl_set_free(short_lo);
            isl_set_free(short_hi);
            ok = covered_lo >= 0 && covered_hi >= 0;
            if (covered_lo == isl_bool_true && covered_hi == isl_bool_true) {
                box_lo = isl_pw_aff_copy(start);
                box_hi = isl_pw_aff_copy(end);
            }
            start = isl_pw_aff_max(start, isl_pw_aff_copy(lo));
            end = isl_pw_aff_min(end, isl_pw_aff_copy(hi));
            if (!box_lo) {
                start = isl_pw_aff_cond(isl_set_indicator_function(isl_set_copy(first)),
                                        isl_pw_aff_copy(lo), start);
                end = isl_pw_aff_cond(isl_set_indicator_function(isl_set_copy(last)),
                                      isl_pw_aff_copy(hi), end);
            }
            isl_set_free(first);
            isl_set_free(last);
            isl_pw_aff_free(lo);
            isl_pw_aff_free(hi);
            lo = start;
            hi = end;
        }
        lo = isl_pw_aff_coalesce(isl_pw_aff_intersect_domain(lo, isl_set_copy(c->tiles)));
        hi = isl_pw_aff_coalesce(isl_pw_aff_intersect_domain(hi, isl_set_copy(c->tiles)));
        some = isl_set_intersect(some, isl_pw_aff_le_set(isl_pw_aff_copy(lo), isl_pw_aff_copy(hi)));
        c->own_box[0][d] = box_lo ? isl_pw_aff_intersect_domain(box_lo, isl_set_copy(c->tiles))
                                  : isl_pw_aff_copy(lo);
        c->own_box[1][d] = box_hi ? isl_pw_aff_intersect_domain(box_hi, isl_set_copy(c->tiles))
                                  : isl_pw_aff_copy(hi);
        gr->fp[m].own_lb[d] = lo;
        gr->fp[m].own_ub[d] = hi;
        ok = ok && lo && hi && c->own_box[0][d] && c->own_box[1][d];
    }
    *needed = *needed ? isl_set_union(*needed, some) : some;
    return ok && *needed != NULL;
}

/* A producer's footprint (member m < the live-out) from its consumers' U: gr->fp[m],
 * M[m] and U[m]. False when isl fails or an extent has no bound. */
static bool member_footprint(fp_ctx *c, int m)
{
    const pm_poly *poly = c->plan->poly;
    int p = c->gr->members[m];
    const pm_func *f = poly->stages[p].func;
    const pm_poly_storage *st = &poly->storage[poly->stages[p].storage];
    isl_pw_aff *lbs[PM_MAX_DIMS] = {0}, *ubs[PM_MAX_DIMS] = {0};
    isl_set *needed = NULL;
    bool ok = member_read_bounds(c, m, lbs, ubs, &needed) &&
              (!c->gr->exported || !c->gr->exported[m] || member_own_part(c, m, &needed)) &&
              needed;
    isl_space *bsp = NULL;
    if (ok) {
        needed = isl_set_coalesce(needed);
        bsp = isl_space_map_from_domain_and_range(isl_space_copy(c->tsp),
                                                  isl_set_get_space(st->box));
        isl_pw_aff_list *lbl = isl_pw_aff_list_alloc(poly->ctx, f->ndims);
        isl_pw_aff_list *ubl = isl_pw_aff_list_alloc(poly->ctx, f->ndims);
        ok = member_bounds(c, m, lbs, ubs, needed, &lbl, &ubl);
        if (ok) {
            ok = member_box(c, m, bsp, lbl, ubl);
        } else {
            isl_pw_aff_list_free(lbl);
            isl_pw_aff_list_free(ubl);
        }
    }
    for (int d = 0; d < PM_MAX_DIMS; d++) {
        isl_pw_aff_free(lbs[d]);
        isl_pw_aff_free(ubs[d]);
        isl_pw_aff_free(c->own_box[0][d]);
        isl_pw_aff_free(c->own_box[1][d]);
        c->own_box[0][d] = c->own_box[1][d] = NULL;
    }
    isl_set_free(needed);
    isl_space_free(bsp);
    return ok;
}

bool pm_tile_footprints(const pm_plan *plan, pm_group *gr)
{
    const pm_poly *poly = plan->poly;
    int nm = gr->nmembers;
    fp_ctx c = {.plan = plan, .gr = gr, .reads = {0, 0, NULL}};
    c.tsp = isl_space_set_from_params(isl_space_copy(poly->params));
    c.tsp = isl_space_add_dims(c.tsp, isl_dim_set, (unsigned)gr->ntiled);
    c.M = calloc((size_t)nm, sizeof *c.M);
    c.U = calloc((size_t)nm, sizeof *c.U);
    if (!c.M || !c.U) {
        free(c.M);
        free(c.U);
        isl_space_free(c.tsp);
        return false;
    }
    /* the live-out's tile, then each producer from its consumers, last to first */
    bool ok = live_out_footprint(&c);
    if (ok && pm_group_exports(gr)) {
        c.inner = isl_set_copy(c.tiles);
        for (int t = 0; t < gr->ntiled && c.inner; t++) {
            isl_pw_aff *tv = isl_pw_aff_var_on_domain(
                isl_local_space_from_space(isl_space_copy(c.tsp)), isl_dim_set, (unsigned)t);
            isl_pw_aff *lo = on_tiles(&c, isl_set_dim_min(isl_set_copy(c.tiles), t));
            isl_pw_aff *hi = on_tiles(&c, isl_set_dim_max(isl_set_copy(c.tiles), t));
            c.inner = isl_set_intersect(c.inner, isl_pw_aff_gt_set(isl_pw_aff_copy(tv), lo));
            c.inner = isl_set_intersect(c.inner, isl_pw_aff_lt_set(tv, hi));
        }
        ok = c.inner != NULL;
    }
    for (int m = nm - 2; m >= 0 && ok; m--)
        ok = member_footprint(&c, m);
    map_list_clear(&c.reads);
    free(c.reads.m);
    for (int m = 0; m < nm; m++) {
        isl_map_free(c.M[m]);
        isl_map_free(c.U[m]);
    }
    free(c.M);
    free(c.U);
    isl_set_free(c.tiles);
    isl_set_free(c.inner);
    isl_space_free(c.tsp);
    return ok;
}

int64_t pm_tile_scratch_bytes(const pm_plan *plan, const pm_group *gr, int m)
{
    const pm_poly *poly = plan->poly;
    const pm_poly_storage *st = &poly->storage[poly->stages[gr->members[m]].storage];
    int64_t n = (int64_t)pm_type_size(st->type);
    for (int d = 0; d < st->ndims; d++) {
        int64_t e = gr->fp[m].ext[d];
        if (d == st->ndims - 1)
            e = round_up(e, elem_lanes(plan));
        if (e > 0 && n > INT64_MAX / e)
            return -1;
        n *= e;
    }
    return round_up(n, 64);
}

__isl_give isl_union_map *pm_tile_index_map(const pm_plan *plan, const pm_group *gr)
{
    const pm_poly *poly = plan->poly;
    const pm_poly_stage *st = &poly->stages[gr->liveout];
    isl_union_map *um = NULL;
    for (int i = st->first_stmt; i < st->first_stmt + st->nstmts; i++) {
        isl_space *sp = isl_set_get_space(poly->stmts[i].domain);
        isl_space *out = isl_space_set_from_params(isl_space_params(isl_space_copy(sp)));
        out = isl_space_add_dims(out, isl_dim_set, (unsigned)gr->ntiled);
        isl_multi_aff *ma =
            isl_multi_aff_zero(isl_space_map_from_domain_and_range(isl_space_copy(sp), out));
        for (int t = 0; t < gr->ntiled; t++) {
            isl_aff *a = isl_aff_var_on_domain(isl_local_space_from_space(isl_space_copy(sp)),
                                               isl_dim_set, (unsigned)gr->tiled_dim[t]);
            a = isl_aff_add_constant_si(a, -(int)gr->tile_origin[t]);
            a = isl_aff_floor(isl_aff_scale_down_ui(a, (unsigned)gr->tile[t]));
            ma = isl_multi_aff_set_aff(ma, t, a);
        }
        isl_space_free(sp);
        isl_map *m = isl_map_intersect_domain(isl_map_from_multi_aff(ma),
                                              isl_set_copy(poly->stmts[i].domain));
        isl_union_map *u = isl_union_map_from_map(m);
        um = um ? isl_union_map_union(um, u) : u;
    }
    return um;
}
