/* split_compile.h — a prepared kernel module compiled to machine code as several parts
 * at once, so that a large kernel takes less wall time to compile.
 *
 * Promise: pm_split_compile compiles the module's functions as up to max_parts parts at
 * once, each part a relocatable object. Each function is optimized and
 * compiled exactly as in the serial path's one module, so kernels compute bit-identical
 * outputs. When the module cannot be split usefully, nothing is changed and out->parts
 * is 0: the caller compiles serially.
 */
#ifndef PM_RUNTIME_SPLIT_COMPILE_H
#define PM_RUNTIME_SPLIT_COMPILE_H

#include "runtime/jit_engine.h"

#include <stddef.h>
#include <stdint.h>

enum { PM_SPLIT_MAX_PARTS = 16 };

typedef struct pm_split_result {
    int parts;                           /* 0: not split (on PM_OK, module unchanged)    */
    void *objects;                       /* malloc'd: the parts' objects, back to back    */
    size_t sizes[PM_SPLIT_MAX_PARTS];    /* each part's object bytes, part 0 first        */
    double split_ms;   /* partition, bitcode, the parts' parses and stripping (summed)    */
    double opt_ms;     /* LLVM's passes, summed over parts                                */
    double machine_code_ms; /* object emission, summed over parts                         */
    double wall_ms;    /* the whole call, wall clock                                      */
    int64_t instructions_after, functions; /* over all parts, after the passes            */
} pm_split_result;

/* entry is the module's (already unique) entry name. On failure PM_ERR_INTERNAL /
 * PM_ERR_NOMEM naming the part and cause; out->objects is NULL then.
 * The partition: a function and the defined functions it calls directly share a part
 * unless the callee is noinline (so the inliner decides as in the one module). The
 * entry's group is part 0; the other groups are balanced by their estimated compile cost
 * (distinct instructions, vector ones weighing more: split_compile.c compile_cost),
 * largest first, onto the lightest part.
 * A function another part refers to (the outlined parallel bodies the entry hands to
 * GOMP_parallel, a noinline stage body) gets external linkage, hidden visibility and a
 * name prefixed with the kernel's unique entry name (kernels share one JITDylib); every
 * other function keeps internal linkage. Constant globals are copied into each part.
 * Each part beyond the first is parsed from the module's bitcode into an LLVM context of
 * its own, in a thread created for this call (in the calling thread when none can be
 * had). No queue is shared with anything else, so it cannot wait on the server's
 * background compiles. Part 0 is the module itself, in the calling thread. Every part has
 * its own target machine, runs the level's passes (pm_engine_optimize, at opt_level) and
 * emits a relocatable object file with machine code at the engine's level
 * (pm_engine_opt_level), as in the serial path.
 * Not split (PM_OK, out->parts 0, the module unchanged): max_parts < 2, no defined
 * entry (the serial path reports it), fewer than two groups (of a caller and its
 * inlinable callees), or something the split does not handle (a non-constant global, an
 * alias or ifunc, an unnamed function). Otherwise the module may be changed (renamed,
 * stripped to part 0, optimized, compiled), also on failure; the caller still owns and
 * frees it. */
pm_status pm_split_compile(pm_engine *e, struct LLVMOpaqueModule *module, const char *entry,
                           int opt_level, int max_parts, pm_split_result *out, pm_error *err);

#endif
