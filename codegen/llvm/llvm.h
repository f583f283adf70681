/* llvm/llvm.h — LLVM IR from the isl AST: the shared state of the LLVM phase.
 *
 * Promise: pm_llvm_build emits one module with the kernel entry of codegen.h, built
 * directly with LLVM's C API (no C source, no external compiler). Vector loops and reads
 * take the shapes and strategies the lowering chose (codegen/lower.h). The values shared
 * between generated functions (parameters, buffer descriptions, loop iterators) live in
 * a pm_llvm_env. So outlining a loop is packing the env into a block and unpacking it in
 * the new function.
 */
#ifndef PM_CODEGEN_LLVM_LLVM_H
#define PM_CODEGEN_LLVM_LLVM_H

#include "codegen/codegen.h"
#include "codegen/ast.h"
#include "codegen/lower.h"
#include "codegen/poly.h"

#include <isl/ast.h>
#include <llvm-c/Core.h>
#include <stdbool.h>

#define PM_LLVM_MAX_ITERS 64

/* A buffer's run-time description (all i64 except base, a ptr). */
typedef struct pm_llvm_buf {
    LLVMValueRef base;
    LLVMValueRef lb[PM_MAX_DIMS], ext[PM_MAX_DIMS], stride[PM_MAX_DIMS];
} pm_llvm_buf;

/* Values visible to code in the current function. */
typedef struct pm_llvm_env {
    LLVMValueRef *param_raw;        /* i64 bits of each pm_value, pipeline order          */
    pm_llvm_buf *bufs;              /* per pm_poly storage                                */
    LLVMValueRef unit_stride;       /* i1: every caller buffer has innermost stride 1     */
    LLVMValueRef threads;           /* i32: thread count for GOMP_parallel                */
    int niters;
    isl_id *iter_id[PM_LLVM_MAX_ITERS];   /* borrowed from the AST                        */
    LLVMValueRef iter[PM_LLVM_MAX_ITERS]; /* i64                                          */
} pm_llvm_env;

/* One point (W == 1) or W consecutive points of a statement. var[d] is the i32 value of
 * dimension d (the first lane); lane_step[d] is 1 for the dimension the vector runs along
 * (lane l holds var + l), else 0. */

typedef struct pm_point {
    const pm_poly_stmt *stmt;
    int W;
    LLVMValueRef var[PM_MAX_DIMS];  /* the coordinates as the language's i32 variables   */
    LLVMValueRef pos[PM_MAX_DIMS];  /* the same as exact i64 values (lane 0), or NULL    */
    int lane_step[PM_MAX_DIMS];
    /* A coordinate that moves arbitrarily across the lanes (an inlined function read at a
     * data-dependent point): its <W x i32> values, var holding lane 0; else NULL. */
    LLVMValueRef lanes[PM_MAX_DIMS];
    /* Where the point may lie (an inlined function's cases are all evaluated at every
     * lane): PM_POINT_IN_CASE (its statement's domain: the access records' proofs hold),
     * PM_POINT_IN_BOX (the function's box: only pm_poly_call_inside reads are proven)
     * or PM_POINT_ANYWHERE (every read clamps). */
    int where;
} pm_point;

/* A block of lanes whose rows of bins accumulate in registers (vector.c,
 * pm_llvm_private_block; schedule.c's PM_MARK_PRIVATE): the lanes' loop iterator and
 * first lane, and per update instance of its body (the unrolled channels) one <W x T>
 * accumulator (an alloca) per bin. */
typedef struct pm_private_rows {
    isl_id *lane;
    LLVMValueRef start;
    int n;        /* update instances                               */
    int first;    /* the pass's instances: first .. first + count - 1 */
    int count;
    int current;  /* the one being emitted                          */
    LLVMValueRef acc[PM_PRIVATE_MAX_USERS][PM_POLY_BIN_MAX];
} pm_private_rows;

/* Expression values remembered per statement (pm_llvm.memo): at most this many. */
#define PM_LLVM_MEMO 2048

typedef struct pm_llvm_memo {
    const pm_expr *e;
    pm_point pt;
    bool exact; /* emitted with pm_llvm.exact > 0 */
    LLVMValueRef v;
} pm_llvm_memo;

/* An open-addressing slot of the memo's index: entry idx when gen is the memo's current
 * generation, else empty (a reset bumps the generation instead of clearing the index). */
typedef struct pm_llvm_memo_slot {
    int idx;
    unsigned gen;
} pm_llvm_memo_slot;

typedef struct pm_llvm {
    LLVMContextRef C;
    LLVMModuleRef M;
    LLVMBuilderRef B;
    const pm_poly *poly;
    const pm_options *o;
    LLVMTargetMachineRef tm;        /* the host's, or NULL (no target: tests)             */
    LLVMTypeRef t_i1, t_i8, t_i16, t_i32, t_i64, t_f32, t_f64, t_ptr, t_void;
    LLVMValueRef fn;                /* function being emitted                              */
    LLVMValueRef rt_arg;            /* pm_run_ctx* of the entry                            */
    pm_llvm_env env;
    bool in_parallel;               /* inside an outlined body: no nested outlining        */
    int noutlined;
    int vector_width;               /* lanes; 1 = no vectorization                         */
    bool avx512f, avx512vl;         /* the target's x86 gathers with 32-bit offsets (access.c) */
    bool avx512bw, avx512vbmi;      /* its 16- and 8-bit lane permutes (access.c's small tables) */
    pm_lower *lower;                /* the lowering's decisions, which the emitter follows  */
    const pm_storage_plan *place;   /* per storage, where it lives (the plan's, storage.c)  */
    bool *gathered;                 /* per storage, inside a vector loop: read by a gather
                                       (whose 32-bit offsets the loop's guard checks), or
                                       NULL outside vector loops                         */
    char entry_name[64];
    /* > 0: float adds, subtracts and multiplies round as the interpreter's do (the
     * statement's stage is float_exact, or the expression is below a discrete operation:
     * poly.h); 0: they may contract into fused multiply-adds. */
    int exact;
    /* Expression nodes evaluated in the statement being emitted, by node, point and
     * exactness: a node used twice at the same point is emitted once (a call read in
     * bilateral grid's test and division; a lerp's first operand, which the lerp nested
     * in another lerp uses twice: without this the emitted IR grows with the nesting,
     * and LLVM's passes spent their time removing the copies). Valid because a value is
     * only reused where it was computed on every path: the memo is reset per statement,
     * per path of a branch (pm_llvm_memo_reset) and around a guarded row read's two
     * sides (access.c); off (nmemo < 0) outside statements and when the tables could
     * not be allocated. */
    int nmemo;
    unsigned memo_gen;
    pm_llvm_memo *memo;          /* PM_LLVM_MEMO entries                                */
    pm_llvm_memo_slot *memo_slot; /* 2 * PM_LLVM_MEMO                                   */
    pm_error *err;                  /* never NULL; its status is the first failure, and
                                       emission continues harmlessly after one           */
    LLVMValueRef *buffer_tag;       /* per storage: its accesses' TBAA tag (module.c), or
                                       NULL until first asked for                        */
    const pm_ast *ast;
    const pm_ast_box *box;          /* emitting a box template (ast.h): its pm_boxK calls
                                       are box->stmts[K]; else NULL                       */
    int stream_align;               /* > 0 in a streamed loop's body (vector.c): vector
                                       stores to streamed outputs are non-temporal, aligned
                                       to this many bytes                                */
    bool streamed;                  /* a non-temporal store was emitted (then the parallel
                                       bodies after it and the entry end in a fence)      */
    pm_private_rows *priv;          /* inside a privatized block (vector.c), else NULL    */
} pm_llvm;


/* module.c: the module and the entry: parameters, buffers (inputs, outputs, and scratch
 * from pm_rt_buffer), function attributes, the walk's start. */
pm_status pm_llvm_build(const pm_poly *poly, const pm_ast *ast,
                        pm_lower *lower, const pm_options *o, LLVMTargetMachineRef tm,
                        LLVMContextRef C, const char *entry_name,
                        LLVMModuleRef *out, pm_error *err);
void pm_llvm_set_fn_attrs(pm_llvm *g, LLVMValueRef fn);

/* merge.c: outlined bodies equal but for integer constants merged into one
 * function each, the constants passed by their calls (the file's header says when). */
typedef struct pm_llvm_merge_stats {
    int candidates; /* functions called directly and only so                          */
    int classes;    /* merged functions made                                            */
    int removed;    /* functions gone                                                   */
    int holes;      /* constants turned into arguments, summed over the classes        */
} pm_llvm_merge_stats;
pm_status pm_llvm_merge_similar(LLVMModuleRef M, pm_llvm_merge_stats *out, pm_error *err);
/* A fence when non-temporal stores were emitted (g->streamed): at the end of a parallel
 * body and of the entry. */
void pm_llvm_fence_streams(pm_llvm *g);
/* Marks a load, store or memory intrinsic call of storage s with the memory it touches
 * (TBAA), so that LLVM knows accesses to different buffers never alias; returns inst. */
LLVMValueRef pm_llvm_tag_access(pm_llvm *g, LLVMValueRef inst, int s);
LLVMTypeRef pm_llvm_type(pm_llvm *g, pm_type t);
/* A declared function (created on first use). */
LLVMValueRef pm_llvm_declare(pm_llvm *g, const char *name, LLVMTypeRef fnty);
/* The i64 constant v. */
static inline LLVMValueRef pm_llvm_i64(pm_llvm *g, int64_t v)
{
    return LLVMConstInt(g->t_i64, (unsigned long long)v, 1);
}
/* An intrinsic's declaration for overload types tys[0..n-1]; its type in *fnty. */
LLVMValueRef pm_llvm_intrinsic(pm_llvm *g, const char *name, LLVMTypeRef *tys, int n,
                               LLVMTypeRef *fnty);
/* A new basic block in the current function. */
LLVMBasicBlockRef pm_llvm_block(pm_llvm *g, const char *name);

/* The statement a user node's call names (pm_ast_stmt; inside a box template, the
 * box's). */
const pm_poly_stmt *pm_llvm_call_stmt(pm_llvm *g, __isl_keep isl_ast_expr *call);

/* loops.c: isl AST nodes (for, if, block, user, mark) and isl AST expressions. */
void pm_llvm_node(pm_llvm *g, __isl_keep isl_ast_node *node);
LLVMValueRef pm_llvm_ast_expr(pm_llvm *g, __isl_keep isl_ast_expr *e); /* i64, or i1 */
/* floor of an isl affine expression over parameters and pushed iterator ids (i64). */
LLVMValueRef pm_llvm_aff_floor(pm_llvm *g, __isl_keep isl_aff *aff);
void pm_llvm_push_iter(pm_llvm *g, __isl_keep isl_id *id, LLVMValueRef v);
void pm_llvm_pop_iter(pm_llvm *g);
/* Emits a counted loop for i = lo, lo+step, ... while i <= hi (i64); body(g, i, user). */
void pm_llvm_counted_loop(pm_llvm *g, LLVMValueRef lo, LLVMValueRef hi, int64_t step,
                          void (*body)(pm_llvm *g, LLVMValueRef i, void *user), void *user);
/* The for node as a scalar loop whose iterator starts at `start` (a remainder loop). */
void pm_llvm_for_from(pm_llvm *g, __isl_keep isl_ast_node *node, LLVMValueRef start);

/* vector.c: the vector loops the lowering chose, in their shapes; a merged statement's
 * row as one loop per part. */
/* Emits the innermost for node with <W x T> vectors and a scalar remainder when it
 * qualifies (see vector.c); returns false, emitting nothing, otherwise. */
bool pm_llvm_vector_for(pm_llvm *g, __isl_keep isl_ast_node *node);
/* The same for the iterator values first .. last (i64) of the for node only, as a thread
 * runs its share of a parallel loop; false, emitting nothing, when it does not qualify. */
bool pm_llvm_vector_range(pm_llvm *g, __isl_keep isl_ast_node *node, LLVMValueRef first,
                          LLVMValueRef last);

/* A for node over the innermost dimension of a merged statement (poly.h, parts), its
 * only body: one loop per part over the part's interval at the row, with vectors where
 * the part qualifies; false, emitting nothing, when the node is not such a loop. */
bool pm_llvm_parts_for(pm_llvm *g, __isl_keep isl_ast_node *node);
/* The child of a PM_MARK_PRIVATE mark: the window's loops down to the lanes' loop, whose
 * rows of bins accumulate in registers where the block is full and the vector guards
 * hold, else emitted as usual. False, emitting nothing, when the child is not of that
 * shape. */
bool pm_llvm_private_block(pm_llvm *g, __isl_keep isl_ast_node *node);
/* Inside such a block, the lanes' loop: one step of W lanes; false for any other loop. */
bool pm_llvm_private_lanes(pm_llvm *g, __isl_keep isl_ast_node *node);

/* stmt.c: statement bodies: case pieces, reduction init and update. */
void pm_llvm_stmt(pm_llvm *g, const pm_point *pt);
/* Part p of merged statement s at the row of the i64 coordinates pos[0..ndims-2]: i1,
 * does the row hold points of the part (pm_llvm_part_row), and where the part holds
 * there, the interval [*lo, *hi] of its innermost coordinate (empty when lo > hi). */
LLVMValueRef pm_llvm_part_row(pm_llvm *g, const pm_poly_stmt *s, int p, const LLVMValueRef *pos);
void pm_llvm_part_interval(pm_llvm *g, const pm_poly_stmt *s, int p, const LLVMValueRef *pos,
                           LLVMValueRef *lo, LLVMValueRef *hi);
/* The point of a user node's call with the iterators' current values (W = 1). */
bool pm_llvm_point_of_call(pm_llvm *g, __isl_keep isl_ast_expr *call, pm_point *pt);

/* expr.c: pipeline expressions with the typing rules of polymage.h, for one point
 * (scalars) or W consecutive points (<W x T> vectors). */
LLVMValueRef pm_llvm_expr(pm_llvm *g, const pm_point *pt, const pm_expr *e);
/* A condition's i1 (or <W x i1>) value, its float arithmetic exact (pm_llvm.exact). */
LLVMValueRef pm_llvm_cond(pm_llvm *g, const pm_point *pt, const pm_expr *cond);
/* Forgets every remembered expression value (a statement or a branch's path begins) and
 * turns the memo on; pm_llvm_memo_off turns it off (between statements). */
void pm_llvm_memo_reset(pm_llvm *g);
void pm_llvm_memo_off(pm_llvm *g);
/* op (a pm_binop) on values of type t (for comparisons: the operands' type). */
LLVMValueRef pm_llvm_binop(pm_llvm *g, int op, pm_type t, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef pm_llvm_convert(pm_llvm *g, LLVMValueRef v, pm_type from, pm_type to);
LLVMValueRef pm_llvm_const(pm_llvm *g, const pm_point *pt, pm_type t, double f, int64_t i);
/* A scalar value broadcast to pt's lanes (unchanged when W == 1). */
LLVMValueRef pm_llvm_splat(pm_llvm *g, const pm_point *pt, LLVMValueRef v);
LLVMValueRef pm_llvm_splat_n(pm_llvm *g, unsigned W, LLVMValueRef v);
/* The i64 value of a parameter (raw bits of the pm_value converted to the param type). */
LLVMValueRef pm_llvm_param(pm_llvm *g, const pm_expr *param);

/* access.c: reads and writes of buffers, each read as the lowering chose. */
LLVMValueRef pm_llvm_load(pm_llvm *g, const pm_point *pt, const pm_expr *call);
/* Stores v (pt's lanes) at f(coords of pt); mask (i1 or <W x i1>) may be NULL. */
void pm_llvm_store_own(pm_llvm *g, const pm_point *pt, LLVMValueRef v, LLVMValueRef mask);
/* The address of the element point pt (lane 0) of its statement writes. */
LLVMValueRef pm_llvm_own_addr(pm_llvm *g, const pm_point *pt);
/* The element address of storage s at the i64 indices idx[0..ndims-1] (buffer indices). */
LLVMValueRef pm_llvm_addr(pm_llvm *g, int storage, LLVMValueRef *idx);
/* Storage s's scratchpad shape into b: lower bounds 0, its tile extents, dense strides. */
void pm_llvm_tile_shape(pm_llvm *g, int s, pm_llvm_buf *b);
/* Where an exported member's scratchpads start in its slot (module.c): its full
 * buffer's bytes (full describes it), at least 64, rounded up to a multiple of 64. */
LLVMValueRef pm_llvm_full_part_bytes(pm_llvm *g, int s, const pm_llvm_buf *full);
/* Buffer index of coordinate c (i64 scalar or vector) in dimension d of storage s. */
LLVMValueRef pm_llvm_index(pm_llvm *g, const pm_point *pt, int storage, int d, LLVMValueRef c);
int pm_llvm_storage_index(const pm_llvm *g, const pm_func *f);
/* i1: every element offset of storage s fits in 32 bits (it is not empty, and the sum of
 * (extent - 1) * |stride| over its dimensions is at most INT32_MAX), and so does every
 * coordinate of it. Loop-invariant; constant for scratchpads. */
LLVMValueRef pm_llvm_offsets_fit_i32(pm_llvm *g, int s);
/* The lanes of storage s at the 32-bit element offsets off (<W x i32>) where mask
 * (<W x i1>) is on, and the store of v there: a reduction's update of W different cells
 * (stmt.c). The vector loop runs only where s's offsets fit 32 bits (marked here). */
LLVMValueRef pm_llvm_gather_cells(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef off,
                                  LLVMValueRef mask);
void pm_llvm_scatter_cells(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef off,
                           LLVMValueRef mask, LLVMValueRef v);

/* parallel.c: the outlined GOMP_parallel body and the split of its iterations. */
/* A slot of type t in the current function's entry block (the builder stays at the end of
 * its block): the passes promote a slot only loaded and stored to registers. */
LLVMValueRef pm_llvm_entry_alloca(pm_llvm *g, LLVMTypeRef t, const char *name);
/* Emits the for node `node` as a parallel loop (outlined, GOMP_parallel); returns false
 * when it cannot (then the caller emits it sequentially). independent: the schedule
 * says its iterations are independent (tiles); else the loop must be the statements'
 * marked parallel dimension. */
bool pm_llvm_parallel_for(pm_llvm *g, __isl_keep isl_ast_node *node, bool independent);
/* Emits the subtree as a call of a function of its own (false: nothing emitted). */
bool pm_llvm_outline(pm_llvm *g, __isl_keep isl_ast_node *node);

#endif
