/* samples.c — the registry of sample apps, in the paper's order. */
#include "samples.h"

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
