/* group.c — PolyMage's greedy grouping (see group.h).
 *
 * Shape: every stored stage starts as a draft group of its own (drafts_init); passes
 * merge a group into its sole consumer's while the merged group aligns, its tiles pass
 * the model and the group limit holds (greedy_pass, merge_drafts), until a pass merges
 * nothing; the drafts become the plan's groups in execution order.
 */
#include "codegen/group.h"

#include "codegen/align.h"
#include "codegen/bitset.h"
#include "codegen/group_dp.h"
#include "codegen/tile.h"

#include <stdlib.h>
#include <string.h>

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
    free(gr->exported);
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

/* pm_plan_reads(plan, s, p), each stage's definition walked once: the search for a
 * group's one consumer asks the same pairs on every pass (local Laplacian's 68 stages:
 * half of its grouping time in walks of the definitions). memo[s * n + p]: -1 unknown,
 * else 0/1; the first question about s fills its row from one walk. */
static bool reads_memo(const pm_plan *plan, signed char *memo, int n, int s, int p)
{
    signed char *row = &memo[(size_t)s * (size_t)n];
    if (row[p] < 0) {
        pm_word *bits = calloc((size_t)pm_bits_words(n), sizeof *bits);
        if (!bits) /* the pair alone */
            return pm_plan_reads(plan, s, p);
        pm_plan_producers(plan, s, bits);
        for (int q = 0; q < n; q++)
            row[q] = pm_bit_get(bits, q) ? 1 : 0;
        free(bits);
    }
    return row[p] == 1;
}

/* pm_group_decide's state: the drafts and what it remembers about them. */
typedef struct grouping {
    pm_plan *plan;
    int n;             /* stages                                                        */
    draft *dr;         /* per stage: the group whose live-out it is (alive), if any     */
    pm_group *model;   /* per draft: the last accepted model                            */
    bool *can;         /* per stage: may be a member of a fused group (fusible)         */
    signed char *memo; /* reads_memo's                                                  */
} grouping;

/* A draft of its own for every stage that is not inlined, and can[]; false when out of
 * memory. */
static bool drafts_init(grouping *gp)
{
    pm_plan *plan = gp->plan;
    bool ok = true;
    for (int s = 0; s < gp->n && ok; s++) {
        gp->can[s] = pm_group_fusible(plan, s);
        if (plan->inlined[s])
            continue;
        draft *d = &gp->dr[s];
        d->alive = true;
        d->liveout = s;
        d->n = 1;
        d->members = malloc(sizeof *d->members);
        ok = d->members != NULL;
        if (ok)
            d->members[0] = s;
    }
    return ok;
}

/* Whether every stage of draft d may be a member of a fused group. */
static bool draft_fusible(const grouping *gp, const draft *d)
{
    bool all = true;
    for (int i = 0; i < d->n; i++)
        all = all && gp->can[d->members[i]];
    return all;
}

/* The one draft that reads draft g's live-out, or -1 when none or several do. */
static int sole_consumer(grouping *gp, int g)
{
    const draft *dr = gp->dr;
    int consumer = -1;
    for (int c = 0; c < gp->n; c++) {
        if (!dr[c].alive || c == g)
            continue;
        for (int i = 0; i < dr[c].n; i++)
            if (reads_memo(gp->plan, gp->memo, gp->n, dr[c].members[i], dr[g].liveout)) {
                if (consumer >= 0 && consumer != c)
                    return -1;
                consumer = c;
                break;
            }
    }
    return consumer;
}

/* Draft g merged into its consumer's, whose model becomes trial (taken); false when
 * out of memory. */
static bool merge_drafts(grouping *gp, int g, int consumer, pm_group *trial)
{
    draft *dr = gp->dr;
    free(dr[consumer].members);
    dr[consumer].members = malloc((size_t)trial->nmembers * sizeof *dr[consumer].members);
    if (!dr[consumer].members) {
        group_clear(trial);
        return false;
    }
    memcpy(dr[consumer].members, trial->members, (size_t)trial->nmembers * sizeof(int));
    dr[consumer].n = trial->nmembers;
    free(dr[g].members);
    dr[g].members = NULL;
    dr[g].alive = false;
    group_clear(&gp->model[g]);
    group_clear(&gp->model[consumer]);
    gp->model[consumer] = *trial;
    return true;
}

/* One pass of the greedy algorithm: each draft that is not an output and has one
 * consumer is merged into it when the merge is a valid fused group (try_merge). Sets
 * *changed when some draft merged; false when out of memory. */
static bool greedy_pass(grouping *gp, bool *changed)
{
    const pm_poly *poly = gp->plan->poly;
    draft *dr = gp->dr;
    for (int g = 0; g < gp->n; g++) {
        if (!dr[g].alive || pm_group_is_output(poly->pipeline, poly->stages[dr[g].liveout].func))
            continue;
        if (!draft_fusible(gp, &dr[g]))
            continue;
        int consumer = sole_consumer(gp, g);
        if (consumer < 0 || !draft_fusible(gp, &dr[consumer]))
            continue;
        pm_group trial = {0};
        if (!try_merge(gp->plan, &dr[g], &dr[consumer], &trial)) {
            group_clear(&trial);
            continue;
        }
        if (!merge_drafts(gp, g, consumer, &trial))
            return false;
        *changed = true;
    }
    return true;
}

/* plan->groups and plan->group_of from the drafts, in the order of their live-outs:
 * each fused group with the model's tile sizes, the others of one stage. With ok false
 * (the merges failed) the groups stay empty. */
static bool groups_from_drafts(grouping *gp, bool ok)
{
    pm_plan *plan = gp->plan;
    int n = gp->n;
    plan->ngroups = 0;
    plan->groups = calloc((size_t)n + 1, sizeof *plan->groups);
    ok = ok && plan->groups;
    for (int s = 0; s < n; s++)
        plan->group_of[s] = -1;
    for (int s = 0; s < n && ok; s++) {
        if (!gp->dr[s].alive)
            continue;
        pm_group *gr = &plan->groups[plan->ngroups];
        if (gp->dr[s].n > 1) {
            /* the trial merges only asked whether some tile fits: the sizes now */
            *gr = gp->model[s];
            memset(&gp->model[s], 0, sizeof gp->model[s]);
            ok = pm_tile_model(plan, gr);
        } else {
            ok = singleton(gr, s);
        }
        for (int i = 0; i < gr->nmembers; i++)
            plan->group_of[gr->members[i]] = plan->ngroups;
        plan->ngroups++;
    }
    return ok;
}

/* Frees the drafts, the models left in them and the memo. */
static void grouping_free(grouping *gp)
{
    for (int s = 0; gp->dr && gp->model && s < gp->n; s++) {
        free(gp->dr[s].members);
        group_clear(&gp->model[s]);
    }
    free(gp->dr);
    free(gp->model);
    free(gp->can);
    free(gp->memo);
}

/* gr->exported: the members other than the live-out that a stage outside the group
 * reads (the DP's exported members); NULL when there are none. False when out of
 * memory. */
static bool mark_exported(const pm_plan *plan, pm_group *gr)
{
    int ns = plan->poly->nstages;
    for (int m = 0; m < gr->nmembers - 1; m++) {
        bool outside = false;
        for (int c = 0; c < ns && !outside; c++) {
            bool member = false;
            for (int k = 0; k < gr->nmembers && !member; k++)
                member = gr->members[k] == c;
            outside = !member && !plan->inlined[c] && pm_plan_reads(plan, c, gr->members[m]);
        }
        if (!outside)
            continue;
        if (!gr->exported && !(gr->exported = calloc((size_t)gr->nmembers, sizeof *gr->exported)))
            return false;
        gr->exported[m] = true;
    }
    return true;
}

/* Replaces plan->groups with the DP's groups: each of several stages aligned and tiled
 * with the model's sizes, the others of one stage. False when out of memory or when a
 * group the DP priced no longer tiles (cannot happen: the same calls priced it). */
static bool groups_from_dp(pm_plan *plan, const pm_dp_grouping *dp)
{
    for (int g = 0; g < plan->ngroups; g++)
        group_clear(&plan->groups[g]);
    free(plan->groups);
    plan->ngroups = 0;
    plan->groups = calloc((size_t)dp->ngroups + 1, sizeof *plan->groups);
    if (!plan->groups)
        return false;
    bool ok = true;
    for (int i = 0; i < dp->ngroups && ok; i++) {
        pm_group *gr = &plan->groups[plan->ngroups++];
        int n = dp->nmembers[i];
        if (n == 1) {
            ok = singleton(gr, dp->members[i][0]);
        } else {
            *gr = (pm_group){.nmembers = n, .liveout = dp->members[i][n - 1], .tiled = true};
            gr->members = malloc((size_t)n * sizeof *gr->members);
            gr->align = calloc((size_t)n, sizeof *gr->align);
            gr->fp = calloc((size_t)n, sizeof *gr->fp);
            ok = gr->members && gr->align && gr->fp;
            if (ok)
                memcpy(gr->members, dp->members[i], (size_t)n * sizeof *gr->members);
            ok = ok && mark_exported(plan, gr);
            ok = ok && pm_align_group(plan, gr->members, n, gr->align) && pm_tile_model(plan, gr);
        }
        for (int m = 0; m < gr->nmembers; m++)
            plan->group_of[gr->members[m]] = i;
    }
    return ok;
}

/* Prices greedy's groups (plan->groups), and with a DP grouping option runs the DP and
 * keeps its grouping when that is cheaper. */
static bool choose_grouping(pm_plan *plan)
{
    double greedy = pm_group_costs(plan);
    plan->grouping = (pm_grouping_report){.cost = greedy, .greedy_cost = greedy};
    if (!plan->o.fusion || plan->o.grouping == PM_GROUPING_GREEDY)
        return true;
    pm_dp_grouping dp;
    if (!pm_group_dp(plan, &dp))
        return false;
    /* a relative margin: the same grouping priced along two paths may differ in its
     * last bits */
    bool ok = true, cheaper = dp.ngroups > 0 && plan->grouping.cost < greedy * (1 - 1e-9);
    if (cheaper)
        ok = groups_from_dp(plan, &dp);
    plan->grouping.cost = cheaper && ok ? pm_group_costs(plan) : greedy;
    plan->grouping.greedy_cost = greedy;
    plan->grouping.dp_chosen = cheaper;
    pm_dp_grouping_free(&dp);
    return ok;
}

bool pm_group_decide(pm_plan *plan)
{
    /* the searches below ask for the same stages' reads and costs again and again */
    if (!pm_align_cache_reads(plan) || !pm_plan_cache_costs(plan))
        return false;
    int n = plan->poly->nstages;
    grouping gp = {
        .plan = plan,
        .n = n,
        .dr = calloc((size_t)n + 1, sizeof *gp.dr),
        .model = calloc((size_t)n + 1, sizeof *gp.model),
        .can = calloc((size_t)n + 1, sizeof *gp.can),
        .memo = malloc((size_t)n * (size_t)n + 1),
    };
    if (!gp.dr || !gp.model || !gp.can || !gp.memo) {
        grouping_free(&gp);
        return false;
    }
    memset(gp.memo, -1, (size_t)n * (size_t)n + 1);
    bool ok = drafts_init(&gp);
    /* merge until a pass merges nothing */
    bool changed = plan->o.fusion;
    while (changed && ok) {
        changed = false;
        ok = greedy_pass(&gp, &changed);
    }
    ok = groups_from_drafts(&gp, ok);
    grouping_free(&gp);
    return ok && choose_grouping(plan);
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
    for (int m = 0; m < old.nmembers; m++)
        pm_footprint_clear(&old.fp[m]);
    group_clear(&old);
    for (int i = 0; i < plan->ngroups; i++)
        for (int m = 0; m < plan->groups[i].nmembers; m++)
            plan->group_of[plan->groups[i].members[m]] = i;
    return ok;
}
