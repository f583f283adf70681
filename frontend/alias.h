/* alias.h — can two strided boxes of memory share a byte; can one box's elements alias?
 *
 * Promise: exact answers for the boxes pm_buffer describes (element (i_0, ...) at
 * data + esize * sum(i_d * stride_d) bytes, 0 <= i_d < extent_d), decided with integer
 * arithmetic only (a bounded linear Diophantine test: gcds, then a search that fixes
 * the variables with the largest coefficients and solves the last two exactly with the
 * extended Euclidean algorithm). No isl and no allocation, so it is cheap enough for every
 * pm_kernel_run. Byte ranges that do not intersect answer NO at once (the fast path). A
 * search that would need more than a million steps (only contrived strides get there)
 * answers MAYBE, which callers treat as overlapping.
 * Strides are in elements with 0 already replaced (pm_buffer_strides); the caller has
 * checked the byte span with pm_alias_span first, so nothing here overflows.
 */
#ifndef PM_FRONTEND_ALIAS_H
#define PM_FRONTEND_ALIAS_H

#include "polymage.h"

#include <stdbool.h>

typedef enum pm_alias { PM_ALIAS_NO, PM_ALIAS_YES, PM_ALIAS_MAYBE } pm_alias;

/* Byte range [lo, hi) of the buffer's elements as addresses (strides may be negative).
 * false when it does not fit an int64 (strides or extents too large). Needs extent > 0
 * in every dimension. */
bool pm_alias_span(const pm_buffer *b, const int64_t *stride, int64_t *lo, int64_t *hi);

/* Whether some element of a and some element of b share a byte. */
pm_alias pm_alias_overlap(const pm_buffer *a, const int64_t *stride_a, const pm_buffer *b,
                          const int64_t *stride_b);

/* Whether two different indices of b name the same element (strides {1, 1}). */
pm_alias pm_alias_self(const pm_buffer *b, const int64_t *stride);

#endif
