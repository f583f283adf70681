/* run.c — the examples' common tail (examples.h): compile, run, free. */
#include "examples/examples.h"

#include <stdio.h>

pm_status example_run(pm_jit *jit, pm_ctx *ctx, pm_pipeline *p, const pm_value *params,
                      const pm_buffer *in, pm_buffer *out, pm_error *error)
{
    pm_error local;
    if (!error)
        error = &local;
    pm_status st;
    if (!ctx) {
        st = error->status = PM_ERR_NOMEM;
        snprintf(error->message, sizeof error->message, "no memory for a context");
    } else if (!p) { /* the builder's first error, recorded in the context */
        st = error->status = pm_ctx_status(ctx) != PM_OK ? pm_ctx_status(ctx) : PM_ERR_INTERNAL;
        snprintf(error->message, sizeof error->message, "%s", pm_ctx_errmsg(ctx));
    } else {
        /* params double as the estimates: the kernel is optimized for these sizes */
        pm_kernel *k = pm_jit_compile(jit, p, params, NULL, error);
        st = k ? pm_kernel_run(k, params, in, out, error) : error->status;
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
    return st;
}
