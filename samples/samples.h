/* samples.h — the real pipelines shipped with PolyMage-JIT (the PolyMage benchmark apps),
 * as a registry the tests, the bench and `make run` share.
 *
 * Each app lives in samples/<name>/<name>.c and is built with the public API only.
 * Buffer layouts follow ../shared/polymage-apps.md exactly (row-major, the first index
 * outermost: img[c][x][y] has y innermost), so the Halide versions in bench/ use the same
 * memory.
 */
#ifndef PM_SAMPLES_H
#define PM_SAMPLES_H

#include "polymage.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pm_sample_app {
    const char *name;          /* "harris", "unsharp_mask", ...                         */
    const char *title;         /* "Harris Corner"                                         */
    /* Builds the pipeline in ctx; NULL on failure (pm_ctx_errmsg says why).              */
    pm_pipeline *(*build)(pm_ctx *ctx);
    /* Parameter values (pipeline order) for an image of rows x cols pixels (the size of
     * the picture the app processes, before any padding the app adds).                  */
    void (*params)(int64_t rows, int64_t cols, pm_value *out);
    /* Fills input `index` (allocated by the caller to the pipeline's shape for those
     * parameters) with the app's typical data, made from the shared photo generator.    */
    void (*fill_input)(int index, pm_buffer *b, const pm_value *params);
    int64_t paper_rows, paper_cols;   /* the paper's size                                  */
    int64_t quick_rows, quick_cols;   /* a small size for tests and bench --quick          */
    double tolerance;                 /* max abs diff allowed vs the interpreter (floats) */
} pm_sample_app;

/* All apps, in the paper's order. */
const pm_sample_app *pm_sample_apps(int *count);
/* The app of that name, or NULL. */
const pm_sample_app *pm_sample_find(const char *name);

/* Dense buffers for the drivers (run_sample, bench/pm_sweep). A zeroed dense buffer of
 * the shape the pipeline wants for input (is_output 0) or output `index` at these
 * parameters; data NULL on failure (free data with free()). */
pm_buffer pm_sample_buffer(pm_pipeline *p, int is_output, int index, const pm_value *params);
/* Elements of a dense buffer, and element i as a double. */
int64_t pm_sample_buffer_count(const pm_buffer *b);
double pm_sample_element(const pm_buffer *b, int64_t i);
/* Largest absolute difference of two dense buffers of one shape (NaN = NaN). */
double pm_sample_buffer_maxdiff(const pm_buffer *a, const pm_buffer *b);

/* Each app's entry points (defined in samples/<name>/<name>.c). */
extern const pm_sample_app pm_sample_unsharp_mask;
extern const pm_sample_app pm_sample_harris;
extern const pm_sample_app pm_sample_camera_pipe;
extern const pm_sample_app pm_sample_bilateral_grid;
extern const pm_sample_app pm_sample_pyramid_blend;
extern const pm_sample_app pm_sample_interpolate;
extern const pm_sample_app pm_sample_local_laplacian;

#ifdef __cplusplus
}
#endif

#endif
