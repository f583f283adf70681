/* codegen.h — from a validated pipeline to an LLVM module (no C source, no compiler).
 *
 * Promise: pm_codegen runs the compiler's phases in order (listed in codegen/driver.c,
 * the one screen to read): polyhedral form -> inline -> group -> align -> tile ->
 * storage -> schedule -> isl AST -> LLVM IR, and returns
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
 *   void *pm_rt_buffer(pm_run_ctx *rt, int32_t slot, int64_t bytes, const char *who);
 *     (who: a string constant of the module naming the function(s) whose memory it is,
 *     for the out-of-memory message)
 *   int32_t pm_rt_threads(pm_run_ctx *rt);
 *   void pm_rt_fail(pm_run_ctx *rt, int32_t status, const char *why);
 *   GOMP_parallel, omp_get_thread_num, omp_get_num_threads, and libm functions.
 */
#ifndef PM_CODEGEN_CODEGEN_H
#define PM_CODEGEN_CODEGEN_H

#include "polymage.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
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
    PM_PHASE_SIZES,    /* code size: AST copies of each statement, IR per function     */
    PM_PHASE_LLVM,     /* optimized IR (the runtime fills it after its passes)        */
    PM_PHASE_ASM,      /* machine code (runtime, only when dumped)                    */
    PM_NPHASES
} pm_phase;
extern const char *const pm_phase_names[PM_NPHASES];
#define PM_DUMP_BIT(phase) (1u << (phase))
#define PM_DUMP_ALL ((1u << PM_NPHASES) - 1)
/* Parses "graph,ast,llvm" / "all" into PM_DUMP_BIT bits; unknown names are ignored. */
unsigned pm_dump_parse(const char *spec);

typedef struct pm_codegen_options {
    int vector_width;        /* lanes for 32-bit elements (16 on AVX-512, 8 on AVX2)   */
    int threads;             /* default thread count baked into GOMP_parallel (0 = all) */
    unsigned dump_mask;      /* PM_DUMP_BIT(phase) bits: phases whose text to make       */
    FILE *dump_to;           /* where to print them, or NULL (kept only)                 */
    LLVMTargetMachineRef tm; /* host target, for data layout and optimization              */
    /* the optimizer (pm_compile_options in polymage.h; 0 fields = unfused, defaults) */
    int fusion;              /* 0: every stage alone over full buffers                    */
    int tile_size[PM_MAX_DIMS]; /* per tiled dimension, outermost first; 0 = model       */
    double overlap_threshold;/* < 0 = default                                             */
    int group_limit;         /* 0 = default                                               */
    int stream_outputs;      /* non-temporal stores for outputs: 1, 0, -1 = the model     */
    int prefetch_reads;      /* prefetches for large buffers' reads: 1, 0, -1 = the model */
    int64_t cache_bytes;     /* scratch budget per tile; 0 = 512 KiB                      */
    int ast_threads;         /* threads building the groups' isl ASTs (<= 1: this one)   */
} pm_codegen_options;

typedef struct pm_codegen_result {
    LLVMModuleRef module;    /* owned by the result until taken (set to NULL)             */
    char entry_name[64];
    int nslots;              /* number of pm_rt_buffer slots the entry uses                */
    char *text[PM_NPHASES];  /* malloc'd, NULL when not kept                               */
    pm_compile_stats stats;  /* the phases' times (poly_ms .. ir_build_ms, dump_ms) and
                                ir_instructions_before; the runtime fills the rest        */
} pm_codegen_result;

/* Builds the module in llvm_ctx. estimates may be NULL. On failure returns a status and
 * writes the message to err. */
pm_status pm_codegen(pm_pipeline *p, const pm_value *estimates, const pm_codegen_options *o,
                     LLVMContextRef llvm_ctx, pm_codegen_result *out, pm_error *err);
/* Frees what the result still owns. */
void pm_codegen_result_free(pm_codegen_result *r);

#endif
