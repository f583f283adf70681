/* versioned.c — the sizes of every released version of each public struct with a
 * `size` field (see versioned.h).
 *
 * To add a field to one of them: append it at the end of the struct, at an offset no
 * smaller than the previous size (a field placed in an old struct's tail padding would
 * read a caller's indeterminate bytes: add an explicit padding member first if needed),
 * give it its default, and append the new sizeof to its row here. The static assertions
 * catch a struct that changed without its row.
 */
#include "runtime/versioned.h"

#include "frontend/error.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { MAX_VERSIONS = 8 };

typedef struct versioned_struct {
    const char *name;
    bool has_size_field; /* the stats structs are written, and have none               */
    size_t sizes[MAX_VERSIONS]; /* oldest first, 0-terminated                           */
} versioned_struct;

static const versioned_struct structs[PM_V_COUNT] = {
    /* 0.1; + compile_threads; + isolate_compiles, compile_seconds, compile_memory_bytes */
    [PM_V_JIT_OPTIONS] = {"pm_jit_options", true, {24, 32, 48}},
    /* 0.1; + stream_outputs; + prefetch_reads; + grouping, dp_budget */
    [PM_V_COMPILE_OPTIONS] = {"pm_compile_options", true, {96, 104, 112, 120}},
    /* the first; + disk_dir, disk_max_bytes; + max_scratch_bytes, scratch_idle_ms,
     * background_nice */
    [PM_V_CACHE_POLICY] = {"pm_cache_policy", true, {48, 64, 80}},
    /* the first; + disk_hits, disk_writes, disk_rejected; + disk_untrusted,
     * isolated_compiles, isolated_failures; + shared_compile_waits; + scratch_bytes,
     * scratch_released; + upgrades */
    [PM_V_CACHE_STATS] = {"pm_cache_stats", false, {104, 128, 152, 160, 176, 184}},
    /* the first; + llvm_wall_ms, compile_parts */
    [PM_V_COMPILE_STATS] = {"pm_compile_stats", false, {168, 184}},
};
_Static_assert(sizeof(pm_jit_options) == 48 && sizeof(pm_compile_options) == 120 &&
                   sizeof(pm_cache_policy) == 80 && sizeof(pm_cache_stats) == 184 &&
                   sizeof(pm_compile_stats) == 184,
               "a versioned struct changed: append its new size to its row above");

pm_status pm_versioned_check(pm_versioned which, size_t size, const char *who, pm_error *err)
{
    const versioned_struct *v = &structs[which];
    for (int i = 0; i < MAX_VERSIONS && v->sizes[i]; i++)
        if (size == v->sizes[i])
            return PM_OK;
    char known[64] = "";
    for (int i = 0, n = 0; i < MAX_VERSIONS && v->sizes[i] && n >= 0 && (size_t)n < sizeof known;
         i++)
        n += snprintf(known + n, sizeof known - (size_t)n, "%s%zu", i ? ", " : "", v->sizes[i]);
    if (v->has_size_field)
        return pm_error_set(err, PM_ERR_ARGUMENT,
                            "%s: %s.size = %zu is not the size of any version of %s (this "
                            "library %s reads %s; start from %s_default())",
                            who, v->name, size, v->name, PM_VERSION, known, v->name);
    return pm_error_set(err, PM_ERR_ARGUMENT,
                        "%s: size = %zu is not the size of any version of %s (this library %s "
                        "writes %s; pass sizeof(%s))",
                        who, size, v->name, PM_VERSION, known, v->name);
}

pm_status pm_versioned_read(pm_versioned which, void *defaults_and_out, const void *given,
                            const char *who, pm_error *err)
{
    size_t size;
    memcpy(&size, given, sizeof size); /* `size` is every such struct's first field */
    pm_status s = pm_versioned_check(which, size, who, err);
    if (s == PM_OK)
        memcpy((char *)defaults_and_out + sizeof size, (const char *)given + sizeof size,
               size - sizeof size);
    return s;
}

pm_status pm_versioned_write(pm_versioned which, void *out, const void *full, size_t size,
                             const char *who, pm_error *err)
{
    pm_status s = pm_versioned_check(which, size, who, err);
    if (s != PM_OK)
        return s;
    memcpy(out, full, size);
    if (structs[which].has_size_field)
        memcpy(out, &size, sizeof size);
    return PM_OK;
}
