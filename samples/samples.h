/* samples.h — the real pipelines shipped with PolyMage-JIT (the PolyMage benchmark apps),
 * as a registry the tests, the bench and `make run` share.
 *
 * Each app lives in samples/<name>/<name>.c and is built with the public API only.
 * Buffer layouts follow docs/apps.md exactly (row-major, the first index
 * outermost: img[c][x][y] has y innermost), so the Halide versions in bench/ use the same
 * memory.
 */
#ifndef PM_SAMPLES_H
#define PM_SAMPLES_H

#include "polymage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A picture an app's inputs are made from: the generated photo (the samples, tests and
 * bench) or a decoded image (samples/serve). level() gives the 8-bit value of channel c
 * (0 = R, 1 = G, 2 = B) or the grey level (c < 0), pixel() the value in [0, 1], at
 * (x = row, y = col) inside the picture; the pm_picture_* wrappers clamp coordinates to
 * the edge first (the clamp-to-edge padding several apps put around their input). */
typedef struct pm_sample_picture pm_sample_picture;
struct pm_sample_picture {
    int64_t rows, cols;
    int (*level)(const pm_sample_picture *pic, int c, int64_t x, int64_t y);
    float (*pixel)(const pm_sample_picture *pic, int c, int64_t x, int64_t y);
    const uint8_t *bytes; /* pm_bytes_picture's pixels                                    */
    int channels;         /* pm_bytes_picture's channels (1 grey, 3 RGB, 4 RGBA)          */
};
/* The generated photo at rows x cols (image_io.h's pm_photo_level / pm_photo_pixel). */
pm_sample_picture pm_photo_picture(int64_t rows, int64_t cols);
/* Interleaved 8-bit pixels, row-major, 1 (grey), 3 (RGB) or 4 (RGBA) channels; not
 * copied. Grey of a colour picture is the rounded luma 0.299 R + 0.587 G + 0.114 B; colour
 * of a grey one is its grey. Alpha is read only by interpolate, as its mask of known
 * pixels (the other apps see the colour). */
pm_sample_picture pm_bytes_picture(const uint8_t *bytes, int64_t rows, int64_t cols,
                                   int channels);
int pm_picture_level(const pm_sample_picture *pic, int c, int64_t x, int64_t y);
/* out[i] = (float)pm_picture_level(pic, c, x, y0 + i) / divisor for i < n: one row at once,
 * the same values; a tight loop over a pm_bytes_picture's row (the service fills its
 * inputs with it), the level call per element otherwise. */
void pm_picture_row(const pm_sample_picture *pic, int c, int64_t x, int64_t y0, int64_t n,
                    float divisor, float *out);
float pm_picture_pixel(const pm_sample_picture *pic, int c, int64_t x, int64_t y);

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
    /* The same from any picture of rows x cols pixels (params made by params(rows, cols)):
     * fill_input is this with the photo. Every element of the buffer is written.          */
    void (*fill_from)(int index, pm_buffer *b, const pm_value *params,
                      const pm_sample_picture *pic);
    int64_t min_rows, min_cols;       /* the smallest picture the app is served for (every
                                         level of its pyramids non-empty)                   */
    int output_bgr;                   /* output 0's channels are B, G, R                    */
    int output_stretch;               /* output 0 has no range of its own (pm_sample_render) */
    int64_t paper_rows, paper_cols;   /* the paper's size                                  */
    int64_t quick_rows, quick_cols;   /* a small size for tests and bench --quick          */
    double tolerance;                 /* max abs diff allowed vs the interpreter (floats) */
} pm_sample_app;

/* All apps, in the paper's order. */
const pm_sample_app *pm_sample_apps(int *count);
/* The app of that name, or NULL. */
const pm_sample_app *pm_sample_find(const char *name);

/* Dense buffers for the drivers (tests, bench/pm_sweep). A zeroed dense buffer of
 * the shape the pipeline wants for input (is_output 0) or output `index` at these
 * parameters, 64-byte aligned; data NULL on failure (free data with free()). */
pm_buffer pm_sample_buffer(pm_pipeline *p, int is_output, int index, const pm_value *params);
/* Elements of a dense buffer, and element i as a double. */
int64_t pm_sample_buffer_count(const pm_buffer *b);
double pm_sample_element(const pm_buffer *b, int64_t i);
/* Largest absolute difference of two dense buffers of one shape (NaN = NaN). */
double pm_sample_buffer_maxdiff(const pm_buffer *a, const pm_buffer *b);

/* How pm_sample_render shows a buffer: its channels are B, G, R (reversed to RGB); its
 * values have no range of their own (harris's response: shown lowest .. highest). */
enum { PM_RENDER_BGR = 1, PM_RENDER_STRETCH = 2 };

/* Buffer b as an 8-bit picture, the way the polymage command and the image service
 * write it. [X][Y] is grey, [c][X][Y] with c = 3 or 4 is RGB (other channel counts show
 * channel 0). Values are mapped by one rule: u8 as they are, u16 over 0 .. 65535, floats
 * over [0, 1], in each case clamped (a sharpened pixel that overshoots 1 is 255 and its
 * neighbours keep their levels); other types, and any type with PM_RENDER_STRETCH, from
 * their lowest to their highest finite value. NaN is 0. Returns malloc'd interleaved
 * pixels (free()) and their shape, or NULL when out of memory or the shape is empty or
 * too large for memory. */
uint8_t *pm_sample_render(const pm_buffer *b, int flags, int64_t *rows, int64_t *cols,
                          int *channels);
/* The PM_RENDER_* flags of app's output 0. */
int pm_sample_render_flags(const pm_sample_app *app);

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
