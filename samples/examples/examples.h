/* examples.h — three small filters written with the public API and its helpers, the
 * examples of docs/jit.md (tested against plain C loops in test/test_examples.c).
 *
 * Each filter has a builder, <name>_pipeline, that makes a context of its own and returns
 * the pipeline in it (NULL with the context's message on failure; the caller frees the
 * context), and a one-call runner, <name>, that builds, compiles (a pm_jit_compile cache
 * hit after the first call of a size bucket), runs and frees: the whole JIT flow.
 * Images are dense, row-major: gray [rows][cols], RGB channel first [3][rows][cols]. */
#ifndef PM_EXAMPLES_H
#define PM_EXAMPLES_H

#include "polymage.h"

/* Separable 5x5 Gaussian blur ([1 4 6 4 1]/16 along each spatial dimension) of an RGB u8
 * image, edges clamped (repeat the border pixel); out has in's shape. */
pm_pipeline *blur_rgb_pipeline(pm_ctx **ctx_out);
pm_status blur_rgb(pm_jit *jit, const uint8_t *in, uint8_t *out, int64_t rows, int64_t cols,
                   pm_error *error);

/* Sobel gradient magnitude of a gray u8 image, edges clamped:
 * out = min(255, trunc(sqrt(gx^2 + gy^2))) with gx the 3x3 Sobel derivative across
 * columns and gy down rows. */
pm_pipeline *sobel_pipeline(pm_ctx **ctx_out);
pm_status sobel(pm_jit *jit, const uint8_t *in, uint8_t *out, int64_t rows, int64_t cols,
                pm_error *error);

/* Histogram equalization of a gray u8 image: with cdf(v) the number of pixels <= v and
 * cmin the cdf of the darkest pixel present,
 * out = (cdf(in) - cmin) * 255 / max(rows * cols - cmin, 1) (integer, rounded down). */
pm_pipeline *hist_eq_pipeline(pm_ctx **ctx_out);
pm_status hist_eq(pm_jit *jit, const uint8_t *in, uint8_t *out, int64_t rows, int64_t cols,
                  pm_error *error);

/* The runners' common tail: compiles p (the kernel cache returns the kernel compiled
 * for an earlier pipeline built the same way, at sizes in the same bucket), runs it on
 * params / in / out, frees the kernel reference and ctx (the kernel does not need it).
 * A NULL p reports the context's error. error may be NULL. */
pm_status example_run(pm_jit *jit, pm_ctx *ctx, pm_pipeline *p, const pm_value *params,
                      const pm_buffer *in, pm_buffer *out, pm_error *error);

/* docs/jit.md's fragments, run: 0 when each did what the guide says, else the step. */
int jit_guide_demo(void);

#endif
