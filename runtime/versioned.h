/* versioned.h — the public structs that carry a `size` field, and the one rule by which
 * every call reads or writes them (polymage.h, "Options structs and the ABI").
 *
 * Promise: a struct's size is accepted only when it is the size of some released version
 * of that struct (the table in versioned.c, oldest first, the last one today's). 0,
 * SIZE_MAX and any other size are PM_ERR_ARGUMENT, with a message naming the call, the
 * struct, the size given and the sizes this library reads. Reading copies the caller's
 * bytes over the defaults (fields an older caller lacks keep their defaults); writing
 * fills exactly the caller's bytes.
 */
#ifndef PM_RUNTIME_VERSIONED_H
#define PM_RUNTIME_VERSIONED_H

#include "polymage.h"

#include <stddef.h>

typedef enum pm_versioned {
    PM_V_JIT_OPTIONS,
    PM_V_COMPILE_OPTIONS,
    PM_V_CACHE_POLICY,
    PM_V_CACHE_STATS,
    PM_V_COMPILE_STATS,
    PM_V_COUNT
} pm_versioned;

/* PM_OK when `size` is a released size of struct `which`; else PM_ERR_ARGUMENT and a
 * message "<who>: <struct>.size = <size> is not ..." in *err (err may be NULL). */
pm_status pm_versioned_check(pm_versioned which, size_t size, const char *who, pm_error *err);

/* *defaults_and_out holds the defaults; the caller's `size` bytes (its first field) are
 * copied over them after the check. */
pm_status pm_versioned_read(pm_versioned which, void *defaults_and_out, const void *given,
                            const char *who, pm_error *err);

/* Copies the first `size` bytes of `full` to `out` after the check; `out`'s size field,
 * when the struct has one, is set to `size`. */
pm_status pm_versioned_write(pm_versioned which, void *out, const void *full, size_t size,
                             const char *who, pm_error *err);

#endif
