/* test_group_dp.c — the DP grouping (codegen/group_dp.c) against brute force.
 *
 * For small pipelines (random stencil DAGs and the small sample apps) every grouping of
 * single live-out groups is priced (pm_group_dp_price); the full DP's cost must be the
 * least of them, its grouping must be one of them, and it must never cost more than
 * greedy's. A budget of one state must still give a complete grouping (the greedy rest).
 * With exported members (the options' dp_exports, pm_group.exported) the DP's cost must be
 * at most that least one, each member read after its group must be exported, and its
 * readers' groups must run later; the pyramids at paper estimates export some level.
 * That the DP's kernels equal the interpreter is test_optimizer's (check_dp_at_paper,
 * the DP settings of kCovering) and the fuzzer's.
 */
#include "check.h"
#include "plan_fixture.h"
#include "samples.h"

#include "codegen/group_dp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_output(const pm_plan *plan, int s)
{
    const pm_pipeline *p = plan->poly->pipeline;
    for (int i = 0; i < p->noutputs; i++)
        if (p->outputs[i] == plan->poly->stages[s].func)
            return true;
    return false;
}

/* The grouping whose live-outs are `root` (the others join their readers' group, which
 * must be one), into *g; false when some stage's readers are in two groups. */
static bool grouping_of_roots(const pm_plan *plan, const bool *root, pm_dp_grouping *g)
{
    int n = plan->poly->nstages;
    int *group = malloc((size_t)n * sizeof *group);
    bool ok = group != NULL;
    for (int s = n - 1; s >= 0 && ok; s--) {
        group[s] = -1;
        if (plan->inlined[s] || root[s]) {
            group[s] = plan->inlined[s] ? -1 : s;
            continue;
        }
        for (int c = s + 1; c < n && ok; c++)
            if (!plan->inlined[c] && pm_plan_reads(plan, c, s)) {
                ok = group[s] < 0 || group[s] == group[c];
                group[s] = group[c];
            }
        ok = ok && group[s] >= 0;
    }
    memset(g, 0, sizeof *g);
    for (int r = 0; r < n && ok; r++) {
        if (plan->inlined[r] || !root[r])
            continue;
        g->nmembers = realloc(g->nmembers, (size_t)(g->ngroups + 1) * sizeof *g->nmembers);
        g->members = realloc(g->members, (size_t)(g->ngroups + 1) * sizeof *g->members);
        int *list = malloc((size_t)n * sizeof *list), m = 0;
        for (int s = 0; s <= r; s++)
            if (!plan->inlined[s] && group[s] == r)
                list[m++] = s;
        g->nmembers[g->ngroups] = m;
        g->members[g->ngroups++] = list;
    }
    free(group);
    return ok;
}

/* The least price over every grouping (every choice of live-outs beyond the forced
 * ones); *count the valid groupings. */
static double brute_force(const pm_plan *plan, int *count)
{
    int n = plan->poly->nstages, free_stage[32], nfree = 0;
    bool *root = calloc((size_t)n, sizeof *root);
    for (int s = 0; s < n; s++) {
        if (plan->inlined[s])
            continue;
        bool read = false;
        for (int c = 0; c < n; c++)
            read = read || (!plan->inlined[c] && pm_plan_reads(plan, c, s));
        root[s] = is_output(plan, s) || !read;
        if (!root[s] && nfree < 20)
            free_stage[nfree++] = s;
    }
    double best = INFINITY;
    *count = 0;
    for (long mask = 0; mask < (1L << nfree); mask++) {
        for (int i = 0; i < nfree; i++)
            root[free_stage[i]] = (mask >> i) & 1;
        pm_dp_grouping g;
        if (grouping_of_roots(plan, root, &g)) {
            double c = pm_group_dp_price(plan, &g);
            *count += c < INFINITY;
            best = fmin(best, c);
        }
        pm_dp_grouping_free(&g);
    }
    free(root);
    return best;
}

/* Groups with exported members: every stage that is not inlined is in one group, a
 * member read outside its group is exported (the live-out aside) and every group that
 * reads it runs later, and an exported member is read outside. *nexported counts them. */
static bool valid_exports(const pm_plan *plan, int *nexported)
{
    int n = plan->poly->nstages;
    bool ok = true;
    *nexported = 0;
    for (int s = 0; s < n; s++)
        ok = ok && (plan->inlined[s] ? plan->group_of[s] < 0 : plan->group_of[s] >= 0);
    for (int g = 0; g < plan->ngroups && ok; g++) {
        const pm_group *gr = &plan->groups[g];
        ok = gr->members[gr->nmembers - 1] == gr->liveout;
        for (int m = 0; m < gr->nmembers - 1 && ok; m++) {
            bool outside = false;
            for (int c = 0; c < n && ok; c++)
                if (!plan->inlined[c] && plan->group_of[c] != g &&
                    pm_plan_reads(plan, c, gr->members[m])) {
                    outside = true;
                    ok = plan->group_of[c] > g;
                }
            bool exported = gr->exported && gr->exported[m];
            ok = ok && outside == exported;
            *nexported += exported;
        }
    }
    return ok;
}

/* Every stage that is not inlined is in exactly one group, and a group's members other
 * than its live-out (its last) are read only inside it: valid, and nothing exported. */
static bool valid_groups(const pm_plan *plan)
{
    int nexported;
    return valid_exports(plan, &nexported) && nexported == 0;
}

static bool near(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)); }

/* The full DP on pipeline p at estimates est against brute force, and a one-state budget
 * still complete. */
static void check_dp(const char *what, pm_pipeline *p, const pm_value *est, int threads)
{
    pm_options o = pm_options_default();
    o.vector_width = 16;
    o.threads = threads;
    o.overlap_threshold = 0.5;
    o.grouping = PM_GROUPING_DP;
    o.dp_group_cap = o.group_limit;
    o.dp_budget = PM_DP_FULL_BUDGET;
    o.dp_exports = false; /* brute force prices groups of one live-out */
    fixture f;
    if (!CHECK(fixture_new(p, est, &o, false, &f))) {
        fixture_free(&f);
        return;
    }
    const pm_grouping_report r = f.plan->grouping;
    int count;
    double best = brute_force(f.plan, &count);
    pm_dp_grouping dp;
    bool ran = pm_group_dp(f.plan, &dp);
    double dp_cost = f.plan->grouping.cost, dp_price = pm_group_dp_price(f.plan, &dp);
    if (!CHECK(ran && near(dp_cost, best) && near(dp_price, dp_cost)))
        fprintf(stderr, "  %s: DP %.6g (its grouping priced %.6g), brute force %.6g over %d "
                        "groupings\n", what, dp_cost, dp_price, best, count);
    CHECK(!f.plan->grouping.exhausted);
    pm_dp_grouping_free(&dp);
    /* the phase's choice: never above greedy's, valid, and priced as it says */
    CHECK(r.cost <= r.greedy_cost && near(r.cost, fmin(best, r.greedy_cost)));
    CHECK(valid_groups(f.plan));
    fixture_free(&f);
    /* one state: the rest greedy, still a complete grouping */
    o.dp_budget = 1;
    if (CHECK(fixture_new(p, est, &o, false, &f))) {
        CHECK(valid_groups(f.plan) && f.plan->grouping.cost <= f.plan->grouping.greedy_cost);
        CHECK(f.plan->grouping.exhausted || f.plan->grouping.states <= 1);
    }
    fixture_free(&f);
    /* exported members: a larger space, so at most the least cost of the smaller one */
    o.dp_budget = PM_DP_FULL_BUDGET;
    o.dp_exports = true;
    int nexported = 0;
    if (CHECK(fixture_new(p, est, &o, false, &f))) {
        double cost = f.plan->grouping.cost;
        if (!CHECK(cost <= fmin(best, r.greedy_cost) * (1 + 1e-9)))
            fprintf(stderr, "  %s: with exports %.6g, without %.6g\n", what, cost, best);
        CHECK(valid_exports(f.plan, &nexported));
    }
    fixture_free(&f);
}

/* A pyramid at paper estimates: the DP exports some level, validly. */
static void check_pyramid_exports(const char *name)
{
    const pm_sample_app *app = pm_sample_find(name);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app ? app->build(ctx) : NULL;
    pm_value est[16];
    if (CHECK(p != NULL))
        app->params(app->paper_rows, app->paper_cols, est);
    pm_options o = pm_options_default();
    o.vector_width = 16;
    o.threads = 2;
    o.grouping = PM_GROUPING_DP;
    o.dp_group_cap = o.group_limit;
    o.dp_budget = PM_DP_FULL_BUDGET;
    fixture f;
    int nexported = 0;
    if (p && CHECK(fixture_new(p, est, &o, false, &f))) {
        if (!CHECK(valid_exports(f.plan, &nexported) && nexported > 0))
            fprintf(stderr, "  %s: %d exported members\n", name, nexported);
        fixture_free(&f);
    }
    pm_ctx_free(ctx);
}

/* A random DAG of n stencil stages over R x C: stage k (1-based) on [k, R-1-k] reads 1-3
 * earlier stages (or the input) at offsets of -1..1; every stage is read by a later one
 * or is the output. */
static pm_pipeline *random_dag(pm_ctx *ctx, unsigned seed, int n)
{
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_F32, R, C);
    pm_func *st[16];
    bool read[16] = {false};
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    for (int k = 1; k <= n; k++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", k);
        pm_interval *ix = pm_interval_new(pm_int(ctx, k), pm_addi(R, -1 - k), 1);
        pm_interval *iy = pm_interval_new(pm_int(ctx, k), pm_addi(C, -1 - k), 1);
        st[k] = pm_func_new(ctx, name, PM_F32, 2, (pm_expr *const[]){x, y},
                            (pm_interval *const[]){ix, iy});
        int reads = 1 + (int)(seed % 3);
        pm_expr *sum = NULL;
        for (int r = 0; r < reads + 1; r++) {
            seed = seed * 1103515245u + 12345u;
            int j = r == 0 ? k - 1 : (int)((seed >> 8) % (unsigned)k); /* 0: the input */
            int dx = (int)((seed >> 12) % 3) - 1, dy = (int)((seed >> 16) % 3) - 1;
            if (r == 0 && dx == 0 && dy == 0)
                dx = 1; /* a stencil, so that the inline phase keeps it */
            if (j == n && k < n)
                j = 0;
            pm_func *src = j == 0 ? I : st[j];
            read[j] = true;
            pm_expr *term = pm_mulf(pm_call(src, pm_addi(x, dx), pm_addi(y, dy)),
                                    0.25 + 0.125 * r);
            sum = sum ? pm_add(sum, term) : term;
        }
        /* a stage nobody reads yet is read by the last one */
        if (k == n)
            for (int j = 1; j < n; j++)
                if (!read[j])
                    sum = pm_add(sum, pm_call(st[j], pm_addi(x, 1), y));
        pm_func_define_expr(st[k], sum);
    }
    pm_pipeline *p = NULL;
    if (pm_pipeline_new(ctx, "dag", 2, pm_exprs(R, C), 1, (pm_func *const[]){I}, 1,
                        (pm_func *const[]){st[n]}, &p) != PM_OK)
        fprintf(stderr, "  random dag %u: %s\n", seed, pm_ctx_errmsg(ctx));
    return p;
}

int main(void)
{
    for (unsigned seed = 1; seed <= 24; seed++) {
        pm_ctx *ctx = pm_ctx_new();
        int n = 4 + (int)(seed % 7);
        pm_pipeline *p = random_dag(ctx, seed, n);
        char what[32];
        snprintf(what, sizeof what, "random dag %u", seed);
        pm_value est[2] = {PM_I(1024 + 16 * (int)seed), PM_I(2048)};
        if (CHECK(p != NULL))
            check_dp(what, p, est, 1 + (int)(seed % 2));
        pm_ctx_free(ctx);
    }
    static const char *const small[] = {"unsharp_mask", "harris", "bilateral_grid"};
    for (int i = 0; i < 3; i++) {
        const pm_sample_app *app = pm_sample_find(small[i]);
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = app ? app->build(ctx) : NULL;
        if (CHECK(p != NULL)) {
            pm_value est[16];
            app->params(app->paper_rows, app->paper_cols, est);
            check_dp(small[i], p, est, 2);
        }
        pm_ctx_free(ctx);
    }
    check_pyramid_exports("interpolate");
    check_pyramid_exports("local_laplacian");
    return check_finish("group_dp");
}
