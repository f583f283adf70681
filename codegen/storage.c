/* storage.c — buffers, scratchpads and slots (see storage.h). */
#include "codegen/storage.h"

#include "codegen/tile.h"

#include <stdlib.h>

void pm_storage_decide(pm_poly *poly, const pm_plan *plan)
{
    int threads = plan->o.threads > 0 ? plan->o.threads : 1;
    poly->nslots = 0;
    for (int s = 0; s < poly->nstages; s++) {
        pm_poly_storage *st = &poly->storage[poly->stages[s].storage];
        if (st->kind == PM_STORAGE_OUTPUT)
            continue;
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
        } else {
            st->kind = PM_STORAGE_SCRATCH;
        }
        st->index = poly->nslots++;
    }
}

char *pm_storage_to_string(const pm_poly *poly, const pm_plan *plan)
{
    pm_str s = {0};
    int threads = plan->o.threads > 0 ? plan->o.threads : 1;
    double fused = 0, unfused = 0;
    for (int i = 0; i < poly->nstages; i++) {
        const pm_poly_storage *st = &poly->storage[poly->stages[i].storage];
        double full = pm_type_size(st->type) * pm_plan_stage_volume(plan, i);
        const char *kind = "?";
        double bytes = 0;
        switch (st->kind) {
        case PM_STORAGE_INPUT: kind = "input"; break;
        case PM_STORAGE_OUTPUT: kind = "output"; break;
        case PM_STORAGE_SCRATCH: kind = "full buffer"; bytes = full; break;
        case PM_STORAGE_TILE: kind = "tile scratchpad"; bytes = (double)st->tile_bytes * threads; break;
        case PM_STORAGE_INLINED: kind = "inlined"; break;
        }
        if (st->kind != PM_STORAGE_OUTPUT)
            unfused += full;
        fused += bytes;
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
    pm_str_append(&s, "scratch at the estimates: %.0f bytes (every stage in a full buffer: %.0f)\n",
                  fused, unfused);
    return s.data ? s.data : calloc(1, 1);
}
