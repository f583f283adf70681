/* storage.c — buffers, scratchpads and slots (see storage.h).
 *
 * Shape: pm_storage_decide walks the stages in order: outputs stay the caller's (maybe
 * streamed), inlined stages get nothing, tiled members a scratchpad per thread, the rest
 * a full buffer in the first slot free by then; then the prefetched buffers and their
 * leading reads (choose_prefetch_calls); then the dump.
 */
#include "codegen/storage.h"

#include "codegen/tile.h"
#include "codegen/costs.h"

#include <stdlib.h>
#include <string.h>


/* The last group that reads stage s (its own group when none does). Groups run in
 * order, one after the other. */
static int last_reader_group(const pm_poly *poly, const pm_plan *plan, int s)
{
    int last = plan->group_of[s];
    for (int c = s + 1; c < poly->nstages; c++)
        if (!plan->inlined[c] && plan->group_of[c] > last && pm_plan_reads(plan, c, s))
            last = plan->group_of[c];
    return last;
}

/* Whether output stage s is written past the caches (storage.h): the option, or by
 * default when its bytes at the estimates exceed the L2 caches of the threads that
 * write it (plan->o.cache_bytes is half an L2): such an output leaves the caches before
 * anyone reads it, and a cached store would first read every line it writes. */
static bool streamed_output(const pm_poly *poly, const pm_plan *plan, int s)
{
    if (plan->o.stream_outputs >= 0)
        return plan->o.stream_outputs == 1;
    const pm_poly_storage *st = &poly->storage[poly->stages[s].storage];
    int threads = plan->o.threads;
    double bytes = pm_type_size(st->type) * pm_plan_stage_volume(plan, s);
    return bytes > 2.0 * (double)plan->o.cache_bytes * threads;
}

/* Whether storage k's reads prefetch (storage.h): the option, or by default when its
 * bytes at the estimates exceed the L2 caches of the threads, as for streamed outputs:
 * such a buffer is read from memory, row after row. */
static bool prefetched_reads(const pm_plan *plan, int k)
{
    const pm_storage_plan *st = &plan->storage[k];
    /* an exported member's full buffer is read from memory by the later groups */
    if (st->kind != PM_STORAGE_INPUT && st->kind != PM_STORAGE_SCRATCH &&
        !(st->kind == PM_STORAGE_TILE && st->exported))
        return false;
    if (plan->o.prefetch_reads >= 0)
        return plan->o.prefetch_reads == 1;
    int threads = plan->o.threads;
    return pm_plan_storage_bytes(plan, k) > 2.0 * (double)plan->o.cache_bytes * threads;
}

/* The calls of one stage's definition that read prefetched buffers. */
typedef struct stream_reads {
    const pm_plan *plan;
    int stage;        /* whose definition                                               */
    int n, cap;
    const pm_expr **call;
    bool failed;
} stream_reads;

static bool collect_stream_read(const pm_expr *e, void *user)
{
    stream_reads *r = user;
    if (e->kind != PM_EXPR_CALL)
        return true;
    const pm_storage_plan *st = pm_plan_storage_of(r->plan, e->callee);
    if (!st || !st->prefetched)
        return true;
    if (st->kind == PM_STORAGE_TILE && r->plan->group_of[r->stage] == st->group)
        return true; /* an exported member read in its group: from its scratchpad */
    for (int i = 0; i < r->n; i++)
        if (r->call[i] == e)
            return true; /* a shared subtree, seen before */
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        const pm_expr **grown = realloc(r->call, (size_t)cap * sizeof *grown);
        if (!grown) {
            r->failed = true;
            return false;
        }
        r->call = grown;
        r->cap = cap;
    }
    r->call[r->n++] = e;
    return true;
}

/* Do calls a and b read one stream of rows: the same callee, each argument the same
 * expression up to a constant offset, and equal constants where an argument is one
 * (img(0, x - 1, y) and img(0, x + 2, y + 1) do; img(1, x, y), another plane, does
 * not). As the rows advance, the rows a stencil reads now are those its leading read
 * brought in before. */
static bool one_stream(const pm_expr *a, const pm_expr *b)
{
    if (a->callee != b->callee || a->nargs != b->nargs)
        return false;
    for (int i = 0; i < a->nargs; i++) {
        const pm_expr *ba, *bb;
        int64_t ka, kb;
        pm_plan_split_offset(a->args[i], &ba, &ka);
        pm_plan_split_offset(b->args[i], &bb, &kb);
        if (!ba || !bb ? ba != bb || ka != kb : !pm_plan_expr_equal(ba, bb))
            return false;
    }
    return true;
}

/* Is b's point ahead of a's: its offsets larger, outermost argument first (the later
 * row; along one row, the later column)? */
static bool ahead_of(const pm_expr *b, const pm_expr *a)
{
    for (int i = 0; i < a->nargs; i++) {
        const pm_expr *base;
        int64_t ka, kb;
        pm_plan_split_offset(a->args[i], &base, &ka);
        pm_plan_split_offset(b->args[i], &base, &kb);
        if (ka != kb)
            return kb > ka;
    }
    return false;
}

/* Which inlined stages each stored stage's definition expands, through inlined stages
 * (reached[c * nstages + s]): where an inlined stage's reads are emitted. */
typedef struct expansion {
    const pm_plan *plan;
    bool *reached; /* the row of one stored stage */
} expansion;

static bool mark_expanded(const pm_expr *e, void *user)
{
    expansion *x = user;
    if (e->kind != PM_EXPR_CALL)
        return true;
    int callee = pm_plan_stage_of(x->plan, e->callee);
    if (callee < 0 || x->reached[callee] || !pm_plan_call_inlined(x->plan, e))
        return true;
    x->reached[callee] = true;
    const pm_expr *roots[64];
    int n = pm_func_exprs(x->plan->poly->stages[callee].func, roots, 64);
    for (int i = 0; i < n; i++)
        if (roots[i])
            pm_expr_walk(roots[i], mark_expanded, x);
    return true;
}

static bool *expansions(const pm_plan *plan)
{
    int ns = plan->poly->nstages;
    bool *reached = calloc((size_t)ns * (size_t)ns + 1, sizeof *reached);
    for (int c = 0; reached && c < ns; c++) {
        if (plan->inlined[c])
            continue;
        expansion x = {plan, &reached[(size_t)c * (size_t)ns]};
        const pm_expr *roots[64];
        int n = pm_func_exprs(plan->poly->stages[c].func, roots, 64);
        for (int i = 0; i < n; i++)
            if (roots[i])
                pm_expr_walk(roots[i], mark_expanded, &x);
    }
    return reached;
}

/* Is stage s's definition emitted in group g: its own group, or, inlined, the group of a
 * stored stage that expands it? */
static bool emitted_in(const pm_plan *plan, const bool *reached, int s, int g)
{
    int ns = plan->poly->nstages;
    if (!plan->inlined[s])
        return plan->group_of[s] == g;
    for (int c = 0; c < ns; c++)
        if (!plan->inlined[c] && plan->group_of[c] == g && reached[(size_t)c * (size_t)ns + (size_t)s])
            return true;
    return false;
}

typedef struct leading_read {
    int stage;
    const pm_expr *call;
} leading_read;

/* The bytes per unit of work from which a group's reads prefetch, by the host's L2
 * (costs.c; cache_bytes is half a core's L2). */
static double prefetch_min_bytes(const pm_plan *plan)
{
    return 2 * plan->o.cache_bytes <= pm_costs.prefetch_small_l2
               ? pm_costs.prefetch_min_bytes_small_l2
               : pm_costs.prefetch_min_bytes;
}

/* Does member c (stored) evaluate a leading read: its own, or an inlined stage's it expands? */
static bool member_reads_stream(const pm_plan *plan, const bool *reached, int c,
                                const leading_read *lead, int n)
{
    size_t ns = (size_t)plan->poly->nstages;
    for (int i = 0; i < n; i++)
        if (lead[i].stage == c || (plan->inlined[lead[i].stage] &&
                                   reached[(size_t)c * ns + (size_t)lead[i].stage]))
            return true;
    return false;
}

/* Bytes read from prefetched buffers per unit of work (pm_plan_stage_cost's units) by
 * group g at the estimates: each buffer with a leading read in the group counted whole,
 * against the work of the members whose loops carry those reads (a member that only
 * reads scratchpads runs in loops of its own, which the prefetches do not slow: Harris's
 * box sums). Low: the loops that stream wait on memory. */
static double group_bytes_per_work(const pm_plan *plan, const bool *reached, int g,
                                   const leading_read *lead, int n)
{
    const pm_group *gr = &plan->groups[g];
    double work = 0, bytes = 0;
    for (int m = 0; m < gr->nmembers; m++)
        if (member_reads_stream(plan, reached, gr->members[m], lead, n))
            work += pm_plan_stage_cost(plan, gr->members[m]) *
                    pm_plan_stage_volume(plan, gr->members[m]);
    for (int i = 0; i < n; i++) {
        if (!emitted_in(plan, reached, lead[i].stage, g))
            continue;
        bool counted = false;
        for (int j = 0; j < i && !counted; j++)
            counted = lead[j].call->callee == lead[i].call->callee &&
                      emitted_in(plan, reached, lead[j].stage, g);
        const pm_poly_storage *st = pm_poly_storage_of(plan->poly, lead[i].call->callee);
        if (!counted)
            bytes += pm_plan_storage_bytes(plan, (int)(st - plan->poly->storage));
    }
    return work > 0 ? bytes / work : 0;
}

/* The leading reads of stage s's definition (storage.h) appended to *lead; false when
 * out of memory. */
static bool add_leading_reads(const pm_poly *poly, int s, stream_reads *r, leading_read **lead,
                              int *n, int *cap)
{
    const pm_func *f = poly->stages[s].func;
    r->n = 0;
    r->stage = s;
    for (int c = 0; f->kind == PM_FUNC_FUNCTION && c < f->ncases; c++) {
        if (f->cases[c]->cond)
            pm_expr_walk(f->cases[c]->cond, collect_stream_read, r);
        pm_expr_walk(f->cases[c]->value, collect_stream_read, r);
    }
    for (int i = 0; i < r->n && !r->failed; i++) {
        bool leading = true;
        for (int j = 0; j < r->n && leading; j++)
            if (j != i && one_stream(r->call[i], r->call[j]))
                leading = !ahead_of(r->call[j], r->call[i]) &&
                          (j > i || ahead_of(r->call[i], r->call[j]));
        if (!leading)
            continue;
        if (*n == *cap) {
            int grown_cap = *cap ? 2 * *cap : 16;
            leading_read *grown = realloc(*lead, (size_t)grown_cap * sizeof *grown);
            if (!grown)
                return false;
            *lead = grown;
            *cap = grown_cap;
        }
        (*lead)[(*n)++] = (leading_read){s, r->call[i]};
    }
    return !r->failed;
}

/* plan->prefetch_calls: per stage, the leading read of each stream (the first of equal
 * ones), kept when the option says 1, or it says -1 and some group the read is emitted
 * in reads at least pm_costs.prefetch_min_bytes per unit of work; false when out of memory. */
static bool choose_prefetch_calls(const pm_poly *poly, pm_plan *plan)
{
    free(plan->prefetch_calls);
    plan->prefetch_calls = NULL;
    plan->nprefetch_calls = 0;
    plan->prefetch_bytes = pm_costs.prefetch_bytes;
    int n = 0, cap = 0, ng = plan->ngroups;
    leading_read *lead = NULL;
    stream_reads r = {.plan = plan};
    bool ok = true;
    for (int s = 0; s < poly->nstages && ok; s++)
        ok = add_leading_reads(poly, s, &r, &lead, &n, &cap);
    free(r.call);
    double *per_group = calloc((size_t)ng + 1, sizeof *per_group);
    bool *reached = expansions(plan);
    if (n > 0)
        plan->prefetch_calls = malloc((size_t)n * sizeof *plan->prefetch_calls);
    ok = ok && per_group && reached && (n == 0 || plan->prefetch_calls);
    if (ok) {
        for (int g = 0; g < ng && plan->o.prefetch_reads < 0; g++)
            per_group[g] = group_bytes_per_work(plan, reached, g, lead, n);
        double min_bytes = prefetch_min_bytes(plan);
        for (int i = 0; i < n; i++) {
            bool keep = plan->o.prefetch_reads == 1;
            for (int g = 0; g < ng && !keep && plan->o.prefetch_reads < 0; g++)
                keep = per_group[g] >= min_bytes &&
                       emitted_in(plan, reached, lead[i].stage, g);
            if (keep)
                plan->prefetch_calls[plan->nprefetch_calls++] = lead[i].call;
        }
    }
    free(lead);
    free(per_group);
    free(reached);
    return ok;
}

bool pm_storage_decide(const pm_poly *poly, pm_plan *plan)
{
    plan->nslots = 0;
    /* full-buffer slots by lifetime: slot_free_after[k] is the last group that reads
     * the buffer now in full-buffer slot k; a buffer written from a later group on may
     * take it over (groups run in order, so their lifetimes never overlap) */
    int *slot_free_after = calloc((size_t)poly->nstages + 1, sizeof *slot_free_after);
    bool *slot_full = calloc((size_t)poly->nstages + 1, sizeof *slot_full);
    for (int s = 0; s < poly->nstages; s++) {
        const pm_poly_storage *facts = &poly->storage[poly->stages[s].storage];
        pm_storage_plan *st = &plan->storage[poly->stages[s].storage];
        if (st->kind == PM_STORAGE_OUTPUT) {
            st->streamed = streamed_output(poly, plan, s);
            continue;
        }
        if (plan->inlined[s]) {
            st->kind = PM_STORAGE_INLINED;
            st->index = -1;
            continue;
        }
        int g = plan->group_of[s];
        const pm_group *gr = g >= 0 ? &plan->groups[g] : NULL;
        if (gr && gr->tiled && gr->liveout != s) {
            int m = 0;
            while (gr->members[m] != s)
                m++;
            st->kind = PM_STORAGE_TILE;
            st->group = g;
            st->exported = gr->exported && gr->exported[m];
            int n = facts->ndims;
            for (int d = 0; d < n; d++)
                st->tile_ext[d] = gr->fp[m].ext[d];
            int W = plan->o.vector_width > 1 ? plan->o.vector_width : 1;
            if (n > 0)
                st->tile_ext[n - 1] = (st->tile_ext[n - 1] + W - 1) / W * W;
            st->tile_bytes = pm_tile_scratch_bytes(plan, gr, m);
            st->index = plan->nslots++;
            continue;
        }
        st->kind = PM_STORAGE_SCRATCH;
        st->index = -1;
        int first = plan->group_of[s], last = last_reader_group(poly, plan, s);
        for (int k = 0; slot_full && k < plan->nslots && st->index < 0 && first >= 0; k++)
            if (slot_full[k] && slot_free_after[k] < first)
                st->index = k;
        if (st->index < 0)
            st->index = plan->nslots++;
        if (slot_full && slot_free_after) {
            slot_full[st->index] = true;
            slot_free_after[st->index] = last;
        }
    }
    free(slot_free_after);
    free(slot_full);
    for (int k = 0; k < poly->nstorage; k++)
        plan->storage[k].prefetched = prefetched_reads(plan, k);
    return choose_prefetch_calls(poly, plan);
}

char *pm_storage_to_string(const pm_poly *poly, const pm_plan *plan)
{
    pm_str s = {0};
    int threads = plan->o.threads;
    double fused = 0, unfused = 0, separate = 0;
    double *slot_bytes = calloc((size_t)plan->nslots + 1, sizeof *slot_bytes);
    for (int i = 0; i < poly->nstages; i++) {
        const pm_poly_storage *facts = &poly->storage[poly->stages[i].storage];
        const pm_storage_plan *st = &plan->storage[poly->stages[i].storage];
        double full = pm_type_size(facts->type) * pm_plan_stage_volume(plan, i);
        const char *kind = "?";
        double bytes = 0;
        switch (st->kind) {
        case PM_STORAGE_INPUT: kind = "input"; break;
        case PM_STORAGE_OUTPUT: kind = st->streamed ? "output, streamed" : "output"; break;
        case PM_STORAGE_SCRATCH:
            kind = st->prefetched ? "full buffer, prefetched" : "full buffer";
            bytes = full;
            break;
        case PM_STORAGE_TILE:
            kind = st->exported ? "full + scratchpad" : "tile scratchpad";
            bytes = (double)st->tile_bytes * threads + (st->exported ? full : 0);
            break;
        case PM_STORAGE_INLINED: kind = "inlined"; break;
        }
        if (st->kind != PM_STORAGE_OUTPUT)
            unfused += full;
        separate += bytes;
        if (slot_bytes && (st->kind == PM_STORAGE_SCRATCH || st->kind == PM_STORAGE_TILE) &&
            bytes > slot_bytes[st->index])
            slot_bytes[st->index] = bytes;
        pm_str_append(&s, "%-24s %-16s", facts->func->name, kind);
        if (st->kind == PM_STORAGE_SCRATCH || st->kind == PM_STORAGE_TILE)
            pm_str_append(&s, " slot %d, %.0f bytes", st->index, bytes);
        if (st->kind == PM_STORAGE_TILE) {
            pm_str_append(&s, " (%d x %lld:", threads, (long long)st->tile_bytes);
            for (int d = 0; d < facts->ndims; d++)
                pm_str_append(&s, "%s%lld", d ? " x " : " ", (long long)st->tile_ext[d]);
            pm_str_append(&s, ")");
        }
        if (facts->flat)
            pm_str_append(&s, ", flat outside %lld .. %lld", (long long)facts->flat_lo,
                          (long long)facts->flat_hi);
        pm_str_append(&s, "\n");
    }
    for (int k = 0; slot_bytes && k < plan->nslots; k++)
        fused += slot_bytes[k];
    free(slot_bytes);
    /* the prefetched inputs (not stages: not listed above), with their leading reads */
    pm_str_append(&s, "prefetched reads (%lld bytes ahead):", (long long)plan->prefetch_bytes);
    int nbuf = 0;
    for (int k = 0; k < poly->nstorage; k++) {
        if (!plan->storage[k].prefetched)
            continue;
        int ncalls = 0;
        for (int i = 0; i < plan->nprefetch_calls; i++)
            ncalls += plan->prefetch_calls[i]->callee == poly->storage[k].func;
        pm_str_append(&s, "%s %s", nbuf++ ? "," : "", poly->storage[k].func->name);
        if (ncalls > 0)
            pm_str_append(&s, " (%d leading reads)", ncalls);
        else if (plan->o.prefetch_reads < 0)
            pm_str_append(&s, " (none: its readers' groups do more than %.0f units of work per "
                              "byte)", 1.0 / prefetch_min_bytes(plan));
        else
            pm_str_append(&s, " (no leading read)");
    }
    pm_str_append(&s, "%s\n", nbuf ? "" : " none");
    pm_str_append(&s, "scratch at the estimates: %.0f bytes in %d slots (full buffers whose "
                      "lifetimes do not overlap share one; without sharing %.0f; every stage in "
                      "a full buffer of its own: %.0f)\n",
                  fused, plan->nslots, separate, unfused);
    return s.data ? s.data : calloc(1, 1);
}
