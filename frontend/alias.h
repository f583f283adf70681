/* alias.h — can two strided boxes of memory share a byte; can one box's elements alias?
 *
 * Promise: pm_alias_overlap and pm_alias_self give exact answers for the boxes pm_buffer
 * describes, with integer arithmetic only. They use no isl and no allocation, so they are
 * cheap enough for every pm_kernel_run. A search that would need more than a million
 * steps (only contrived strides get there) answers MAYBE, which callers treat as
 * overlapping.
 */
#ifndef PM_FRONTEND_ALIAS_H
#define PM_FRONTEND_ALIAS_H

#include "polymage.h"

#include <stdbool.h>

/* A box: element (i_0, ...) at data + esize * sum(i_d * stride_d) bytes, with
 * 0 <= i_d < extent_d. Strides are in elements, with 0 already replaced
 * (pm_buffer_strides). The caller has checked the byte span with pm_alias_span first, so
 * nothing here overflows. The answers come from a bounded linear Diophantine test: gcds,
 * then a search that fixes the variables with the largest coefficients and solves the
 * last two exactly with the extended Euclidean algorithm. */
typedef enum pm_alias { PM_ALIAS_NO, PM_ALIAS_YES, PM_ALIAS_MAYBE } pm_alias;

/* Byte range [lo, hi) of the buffer's elements as addresses (strides may be negative).
 * false when it does not fit an int64 (strides or extents too large). Needs extent > 0
 * in every dimension. */
bool pm_alias_span(const pm_buffer *b, const int64_t *stride, int64_t *lo, int64_t *hi);

/* Whether some element of a and some element of b share a byte. Byte ranges that do not
 * intersect answer NO at once (the fast path). */
pm_alias pm_alias_overlap(const pm_buffer *a, const int64_t *stride_a, const pm_buffer *b,
                          const int64_t *stride_b);

/* Whether two different indices of b name the same element (strides {1, 1}). */
pm_alias pm_alias_self(const pm_buffer *b, const int64_t *stride);

#endif
