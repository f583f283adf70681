/* error.h — filling a caller's pm_error: the one error setter of the JIT side (codegen/
 * and runtime/ report every failure through it; builders use the context's pm_ctx_error,
 * which follows the same rule).
 *
 * Promise: the first error wins. pm_error_set fills err only when it holds no error yet,
 * so a later, derived failure never hides the cause. Every public entry point
 * (pm_jit_new, pm_jit_compile, pm_kernel_run) and pm_codegen clear the caller's err
 * first.
 */
#ifndef PM_FRONTEND_ERROR_H
#define PM_FRONTEND_ERROR_H

#include "polymage.h"

/* Formats the message into err (truncated to fit, always terminated) when err holds no
 * error yet, and returns the status err now holds. So a failing path reads
 * `return pm_error_set(err, PM_ERR_ARGUMENT, "%s: ...", name)`. err may be NULL (the
 * caller did not ask for the message); the given status is returned all the same. */
pm_status pm_error_set(pm_error *err, pm_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* status PM_OK and an empty message. */
void pm_error_clear(pm_error *err);

#endif
