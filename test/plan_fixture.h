/* plan_fixture.h — a pipeline's plan through the optimizer's first phases, for the tests
 * that check one phase's decisions from the inside (test_group_dp, test_footprints).
 * Header-only: every test is an executable of its own. */
#ifndef PM_TEST_PLAN_FIXTURE_H
#define PM_TEST_PLAN_FIXTURE_H

#include "codegen/align.h"
#include "codegen/cases.h"
#include "codegen/group.h"
#include "codegen/inline.h"
#include "codegen/plan.h"
#include "codegen/poly.h"
#include "codegen/tile.h"

#include <isl/ctx.h>
#include <isl/options.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct fixture {
    isl_ctx *isl;
    pm_poly *poly;
    pm_plan *plan;
} fixture;

/* The plan of p at estimates est for options o after the group phase, and with `tiles`
 * after the align and tile phases too, as the driver runs them (a group whose alignment
 * or footprints fail runs unfused). False on failure; fixture_free frees what was made. */
static inline bool fixture_new(pm_pipeline *p, const pm_value *est, const pm_options *o,
                               bool tiles, fixture *f)
{
    memset(f, 0, sizeof *f);
    pm_error err = {0};
    f->isl = isl_ctx_alloc();
    isl_options_set_on_error(f->isl, ISL_ON_ERROR_CONTINUE);
    f->poly = pm_poly_new(f->isl, p, &err);
    if (!f->poly || pm_cases_shape(f->poly, &err) != PM_OK) {
        fprintf(stderr, "  poly: %s\n", err.message);
        return false;
    }
    f->plan = pm_plan_new(f->poly, o, est);
    if (!f->plan)
        return false;
    pm_inline_decide(f->plan);
    if (!pm_group_decide(f->plan))
        return false;
    for (int g = 0; tiles && g < f->plan->ngroups; g++) {
        pm_group *gr = &f->plan->groups[g];
        if (gr->tiled && (!pm_align_group(f->plan, gr->members, gr->nmembers, gr->align) ||
                          !pm_tile_footprints(f->plan, gr)))
            gr->tiled = false;
    }
    return true;
}

static inline void fixture_free(fixture *f)
{
    pm_plan_free(f->plan);
    pm_poly_free(f->poly);
    isl_ctx_free(f->isl);
}

#endif
