/* llvm/vector.c — the vector code the lowering chose (lower.h), emitted.
 *
 * Shape: a vector loop (vector_loop_of, part_loop) follows its plan's shape, each a
 * function below: one_body_loop, loop_and_tail, loop_then_scalar, streamed_loop, two
 * short vectors; then scalar code for what the vectors leave (scalar_fallback). A
 * merged statement's row is one loop per part (pm_llvm_parts_for). A privatized block
 * keeps its rows of bins in registers (pm_llvm_private_block).
 * Every vector loop runs under a run-time guard: the caller buffers have unit innermost
 * strides, and the buffers its gathers read have 32-bit offsets (else the scalar code).
 *     if (guard and at least W points)
 *         the vector shape, lanes i .. i+W-1 per step
 *     else
 *         for (i = init; cond(i); i++) scalar body
 * W is the lowering's width for every element type (16 on AVX-512: <16 x float> fills a
 * zmm register; narrower types use part of one, wider ones two).
 */
#include "codegen/llvm/llvm.h"

#include "codegen/ast.h"

#include <isl/id.h>
#include <isl/val.h>
#include <stdlib.h>

/* The last point of a loop whose condition pm_lower_upper_bound_cond accepts: e for `i <= e`,
 * e - 1 for `i < e` (e is free of the iterator, so computed once before the loop). */
static LLVMValueRef loop_last(pm_llvm *g, __isl_keep isl_ast_expr *cond)
{
    isl_ast_expr *bound = isl_ast_expr_op_get_arg(cond, 1);
    LLVMValueRef e = pm_llvm_ast_expr(g, bound);
    isl_ast_expr_free(bound);
    if (isl_ast_expr_op_get_type(cond) == isl_ast_expr_op_lt)
        e = LLVMBuildNSWSub(g->B, e, LLVMConstInt(g->t_i64, 1, 0), "");
    return e;
}

#define MAX_USERS 32
#define PM_POLY_MAX_STORAGE_UNIT 256

/* set: saves the innermost strides of the caller buffers into saved[] and makes them the
 * constant 1 (returns how many buffers, or -1 when there are too many to save, leaving
 * them as they are); !set: restores them. */
static int unit_strides(pm_llvm *g, LLVMValueRef *saved, bool set)
{
    const pm_poly *poly = g->poly;
    if (set && poly->nstorage > PM_POLY_MAX_STORAGE_UNIT)
        return -1;
    for (int s = 0; s < poly->nstorage; s++) {
        const pm_poly_storage *st = &poly->storage[s];
        if ((st->role != PM_STORAGE_INPUT && st->role != PM_STORAGE_OUTPUT) || st->ndims == 0)
            continue;
        LLVMValueRef *stride = &g->env.bufs[s].stride[st->ndims - 1];
        if (set) {
            saved[s] = *stride;
            *stride = LLVMConstInt(g->t_i64, 1, 0);
        } else {
            *stride = saved[s];
        }
    }
    return poly->nstorage;
}

/* A vector loop's parts (pm_llvm_vector_for, pm_llvm_parts_for): the loop's points
 * start .. last; its body, either the for node's user nodes along iterator id or one
 * part of a merged statement at the row of point `row`; lanes, the run-time condition
 * for vectors, and the blocks of the scalar code and after the loop; scalar_from is set
 * by the builders. */
typedef struct vector_loop {
    isl_ast_node *node;
    isl_id *id;
    isl_ast_node **users;
    int n;
    const pm_poly_stmt *part;
    const pm_point *row;
    bool ranged;          /* users over start .. last only (a thread's share of the loop) */
    bool updates;         /* users are reduction updates: no lane may run twice          */
    int W;
    LLVMValueRef start, last, vec_ok, scalar_from;
    LLVMBasicBlockRef scalar, done;
} vector_loop;

/* The loop's statements for lanes i .. i+W-1 (W may be 1). Vectors run only where every
 * caller buffer's innermost stride is 1: the body says so, so that a stencil's taps in
 * one row are one address plus constant offsets. */
/* A part loop's point i (lanes i .. i+W-1) at its row. */
static pm_point part_point_at(pm_llvm *g, const vector_loop *L, LLVMValueRef i, int W)
{
    pm_point pt = *L->row;
    int d = L->part->ndims - 1;
    pt.stmt = L->part;
    pt.W = W;
    pt.pos[d] = i;
    pt.var[d] = LLVMBuildTrunc(g->B, i, g->t_i32, L->part->vars[d]->name);
    pt.lane_step[d] = W > 1;
    return pt;
}

static void vector_step(pm_llvm *g, const vector_loop *L, LLVMValueRef i, int W)
{
    LLVMValueRef strides[PM_POLY_MAX_STORAGE_UNIT];
    int nsaved = W > 1 ? unit_strides(g, strides, true) : -1;
    if (L->part) {
        pm_point pt = part_point_at(g, L, i, W);
        pm_llvm_stmt(g, &pt);
    } else {
        pm_llvm_push_iter(g, L->id, i);
        for (int k = 0; k < L->n; k++) {
            isl_ast_expr *call = isl_ast_node_user_get_expr(L->users[k]);
            pm_point pt;
            if (pm_llvm_point_of_call(g, call, &pt)) {
                int k = pt.stmt->kind == PM_STMT_UPDATE ? pm_lower_lane_dim(call, pt.stmt, L->id)
                                                        : pt.stmt->ndims - 1;
                pt.W = W;
                pt.lane_step[k < 0 ? pt.stmt->ndims - 1 : k] = 1;
                pm_llvm_stmt(g, &pt);
            }
            isl_ast_expr_free(call);
        }
        pm_llvm_pop_iter(g);
    }
    if (nsaved >= 0)
        unit_strides(g, strides, false);
}

static void part_point(pm_llvm *g, LLVMValueRef i, void *user)
{
    vector_step(g, user, i, 1);
}

/* A ranged loop's scalar point: the for node's body with the iterator at i. */
static void range_point(pm_llvm *g, LLVMValueRef i, void *user)
{
    const vector_loop *L = user;
    isl_ast_node *body = isl_ast_node_for_get_body(L->node);
    pm_llvm_push_iter(g, L->id, i);
    pm_llvm_node(g, body);
    pm_llvm_pop_iter(g);
    isl_ast_node_free(body);
}

/* Replaces the stand-in fits_later by the condition that every buffer the vectors
 * gathered from (gathered[], freed here) has 32-bit offsets; the builder ends anywhere. */
static void finish_gather_guard(pm_llvm *g, LLVMValueRef fits_later, bool *gathered)
{
    LLVMBuilderRef B = g->B;
    LLVMPositionBuilderBefore(B, fits_later);
    LLVMValueRef fits = LLVMConstInt(g->t_i1, 1, 0);
    for (int s = 0; gathered && s < g->poly->nstorage; s++)
        if (gathered[s])
            fits = LLVMBuildAnd(B, fits, pm_llvm_offsets_fit_i32(g, s), "");
    if (!gathered) /* no record: no vectors */
        fits = LLVMConstInt(g->t_i1, 0, 0);
    LLVMReplaceAllUsesWith(fits_later, fits);
    LLVMInstructionEraseFromParent(fits_later);
    free(gathered);
}

/* The vector code is built: the gather guard replaces its stand-in (the scalar code
 * gathers nothing), then block scalar runs the loop's scalar body from `from` to the
 * end, and the builder continues at done. */
static void scalar_fallback(pm_llvm *g, vector_loop *L, LLVMValueRef from,
                            LLVMValueRef fits_later, bool *gathered)
{
    finish_gather_guard(g, fits_later, gathered);
    LLVMPositionBuilderAtEnd(g->B, L->scalar);
    if (L->part)
        pm_llvm_counted_loop(g, from, L->last, 1, part_point, L);
    else if (L->ranged)
        pm_llvm_counted_loop(g, from, L->last, 1, range_point, L);
    else
        pm_llvm_for_from(g, L->node, from);
    LLVMBuildBr(g->B, L->done);
    LLVMPositionBuilderAtEnd(g->B, L->done);
}

/* The start of the vector that ends at the loop's last point. */
static LLVMValueRef last_vector_start(pm_llvm *g, const vector_loop *L)
{
    return LLVMBuildNSWSub(g->B, L->last, LLVMConstInt(g->t_i64, (unsigned long long)L->W - 1, 0),
                           "last_start");
}

/*     while (vec_ok and i + W - 1 <= last) { body for lanes i..i+W-1; i += W }
 * then on to block *exit (a new block "vrest" when NULL); returns i (its value there). */
static LLVMValueRef full_vectors(pm_llvm *g, vector_loop *L, LLVMBasicBlockRef *exit)
{
    LLVMBuilderRef B = g->B;
    int W = L->W;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef head = pm_llvm_block(g, "vfor"), vbody = pm_llvm_block(g, "vbody");
    if (!*exit)
        *exit = pm_llvm_block(g, "vrest");
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, head);
    LLVMValueRef i = LLVMBuildPhi(B, g->t_i64, "vi");
    LLVMAddIncoming(i, &L->start, &pre, 1);
    /* the condition at the last lane */
    LLVMValueRef last = LLVMBuildNSWAdd(B, i, LLVMConstInt(g->t_i64, (unsigned)W - 1, 0), "");
    LLVMValueRef c = LLVMBuildICmp(B, LLVMIntSLE, last, L->last, "");
    LLVMBuildCondBr(B, LLVMBuildAnd(B, c, L->vec_ok, ""), vbody, *exit);
    LLVMPositionBuilderAtEnd(B, vbody);
    vector_step(g, L, i, W);
    LLVMValueRef next = LLVMBuildNSWAdd(B, i, LLVMConstInt(g->t_i64, (unsigned)W, 0), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    LLVMAddIncoming(i, &next, &latch, 1);
    LLVMBuildBr(B, head);
    return i;
}

/*     full vectors from the first point (full_vectors)
 *     if (vectors ran and i <= last) body for lanes last-W+1..last  -- overlapping tail
 *     else scalar from i                                            -- short loops
 * The vectors start W apart from the first point, so a lane pattern set by the start's
 * parity is loop-invariant (start_dependent). */
static void loop_and_tail(pm_llvm *g, vector_loop *L)
{
    LLVMBuilderRef B = g->B;
    int W = L->W;
    LLVMBasicBlockRef rest = NULL;
    LLVMValueRef i = full_vectors(g, L, &rest);
    /* The remainder. When vectors ran (so the loop has at least W iterations) and points
     * are left, one more vector ending at the last point covers them: it recomputes some
     * lanes, which is harmless because the statements are pure (no updates; vectorizable
     * = nothing carried along this loop). Otherwise scalar code from i. */
    LLVMPositionBuilderAtEnd(B, rest);
    LLVMBasicBlockRef vtail = pm_llvm_block(g, "vtail");
    LLVMValueRef left = LLVMBuildICmp(B, LLVMIntSLE, i, L->last, "");
    LLVMValueRef ran = LLVMBuildICmp(B, LLVMIntNE, i, L->start, "");
    LLVMValueRef tail = LLVMBuildAnd(B, LLVMBuildAnd(B, left, ran, ""), L->vec_ok, "");
    LLVMBuildCondBr(B, tail, vtail, L->scalar);
    LLVMPositionBuilderAtEnd(B, vtail);
    vector_step(g, L, last_vector_start(g, L), W);
    LLVMBuildBr(B, L->done);
    L->scalar_from = i;
}

/*     full vectors from the first point (full_vectors), then scalar from where they
 *     stopped
 * For reduction updates, which must run once per point: no vector overlaps another. */
static void loop_then_scalar(pm_llvm *g, vector_loop *L)
{
    L->scalar_from = full_vectors(g, L, &L->scalar);
}

/*     if (vec_ok and at least W points)
 *         for (i = first; i <= last; i += W)
 *             body for lanes k..k+W-1, k = min(i, last - W + 1)   -- the last overlaps
 *     else scalar from the first point
 * One vector body instead of a loop's and a tail's: the machine-code step pays per copy
 * (unsharp mask's IR 1201 -> 929 instructions, Harris 4560 -> 3160). */
static void one_body_loop(pm_llvm *g, vector_loop *L)
{
    LLVMBuilderRef B = g->B;
    int W = L->W;
    LLVMValueRef last_start = last_vector_start(g, L);
    LLVMValueRef last = LLVMBuildNSWAdd(B, last_start, LLVMConstInt(g->t_i64, (unsigned)W - 1, 0), "");
    LLVMValueRef enough = LLVMBuildICmp(B, LLVMIntSLE, L->start, last_start, "");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef vbody = pm_llvm_block(g, "vbody");
    LLVMBuildCondBr(B, LLVMBuildAnd(B, enough, L->vec_ok, ""), vbody, L->scalar);
    LLVMPositionBuilderAtEnd(B, vbody);
    LLVMValueRef i = LLVMBuildPhi(B, g->t_i64, "vi");
    LLVMAddIncoming(i, &L->start, &pre, 1);
    LLVMValueRef before = LLVMBuildICmp(B, LLVMIntSLT, i, last_start, "");
    vector_step(g, L, LLVMBuildSelect(B, before, i, last_start, "vat"), W);
    LLVMValueRef next = LLVMBuildNSWAdd(B, i, LLVMConstInt(g->t_i64, (unsigned)W, 0), "");
    LLVMValueRef more = LLVMBuildICmp(B, LLVMIntSLE, next, last, "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    LLVMAddIncoming(i, &next, &latch, 1);
    LLVMBuildCondBr(B, more, vbody, L->done);
    L->scalar_from = L->start;
}

/*     if (vec_ok and at least 2W points and the first point's address is aligned to
 *         its element size)
 *         first = the first point whose address is aligned to A
 *         if (first > start) body for lanes start..start+W-1 (cached stores)
 *         for (i = first; i + W - 1 <= last; i += W)
 *             body for lanes i..i+W-1 (aligned non-temporal stores)
 *         if (i <= last) body for lanes last-W+1..last (cached stores)
 *     else scalar from the start
 * The rows of an output nobody in the pipeline reads again go past the caches: a cached
 * store first reads the line it writes (a third more memory traffic for a kernel that
 * reads one image and writes one). Non-temporal stores must be aligned (LLVM splits an
 * unaligned one into 8-byte stores), so a vector at each end, which recomputes some
 * lanes (harmless: the statements are pure), covers what the aligned ones leave; both
 * ends are one copy of the body, reached before and after the aligned loop. */
static void streamed_loop(pm_llvm *g, vector_loop *L, int A, int elem)
{
    LLVMBuilderRef B = g->B;
    int W = L->W;
    LLVMValueRef last_start = last_vector_start(g, L);
    LLVMValueRef enough = LLVMBuildICmp(
        B, LLVMIntSLE, LLVMBuildNSWAdd(B, L->start, LLVMConstInt(g->t_i64, (unsigned)W, 0), ""),
        last_start, "");
    /* the first point's address, with the unit strides the vectors assume */
    LLVMValueRef strides[PM_POLY_MAX_STORAGE_UNIT];
    int nsaved = unit_strides(g, strides, true);
    pm_point pt;
    bool have = true;
    if (L->part) {
        pt = part_point_at(g, L, L->start, 1);
    } else {
        isl_ast_expr *call = isl_ast_node_user_get_expr(L->users[0]);
        pm_llvm_push_iter(g, L->id, L->start);
        have = pm_llvm_point_of_call(g, call, &pt);
        pm_llvm_pop_iter(g);
        isl_ast_expr_free(call);
    }
    LLVMValueRef addr = have ? LLVMBuildPtrToInt(B, pm_llvm_own_addr(g, &pt), g->t_i64, "row_at")
                             : LLVMConstInt(g->t_i64, 1, 0);
    if (nsaved >= 0)
        unit_strides(g, strides, false);
    LLVMValueRef zero = LLVMConstInt(g->t_i64, 0, 0);
    LLVMValueRef elem_aligned = LLVMBuildICmp(
        B, LLVMIntEQ, LLVMBuildAnd(B, addr, LLVMConstInt(g->t_i64, (unsigned)elem - 1, 0), ""),
        zero, "");
    LLVMValueRef go = LLVMBuildAnd(B, LLVMBuildAnd(B, enough, elem_aligned, ""), L->vec_ok, "");
    if (!have)
        go = LLVMConstInt(g->t_i1, 0, 0);
    /* the points before the first at an A-byte boundary (fewer than W) */
    LLVMValueRef mis = LLVMBuildAnd(B, LLVMBuildNeg(B, addr, ""), LLVMConstInt(g->t_i64, (unsigned)A - 1, 0), "");
    LLVMValueRef skip = LLVMBuildLShr(B, mis, LLVMConstInt(g->t_i64, (unsigned)__builtin_ctz((unsigned)elem), 0), "skip");
    LLVMValueRef first = LLVMBuildNSWAdd(B, L->start, skip, "aligned_from");
    LLVMValueRef head_end = LLVMBuildICmp(B, LLVMIntNE, skip, zero, "");
    LLVMBasicBlockRef check = pm_llvm_block(g, "stream_check"), ends = pm_llvm_block(g, "stream_end");
    LLVMBasicBlockRef head = pm_llvm_block(g, "stream_head"), body = pm_llvm_block(g, "stream_body");
    LLVMBasicBlockRef loop = pm_llvm_block(g, "stream_loop"), after = pm_llvm_block(g, "stream_after");
    LLVMBuildCondBr(B, go, check, L->scalar);
    LLVMPositionBuilderAtEnd(B, check);
    LLVMBuildCondBr(B, head_end, ends, head);

    /* an end vector with cached stores: at the start (from check; then the aligned loop)
     * or ending at the last point (from after; then done) */
    LLVMPositionBuilderAtEnd(B, ends);
    LLVMValueRef k = LLVMBuildPhi(B, g->t_i64, "end_at");
    LLVMAddIncoming(k, &L->start, &check, 1);
    vector_step(g, L, k, W);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, k, L->start, ""), head, L->done);

    /* the aligned middle */
    LLVMPositionBuilderAtEnd(B, head);
    LLVMBuildBr(B, loop);
    LLVMPositionBuilderAtEnd(B, loop);
    LLVMValueRef i = LLVMBuildPhi(B, g->t_i64, "si");
    LLVMAddIncoming(i, &first, &head, 1);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLE, i, last_start, ""), body, after);
    LLVMPositionBuilderAtEnd(B, body);
    g->stream_align = A;
    vector_step(g, L, i, W);
    g->stream_align = 0;
    LLVMValueRef next = LLVMBuildNSWAdd(B, i, LLVMConstInt(g->t_i64, (unsigned)W, 0), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    LLVMAddIncoming(i, &next, &latch, 1);
    LLVMBuildBr(B, loop);

    LLVMPositionBuilderAtEnd(B, after);
    LLVMAddIncoming(k, &last_start, &after, 1);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLE, i, L->last, ""), ends, L->done);
    L->scalar_from = L->start;
}

/* Emits loop L (start and last set, users or part set) in the shape the lowering chose
 * (at width w for short vectors) under the gather guard, scalar code for what the
 * vectors leave; trip is the constant trip count or -1. */
static void emit_vector_loop(pm_llvm *g, vector_loop *L, const pm_vector_plan *v,
                             pm_loop_shape shape, int w, long long trip)
{
    LLVMBuilderRef B = g->B;
    int W = L->W;
    /* gathers record their buffers while the body is emitted; the guard that they fit in
     * 32-bit offsets is built afterwards in place of this stand-in */
    bool *gathered = calloc((size_t)g->poly->nstorage + 1, sizeof *gathered);
    bool *outer_gathered = g->gathered;
    g->gathered = gathered;
    LLVMValueRef fits_later = LLVMBuildFreeze(B, LLVMGetUndef(g->t_i1), "fits32");
    L->vec_ok = LLVMBuildAnd(B, g->env.unit_stride, fits_later, "");
    L->scalar = pm_llvm_block(g, "vscalar");
    L->done = pm_llvm_block(g, "vdone");
    switch (shape) {
    case PM_SHAPE_LOOP_THEN_SCALAR:
        loop_then_scalar(g, L);
        break;
    case PM_SHAPE_SHORT: {
        /* one vector of w lanes from the start and one ending at the last point
         * (overlapping, harmless: the statements are pure) */
        LLVMBasicBlockRef vshort = pm_llvm_block(g, "vshort");
        LLVMBuildCondBr(B, L->vec_ok, vshort, L->scalar);
        LLVMPositionBuilderAtEnd(B, vshort);
        vector_step(g, L, L->start, w);
        if (trip > w)
            vector_step(g, L,
                        LLVMBuildNSWAdd(B, L->start, LLVMConstInt(g->t_i64, (unsigned)(trip - w), 0), "tail"),
                        w);
        LLVMBuildBr(B, L->done);
        L->scalar_from = L->start;
        break;
    }
    case PM_SHAPE_STREAMED:
        streamed_loop(g, L, v->stream_align, v->stream_elem);
        break;
    case PM_SHAPE_LOOP_AND_TAIL:
        loop_and_tail(g, L);
        break;
    default:
        one_body_loop(g, L);
        break;
    }
    (void)W;
    g->gathered = outer_gathered;
    /* fewer than W points, or a caller buffer with a non-unit stride: scalar code (after
     * the tail, from where the vectors stopped) */
    scalar_fallback(g, L, L->scalar_from, fits_later, gathered);
}

/* pm_llvm_vector_for's loop, or with first != NULL the iterator values first .. last
 * only (a thread's share of a parallel loop: vector_range). */
static bool vector_loop_of(pm_llvm *g, __isl_keep isl_ast_node *node, LLVMValueRef first,
                           LLVMValueRef last);

bool pm_llvm_vector_for(pm_llvm *g, __isl_keep isl_ast_node *node)
{
    return vector_loop_of(g, node, NULL, NULL);
}

bool pm_llvm_vector_range(pm_llvm *g, __isl_keep isl_ast_node *node, LLVMValueRef first,
                          LLVMValueRef last)
{
    return vector_loop_of(g, node, first, last);
}

/* The loop's plan, its bounds as values, and the trip count: the plan's constant, or
 * one that only LLVM folded (a box template's bounds); a thread's share has none. */
static bool vector_loop_of(pm_llvm *g, __isl_keep isl_ast_node *node, LLVMValueRef first,
                           LLVMValueRef last)
{
    const pm_loop_plan *lp = pm_lower_loop(g->lower, node, g->box);
    if (!lp || lp->kind != PM_LOOP_VECTOR)
        return false;
    pm_for_node f = pm_lower_for_node(node);
    isl_ast_node *users[32] = {0};
    int n = pm_lower_body_users(f.body, users, 32);
    long long trip = first ? -1 : lp->trip;
    LLVMValueRef start = first, end = last;
    if (!first) {
        isl_ast_expr *init = isl_ast_node_for_get_init(node);
        start = pm_llvm_ast_expr(g, init);
        end = loop_last(g, f.cond);
        isl_ast_expr_free(init);
        if (trip < 0 && LLVMIsAConstantInt(start) && LLVMIsAConstantInt(end)) {
            long long a = LLVMConstIntGetSExtValue(start), b = LLVMConstIntGetSExtValue(end);
            trip = b >= a ? b - a + 1 : 0;
        }
    }
    int w = 0;
    pm_loop_shape shape = pm_lower_shape_at(&lp->v, trip, &w);
    bool ok = shape != PM_SHAPE_SCALAR && n > 0;
    if (ok) {
        vector_loop loop = {.node = node, .id = f.id, .users = users, .n = n, .W = lp->v.W,
                            .ranged = first != NULL, .updates = lp->v.updates, .start = start,
                            .last = end};
        emit_vector_loop(g, &loop, &lp->v, shape, w, trip);
    }
    for (int k = 0; k < n; k++)
        isl_ast_node_free(users[k]);
    pm_lower_for_node_clear(&f);
    return ok;
}

/* A part's points lo .. hi at the row of point `row`: vectors as its plan says, else a
 * scalar loop. */
static void part_loop(pm_llvm *g, const pm_poly_stmt *part, const pm_vector_plan *v,
                      const pm_point *row, LLVMValueRef lo, LLVMValueRef hi)
{
    vector_loop loop = {.part = part, .row = row, .W = v->W, .start = lo, .last = hi};
    if (!v->vector) {
        pm_llvm_counted_loop(g, lo, hi, 1, part_point, &loop);
        return;
    }
    emit_vector_loop(g, &loop, v, v->shape, 0, -1);
}

/* Part p's interval at the row, within the loop's [start, last]. */
static void part_interval_in(pm_llvm *g, const pm_poly_stmt *s, int p, const pm_point *row,
                             LLVMValueRef start, LLVMValueRef last, LLVMValueRef *lo,
                             LLVMValueRef *hi)
{
    LLVMBuilderRef B = g->B;
    pm_llvm_part_interval(g, s, p, row->pos, lo, hi);
    *lo = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, *lo, start, ""), *lo, start, "part_lo");
    *hi = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, *hi, last, ""), *hi, last, "part_hi");
}

/* The scalar parts sharing part `first`'s body (lower.h, body_part): one loop over their
 * intervals at this row (a part the row misses has an empty one), each a scalar loop of
 * the one body. */
typedef struct shared_parts {
    const pm_poly_stmt *part;
    const pm_vector_plan *plan;
    const pm_point *row;
    int n;
    LLVMValueRef lo[PM_LOWER_MAX_SHARED_PARTS], hi[PM_LOWER_MAX_SHARED_PARTS];
} shared_parts;

static void shared_interval(pm_llvm *g, LLVMValueRef k, void *user)
{
    const shared_parts *sp = user;
    LLVMBuilderRef B = g->B;
    LLVMValueRef lo = sp->lo[sp->n - 1], hi = sp->hi[sp->n - 1];
    for (int j = sp->n - 2; j >= 0; j--) {
        LLVMValueRef is_j = LLVMBuildICmp(B, LLVMIntEQ, k, pm_llvm_i64(g, j), "");
        lo = LLVMBuildSelect(B, is_j, sp->lo[j], lo, "shared_lo");
        hi = LLVMBuildSelect(B, is_j, sp->hi[j], hi, "shared_hi");
    }
    part_loop(g, sp->part, sp->plan, sp->row, lo, hi);
}

static void shared_parts_loop(pm_llvm *g, const pm_poly_stmt *s, const pm_loop_plan *lp,
                              int first, const pm_point *row, LLVMValueRef start,
                              LLVMValueRef last)
{
    LLVMBuilderRef B = g->B;
    shared_parts sp = {.part = &s->parts[first], .plan = &lp->parts[first], .row = row};
    for (int p = first; p < s->nparts && sp.n < PM_LOWER_MAX_SHARED_PARTS; p++) {
        if (lp->parts[p].vector || lp->parts[p].body_part != first)
            continue;
        LLVMValueRef holds = pm_llvm_part_row(g, s, p, row->pos);
        if (LLVMIsAConstantInt(holds) && LLVMConstIntGetZExtValue(holds) == 0)
            continue;
        LLVMValueRef lo, hi;
        part_interval_in(g, s, p, row, start, last, &lo, &hi);
        if (!LLVMIsAConstantInt(holds)) { /* a row the part misses: an empty interval */
            lo = LLVMBuildSelect(B, holds, lo, pm_llvm_i64(g, 1), "");
            hi = LLVMBuildSelect(B, holds, hi, pm_llvm_i64(g, 0), "");
        }
        sp.lo[sp.n] = lo;
        sp.hi[sp.n] = hi;
        sp.n++;
    }
    if (sp.n == 1)
        part_loop(g, sp.part, sp.plan, row, sp.lo[0], sp.hi[0]);
    else if (sp.n > 1)
        pm_llvm_counted_loop(g, pm_llvm_i64(g, 0), pm_llvm_i64(g, sp.n - 1), 1,
                             shared_interval, &sp);
}

/* Does part p share its scalar body with another part? */
static bool shares_body(const pm_loop_plan *lp, int p)
{
    if (lp->parts[p].vector)
        return false;
    int n = 0;
    for (int q = 0; q < lp->nparts; q++)
        if (!lp->parts[q].vector && lp->parts[q].body_part == lp->parts[p].body_part)
            n++;
    return n > 1;
}

bool pm_llvm_parts_for(pm_llvm *g, __isl_keep isl_ast_node *node)
{
    const pm_loop_plan *lp = pm_lower_loop(g->lower, node, g->box);
    if (!lp || lp->kind != PM_LOOP_PARTS)
        return false;
    pm_for_node f = pm_lower_for_node(node);
    isl_ast_node *user = NULL;
    bool ok = pm_lower_body_users(f.body, &user, 1) == 1;
    isl_ast_expr *call = ok ? isl_ast_node_user_get_expr(user) : NULL;
    const pm_poly_stmt *s = call ? pm_llvm_call_stmt(g, call) : NULL;
    ok = s && s->nparts == lp->nparts;
    if (ok) {
        isl_ast_expr *init = isl_ast_node_for_get_init(node);
        LLVMValueRef start = pm_llvm_ast_expr(g, init), last = loop_last(g, f.cond);
        isl_ast_expr_free(init);
        pm_point row;
        pm_llvm_push_iter(g, f.id, start);
        ok = pm_llvm_point_of_call(g, call, &row);
        pm_llvm_pop_iter(g);
        LLVMBuilderRef B = g->B;
        for (int p = 0; ok && p < s->nparts; p++) {
            if (shares_body(lp, p)) { /* the first of them runs them all */
                if (lp->parts[p].body_part == p)
                    shared_parts_loop(g, s, lp, p, &row, start, last);
                continue;
            }
            /* a row the part misses (a border row, the other residue) skips its code */
            LLVMValueRef holds = pm_llvm_part_row(g, s, p, row.pos);
            LLVMBasicBlockRef next = NULL;
            if (LLVMIsAConstantInt(holds) && LLVMConstIntGetZExtValue(holds) == 0)
                continue; /* never (the builder folded the conditions) */
            if (!LLVMIsAConstantInt(holds)) {
                LLVMBasicBlockRef yes = pm_llvm_block(g, "part_row");
                next = pm_llvm_block(g, "part_next");
                LLVMBuildCondBr(B, holds, yes, next);
                LLVMPositionBuilderAtEnd(B, yes);
            }
            LLVMValueRef lo, hi;
            part_interval_in(g, s, p, &row, start, last, &lo, &hi);
            part_loop(g, &s->parts[p], &lp->parts[p], &row, lo, hi);
            if (next) {
                LLVMBuildBr(B, next);
                LLVMPositionBuilderAtEnd(B, next);
            }
        }
    }
    isl_ast_expr_free(call);
    isl_ast_node_free(user);
    pm_lower_for_node_clear(&f);
    return ok;
}

/* ---- rows of bins in registers (schedule.c, PM_MARK_PRIVATE) --------------------------- */

/* The point of update instance `user` at the lanes from the lanes' iterator's value. */
static bool private_point(pm_llvm *g, __isl_keep isl_ast_node *user, __isl_keep isl_id *lane,
                          int W, pm_point *pt)
{
    isl_ast_expr *call = isl_ast_node_user_get_expr(user);
    bool ok = pm_llvm_point_of_call(g, call, pt);
    int k = ok ? pm_lower_lane_dim(call, pt->stmt, lane) : -1;
    isl_ast_expr_free(call);
    if (!ok || k < 0)
        return false;
    pt->W = W;
    pt->lane_step[k] = 1;
    return true;
}

/* The lanes' 32-bit element offsets of bin e: their rows' offsets plus e bins. */
static LLVMValueRef bin_offsets(pm_llvm *g, const pm_point *pt, LLVMValueRef row, int e,
                                LLVMValueRef bin_stride)
{
    LLVMValueRef bins = LLVMBuildMul(g->B, LLVMConstInt(g->t_i32, (unsigned)e, 0), bin_stride, "");
    return LLVMBuildAdd(g->B, row, pm_llvm_splat(g, pt, bins), "");
}

/* The rows of bins stored by transposing the bins' vectors (lane l of bin e to element e
 * of row l) and one masked store of E elements per lane's row (the plan's rows_of_bins). */
static void store_rows_of_bins(pm_llvm *g, const pm_point *pt, int si, LLVMValueRef row, int E,
                               LLVMValueRef *acc, LLVMTypeRef vt)
{
    LLVMBuilderRef B = g->B;
    enum { N = 16 };
    const pm_llvm_buf *b = &g->env.bufs[si];
    LLVMValueRef v[N];
    for (int e = 0; e < N; e++)
        v[e] = e < E ? LLVMBuildLoad2(B, vt, acc[e], "") : LLVMGetPoison(vt);
    /* v[i][p] = bin i, lane p. At step s, rows i and i + s (bit s of i clear) swap the
     * lanes whose bit s differs from the row's: after the four steps v[p][i]. */
    for (int step = 8; step >= 1; step /= 2)
        for (int i = 0; i < N; i++) {
            if (i & step)
                continue;
            LLVMValueRef lo[N], hi[N];
            for (int p = 0; p < N; p++) {
                lo[p] = LLVMConstInt(g->t_i32, (unsigned)((p & step) ? N + p - step : p), 0);
                hi[p] = LLVMConstInt(g->t_i32, (unsigned)((p & step) ? N + p : p + step), 0);
            }
            LLVMValueRef x = v[i], y = v[i + step];
            v[i] = LLVMBuildShuffleVector(B, x, y, LLVMConstVector(lo, N), "");
            v[i + step] = LLVMBuildShuffleVector(B, x, y, LLVMConstVector(hi, N), "");
        }
    LLVMValueRef mask[N];
    for (int p = 0; p < N; p++)
        mask[p] = LLVMConstInt(g->t_i1, p < E, 0);
    LLVMValueRef m = LLVMConstVector(mask, N);
    LLVMTypeRef tys[2] = {vt, g->t_ptr};
    LLVMTypeRef fnty;
    LLVMValueRef fn = pm_llvm_intrinsic(g, "llvm.masked.store", tys, 2, &fnty);
    LLVMTypeRef et = LLVMGetElementType(vt);
    for (int l = 0; l < N; l++) {
        LLVMValueRef off = LLVMBuildSExt(B, LLVMBuildExtractElement(B, row, LLVMConstInt(g->t_i32, (unsigned)l, 0), ""),
                                         g->t_i64, "");
        LLVMValueRef p = LLVMBuildGEP2(B, et, b->base, &off, 1, "bins_row");
        LLVMValueRef args[4] = {v[l], p, LLVMConstInt(g->t_i32, (unsigned)pm_type_size(g->poly->storage[si].type), 0), m};
        pm_llvm_tag_access(g, LLVMBuildCall2(B, fnty, fn, args, 4, ""), si);
    }
    (void)pt;
}

/* pm_llvm_private_block's values for its rows of bins, shared by its steps. */
typedef struct priv_block {
    const pm_loop_plan *lp;
    const pm_private_shape *sh;
    const pm_func *f;
    int W, si, E, bin;          /* lanes; the stage's storage; bins; the bin dimension  */
    LLVMTypeRef v32, vt;        /* <W x i32>; <W x the stage's type>                     */
    LLVMValueRef all;           /* the mask of all W lanes                               */
    LLVMValueRef bin_stride;    /* the bin dimension's stride, 32-bit                    */
    pm_private_rows pr;         /* the accumulators, g->priv during the passes           */
    pm_point pts[PM_PRIVATE_MAX_USERS];
    LLVMValueRef row[PM_PRIVATE_MAX_USERS]; /* per update instance: its lanes' rows      */
} priv_block;

/* The cells' initial value as a W-lane vector when no load is needed, else NULL. When
 * two updates of a common cell agree in every dimension but the window's (poly.h:
 * distinct_cell_dims; the window being the dimensions after the lanes' but the
 * channel), all of a cell's updates are in this block, so its rows hold their initial
 * value here: a constant one needs no load. A dimension outside the blocks that adds
 * to the same rows (layers summed) needs the load. */
static LLVMValueRef fresh_cells(pm_llvm *g, const priv_block *pb)
{
    const pm_poly_stmt *s = pb->sh->s;
    const pm_func *f = pb->f;
    LLVMValueRef fresh = NULL;
    isl_ast_expr *call0 = isl_ast_node_user_get_expr(pb->sh->users[0]);
    int lane_k = pm_lower_lane_dim(call0, s, pb->sh->id);
    isl_ast_expr_free(call0);
    bool own_cells = lane_k >= 0 && s->ndims <= 32;
    for (int k = 0; own_cells && k < s->ndims; k++)
        own_cells = (k > lane_k && k != g->ast->plan->channel_dim[s - g->poly->stmts]) || (s->distinct_cell_dims & (1u << k));
    const pm_expr *init = f->initial;
    LLVMTypeRef et = pm_llvm_type(g, f->type);
    bool fp = pm_type_is_float(f->type);
    if (own_cells) {
        if (!init)
            fresh = LLVMConstNull(et);
        else if (init->kind == PM_EXPR_INT && init->ival > -(1 << 24) && init->ival < (1 << 24))
            fresh = fp ? LLVMConstReal(et, (double)init->ival)
                       : LLVMConstInt(et, (unsigned long long)init->ival, pm_type_is_signed(f->type));
        else if (init->kind == PM_EXPR_FLOAT && fp)
            fresh = LLVMConstReal(et, init->fval);
        if (fresh)
            fresh = pm_llvm_splat_n(g, (unsigned)pb->W, fresh);
    }
    return fresh;
}

/* Update instance k's point and its lanes' row offsets (32-bit): the sum over every
 * dimension but the bin's of the index times the stride. False when the point fails. */
static bool private_row(pm_llvm *g, priv_block *pb, int k)
{
    LLVMBuilderRef B = g->B;
    const pm_func *f = pb->f;
    const pm_llvm_buf *b = &g->env.bufs[pb->si];
    bool got = private_point(g, pb->sh->users[k], pb->sh->id, pb->W, &pb->pts[k]);
    pb->row[k] = LLVMConstNull(pb->v32);
    for (int d = 0; got && d < f->ndims; d++) {
        if (d == pb->bin)
            continue;
        const pm_expr *ie = f->rindex[d];
        g->exact++; /* an index is discrete */
        LLVMValueRef c = pm_llvm_convert(g, pm_llvm_expr(g, &pb->pts[k], ie), ie->type, PM_I64);
        g->exact--;
        LLVMValueRef i = pm_llvm_index(g, &pb->pts[k], pb->si, d, pm_llvm_splat(g, &pb->pts[k], c));
        LLVMValueRef t = LLVMBuildMul(
            B, LLVMBuildTrunc(B, i, pb->v32, ""),
            pm_llvm_splat(g, &pb->pts[k], LLVMBuildTrunc(B, b->stride[d], g->t_i32, "")), "");
        pb->row[k] = LLVMBuildAdd(B, pb->row[k], t, "");
    }
    return got;
}

/* Every update instance's rows and its accumulators acc[k][e], one per bin (entry-block
 * allocas: registers after the passes), set to fresh or gathered from the cells, at
 * the lanes' first point start. False when a point fails. */
static bool private_rows_load(pm_llvm *g, priv_block *pb, LLVMValueRef start, LLVMValueRef fresh)
{
    LLVMBuilderRef B = g->B;
    pm_llvm_push_iter(g, pb->sh->id, start);
    bool got = true;
    for (int k = 0; got && k < pb->sh->n; k++) {
        got = private_row(g, pb, k);
        for (int e = 0; got && e < pb->E; e++) {
            /* registers after the passes */
            pb->pr.acc[k][e] = pm_llvm_entry_alloca(g, pb->vt, "bins");
            if (fresh) {
                LLVMBuildStore(B, fresh, pb->pr.acc[k][e]);
                continue;
            }
            LLVMValueRef at = bin_offsets(g, &pb->pts[k], pb->row[k], e, pb->bin_stride);
            LLVMValueRef cells = pm_llvm_gather_cells(g, &pb->pts[k], pb->si, at, pb->all);
            LLVMBuildStore(B, cells, pb->pr.acc[k][e]);
        }
    }
    pm_llvm_pop_iter(g);
    return got;
}

/* The window's loops once per pass of per_pass update instances (the lowering fitted
 * the accumulators to the registers), each pass followed by the store of its
 * instances' cells: rows of bins (the plan's rows_of_bins) or scatters. */
static void private_passes(pm_llvm *g, __isl_keep isl_ast_node *node, priv_block *pb)
{
    LLVMBuilderRef B = g->B;
    int per_pass = pb->lp->per_pass, n = pb->sh->n;
    pm_private_rows *pr = &pb->pr;
    for (int first = 0; first < n; first += per_pass) {
        pr->first = first;
        pr->count = n - first < per_pass ? n - first : per_pass;
        g->priv = pr;
        pm_llvm_node(g, node);
        g->priv = NULL;
        for (int k = first; k < first + pr->count; k++) {
            if (pb->lp->rows_of_bins) {
                store_rows_of_bins(g, &pb->pts[k], pb->si, pb->row[k], pb->E, pr->acc[k], pb->vt);
                continue;
            }
            for (int e = 0; e < pb->E; e++)
                pm_llvm_scatter_cells(g, &pb->pts[k], pb->si,
                                      bin_offsets(g, &pb->pts[k], pb->row[k], e, pb->bin_stride),
                                      pb->all, LLVMBuildLoad2(B, pb->vt, pr->acc[k][e], ""));
        }
    }
}

/* The `bin_rows` block's body: the accumulators loaded at the window's first point
 * (pushed), then the passes (private_passes). */
static void private_rows(pm_llvm *g, __isl_keep isl_ast_node *node, priv_block *pb,
                         LLVMValueRef start)
{
    LLVMBuilderRef B = g->B;
    const pm_private_shape *sh = pb->sh;
    pb->pr = (pm_private_rows){.lane = sh->id, .start = start, .n = sh->n};
    pb->v32 = LLVMVectorType(g->t_i32, (unsigned)pb->W);
    pb->vt = LLVMVectorType(pm_llvm_type(g, pb->f->type), (unsigned)pb->W);
    pb->all = pm_llvm_splat_n(g, (unsigned)pb->W, LLVMConstInt(g->t_i1, 1, 0));
    pb->bin_stride = LLVMBuildTrunc(B, g->env.bufs[pb->si].stride[pb->bin], g->t_i32, "");
    LLVMValueRef fresh = fresh_cells(g, pb);
    bool got = private_rows_load(g, pb, start, fresh);
    for (int w = 0; w < sh->nwindow; w++)
        pm_llvm_pop_iter(g);
    if (!got)
        pm_error_set(g->err, PM_ERR_INTERNAL, "%s: a privatized block's point", pb->f->name);
    else
        private_passes(g, node, pb);
}

/*     if (the block has W lanes, caller strides are 1 and gathered offsets fit 32 bits)
 *         for each update instance and bin e: acc[e] = the lanes' cells at bin e
 *         the window's loops; at each point, per instance: acc[e] = bin == e ? acc[e] op v
 *                                                                   : acc[e], for every e
 *         the cells = acc
 *     else the block as usual (vector updates with a gather and a scatter, or scalar)
 * Each cell receives its updates in the window's order, as the interpreter's; between the
 * load and the store nothing else writes the lanes' rows (every contribution to them is
 * in the window: schedule.c, private_rows). */
bool pm_llvm_private_block(pm_llvm *g, __isl_keep isl_ast_node *node)
{
    const pm_loop_plan *lp = pm_lower_block(g->lower, node, g->box);
    pm_private_shape sh;
    if (!lp || lp->kind != PM_LOOP_PRIVATE || g->priv)
        return false;
    if (!pm_lower_private_shape(g->lower, g->box, node, &sh)) { /* the plan said it was */
        pm_lower_private_shape_clear(&sh);
        return false;
    }
    LLVMBuilderRef B = g->B;
    priv_block pb = {.lp = lp, .sh = &sh, .f = g->poly->stages[sh.s->stage].func, .W = lp->v.W,
                     .E = sh.s->bin_extent, .bin = sh.s->bin_dim};
    pb.si = pm_llvm_storage_index(g, pb.f);
    pm_llvm_memo_off(g);
    /* the window's first point names the points outside its loops: the rows' indices do
     * not depend on it */
    for (int w = 0; w < sh.nwindow; w++)
        pm_llvm_push_iter(g, sh.window[w], pm_llvm_ast_expr(g, sh.winit[w]));
    LLVMValueRef start = pm_llvm_ast_expr(g, sh.init), last = loop_last(g, sh.cond);
    LLVMValueRef full = LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildNSWSub(B, last, start, ""),
                                      LLVMConstInt(g->t_i64, (unsigned)pb.W - 1, 0), "");
    bool *gathered = calloc((size_t)g->poly->nstorage + 1, sizeof *gathered);
    bool *outer_gathered = g->gathered;
    g->gathered = gathered;
    if (gathered) /* the rows' offsets are 32-bit, whether scattered to or stored by row */
        gathered[pb.si] = true;
    LLVMValueRef fits_later = LLVMBuildFreeze(B, LLVMGetUndef(g->t_i1), "fits32");
    LLVMValueRef ok = LLVMBuildAnd(B, LLVMBuildAnd(B, g->env.unit_stride, fits_later, ""), full, "");
    LLVMBasicBlockRef rows = pm_llvm_block(g, "bin_rows"), usual = pm_llvm_block(g, "bin_usual");
    LLVMBasicBlockRef done = pm_llvm_block(g, "bin_done");
    LLVMBuildCondBr(B, ok, rows, usual);
    LLVMPositionBuilderAtEnd(B, rows);
    LLVMValueRef strides[PM_POLY_MAX_STORAGE_UNIT];
    int nsaved = unit_strides(g, strides, true);
    private_rows(g, node, &pb, start);
    if (nsaved >= 0)
        unit_strides(g, strides, false);
    LLVMBuildBr(B, done);
    g->gathered = outer_gathered;
    finish_gather_guard(g, fits_later, gathered);
    LLVMPositionBuilderAtEnd(B, usual);
    pm_llvm_node(g, node);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
    pm_lower_private_shape_clear(&sh);
    return true;
}

bool pm_llvm_private_lanes(pm_llvm *g, __isl_keep isl_ast_node *node)
{
    pm_private_rows *pr = g->priv;
    isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
    isl_id *id = isl_ast_expr_id_get_id(it);
    isl_ast_expr_free(it);
    bool ours = id == pr->lane;
    isl_id_free(id);
    if (!ours)
        return false;
    isl_ast_node *body = isl_ast_node_for_get_body(node);
    isl_ast_node *users[PM_PRIVATE_MAX_USERS];
    int n = pm_lower_body_users(body, users, PM_PRIVATE_MAX_USERS);
    isl_ast_node_free(body);
    pm_llvm_push_iter(g, pr->lane, pr->start);
    for (int k = pr->first; k < n && k < pr->first + pr->count; k++) {
        pm_point pt;
        if (private_point(g, users[k], pr->lane, g->vector_width, &pt)) {
            pr->current = k;
            pm_llvm_stmt(g, &pt);
        }
    }
    pm_llvm_pop_iter(g);
    for (int k = 0; k < n; k++)
        isl_ast_node_free(users[k]);
    if (n != pr->n)
        pm_error_set(g->err, PM_ERR_INTERNAL, "a privatized block's lanes: %d updates, not %d", n, pr->n);
    return true;
}
