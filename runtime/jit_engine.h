/* jit_engine.h — the in-process JIT: ORC LLJIT for the host CPU, through LLVM's C API.
 *
 * Promise: the JIT makes code for the host's CPU name and feature string, less what the
 * CPU's flags lack. Kernels find the runtime, libgomp and libm/libc functions they call,
 * however the library was linked. Each added kernel is its own pm_engine_code, and
 * freeing it removes that kernel's machine code and nothing else. The entry names it
 * makes differ across engines and processes. Adding, looking up and freeing code may
 * happen on several threads at once.
 */
#ifndef PM_RUNTIME_JIT_ENGINE_H
#define PM_RUNTIME_JIT_ENGINE_H

#include "polymage.h"

#include <stdbool.h>

/* LLVM types appear as their struct tags (struct LLVMOpaqueModule * is LLVMModuleRef,
 * and so on) so that this header compiles without LLVM's include directory; callers that
 * include llvm-c headers pass their LLVMModuleRef etc. unchanged. */
struct LLVMOpaqueModule;                /* LLVMModuleRef                */
struct LLVMOpaqueContext;               /* LLVMContextRef               */
struct LLVMOpaqueTargetMachine;         /* LLVMTargetMachineRef         */
struct LLVMOpaqueValue;                 /* LLVMValueRef                 */
struct LLVMOrcOpaqueThreadSafeContext;  /* LLVMOrcThreadSafeContextRef  */

typedef struct pm_engine pm_engine;
/* The machine code of one added module (one kernel). */
typedef struct pm_engine_code pm_engine_code;

/* A JIT for the host. opt_level (PM_OPT_TUNED or 0..3) sets the machine-code level (the
 * IR passes take theirs in pm_engine_optimize). NULL and a message in err on failure.
 * Initializes LLVM's native target once per process (thread-safe). The target machine
 * has the host's CPU name *and feature string*: the features are what count (a CPU named
 * "rocketlake" with +avx512f gets AVX-512). The features are LLVM's cpuid reading less
 * what the CPU's flags lack (pm_host_read_flags, pm_host_llvm_features_filter).
 * The main JITDylib resolves the runtime callbacks (pm_rt_buffer, pm_rt_threads,
 * pm_rt_fail), the libgomp entry points (GOMP_parallel, GOMP_loop_*, omp_get_*, ...) and
 * the libm/libc functions LLVM lowers calls to. All are bound by address, so neither the
 * static libpolymage nor --as-needed linking can hide them. Anything else comes through
 * a process symbol search generator.
 * Every object file the JIT links passes ORC's object transform layer, which counts its
 * bytes (a kernel's code size) and, when the lookup asks, copies it (the on-disk cache).
 * Entry names carry a random token per engine (pm_engine_unique_name). */
pm_engine *pm_engine_new(int opt_level, pm_error *err);
/* Frees the JIT and all code still in it. NULL is allowed. Every pm_engine_code must be
 * freed first (they point into the JIT). */
void pm_engine_free(pm_engine *e);

/* The host as the engine sees it (strings owned by the engine). */
const char *pm_engine_triple(const pm_engine *e);
const char *pm_engine_cpu_name(const pm_engine *e);
const char *pm_engine_cpu_features(const pm_engine *e);
/* Lanes of 32-bit elements in the widest vector register the features allow:
 * 16 with avx512f, 8 with avx, 4 otherwise. */
int pm_engine_vector_width(const pm_engine *e);
/* The level the engine's own target machine makes machine code at (pm_engine_new's
 * opt_level, clamped): what every added module is compiled with. */
int pm_engine_opt_level(const pm_engine *e);

/* A new target machine for the host (same triple, CPU and features as the JIT's) at
 * opt_level PM_OPT_TUNED or 0..3, for one compile's optimization, data layout and asm
 * text. Target machines are not shared: each compile asks for its own. The caller
 * disposes it with LLVMDisposeTargetMachine. NULL and a message on failure. */
struct LLVMOpaqueTargetMachine *pm_engine_target_machine_new(const pm_engine *e, int opt_level,
                                                             pm_error *err);

/* Makes a module from codegen ready to live next to other kernels in one JITDylib:
 * sets the target's triple and data layout when missing, gives every function and
 * global it defines internal linkage except `entry`, and renames `entry` to `new_name`
 * (unique per engine, see pm_engine_unique_name). It does not verify the module: codegen
 * did. PM_ERR_INTERNAL when the module does not define `entry`. */
pm_status pm_engine_prepare_module(struct LLVMOpaqueModule *module,
                                   struct LLVMOpaqueTargetMachine *tm, const char *entry,
                                   const char *new_name, pm_error *err);

/* Writes "<base>_k<n>_<token>" into buf: n unique within the engine, token 64 random
 * bits of the engine's, so names from other processes (on-disk objects) differ too. */
void pm_engine_unique_name(pm_engine *e, const char *base, char *buf, size_t size);

/* Whether pm_engine_optimize at this level compiles f as cold code (optnone: no IR
 * passes, fast instruction selection): in the tuned pipeline, the kernel's entry when it
 * has no loop (jit_engine.c says why). */
bool pm_engine_compiles_cold(struct LLVMOpaqueValue *f, int opt_level);

/* Runs the level's pipeline on the module with the host target machine (so the cost
 * models know the vector width): LLVM's "default<O0..3>", or for PM_OPT_TUNED the
 * pipeline measured best for this compiler's IR (jit_engine.c says which and why). */
pm_status pm_engine_optimize(struct LLVMOpaqueModule *module, struct LLVMOpaqueTargetMachine *tm,
                             int opt_level, pm_error *err);

/* The module's machine code as assembly text (malloc'd, the caller frees). The module
 * is not changed (a clone is compiled). NULL and a message on failure. */
char *pm_engine_emit_asm(struct LLVMOpaqueModule *module, struct LLVMOpaqueTargetMachine *tm,
                         pm_error *err);

/* Takes the module (and its share of the context: tsctx may be disposed by the caller
 * afterwards) into the JIT under a new resource tracker. The module is compiled lazily,
 * by the first lookup of one of its symbols. On success *code owns the machine code; on
 * failure the module is freed and *code is NULL. */
pm_status pm_engine_add_module(pm_engine *e, struct LLVMOpaqueModule *module,
                               struct LLVMOrcOpaqueThreadSafeContext *tsctx,
                               pm_engine_code **code, pm_error *err);

/* Parses LLVM IR text (a .ll file's contents) into a module in a context of its own and
 * adds it like pm_engine_add_module. For tests and for loading kernels kept as text. */
pm_status pm_engine_add_ir(pm_engine *e, const char *ir_text, const char *name,
                           pm_engine_code **code, pm_error *err);

/* add, lookup and code_free may be called from several threads at once: ORC's
 * ExecutionSession is thread-safe, and lookups, which compile lazily with the JIT's one
 * target machine, take a lock of the engine's.
 * The address of a symbol defined by an added module (compiling it if needed).
 * PM_ERR_INTERNAL with LLVM's message when the symbol is missing or its module failed
 * to compile (an unresolved external, for instance). */
pm_status pm_engine_lookup(pm_engine *e, const char *name, void **address, pm_error *err);
/* The same, and the bytes of the object code this lookup compiled and linked (0 when
 * the symbol's module was compiled by an earlier lookup): a kernel's code size. With
 * object_copy non-NULL, *object_copy receives a malloc'd copy of the object file when
 * exactly one was linked (else NULL), for the on-disk cache. With split_ms non-NULL,
 * split_ms[0] receives the milliseconds spent making machine code and split_ms[1] those
 * linking it (measured at the object's hand-over to the linker). */
pm_status pm_engine_lookup_sized(pm_engine *e, const char *name, void **address,
                                 size_t *object_bytes, void **object_copy, double split_ms[2],
                                 pm_error *err);
/* Instructions in the module's defined functions (and how many functions, when
 * functions is non-NULL): the IR size compile statistics report. */
int64_t pm_engine_count_instructions(struct LLVMOpaqueModule *module, int64_t *functions);
/* Adds a relocatable object file (copied; e.g. one read back from the on-disk cache)
 * under a new resource tracker, like pm_engine_add_module; linked by the first lookup of
 * one of its symbols. A symbol the engine defines already is an error (PM_ERR_INTERNAL),
 * never a silent replacement. */
pm_status pm_engine_add_object(pm_engine *e, const void *object, size_t size, const char *name,
                               pm_engine_code **code, pm_error *err);

/* Adds n relocatable objects (stored back to back in `objects`, sizes[i] bytes each;
 * copied) under one new resource tracker: the parts of one kernel (runtime/split_compile.h),
 * which refer to each other's hidden symbols. Linked by the first lookup of one of their
 * symbols, which counts all of their bytes. On failure nothing stays added. */
pm_status pm_engine_add_objects(pm_engine *e, int n, const void *objects,
                                const size_t *sizes, const char *name, pm_engine_code **code,
                                pm_error *err);

/* Removes the module's machine code from the JIT and frees it (its ORC resource
 * tracker's, and nothing else). Addresses looked up in that module become invalid. NULL
 * is allowed. */
void pm_engine_code_free(pm_engine_code *code);

#endif
