/* buffer.c — buffer descriptions and the shapes a pipeline expects of them. */
#include "frontend/ir.h"
#include "frontend/signature.h"

#include <string.h>

pm_buffer pm_buffer_dense(void *data, pm_type type, int ndims, const int64_t *extents)
{
    pm_buffer b;
    memset(&b, 0, sizeof b);
    b.data = data;
    b.type = type;
    b.ndims = ndims < 0 ? 0 : ndims > PM_MAX_DIMS ? PM_MAX_DIMS : ndims;
    for (int d = 0; d < b.ndims && extents; d++)
        b.extent[d] = extents[d];
    return b;
}

static pm_status buffer_shape(pm_pipeline *p, int is_output, int index,
                              const pm_value *params, int *ndims, int64_t *extents)
{
    if (!ndims || !extents || (p->nparams > 0 && !params))
        return pm_ctx_set_error(p->ctx, PM_ERR_MISUSE, "pm_pipeline_buffer_shape: NULL argument");
    int count = is_output ? p->noutputs : p->ninputs;
    if (index < 0 || index >= count)
        return pm_ctx_set_error(p->ctx, PM_ERR_MISUSE, "%s has no %s %d", p->name,
                                is_output ? "output" : "input", index);
    pm_signature *s = pm_signature_new(p);
    if (!s)
        return pm_ctx_recorded(p->ctx);
    const pm_signature_buffer *b = &s->buffers[is_output ? p->ninputs + index : index];
    *ndims = b->ndims;
    for (int d = 0; d < b->ndims; d++) {
        if (!pm_signature_dim_extent(&b->dims[d], params, &extents[d])) {
            pm_ctx_set_error(p->ctx, PM_ERR_ARGUMENT,
                             "%s: the extent of %s in dimension %d overflows 64-bit integers "
                             "at these parameter values", p->name, b->name, d);
            pm_signature_free(s);
            return PM_ERR_ARGUMENT;
        }
    }
    pm_signature_free(s);
    return PM_OK;
}

pm_status pm_pipeline_buffer_shape(pm_pipeline *p, int is_output, int index,
                                   const pm_value *params, int *ndims, int64_t *extents)
{
    if (!p)
        return PM_ERR_MISUSE;
    pm_ctx_call_begin(p->ctx); /* a refusal is about this call alone */
    pm_status st = buffer_shape(p, is_output, index, params, ndims, extents);
    pm_ctx_call_end(p->ctx);
    return st;
}

pm_status pm_pipeline_buffer_origin(pm_pipeline *p, int is_output, int index,
                                    const pm_value *params, int *ndims, int64_t *origin)
{
    if (!p)
        return PM_ERR_MISUSE;
    pm_ctx_call_begin(p->ctx);
    pm_status st = PM_OK;
    int count = is_output ? p->noutputs : p->ninputs;
    pm_signature *s = NULL;
    if (!ndims || !origin || (p->nparams > 0 && !params))
        st = pm_ctx_set_error(p->ctx, PM_ERR_MISUSE, "pm_pipeline_buffer_origin: NULL argument");
    else if (index < 0 || index >= count)
        st = pm_ctx_set_error(p->ctx, PM_ERR_MISUSE, "%s has no %s %d", p->name,
                              is_output ? "output" : "input", index);
    else if (!(s = pm_signature_new(p)))
        st = pm_ctx_recorded(p->ctx);
    if (st == PM_OK) {
        const pm_signature_buffer *b = &s->buffers[is_output ? p->ninputs + index : index];
        *ndims = b->ndims;
        for (int d = 0; d < b->ndims && st == PM_OK; d++)
            if (!pm_bound_eval(b->dims[d].lb, params, &origin[d]))
                st = pm_ctx_set_error(p->ctx, PM_ERR_ARGUMENT, "%s: the origin of %s in "
                                      "dimension %d overflows 64-bit integers at these "
                                      "parameter values", p->name, b->name, d);
    }
    pm_signature_free(s);
    pm_ctx_call_end(p->ctx);
    return st;
}
