/* error.h — filling a caller's pm_error (runtime/ reports every failure through one).
 *
 * Promise: pm_rt_errorf formats the message into err (truncated to fit, always
 * terminated) and returns the status, so a failing path reads
 * `return pm_rt_errorf(err, PM_ERR_ARGUMENT, "%s: ...", name)`. err may be NULL (the
 * caller did not ask for the message); the status is returned all the same.
 */
#ifndef PM_RUNTIME_ERROR_H
#define PM_RUNTIME_ERROR_H

#include "polymage.h"

pm_status pm_rt_errorf(pm_error *err, pm_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* status PM_OK and an empty message. */
void pm_rt_error_clear(pm_error *err);

#endif
