/* run_sample.c — runs a sample app on the generated default photo and writes PNGs.
 * (The interpreter path; the JIT path is added when the JIT lands.) */
#include "samples.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "harris";
    const pm_sample_app *app = pm_sample_find(name);
    if (!app) {
        fprintf(stderr, "run_sample: no sample named %s\n", name);
        return 2;
    }
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app->build(ctx);
    if (!p) {
        fprintf(stderr, "run_sample: %s: %s\n", name, pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return 1;
    }
    char *text = pm_pipeline_to_string(p);
    printf("%s", text);
    free(text);
    pm_ctx_free(ctx);
    return 0;
}
