/* group.c — PolyMage's greedy grouping (see group.h). */
#include "codegen/group.h"

#include "codegen/align.h"
#include "codegen/tile.h"

#include <stdlib.h>
#include <string.h>

static bool is_output(const pm_pipeline *p, const pm_func *f)
{
    for (int i = 0; i < p->noutputs; i++)
        if (p->outputs[i] == f)
            return true;
    return false;
}

/* May the stage be a member of a fused group? */
static bool fusible(const pm_plan *plan, int s)
{
    const pm_func *f = plan->poly->stages[s].func;
    if (f->kind != PM_FUNC_FUNCTION || f->ndims < 1)
        return false;
    pm_read *reads = NULL;
    int n = 0;
    bool ok = pm_align_reads(plan, s, &reads, &n); /* fails on self-reference */
    free(reads);
    return ok;
}

/* A group under construction: members as a stage mask plus its live-out. */
typedef struct draft {
    bool alive;
    int liveout;
    int n;
    int *members; /* sorted */
} draft;

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Fills gr (members, align, model) for the union of a and b; false when it is not a
 * valid fused group. */
static bool try_merge(const pm_plan *plan, const draft *a, const draft *b, pm_group *gr)
{
    int n = a->n + b->n;
    int limit = plan->o.group_limit;
    if (n > limit)
        return false;
    gr->nmembers = n;
    gr->members = malloc((size_t)n * sizeof *gr->members);
    gr->align = calloc((size_t)n, sizeof *gr->align);
    gr->fp = calloc((size_t)n, sizeof *gr->fp);
    if (!gr->members || !gr->align || !gr->fp)
        return false;
    memcpy(gr->members, a->members, (size_t)a->n * sizeof *gr->members);
    memcpy(gr->members + a->n, b->members, (size_t)b->n * sizeof *gr->members);
    qsort(gr->members, (size_t)n, sizeof *gr->members, cmp_int);
    gr->liveout = b->liveout;
    if (gr->members[n - 1] != gr->liveout)
        return false;
    gr->tiled = true;
    return pm_align_group(plan, gr->members, n, gr->align) && pm_tile_feasible(plan, gr);
}

static void group_clear(pm_group *gr)
{
    free(gr->members);
    free(gr->align);
    free(gr->fp);
    memset(gr, 0, sizeof *gr);
}

static bool singleton(pm_group *gr, int s)
{
    memset(gr, 0, sizeof *gr);
    gr->nmembers = 1;
    gr->members = malloc(sizeof *gr->members);
    gr->align = calloc(1, sizeof *gr->align);
    gr->fp = calloc(1, sizeof *gr->fp);
    if (!gr->members || !gr->align || !gr->fp)
        return false;
    gr->members[0] = s;
    gr->liveout = s;
    for (int d = 0; d < PM_MAX_DIMS; d++) {
        gr->align[0].dim_of[d] = d;
        gr->align[0].scale[d] = 1;
    }
    return true;
}

/* pm_plan_reads(plan, s, p), each pair walked once: the search for a group's one
 * consumer asks the same pairs on every pass (local Laplacian's 68 stages: half of its
 * grouping time in walks of the definitions). memo[s * n + p]: -1 unknown, else 0/1. */
static bool reads_memo(const pm_plan *plan, signed char *memo, int n, int s, int p)
{
    signed char *m = &memo[(size_t)s * (size_t)n + (size_t)p];
    if (*m < 0)
        *m = pm_plan_reads(plan, s, p) ? 1 : 0;
    return *m == 1;
}

bool pm_group_decide(pm_plan *plan)
{
    const pm_poly *poly = plan->poly;
    int n = poly->nstages;
    draft *dr = calloc((size_t)n + 1, sizeof *dr);
    pm_group *model = calloc((size_t)n + 1, sizeof *model); /* the last accepted model */
    bool *can = calloc((size_t)n + 1, sizeof *can);
    signed char *memo = malloc((size_t)n * (size_t)n + 1);
    if (!dr || !model || !can || !memo) {
        free(dr);
        free(model);
        free(can);
        free(memo);
        return false;
    }
    memset(memo, -1, (size_t)n * (size_t)n + 1);
    bool ok = true;
    for (int s = 0; s < n && ok; s++) {
        can[s] = !plan->inlined[s] && plan->o.fusion && fusible(plan, s);
        if (plan->inlined[s])
            continue;
        dr[s].alive = true;
        dr[s].liveout = s;
        dr[s].n = 1;
        dr[s].members = malloc(sizeof *dr[s].members);
        ok = dr[s].members != NULL;
        if (ok)
            dr[s].members[0] = s;
    }
    bool changed = plan->o.fusion;
    while (changed && ok) {
        changed = false;
        for (int g = 0; g < n && ok; g++) {
            if (!dr[g].alive || is_output(poly->pipeline, poly->stages[dr[g].liveout].func))
                continue;
            bool all = true;
            for (int i = 0; i < dr[g].n; i++)
                all = all && can[dr[g].members[i]];
            if (!all)
                continue;
            /* the one group that reads it */
            int consumer = -1;
            bool single = true;
            for (int c = 0; c < n && single; c++) {
                if (!dr[c].alive || c == g)
                    continue;
                for (int i = 0; i < dr[c].n; i++)
                    if (reads_memo(plan, memo, n, dr[c].members[i], dr[g].liveout)) {
                        if (consumer >= 0 && consumer != c)
                            single = false;
                        consumer = c;
                        break;
                    }
            }
            if (!single || consumer < 0)
                continue;
            all = true;
            for (int i = 0; i < dr[consumer].n; i++)
                all = all && can[dr[consumer].members[i]];
            if (!all)
                continue;
            pm_group trial = {0};
            if (!try_merge(plan, &dr[g], &dr[consumer], &trial)) {
                group_clear(&trial);
                continue;
            }
            /* merge g into consumer */
            free(dr[consumer].members);
            dr[consumer].members = malloc((size_t)trial.nmembers * sizeof *dr[consumer].members);
            if (!dr[consumer].members) {
                group_clear(&trial);
                ok = false;
                break;
            }
            memcpy(dr[consumer].members, trial.members, (size_t)trial.nmembers * sizeof(int));
            dr[consumer].n = trial.nmembers;
            free(dr[g].members);
            dr[g].members = NULL;
            dr[g].alive = false;
            group_clear(&model[g]);
            group_clear(&model[consumer]);
            model[consumer] = trial;
            changed = true;
        }
    }
    /* the groups in the order of their live-outs */
    plan->ngroups = 0;
    plan->groups = calloc((size_t)n + 1, sizeof *plan->groups);
    ok = ok && plan->groups;
    for (int s = 0; s < n; s++)
        plan->group_of[s] = -1;
    for (int s = 0; s < n && ok; s++) {
        if (!dr[s].alive)
            continue;
        pm_group *gr = &plan->groups[plan->ngroups];
        if (dr[s].n > 1) {
            /* the trial merges only asked whether some tile fits: the sizes now */
            *gr = model[s];
            memset(&model[s], 0, sizeof model[s]);
            ok = pm_tile_model(plan, gr);
        } else {
            ok = singleton(gr, s);
        }
        for (int i = 0; i < gr->nmembers; i++)
            plan->group_of[gr->members[i]] = plan->ngroups;
        plan->ngroups++;
    }
    for (int s = 0; s < n; s++) {
        free(dr[s].members);
        group_clear(&model[s]);
    }
    free(dr);
    free(model);
    free(can);
    free(memo);
    return ok;
}

bool pm_group_split(pm_plan *plan, int g)
{
    pm_group old = plan->groups[g];
    int extra = old.nmembers - 1;
    pm_group *grown = realloc(plan->groups, (size_t)(plan->ngroups + extra + 1) * sizeof *grown);
    if (!grown)
        return false;
    plan->groups = grown;
    memmove(&grown[g + old.nmembers], &grown[g + 1],
            (size_t)(plan->ngroups - g - 1) * sizeof *grown);
    bool ok = true;
    for (int m = 0; m < old.nmembers; m++)
        ok = singleton(&grown[g + m], old.members[m]) && ok;
    plan->ngroups += extra;
    for (int m = 0; m < old.nmembers; m++) {
        for (int d = 0; d < PM_MAX_DIMS; d++)
            isl_pw_aff_free(old.fp[m].lb[d]);
        isl_map_free(old.fp[m].box);
    }
    group_clear(&old);
    for (int i = 0; i < plan->ngroups; i++)
        for (int m = 0; m < plan->groups[i].nmembers; m++)
            plan->group_of[plan->groups[i].members[m]] = i;
    return ok;
}
