/* plain.h — the three filters of samples/examples written without the helpers (pm_pad,
 * pm_stencil_func, pm_func_like, pm_func_var, pm_func_interval: the API before them),
 * kept so that docs/jit.md's "without the helpers" line counts can be rechecked
 * (scripts/count_builder_lines.sh). test_examples runs them against the same plain C
 * loops as the examples; each computes exactly what its example in examples.h does. */
#ifndef PM_LINES_PLAIN_H
#define PM_LINES_PLAIN_H

#include "polymage.h"

pm_pipeline *blur_rgb_plain_pipeline(pm_ctx **ctx_out);
pm_pipeline *sobel_plain_pipeline(pm_ctx **ctx_out);
pm_pipeline *hist_eq_plain_pipeline(pm_ctx **ctx_out);

#endif
