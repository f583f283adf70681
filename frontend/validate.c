/* validate.c — see validate.h. (Being written: the isl checks land in the next commit.) */
#include "frontend/validate.h"

pm_status pm_validate(pm_pipeline *p)
{
    return p ? PM_OK : PM_ERR_MISUSE;
}
