/* test_pipeline_canon.c — the canonical form of a pipeline (frontend/canon.h) and the
 * copy into another context (frontend/clone.h): every sample app built in two contexts,
 * the second one cluttered with unrelated objects first, has byte-equal canonical texts
 * and hashes; the form is computed once per pipeline object; a change of a constant, a
 * type, a name or the signature's order changes it; a clone has the original's form, and
 * after the original context is freed the clone is interpreted to the original's
 * outputs; parameters that size domains are told apart from value-only ones. */
#include "check.h"
#include "samples.h"

#include "frontend/canon.h"
#include "frontend/clone.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unrelated objects, so ids and allocation addresses differ from a fresh context. */
static void clutter(pm_ctx *ctx)
{
    pm_expr *junk = pm_param(ctx, PM_I32, "junk");
    for (int i = 0; i < 7; i++)
        junk = pm_add(junk, pm_var(ctx, "v"));
    pm_image(ctx, "unused", PM_U8, pm_int(ctx, 3));
}

static void test_apps_equal_across_contexts(void)
{
    int napps = 0;
    const pm_sample_app *apps = pm_sample_apps(&napps);
    for (int i = 0; i < napps; i++) {
        pm_ctx *a = pm_ctx_new(), *b = pm_ctx_new();
        clutter(b);
        pm_pipeline *pa = apps[i].build(a), *pb = apps[i].build(b);
        if (!CHECK(pa && pb)) {
            pm_ctx_free(a);
            pm_ctx_free(b);
            continue;
        }
        const pm_canon *ca = pm_pipeline_canon(pa), *cb = pm_pipeline_canon(pb);
        if (CHECK(ca && cb)) {
            if (!CHECK(ca->len == cb->len && strcmp(ca->text, cb->text) == 0))
                fprintf(stderr, "  %s: canonical forms differ\n", apps[i].name);
            CHECK(ca->hash == cb->hash);
            CHECK(ca->len == strlen(ca->text));
            CHECK(pm_pipeline_canon(pa) == ca); /* once per pipeline object */
            CHECK(strstr(ca->text, "pm-canon 2\n") == ca->text);
        }
        pm_ctx_free(a);
        pm_ctx_free(b);
    }
}

/* out(x) = I(x) * scale + offset over 0 <= x < N, with knobs for what differs. */
typedef struct small_spec {
    double scale;
    pm_type out_type;
    const char *out_name;
    bool swap_params;
} small_spec;

static pm_pipeline *build_small(pm_ctx *ctx, small_spec s)
{
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *offset = pm_param(ctx, PM_F32, "offset");
    pm_func *I = pm_image(ctx, "I", PM_F32, N);
    pm_expr *x = pm_var(ctx, "x");
    pm_func *out = pm_func_new(ctx, s.out_name, s.out_type, 1, pm_exprs(x),
                               pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1)));
    pm_func_define_expr(out, pm_add(pm_mulf(pm_call(I, x), s.scale), offset));
    pm_pipeline *p = NULL;
    pm_expr *const *params = s.swap_params ? pm_exprs(offset, N) : pm_exprs(N, offset);
    pm_pipeline_new(ctx, "small", 2, params, 1, (pm_func *const[]){I}, 1,
                    (pm_func *const[]){out}, &p);
    return p;
}

static void test_differences(void)
{
    small_spec base = {0.5, PM_F32, "out", false};
    small_spec variants[] = {
        {0.25, PM_F32, "out", false},
        {0.5, PM_F64, "out", false},
        {0.5, PM_F32, "res", false},
        {0.5, PM_F32, "out", true},
    };
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_small(ctx, base);
    const pm_canon *c = p ? pm_pipeline_canon(p) : NULL;
    if (!CHECK(c != NULL)) {
        pm_ctx_free(ctx);
        return;
    }
    /* N sizes the domain and the image; offset only a value. */
    CHECK(c->nparams == 2 && c->sized[0] && !c->sized[1]);
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        pm_ctx *v = pm_ctx_new();
        pm_pipeline *q = build_small(v, variants[i]);
        const pm_canon *cq = q ? pm_pipeline_canon(q) : NULL;
        if (CHECK(cq != NULL))
            CHECK(strcmp(cq->text, c->text) != 0);
        pm_ctx_free(v);
    }
    /* -0.0 and 0.0 are different constants. */
    small_spec zero = base, negzero = base;
    zero.scale = 0.0;
    negzero.scale = -0.0;
    pm_ctx *z1 = pm_ctx_new(), *z2 = pm_ctx_new();
    pm_pipeline *pz1 = build_small(z1, zero), *pz2 = build_small(z2, negzero);
    if (CHECK(pz1 && pz2))
        CHECK(strcmp(pm_pipeline_canon(pz1)->text, pm_pipeline_canon(pz2)->text) != 0);
    pm_ctx_free(z1);
    pm_ctx_free(z2);
    pm_ctx_free(ctx);
}

static void test_clone(void)
{
    int napps = 0;
    const pm_sample_app *apps = pm_sample_apps(&napps);
    for (int i = 0; i < napps; i++) {
        const pm_sample_app *app = &apps[i];
        pm_ctx *a = pm_ctx_new(), *copy_ctx = pm_ctx_new();
        clutter(a);
        pm_pipeline *p = app->build(a);
        pm_pipeline *q = p ? pm_pipeline_clone(p, copy_ctx) : NULL;
        if (!CHECK(p && q)) {
            pm_ctx_free(a);
            pm_ctx_free(copy_ctx);
            continue;
        }
        if (!CHECK(strcmp(pm_pipeline_canon(p)->text, pm_pipeline_canon(q)->text) == 0))
            fprintf(stderr, "  %s: the clone's canonical form differs\n", app->name);

        /* Outputs of the original, then the original's context gone, the clone's. */
        int64_t rows = 24, cols = 40;
        pm_value params[16];
        app->params(rows, cols, params);
        int nin = pm_pipeline_ninputs(p), nout = pm_pipeline_noutputs(p);
        pm_buffer in[8], want[8], got[8];
        for (int k = 0; k < nin; k++) {
            in[k] = pm_sample_buffer(p, 0, k, params);
            app->fill_input(k, &in[k], params);
        }
        for (int k = 0; k < nout; k++) {
            want[k] = pm_sample_buffer(p, 1, k, params);
            got[k] = pm_sample_buffer(p, 1, k, params);
        }
        CHECK_STATUS(pm_interpret(p, params, in, want), PM_OK);
        pm_ctx_free(a);
        if (!CHECK_STATUS(pm_interpret(q, params, in, got), PM_OK))
            fprintf(stderr, "  %s clone: %s\n", app->name, pm_ctx_errmsg(copy_ctx));
        for (int k = 0; k < nout; k++) {
            CHECK(pm_sample_buffer_maxdiff(&want[k], &got[k]) == 0.0);
            free(want[k].data);
            free(got[k].data);
        }
        for (int k = 0; k < nin; k++)
            free(in[k].data);
        pm_ctx_free(copy_ctx);
    }
}

int main(void)
{
    test_apps_equal_across_contexts();
    test_differences();
    test_clone();
    return check_finish("pipeline_canon");
}
