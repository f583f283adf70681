/* codegen.h — from a validated pipeline to an LLVM module (no C source, no compiler).
 *
 * Promise: pm_codegen runs the compiler's phases in order (listed in codegen/driver.c,
 * the one screen to read): polyhedral form -> schedule -> isl AST -> LLVM IR, and returns
 * a module holding one entry function with the kernel ABI below. It keeps the text of
 * each phase when asked (for PM_DUMP and pm_kernel_dump).
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
 *   void *pm_rt_buffer(pm_run_ctx *rt, int32_t slot, int64_t bytes);
 *   void pm_rt_fail(pm_run_ctx *rt, int32_t status, const char *why);
 *   GOMP_parallel, and libm functions.
 */
#ifndef PM_CODEGEN_CODEGEN_H
#define PM_CODEGEN_CODEGEN_H

#include "polymage.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <stdio.h>

typedef struct pm_codegen_options {
    int vector_width;        /* lanes for 32-bit elements (16 on AVX-512, 8 on AVX2)   */
    int threads;             /* default thread count baked into GOMP_parallel (0 = all) */
    unsigned dump_mask;      /* PM_DUMP_* bits: phases to print to `dump_to`              */
    FILE *dump_to;           /* usually stderr                                             */
    LLVMTargetMachineRef tm; /* host target, for data layout and optimization              */
} pm_codegen_options;

/* Phases that can be dumped. */
enum {
    PM_DUMP_GRAPH = 1u << 0,
    PM_DUMP_DOMAINS = 1u << 1,
    PM_DUMP_SCHEDULE = 1u << 2,
    PM_DUMP_AST = 1u << 3,
    PM_DUMP_LLVM = 1u << 4,   /* optimized IR (runtime dumps after its passes)         */
    PM_DUMP_ASM = 1u << 5
};
/* Parses "graph,ast,llvm" / "all" into PM_DUMP_* bits; unknown names are ignored. */
unsigned pm_dump_parse(const char *spec);

typedef struct pm_codegen_result {
    LLVMModuleRef module;    /* owned by the result until taken (set to NULL)             */
    char entry_name[64];
    int nslots;              /* number of pm_rt_buffer slots the entry uses                */
    char *text_graph, *text_domains, *text_schedule, *text_ast; /* malloc'd, may be NULL */
} pm_codegen_result;

/* Builds the module in llvm_ctx. estimates may be NULL. On failure returns a status and
 * writes the message to err. */
pm_status pm_codegen(pm_pipeline *p, const pm_value *estimates, const pm_codegen_options *o,
                     LLVMContextRef llvm_ctx, pm_codegen_result *out, pm_error *err);
/* Frees what the result still owns. */
void pm_codegen_result_free(pm_codegen_result *r);

#endif
