/* samples.c — the registry of sample apps, in the paper's order. */
#include "samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const pm_sample_app *const apps[] = {
    &pm_sample_unsharp_mask,
    &pm_sample_bilateral_grid,
    &pm_sample_harris,
    &pm_sample_camera_pipe,
    &pm_sample_pyramid_blend,
    &pm_sample_interpolate,
    &pm_sample_local_laplacian,
};

const pm_sample_app *pm_sample_apps(int *count)
{
    static pm_sample_app flat[sizeof apps / sizeof apps[0]];
    for (size_t i = 0; i < sizeof apps / sizeof apps[0]; i++)
        flat[i] = *apps[i];
    if (count)
        *count = (int)(sizeof apps / sizeof apps[0]);
    return flat;
}

const pm_sample_app *pm_sample_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof apps / sizeof apps[0]; i++)
        if (strcmp(apps[i]->name, name) == 0)
            return apps[i];
    return NULL;
}

pm_buffer pm_sample_buffer(pm_pipeline *p, int is_output, int index, const pm_value *params)
{
    pm_func *f = is_output ? pm_pipeline_output(p, index) : pm_pipeline_input(p, index);
    int ndims = 0;
    int64_t extents[PM_MAX_DIMS];
    pm_buffer b = pm_buffer_dense(NULL, pm_func_type(f), 0, NULL);
    if (pm_pipeline_buffer_shape(p, is_output, index, params, &ndims, extents) != PM_OK)
        return b;
    b = pm_buffer_dense(NULL, pm_func_type(f), ndims, extents);
    size_t count = 1;
    for (int d = 0; d < ndims; d++)
        count *= (size_t)(extents[d] > 0 ? extents[d] : 0);
    b.data = calloc(count ? count : 1, pm_type_size(b.type));
    return b;
}

int64_t pm_sample_buffer_count(const pm_buffer *b)
{
    int64_t n = 1;
    for (int d = 0; d < b->ndims; d++)
        n *= b->extent[d] > 0 ? b->extent[d] : 0;
    return n;
}

double pm_sample_element(const pm_buffer *b, int64_t i)
{
    switch (b->type) {
    case PM_U8: return ((const uint8_t *)b->data)[i];
    case PM_I8: return ((const int8_t *)b->data)[i];
    case PM_U16: return ((const uint16_t *)b->data)[i];
    case PM_I16: return ((const int16_t *)b->data)[i];
    case PM_U32: return ((const uint32_t *)b->data)[i];
    case PM_I32: return ((const int32_t *)b->data)[i];
    case PM_I64: return (double)((const int64_t *)b->data)[i];
    case PM_F32: return ((const float *)b->data)[i];
    case PM_F64: return ((const double *)b->data)[i];
    default: return 0;
    }
}

double pm_sample_buffer_maxdiff(const pm_buffer *a, const pm_buffer *b)
{
    double worst = 0;
    for (int64_t i = 0, n = pm_sample_buffer_count(a); i < n; i++) {
        double x = pm_sample_element(a, i), y = pm_sample_element(b, i);
        double d = isnan(x) || isnan(y) ? (isnan(x) && isnan(y) ? 0 : INFINITY) : fabs(x - y);
        worst = d > worst ? d : worst;
    }
    return worst;
}
