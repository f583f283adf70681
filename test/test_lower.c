/* test_lower.c — the lowering's dump (PM_DUMP=lower, keep "lower") on every bundled app at
 * its paper size: each prints its loops and reads with their reasons, the walk foresaw
 * every decision the emitter needed (no "[at emission]"), and together the apps use every
 * read strategy the lowering has. A host without AVX-512 has no permutes: there the
 * permute strategies are not required.
 */
#include "check.h"
#include "samples.h"

#include <stdio.h>
#include <string.h>

static const char *const strategies[] = {
    "broadcast", "contiguous", "strided shuffle", "half (up-sampling)", "level rows",
    "gather",    "two-row permute", "small-table permute"};
enum { NSTRATEGIES = sizeof strategies / sizeof strategies[0] };

int main(void)
{
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    if (!CHECK(jit != NULL))
        return check_finish("lower");
    bool seen[NSTRATEGIES] = {false};
    bool avx512 = false;
    int napps = 0;
    const pm_sample_app *apps = pm_sample_apps(&napps);
    for (int a = 0; a < napps; a++) {
        const pm_sample_app *app = &apps[a];
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = app->build(ctx);
        if (!CHECK(p != NULL)) {
            pm_ctx_free(ctx);
            continue;
        }
        pm_value est[16];
        app->params(app->paper_rows, app->paper_cols, est);
        pm_compile_options co = pm_compile_options_default();
        co.dump = "";
        co.keep = "lower";
        pm_kernel *k = pm_jit_compile(jit, p, est, &co, &err);
        if (CHECK(k != NULL)) {
            const char *text = pm_kernel_dump(k, "lower");
            if (CHECK(text != NULL)) {
                CHECK_CONTAINS(text, "target: ");
                CHECK_CONTAINS(text, "vector <");
                CHECK_CONTAINS(text, "  read ");
                if (!CHECK(strstr(text, "[at emission]") == NULL))
                    fprintf(stderr, "  %s: a decision the walk did not foresee\n", app->name);
                avx512 |= strstr(text, "AVX-512") != NULL;
                for (int i = 0; i < NSTRATEGIES; i++) {
                    char needle[64];
                    snprintf(needle, sizeof needle, "lanes: %s", strategies[i]);
                    seen[i] |= strstr(text, needle) != NULL;
                }
            }
            CHECK(pm_kernel_dump(k, "lower") == pm_kernel_dump(k, "lower"));
            pm_kernel_free(k);
        } else {
            fprintf(stderr, "  %s: %s\n", app->name, err.message);
        }
        pm_ctx_free(ctx);
    }
    for (int i = 0; i < NSTRATEGIES; i++) {
        bool permute = strstr(strategies[i], "permute") != NULL;
        if (permute && !avx512)
            continue;
        if (!CHECK(seen[i]))
            fprintf(stderr, "  no app's dump shows the read strategy \"%s\"\n", strategies[i]);
    }
    pm_jit_free(jit);
    return check_finish("lower");
}
