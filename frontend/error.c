/* error.c — see error.h. */
#include "runtime/error.h"

#include <stdarg.h>
#include <stdio.h>

pm_status pm_rt_errorf(pm_error *err, pm_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

void pm_rt_error_clear(pm_error *err)
{
    if (err) {
        err->status = PM_OK;
        err->message[0] = '\0';
    }
}
