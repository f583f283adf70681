/* error.c — see error.h. */
#include "frontend/error.h"

#include <stdarg.h>
#include <stdio.h>

pm_status pm_error_set(pm_error *err, pm_status status, const char *fmt, ...)
{
    if (!err)
        return status;
    if (err->status != PM_OK) /* the first error wins */
        return err->status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->status = status;
    return status;
}

void pm_error_clear(pm_error *err)
{
    if (err) {
        err->status = PM_OK;
        err->message[0] = '\0';
    }
}
