/* llvm/parallel.c — a loop below a "parallel" mark, outlined and run by GOMP_parallel.
 *
 * The loop `for (i = lo; i <= hi; i += inc) body` becomes
 *     entry:     data = {env values..., lo, n, counter = 0}   (an alloca in the entry block)
 *                GOMP_parallel(<entry>_par<k>, &data, threads, 0)
 *     _par<k>:   unpack env; while a block [first, last] of the n iterations is left
 *                (taken from an atomic counter in data):
 *                    for (j = first; j <= last; j++) { i = lo + j*inc; body }
 *                (an innermost loop of unit step, a one-dimensional stage's: the block
 *                with vectors as vector.c runs any innermost loop, when it qualifies)
 * Every value the body may use lives in the env (parameters, buffer descriptions,
 * enclosing iterators), so packing the whole env is always enough; values the body does
 * not use are dead loads that LLVM removes.
 */
#include "codegen/llvm/llvm.h"

#include "codegen/ast.h"
#include "codegen/schedule.h"

#include <isl/id.h>
#include <isl/val.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- is this loop really the marked dimension? ----------------------------------------- */

/* The mark sits above band dimension k = the plan's parallel_dim of the statements, but when isl
 * resolves that dimension to a single value (a boundary row, a size-1 extent) the loop
 * right below the mark belongs to a deeper dimension, which may carry a dependence.
 * So: every statement below must take this loop's iterator as its coordinate k. */
typedef struct iter_check {
    pm_llvm *g;
    isl_id *id;
    bool ok;
} iter_check;

static isl_bool check_user(__isl_keep isl_ast_node *node, void *user)
{
    iter_check *c = user;
    if (isl_ast_node_get_type(node) != isl_ast_node_user)
        return isl_bool_true;
    isl_ast_expr *call = isl_ast_node_user_get_expr(node);
    const pm_poly_stmt *s = pm_llvm_call_stmt(c->g, call);
    int par = s ? c->g->ast->plan->parallel_dim[s - c->g->poly->stmts] : -1;
    bool ok = s && par >= 0 && par < s->ndims;
    if (ok) {
        isl_ast_expr *a = isl_ast_expr_op_get_arg(call, par + 1);
        isl_id *x = isl_ast_expr_get_type(a) == isl_ast_expr_id ? isl_ast_expr_id_get_id(a) : NULL;
        ok = x == c->id;
        isl_id_free(x);
        isl_ast_expr_free(a);
    }
    isl_ast_expr_free(call);
    if (!ok)
        c->ok = false;
    return isl_bool_true;
}

static bool loop_is_marked_dim(pm_llvm *g, __isl_keep isl_ast_node *loop, __isl_keep isl_id *id)
{
    iter_check c = {g, id, true};
    isl_ast_node *body = isl_ast_node_for_get_body(loop);
    isl_ast_node_foreach_descendant_top_down(body, check_user, &c);
    isl_ast_node_free(body);
    return c.ok;
}

/* ---- the env as a block of i64 --------------------------------------------------------- */

typedef struct packed {
    int n;
    LLVMValueRef **slot; /* where each env value lives in pm_llvm.env (malloc'd)        */
} packed;

/* Marks the storages the statements below a node read or write. */
typedef struct uses {
    pm_llvm *g;
    bool *storage;
} uses;

/* The storages a statement reads, and through inlined callees theirs. */
static void mark_reads(uses *u, const pm_poly_stmt *s, int depth)
{
    const pm_poly *poly = u->g->poly;
    for (int a = 0; a < s->naccesses; a++) {
        int k = pm_llvm_storage_index(u->g, s->accesses[a].callee);
        if (k < 0)
            continue;
        bool in_place = pm_plan_call_inlined(u->g->ast->plan, s->accesses[a].call);
        if (u->storage[k] && !in_place)
            continue;
        u->storage[k] = true;
        if (!in_place || depth > 32)
            continue;
        for (int i = 0; i < poly->nstages; i++)
            if (poly->stages[i].func == s->accesses[a].callee)
                for (int m = 0; m < poly->stages[i].nstmts; m++) /* every case's reads */
                    mark_reads(u, &poly->stmts[poly->stages[i].first_stmt + m], depth + 1);
    }
}

static isl_bool mark_uses(__isl_keep isl_ast_node *node, void *user)
{
    uses *u = user;
    if (isl_ast_node_get_type(node) == isl_ast_node_mark) {
        /* a tile re-bases every scratchpad of its group, even one of a member that
         * computes nothing here (loops.c, tile_body) */
        isl_id *ann = isl_ast_node_get_annotation(node);
        const char *kind = ann ? isl_id_get_name(ann) : "";
        const pm_tile_origins *o = ann && strcmp(kind, PM_MARK_TILE) == 0 ? isl_id_get_user(ann) : NULL;
        const pm_block_index *bi = ann && strcmp(kind, PM_MARK_BLOCK) == 0 ? isl_id_get_user(ann) : NULL;
        for (int i = 0; o && i < o->n; i++)
            u->storage[o->storage[i]] = true;
        const pm_group *gr = o && o->ntile > 0 ? o->group : bi ? bi->group : NULL;
        if (gr) {
            /* a box body's producers are not in the AST (ast.h) */
            const pm_ast *ast = u->g->ast;
            int gi = (int)(gr - ast->plan->groups);
            for (int m = 0; m < ast->nboxes[gi]; m++)
                for (int k = 0; k < ast->boxes[gi][m].nstmts; k++) {
                    const pm_poly_stmt *s = ast->boxes[gi][m].stmts[k];
                    int own = pm_llvm_storage_index(u->g, u->g->poly->stages[s->stage].func);
                    if (own >= 0)
                        u->storage[own] = true;
                    mark_reads(u, s, 0);
                }
        }
        isl_id_free(ann);
        return isl_bool_true;
    }
    if (isl_ast_node_get_type(node) != isl_ast_node_user)
        return isl_bool_true;
    isl_ast_expr *call = isl_ast_node_user_get_expr(node);
    const pm_poly_stmt *s = pm_llvm_call_stmt(u->g, call);
    isl_ast_expr_free(call);
    if (!s)
        return isl_bool_true;
    int own = pm_llvm_storage_index(u->g, u->g->poly->stages[s->stage].func);
    if (own >= 0)
        u->storage[own] = true;
    mark_reads(u, s, 0);
    return isl_bool_true;
}

/* Fills pk with the env values the loop may use: parameters, iterators and the
 * descriptions of the buffers its statements touch (packing every buffer of a
 * many-stage pipeline for every loop made the entry quadratic in size).
 * False when out of memory. */
static bool collect(pm_llvm *g, __isl_keep isl_ast_node *loop, packed *pk)
{
    pm_llvm_env *e = &g->env;
    bool *used = calloc((size_t)g->poly->nstorage + 1, sizeof *used);
    if (!used)
        return false;
    uses u = {g, used};
    isl_ast_node_foreach_descendant_top_down(loop, mark_uses, &u);
    int max = g->poly->pipeline->nparams + 2 + e->niters;
    for (int s = 0; s < g->poly->nstorage; s++)
        max += 1 + 3 * g->poly->storage[s].ndims;
    pk->n = 0;
    pk->slot = malloc((size_t)max * sizeof *pk->slot);
    if (!pk->slot) {
        free(used);
        return false;
    }
    int np = g->poly->pipeline->nparams;
    for (int i = 0; i < np; i++)
        pk->slot[pk->n++] = &e->param_raw[i];
    for (int s = 0; s < g->poly->nstorage; s++) {
        if (!used[s])
            continue;
        pm_llvm_buf *b = &e->bufs[s];
        pk->slot[pk->n++] = &b->base;
        for (int d = 0; d < g->poly->storage[s].ndims; d++) {
            pk->slot[pk->n++] = &b->lb[d];
            pk->slot[pk->n++] = &b->ext[d];
            pk->slot[pk->n++] = &b->stride[d];
        }
    }
    pk->slot[pk->n++] = &e->unit_stride;
    pk->slot[pk->n++] = &e->threads;
    for (int i = 0; i < e->niters; i++)
        pk->slot[pk->n++] = &e->iter[i];
    free(used);
    /* constants (a scratchpad's strides and extents, ...) are valid in every function:
     * passing them through memory would hide them from LLVM in the outlined body */
    int k = 0;
    for (int i = 0; i < pk->n; i++)
        if (!LLVMIsConstant(*pk->slot[i]))
            pk->slot[k++] = pk->slot[i];
    pk->n = k;
    return true;
}

static LLVMValueRef to_i64(pm_llvm *g, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v);
    if (t == g->t_ptr)
        return LLVMBuildPtrToInt(g->B, v, g->t_i64, "");
    if (t == g->t_i1 || t == g->t_i32)
        return LLVMBuildZExt(g->B, v, g->t_i64, "");
    return v;
}

static LLVMValueRef from_i64(pm_llvm *g, LLVMValueRef v, LLVMTypeRef t)
{
    if (t == g->t_ptr)
        return LLVMBuildIntToPtr(g->B, v, g->t_ptr, "");
    if (t == g->t_i1 || t == g->t_i32)
        return LLVMBuildTrunc(g->B, v, t, "");
    return v;
}

LLVMValueRef pm_llvm_entry_alloca(pm_llvm *g, LLVMTypeRef t, const char *name)
{
    LLVMBasicBlockRef here = LLVMGetInsertBlock(g->B);
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(g->fn);
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first)
        LLVMPositionBuilderBefore(g->B, first);
    else
        LLVMPositionBuilderAtEnd(g->B, entry);
    LLVMValueRef a = LLVMBuildAlloca(g->B, t, name);
    LLVMPositionBuilderAtEnd(g->B, here);
    return a;
}

/* An i64 array of n slots in the current function's entry block. */
static LLVMValueRef entry_alloca(pm_llvm *g, int n)
{
    return pm_llvm_entry_alloca(g, LLVMArrayType(g->t_i64, (unsigned)n), "par_data");
}

static LLVMValueRef slot_ptr(pm_llvm *g, LLVMValueRef base, int i)
{
    LLVMValueRef idx = pm_llvm_i64(g, i);
    return LLVMBuildGEP2(g->B, g->t_i64, base, &idx, 1, "");
}

/* ---- names -------------------------------------------------------------------------------- */

typedef struct first_user {
    pm_llvm *g;
    const char *name;
} first_user;

static isl_bool find_user(__isl_keep isl_ast_node *node, void *user)
{
    first_user *fu = user;
    if (fu->name)
        return isl_bool_false;
    if (isl_ast_node_get_type(node) != isl_ast_node_user)
        return isl_bool_true;
    isl_ast_expr *call = isl_ast_node_user_get_expr(node);
    const pm_poly_stmt *s = pm_llvm_call_stmt(fu->g, call);
    isl_ast_expr_free(call);
    if (s)
        fu->name = s->name;
    return isl_bool_false;
}

/* <entry>_<kind><k>_<first statement>: profiles (PM_PERF=1) and dumps name the stage. */
static void outlined_name(pm_llvm *g, __isl_keep isl_ast_node *node, const char *kind,
                          char *name, size_t size)
{
    first_user fu = {g, NULL};
    isl_ast_node_foreach_descendant_top_down(node, find_user, &fu);
    snprintf(name, size, "%s_%s%d%s%s", g->entry_name, kind, g->noutlined++,
             fu.name ? "_" : "", fu.name ? fu.name : "");
}

/* ---- the outlined function ------------------------------------------------------------ */

/* Stores the env values of pk as i64 into data's first pk->n slots; types[i]: value i's
 * type, to load it back (enter_outlined). */
static void store_env(pm_llvm *g, const packed *pk, LLVMTypeRef *types, LLVMValueRef data)
{
    for (int i = 0; i < pk->n; i++) {
        types[i] = LLVMTypeOf(*pk->slot[i]);
        LLVMBuildStore(g->B, to_i64(g, *pk->slot[i]), slot_ptr(g, data, i));
    }
}

/* A new internal function <entry>_<kind><k>_<first statement>(ptr data). */
static LLVMValueRef outlined_fn(pm_llvm *g, __isl_keep isl_ast_node *node, const char *kind)
{
    char name[192];
    outlined_name(g, node, kind, name, sizeof name);
    LLVMTypeRef fnty = LLVMFunctionType(g->t_void, &g->t_ptr, 1, 0);
    LLVMValueRef fn = LLVMAddFunction(g->M, name, fnty);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    pm_llvm_set_fn_attrs(g, fn);
    return fn;
}

/* The caller's state while an outlined function is emitted. */
typedef struct caller_state {
    LLVMValueRef fn;
    LLVMBasicBlockRef bb;
    LLVMValueRef *env; /* the env values of the packed slots                            */
} caller_state;

/* Emission moves to fn's entry block, where the env values of pk are loaded from its
 * data parameter (types: theirs); *cs keeps the caller's. Returns the data parameter. */
static LLVMValueRef enter_outlined(pm_llvm *g, LLVMValueRef fn, const packed *pk,
                                   const LLVMTypeRef *types, caller_state *cs)
{
    LLVMBuilderRef B = g->B;
    cs->fn = g->fn;
    cs->bb = LLVMGetInsertBlock(B);
    for (int i = 0; i < pk->n; i++)
        cs->env[i] = *pk->slot[i];
    g->fn = fn;
    LLVMPositionBuilderAtEnd(B, pm_llvm_block(g, "entry"));
    LLVMValueRef in = LLVMGetParam(fn, 0);
    for (int i = 0; i < pk->n; i++)
        *pk->slot[i] = from_i64(g, LLVMBuildLoad2(B, g->t_i64, slot_ptr(g, in, i), ""), types[i]);
    return in;
}

/* Emission back in the caller, where enter_outlined left it. */
static void leave_outlined(pm_llvm *g, const packed *pk, const caller_state *cs)
{
    for (int i = 0; i < pk->n; i++)
        *pk->slot[i] = cs->env[i];
    g->fn = cs->fn;
    LLVMPositionBuilderAtEnd(g->B, cs->bb);
}

/* ---- the loop ----------------------------------------------------------------------------- */

typedef struct body_ctx {
    isl_ast_node *body;
    isl_id *id;
    LLVMValueRef lo;
    int64_t inc;
} body_ctx;

static void run_body(pm_llvm *g, LLVMValueRef j, void *user)
{
    body_ctx *bc = user;
    LLVMValueRef i = LLVMBuildAdd(g->B, bc->lo, LLVMBuildMul(g->B, j, pm_llvm_i64(g, bc->inc), ""), "");
    pm_llvm_push_iter(g, bc->id, i);
    pm_llvm_node(g, bc->body);
    pm_llvm_pop_iter(g);
}

/* A loop that may run in parallel: `for (i = init; i <= rhs (or i < rhs); i += inc)`,
 * inc a positive constant and rhs free of i (the trip count is then known up front). */
typedef struct par_loop {
    int64_t inc;
    isl_id *id;                   /* the iterator i                                   */
    enum isl_ast_expr_op_type op; /* isl_ast_expr_op_le or isl_ast_expr_op_lt         */
    isl_ast_expr *cond, *lhs, *rhs;
} par_loop;

/* Frees what par_loop_of took from the loop. */
static void par_loop_clear(par_loop *pl)
{
    isl_ast_expr_free(pl->lhs);
    isl_ast_expr_free(pl->rhs);
    isl_ast_expr_free(pl->cond);
    isl_id_free(pl->id);
}

/* node's increment, iterator and condition into pl (par_loop_clear frees them either
 * way); false when the loop does not have par_loop's shape. */
static bool par_loop_of(__isl_keep isl_ast_node *node, par_loop *pl)
{
    isl_ast_expr *inc_e = isl_ast_node_for_get_inc(node);
    pl->inc = 0;
    if (isl_ast_expr_get_type(inc_e) == isl_ast_expr_int) {
        isl_val *v = isl_ast_expr_int_get_val(inc_e);
        pl->inc = isl_val_get_num_si(v);
        isl_val_free(v);
    }
    isl_ast_expr_free(inc_e);
    isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
    pl->id = isl_ast_expr_id_get_id(it);
    isl_ast_expr_free(it);
    pl->cond = isl_ast_node_for_get_cond(node);
    /* only `i <= e` / `i < e` with e free of i: the trip count is then known up front */
    bool ok = pl->inc > 0 && isl_ast_expr_get_type(pl->cond) == isl_ast_expr_op;
    pl->op = ok ? isl_ast_expr_op_get_type(pl->cond) : isl_ast_expr_op_error;
    ok = ok && (pl->op == isl_ast_expr_op_le || pl->op == isl_ast_expr_op_lt);
    pl->lhs = ok ? isl_ast_expr_op_get_arg(pl->cond, 0) : NULL;
    pl->rhs = ok ? isl_ast_expr_op_get_arg(pl->cond, 1) : NULL;
    if (ok) {
        isl_id *l = isl_ast_expr_get_type(pl->lhs) == isl_ast_expr_id
                        ? isl_ast_expr_id_get_id(pl->lhs) : NULL;
        ok = l == pl->id;
        isl_id_free(l);
    }
    return ok;
}

/* The loop's lower bound into *lo, and its trip count n = hi >= lo ? (hi - lo) / inc + 1
 * : 0 (rhs cannot mention i: it is an upper bound isl computed outside the loop). */
static LLVMValueRef trip_count(pm_llvm *g, __isl_keep isl_ast_node *node, const par_loop *pl,
                               LLVMValueRef *lo)
{
    LLVMBuilderRef B = g->B;
    isl_ast_expr *init = isl_ast_node_for_get_init(node);
    *lo = pm_llvm_ast_expr(g, init);
    isl_ast_expr_free(init);
    LLVMValueRef hi = pm_llvm_ast_expr(g, pl->rhs);
    if (pl->op == isl_ast_expr_op_lt)
        hi = LLVMBuildSub(B, hi, pm_llvm_i64(g, 1), "");
    LLVMValueRef span = LLVMBuildSub(B, hi, *lo, "");
    return LLVMBuildSelect(
        B, LLVMBuildICmp(B, LLVMIntSLT, span, pm_llvm_i64(g, 0), ""), pm_llvm_i64(g, 0),
        LLVMBuildAdd(B, LLVMBuildSDiv(B, span, pm_llvm_i64(g, pl->inc), ""), pm_llvm_i64(g, 1), ""),
        "trips");
}

/* The iterations [start, end) of the loop's n in the outlined function's `run` block
 * (i = plo + j * inc): an innermost loop (a 1-D stage: camera pipe's tone curve) runs
 * its share with vectors where the vector emitter takes it, any other loop as
 *     for (j = start; j <= end - 1; j++) { i = plo + j*inc; body } */
static void run_share(pm_llvm *g, __isl_keep isl_ast_node *node, const par_loop *pl,
                      LLVMValueRef plo, LLVMValueRef start, LLVMValueRef end)
{
    LLVMBuilderRef B = g->B;
    isl_ast_node *body = isl_ast_node_for_get_body(node);
    body_ctx bc = {body, pl->id, plo, pl->inc};
    LLVMValueRef first = LLVMBuildAdd(B, plo, start, "");
    LLVMValueRef last = LLVMBuildSub(B, LLVMBuildAdd(B, plo, end, ""), pm_llvm_i64(g, 1), "");
    if (pl->inc != 1 || !pm_llvm_vector_range(g, node, first, last))
        pm_llvm_counted_loop(g, start, LLVMBuildSub(B, end, pm_llvm_i64(g, 1), ""), 1, run_body, &bc);
    isl_ast_node_free(body);
}

/* The outlined function's body after its env is loaded: the loop's n iterations taken
 * in shares from the counter in data (in) until none is left. Guided, as the lowering
 * says: with `cur` iterations taken, take [cur, cur + max(1, (n - cur) / (guided_share *
 * threads))) by compare-and-swap while cur < n:
 *     take:      seen = atomic load counter
 *     retry:     start = phi(seen, now_taken); left = n - start; if (left <= 0) goto none_left
 *     grab:      end = start + max(1, left / share);
 *                now_taken = cmpxchg(counter, start, end); if it failed goto retry
 *     run:       run_share(start, end); goto take
 *     none_left: fence the streams; return */
static void emit_shares(pm_llvm *g, __isl_keep isl_ast_node *node, const par_loop *pl,
                        LLVMValueRef in, int npacked)
{
    LLVMBuilderRef B = g->B;
    LLVMValueRef plo = LLVMBuildLoad2(B, g->t_i64, slot_ptr(g, in, npacked), "lo");
    LLVMValueRef pn = LLVMBuildLoad2(B, g->t_i64, slot_ptr(g, in, npacked + 1), "n");
    LLVMTypeRef ity = LLVMFunctionType(g->t_i32, NULL, 0, 0);
    LLVMValueRef nth = LLVMBuildSExt(B, LLVMBuildCall2(B, ity, pm_llvm_declare(g, "omp_get_num_threads", ity),
                                                       NULL, 0, "nth"), g->t_i64, "");
    const pm_loop_plan *split = pm_lower_loop(g->lower, node, g->box);
    LLVMValueRef counter = slot_ptr(g, in, npacked + 2);
    LLVMValueRef share = LLVMBuildMul(B, nth, pm_llvm_i64(g, split ? split->guided_share : 1),
                                      "share");
    LLVMBasicBlockRef take = pm_llvm_block(g, "take"), retry = pm_llvm_block(g, "retry");
    LLVMBasicBlockRef grab = pm_llvm_block(g, "grab"), run = pm_llvm_block(g, "run");
    LLVMBasicBlockRef none = pm_llvm_block(g, "none_left");
    LLVMBuildBr(B, take);
    LLVMPositionBuilderAtEnd(B, take);
    LLVMValueRef seen = LLVMBuildLoad2(B, g->t_i64, counter, "taken");
    LLVMSetOrdering(seen, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(seen, 8);
    LLVMBuildBr(B, retry);
    LLVMPositionBuilderAtEnd(B, retry);
    LLVMValueRef start = LLVMBuildPhi(B, g->t_i64, "start");
    LLVMValueRef left = LLVMBuildSub(B, pn, start, "left");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSGT, left, pm_llvm_i64(g, 0), ""), grab, none);
    LLVMPositionBuilderAtEnd(B, grab);
    LLVMValueRef chunk = LLVMBuildSDiv(B, left, share, "");
    chunk = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, chunk, pm_llvm_i64(g, 1), ""), pm_llvm_i64(g, 1),
                            chunk, "chunk");
    LLVMValueRef end = LLVMBuildAdd(B, start, chunk, "end");
    LLVMValueRef swap = LLVMBuildAtomicCmpXchg(B, counter, start, end, LLVMAtomicOrderingMonotonic,
                                               LLVMAtomicOrderingMonotonic, 0);
    LLVMValueRef now_taken = LLVMBuildExtractValue(B, swap, 0, "");
    LLVMBuildCondBr(B, LLVMBuildExtractValue(B, swap, 1, ""), run, retry);
    LLVMValueRef from_vals[2] = {seen, now_taken};
    LLVMBasicBlockRef from_blocks[2] = {take, grab};
    LLVMAddIncoming(start, from_vals, from_blocks, 2);
    LLVMPositionBuilderAtEnd(B, run);
    run_share(g, node, pl, plo, start, end);
    LLVMBuildBr(B, take);
    LLVMPositionBuilderAtEnd(B, none);
    pm_llvm_fence_streams(g);
    LLVMBuildRetVoid(B);
}

/* The loop as the file's header shows: its env, lo, n and a counter packed into data,
 * the outlined <entry>_par<k>(data) running the shares (emit_shares), and
 * GOMP_parallel(<entry>_par<k>, &data, threads, 0) in its place. */
static void emit_parallel(pm_llvm *g, __isl_keep isl_ast_node *node, const par_loop *pl,
                          const packed *pk, LLVMTypeRef *types, LLVMValueRef *saved)
{
    LLVMBuilderRef B = g->B;
    LLVMValueRef lo;
    LLVMValueRef n = trip_count(g, node, pl, &lo);
    LLVMValueRef data = entry_alloca(g, pk->n + 3);
    store_env(g, pk, types, data);
    LLVMBuildStore(B, lo, slot_ptr(g, data, pk->n));
    LLVMBuildStore(B, n, slot_ptr(g, data, pk->n + 1));
    LLVMBuildStore(B, pm_llvm_i64(g, 0), slot_ptr(g, data, pk->n + 2)); /* the dynamic split's counter */
    LLVMValueRef fn = outlined_fn(g, node, "par");
    caller_state cs = {.env = saved};
    g->in_parallel = true;
    LLVMValueRef in = enter_outlined(g, fn, pk, types, &cs);
    emit_shares(g, node, pl, in, pk->n);
    leave_outlined(g, pk, &cs);
    g->in_parallel = false;
    LLVMTypeRef gty = LLVMFunctionType(g->t_void, (LLVMTypeRef[]){g->t_ptr, g->t_ptr, g->t_i32,
                                       g->t_i32}, 4, 0);
    LLVMValueRef args[4] = {fn, data, g->env.threads, LLVMConstInt(g->t_i32, 0, 0)};
    LLVMBuildCall2(B, gty, pm_llvm_declare(g, "GOMP_parallel", gty), args, 4, "");
}

bool pm_llvm_parallel_for(pm_llvm *g, __isl_keep isl_ast_node *node, bool independent)
{
    if (g->in_parallel || isl_ast_node_for_is_degenerate(node) == isl_bool_true)
        return false;
    par_loop pl = {0};
    bool ok = par_loop_of(node, &pl);
    ok = ok && (independent || loop_is_marked_dim(g, node, pl.id));
    packed pk = {0};
    ok = ok && collect(g, node, &pk);
    LLVMTypeRef *types = ok ? malloc((size_t)pk.n * sizeof *types) : NULL;
    LLVMValueRef *saved = ok ? malloc((size_t)pk.n * sizeof *saved) : NULL;
    ok = ok && types && saved;
    if (ok)
        emit_parallel(g, node, &pl, &pk, types, saved);
    free(pk.slot);
    free(types);
    free(saved);
    par_loop_clear(&pl);
    return ok;
}

/* ---- a subtree as a function of its own ---------------------------------------------- */

/* The subtree `node` becomes an internal function <entry>_part<k>(data) called here:
 * the env values it uses are packed into data, as for a parallel loop. LLVM's passes
 * cost more than linearly in a function's size, so a tile's body is cut into one
 * function per stage. Returns false (emitting nothing) when packing fails. */
bool pm_llvm_outline(pm_llvm *g, __isl_keep isl_ast_node *node)
{
    packed pk = {0};
    if (!collect(g, node, &pk))
        return false;
    LLVMTypeRef *types = malloc((size_t)(pk.n + 1) * sizeof *types);
    LLVMValueRef *saved = malloc((size_t)(pk.n + 1) * sizeof *saved);
    if (!types || !saved) {
        free(pk.slot);
        free(types);
        free(saved);
        return false;
    }
    LLVMBuilderRef B = g->B;
    LLVMValueRef data = entry_alloca(g, pk.n + 1);
    store_env(g, &pk, types, data);
    LLVMValueRef fn = outlined_fn(g, node, "part");
    unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->C, noinline, 0));
    caller_state cs = {.env = saved};
    enter_outlined(g, fn, &pk, types, &cs);
    pm_llvm_node(g, node);
    LLVMBuildRetVoid(B);
    leave_outlined(g, &pk, &cs);
    LLVMBuildCall2(B, LLVMGlobalGetValueType(fn), fn, &data, 1, "");
    free(pk.slot);
    free(types);
    free(saved);
    return true;
}
