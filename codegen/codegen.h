/* codegen.h — from a validated pipeline to an LLVM module (no C source, no compiler).
 *
 * Promise: pm_codegen runs the compiler's steps in the order of codegen/driver.c's table
 * and returns a module holding one entry function with the kernel ABI below. It keeps
 * the text of each phase when asked (for PM_DUMP and pm_kernel_dump).
 */
#ifndef PM_CODEGEN_CODEGEN_H
#define PM_CODEGEN_CODEGEN_H

#include "polymage.h"
#include "codegen/options.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The compiler's phases that have a text, in the order they run: the one table behind
 * PM_DUMP names, dump bits (PM_DUMP_BIT) and the texts a kernel keeps (codegen/driver.c
 * defines the names). */
typedef enum pm_phase {
    PM_PHASE_GRAPH,    /* the validated pipeline's definitions                        */
    PM_PHASE_DOMAINS,  /* poly: domains, accesses, dependences                        */
    PM_PHASE_GROUPS,   /* inline, group, align, tile: the fusion decisions            */
    PM_PHASE_DOT,      /* the grouped stage graph as Graphviz DOT                     */
    PM_PHASE_STORAGE,  /* buffers, scratchpads, slots, peak bytes                     */
    PM_PHASE_SCHEDULE, /* the isl schedule tree with its marks                        */
    PM_PHASE_AST,      /* the isl AST                                                  */
    PM_PHASE_LOWER,    /* per loop and per read: the vector code chosen, and why       */
    PM_PHASE_SIZES,    /* code size: AST copies of each statement, IR per function     */
    PM_PHASE_LLVM,     /* optimized IR (the runtime fills it after its passes)        */
    PM_PHASE_ASM,      /* machine code (runtime, only when dumped)                    */
    PM_NPHASES
} pm_phase;
extern const char *const pm_phase_names[PM_NPHASES];
#define PM_DUMP_BIT(phase) (1u << (phase))
#define PM_DUMP_ALL ((1u << PM_NPHASES) - 1)
/* The dump names: every step's name (selecting the texts that show its decisions),
 * every text's name in pm_phase_names, and "all", separated by commas or spaces.
 * pm_dump_parse gives a spec's bits (unknown names select nothing); pm_dump_check
 * is false when a name is unknown, and writes it to bad; pm_dump_name_list writes the
 * valid names, comma-separated. */
unsigned pm_dump_parse(const char *spec);
bool pm_dump_check(const char *spec, char *bad, size_t size);
void pm_dump_name_list(char *buf, size_t size);

/* The steps pm_codegen runs, in order (codegen/driver.c's table): step i's name (its
 * PM_TIME and PM_DUMP name), what it does, and its pm_compile_stats field. */
int pm_codegen_step_count(void);
void pm_codegen_step_info(int i, const char **name, const char **what, const char **stat);

typedef struct pm_codegen_result {
    LLVMModuleRef module;    /* owned by the result until taken (set to NULL)             */
    char entry_name[64];
    int nslots;              /* number of pm_rt_buffer slots the entry uses                */
    char *text[PM_NPHASES];  /* malloc'd, NULL when not kept                               */
    pm_compile_stats stats;  /* the phases' times (poly_ms .. ir_build_ms, dump_ms) and
                                ir_instructions_before; the runtime fills the rest        */
} pm_codegen_result;

/* Builds the module in llvm_ctx for the host of tm (NULL: no target, for tests), making
 * the texts in o->keep_mask. estimates may be NULL. On failure returns a status and
 * writes the message to err. The steps: poly -> cases -> inline -> group -> align ->
 * tile -> storage -> schedule -> isl AST -> lower -> LLVM IR.
 *
 * Kernel ABI (the contract with runtime/):
 *   int32_t <entry_name>(const pm_value *params,     // pipeline parameters, in order
 *                        const pm_buffer *inputs,    // one per pipeline input
 *                        pm_buffer *outputs,         // one per pipeline output
 *                        pm_run_ctx *rt);            // opaque, for runtime calls
 *   returns 0 on success, else a pm_status before writing anything: PM_ERR_NOMEM when
 *   pm_rt_buffer failed, or the status given to pm_rt_fail (a scratch size or extent
 *   that overflows int64: PM_ERR_NOMEM / PM_ERR_ARGUMENT, with a message naming the
 *   function).
 * Buffers reach the entry already checked against the parameters (pm_signature_check),
 * with strides filled in (never 0).
 * Runtime functions the module may call (declared in runtime/rt.h, resolved by the JIT):
 *   void *pm_rt_buffer(pm_run_ctx *rt, int32_t slot, int64_t bytes, const char *who);
 *     (who: a string constant of the module naming the function(s) whose memory it is,
 *     for the out-of-memory message)
 *   int32_t pm_rt_threads(pm_run_ctx *rt);
 *   void pm_rt_fail(pm_run_ctx *rt, int32_t status, const char *why);
 *   GOMP_parallel, omp_get_thread_num, omp_get_num_threads, and libm functions.
 */
pm_status pm_codegen(pm_pipeline *p, const pm_value *estimates, const pm_options *o,
                     LLVMTargetMachineRef tm, LLVMContextRef llvm_ctx, pm_codegen_result *out,
                     pm_error *err);
/* Frees what the result still owns. */
void pm_codegen_result_free(pm_codegen_result *r);

#endif
