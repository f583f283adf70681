/* storage.c — buffers, scratchpads and slots (see storage.h). */
#include "codegen/storage.h"

#include "codegen/tile.h"

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

/* *to = a copy of from; false when out of memory. */
static bool copy_calls(const pm_expr ***to, int *nto, const pm_expr *const *from, int n)
{
    free(*to);
    *to = NULL;
    *nto = 0;
    if (n > 0 && (*to = malloc((size_t)n * sizeof **to)) == NULL)
        return false;
    if (n > 0)
        memcpy(*to, from, (size_t)n * sizeof **to);
    *nto = n;
    return true;
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
    int threads = plan->o.threads > 0 ? plan->o.threads : 1;
    double bytes = pm_type_size(st->type) * pm_plan_stage_volume(plan, s);
    return bytes > 2.0 * (double)plan->o.cache_bytes * threads;
}

bool pm_storage_decide(pm_poly *poly, const pm_plan *plan)
{
    int threads = plan->o.threads > 0 ? plan->o.threads : 1;
    poly->nslots = 0;
    if (!copy_calls(&poly->inline_calls, &poly->ninline_calls, plan->inline_calls,
                    plan->ninline_calls) ||
        !copy_calls(&poly->inside_calls, &poly->ninside_calls, plan->inside_calls,
                    plan->ninside_calls))
        return false;
    /* full-buffer slots by lifetime: slot_free_after[k] is the last group that reads
     * the buffer now in full-buffer slot k; a buffer written from a later group on may
     * take it over (groups run in order, so their lifetimes never overlap) */
    int *slot_free_after = calloc((size_t)poly->nstages + 1, sizeof *slot_free_after);
    bool *slot_full = calloc((size_t)poly->nstages + 1, sizeof *slot_full);
    for (int s = 0; s < poly->nstages; s++) {
        pm_poly_storage *st = &poly->storage[poly->stages[s].storage];
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
            for (int d = 0; d < st->ndims; d++)
                st->tile_ext[d] = gr->fp[m].ext[d];
            int W = plan->o.vector_width > 1 ? plan->o.vector_width : 1;
            if (st->ndims > 0)
                st->tile_ext[st->ndims - 1] = (st->tile_ext[st->ndims - 1] + W - 1) / W * W;
            st->tile_bytes = pm_tile_scratch_bytes(plan, gr, m);
            (void)threads;
            st->index = poly->nslots++;
            continue;
        }
        st->kind = PM_STORAGE_SCRATCH;
        st->index = -1;
        int first = plan->group_of[s], last = last_reader_group(poly, plan, s);
        for (int k = 0; slot_full && k < poly->nslots && st->index < 0 && first >= 0; k++)
            if (slot_full[k] && slot_free_after[k] < first)
                st->index = k;
        if (st->index < 0)
            st->index = poly->nslots++;
        if (slot_full && slot_free_after) {
            slot_full[st->index] = true;
            slot_free_after[st->index] = last;
        }
    }
    free(slot_free_after);
    free(slot_full);
    return true;
}

char *pm_storage_to_string(const pm_poly *poly, const pm_plan *plan)
{
    pm_str s = {0};
    int threads = plan->o.threads > 0 ? plan->o.threads : 1;
    double fused = 0, unfused = 0, separate = 0;
    double *slot_bytes = calloc((size_t)poly->nslots + 1, sizeof *slot_bytes);
    for (int i = 0; i < poly->nstages; i++) {
        const pm_poly_storage *st = &poly->storage[poly->stages[i].storage];
        double full = pm_type_size(st->type) * pm_plan_stage_volume(plan, i);
        const char *kind = "?";
        double bytes = 0;
        switch (st->kind) {
        case PM_STORAGE_INPUT: kind = "input"; break;
        case PM_STORAGE_OUTPUT: kind = st->streamed ? "output, streamed" : "output"; break;
        case PM_STORAGE_SCRATCH: kind = "full buffer"; bytes = full; break;
        case PM_STORAGE_TILE: kind = "tile scratchpad"; bytes = (double)st->tile_bytes * threads; break;
        case PM_STORAGE_INLINED: kind = "inlined"; break;
        }
        if (st->kind != PM_STORAGE_OUTPUT)
            unfused += full;
        separate += bytes;
        if (slot_bytes && (st->kind == PM_STORAGE_SCRATCH || st->kind == PM_STORAGE_TILE) &&
            bytes > slot_bytes[st->index])
            slot_bytes[st->index] = bytes;
        pm_str_append(&s, "%-24s %-16s", st->func->name, kind);
        if (st->kind == PM_STORAGE_SCRATCH || st->kind == PM_STORAGE_TILE)
            pm_str_append(&s, " slot %d, %.0f bytes", st->index, bytes);
        if (st->kind == PM_STORAGE_TILE) {
            pm_str_append(&s, " (%d x %lld:", threads, (long long)st->tile_bytes);
            for (int d = 0; d < st->ndims; d++)
                pm_str_append(&s, "%s%lld", d ? " x " : " ", (long long)st->tile_ext[d]);
            pm_str_append(&s, ")");
        }
        pm_str_append(&s, "\n");
    }
    for (int k = 0; slot_bytes && k < poly->nslots; k++)
        fused += slot_bytes[k];
    free(slot_bytes);
    pm_str_append(&s, "scratch at the estimates: %.0f bytes in %d slots (full buffers whose "
                      "lifetimes do not overlap share one; without sharing %.0f; every stage in "
                      "a full buffer of its own: %.0f)\n",
                  fused, poly->nslots, separate, unfused);
    return s.data ? s.data : calloc(1, 1);
}
