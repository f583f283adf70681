/* window.h — a pipeline's window form: its outputs over a window of an image of any size.
 *
 * Promise: pm_pipeline_window (polymage.h) makes, for a validated pipeline, a second
 * pipeline in the same context that computes the outputs on a window only. It appends
 * two integer parameters per output dimension d, window_lo<d> and window_n<d>, after the
 * pipeline's own. Every clamp, border case and reduction still refers to the whole
 * image, so a window's values equal the whole run's bit for bit. A pipeline that cannot
 * be windowed is refused with PM_ERR_UNSUPPORTED, naming the stage.
 */
#ifndef PM_FRONTEND_WINDOW_H
#define PM_FRONTEND_WINDOW_H

#include "frontend/ir.h"

#include <isl/ctx.h>
#include <isl/set.h>
#include <isl/space.h>

/* What finding a window's demand may cost isl (isl_ctx_set_max_operations): beyond it
 * the pipeline refuses windows (PM_ERR_UNSUPPORTED, naming the stage) in a few seconds
 * instead of computing for minutes. Harris and pyramid blending stay within it. Local
 * Laplacian and interpolate, whose bounds nest a floor division per pyramid level, go
 * past it and are refused. */
#define PM_WINDOW_ISL_OPERATIONS 4000000

/* The window form of a pipeline. It computes output indices window_lo<d> ..
 * window_lo<d> + window_n<d> - 1 along each output dimension d, so its outputs are
 * window_n<d> long. Its inputs are blocks of the whole input: along a tied dimension from
 * max(0, lo - halo_lo) to min(extent, lo + n + halo_hi) - 1, whole along the others.
 * Halo: per output dimension, how far outside the window the demand reaches into the
 * inputs (the supremum over every window and image size), exact from the demand.
 * Input dimension e is tied to output dimension e + (output rank - input rank): the
 * dimensions are aligned from the innermost. An input dimension of constant extent not
 * tied, or whose demand is the whole extent, is read whole. A tied dimension whose demand
 * grows with the image (a reduction over the whole image) makes the pipeline refuse
 * windows, naming the stage that reads it so.
 * The window form's canonical text is the pipeline's followed by a line `window`; the
 * text reader rebuilds it (frontend/canon_read.c). Window offsets are not sizes (they
 * never pick a cache bucket); window extents are. */
typedef struct pm_window {
    pm_pipeline *base;            /* the whole-image pipeline                              */
    int ndims;                    /* the outputs' rank: one window dimension each          */
    pm_expr *lo[PM_MAX_DIMS];     /* window_lo<d> (PM_I64 parameters of the window form)   */
    pm_expr *n[PM_MAX_DIMS];      /* window_n<d>                                            */
    int64_t halo_lo[PM_MAX_DIMS], halo_hi[PM_MAX_DIMS];
    /* Per input (PM_MAX_DIMS each), inclusive index bounds of its block; per output, the
     * window's inclusive coordinate bounds (the output's lower bound + lo .. + lo + n - 1). */
    pm_expr **in_lb, **in_ub, **out_lb, **out_ub;
    int *in_tied;                 /* per input, PM_MAX_DIMS each: the output dimension, -1 */
} pm_window;

/* The parameters' context of a window form: every image extent >= 1, and each window
 * inside every output (0 <= lo, 1 <= n, lo + n <= extent), over `params` (the window
 * form's parameter space, pm_isl_param_space). */
__isl_give isl_set *pm_window_context(pm_pipeline *pw, __isl_keep isl_space *params);

/* The demand of window form pw: per function, the exact set of points the window reads,
 * walking the stages from the outputs back to the inputs with isl. Reads through
 * data-dependent indices count the callee's whole domain, and a self-reading stage counts
 * its whole domain. A reduction counts the updates that write a demanded cell through its
 * affine indices. Each set is widened to its bounding box. The poly phase
 * (codegen/poly.c) computes each stage only there and sizes its buffer so.
 * demand[k] for function k, inputs first (k < ninputs), then
 * the stages in pw's order (k = ninputs + stage index): a set over `params` in an unnamed
 * space of the function's rank, within the context; NULL for a function needed whole (no
 * restriction). False when isl fails. */
bool pm_window_demand(pm_pipeline *pw, __isl_keep isl_space *params, isl_set **demand);

#endif
