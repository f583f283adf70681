/* check.h — the test suite's assertions. A failed CHECK prints file:line and the
 * expression and counts a failure; check_finish() prints "N passed, N failed" and
 * returns the process exit code. Tests keep going after a failure to show all of them.
 * Also the buffers the tests fill and compare, and a small blur pipeline they share. */
#ifndef PM_TEST_CHECK_H
#define PM_TEST_CHECK_H

#include "polymage.h"

#include <stdbool.h>
#include <stdio.h>

extern int check_passed, check_failed;

bool check_report(bool ok, const char *file, int line, const char *what);
bool check_contains(const char *haystack, const char *needle, const char *file, int line);
int check_finish(const char *suite);

#define CHECK(cond) check_report((cond), __FILE__, __LINE__, #cond)
/* The status is expected and, when expected is not PM_OK, the message contains needle. */
#define CHECK_STATUS(got, expected) \
    check_report((got) == (expected), __FILE__, __LINE__, #got " == " #expected)
#define CHECK_CONTAINS(haystack, needle) check_contains((haystack), (needle), __FILE__, __LINE__)

/* Fills a buffer of any storage type with deterministic pseudo-random values in a range
 * that suits the type (floats in [0, 1), integers over their full range unless
 * small_ints, then in [0, 255]). */
void check_fill(pm_buffer *b, unsigned seed, bool small_ints);
/* Allocates a dense buffer (aligned, zeroed); free with check_buffer_free. */
pm_buffer check_buffer_new(pm_type type, int ndims, const int64_t *extents);
void check_buffer_free(pm_buffer *b);
int64_t check_buffer_count(const pm_buffer *b);
/* Largest absolute difference between two same-shape buffers, as double; when the
 * shapes or types differ returns INFINITY. Integer buffers compare exactly. */
double check_buffer_maxdiff(const pm_buffer *a, const pm_buffer *b);
/* Element i of an integer buffer, exactly (0 for other types). */
int64_t check_int_element(const pm_buffer *b, int64_t i);

/* The tests' small pipeline, built by check_blur_pipeline (NULL, with a failed check,
 * when it cannot be): blur(x, y) = (I(x-1, y) + I(x, y) + I(x+1, y)) / 3 over
 * 1 <= x <= R-2, 0 <= y < C, so output extents x C from an input R x C (f32). */
pm_pipeline *check_blur_pipeline(pm_ctx *ctx);
/* One run of it: the parameters for rows x cols, an input filled from seed, the
 * interpreter's output (want) and a buffer for the compiled one (got). */
typedef struct check_blur_case {
    pm_value params[2];
    pm_buffer in, want, got;
} check_blur_case;
void check_blur_case_new(check_blur_case *c, pm_pipeline *p, int64_t rows, int64_t cols,
                         unsigned seed);
void check_blur_case_free(check_blur_case *c);

#endif
