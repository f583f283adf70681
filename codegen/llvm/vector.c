/* llvm/vector.c — the innermost loop with explicit <W x T> vectors (see llvm.h).
 *
 * A for node qualifies when
 *  - it is innermost: its body is one user node or a block of user nodes (separation
 *    left no conditions inside), its increment is 1 and its condition reads
 *    `i <= e` or `i < e` with e independent of i (so if i+W-1 passes, all W lanes do);
 *  - every statement in it may be vectorized (poly.c: its innermost dimension carries no
 *    dependence; border strips run scalar, one copy of their body instead of three), and
 *    the loop runs along the statement's innermost dimension (argument n-1 is the
 *    iterator, the others do not mention it) with step 1, so the statement's write is
 *    one contiguous <W x T> store;
 *  - or its statements are instances of one reduction update and the loop runs along a
 *    dimension in which any two updates of a common cell agree (a histogram's cell
 *    column: the lanes write W different cells, gathered, combined and scattered by
 *    stmt.c), with no lane run twice: vectors while W points remain, then scalar code
 *    (loop_then_scalar).
 * The loop then becomes, where all caller buffers have unit innermost stride and the
 * buffers the vectors gather from have 32-bit offsets (vec_ok),
 *     if (vec_ok and at least W points)
 *         for (i = init; i <= last; i += W)
 *             body for lanes k..k+W-1, k = min(i, last - W + 1)   -- the last overlaps
 *     else
 *         for (i = init; cond(i); i++) scalar body   -- short loops (and the fallback)
 * one vector body where a loop and a tail had two (one_body_loop), for bodies of
 * ONE_BODY_MIN_READS reads or more; bodies of fewer reads (memory-bound: the select on
 * every address cost them) and those whose lanes follow a pattern set by the start's
 * parity (upsampling, cases merged by residue: the moved last vector would make it vary)
 * keep the vector loop and a tail of their own (loop_and_tail).
 * A loop whose start and bound are constants stays scalar below 4 points, and with
 * 4..W-1 points runs two
 * overlapping vectors of w lanes (the widest power of two that fits), the first at the
 * start and the second ending at the last point, under the same guard (bilateral
 * grid's 11 bins along its innermost dimension: 12.6 -> 11.7 ms).
 * The gathers' condition is checked once before the loop, not per gather: a branch per
 * gather split bilateral grid's 16-gather body into blocks and cost it 9%. Buffers of
 * 2^31 elements or more that a loop gathers from run that loop's scalar code.
 * W is options.vector_width for every element type (16 on AVX-512: <16 x float> fills a
 * zmm register; narrower types use part of one, wider ones two).
 * A merged statement's row (poly.h, parts; pm_llvm_parts_for) is one loop per part over
 * the part's interval at the row clipped to the AST loop's bounds, each with the same
 * vector loop when the part qualifies as above, else scalar.
 */
#include "codegen/llvm/llvm.h"

#include "codegen/ast.h"

#include <isl/id.h>
#include <isl/val.h>
#include <stdlib.h>

static bool mentions(__isl_keep isl_ast_expr *e, __isl_keep isl_id *id)
{
    switch (isl_ast_expr_get_type(e)) {
    case isl_ast_expr_id: {
        isl_id *x = isl_ast_expr_id_get_id(e);
        bool same = x == id;
        isl_id_free(x);
        return same;
    }
    case isl_ast_expr_op: {
        int n = isl_ast_expr_op_get_n_arg(e);
        bool any = false;
        for (int i = 0; i < n && !any; i++) {
            isl_ast_expr *a = isl_ast_expr_op_get_arg(e, i);
            any = mentions(a, id);
            isl_ast_expr_free(a);
        }
        return any;
    }
    default:
        return false;
    }
}

static bool is_id(__isl_keep isl_ast_expr *e, __isl_keep isl_id *id)
{
    if (isl_ast_expr_get_type(e) != isl_ast_expr_id)
        return false;
    isl_id *x = isl_ast_expr_id_get_id(e);
    bool same = x == id;
    isl_id_free(x);
    return same;
}

/* May statement s run with vectors along its innermost dimension: a case (no reduction
 * update) free of dependences along it, of unit step, not merged (pm_llvm_parts_for runs
 * its parts) and not a border strip? A border strip (a few rows or columns of a split
 * case, poly.c) runs scalar: a tiny share of the points, while its vector, tail and
 * scalar bodies were most of local Laplacian's IR (118k instructions before the passes,
 * 67k without them). */
static bool stmt_vector_ok(pm_llvm *g, const pm_poly_stmt *s)
{
    if (!s || s->kind == PM_STMT_UPDATE || !s->vectorizable || s->ndims < 1 || s->border_dims ||
        s->nparts > 0)
        return false;
    const pm_poly_storage *st = pm_poly_storage_of(g->poly, g->poly->stages[s->stage].func);
    return st && st->step[s->ndims - 1] == 1;
}

/* Does the call of statement s run along iterator id: its innermost argument is the
 * iterator and no other argument mentions it? */
static bool call_along(__isl_keep isl_ast_expr *call, const pm_poly_stmt *s,
                       __isl_keep isl_id *id)
{
    bool ok = isl_ast_expr_op_get_n_arg(call) == s->ndims + 1;
    for (int d = 0; ok && d < s->ndims; d++) {
        isl_ast_expr *a = isl_ast_expr_op_get_arg(call, d + 1);
        ok = d == s->ndims - 1 ? is_id(a, id) : !mentions(a, id);
        isl_ast_expr_free(a);
    }
    return ok;
}

/* The dimension of statement s that the call's argument iterator id is, when it is
 * exactly one argument and no other mentions it; else -1. */
static int lane_dim(__isl_keep isl_ast_expr *call, const pm_poly_stmt *s, __isl_keep isl_id *id)
{
    if (isl_ast_expr_op_get_n_arg(call) != s->ndims + 1)
        return -1;
    int k = -1;
    for (int d = 0; d < s->ndims; d++) {
        isl_ast_expr *a = isl_ast_expr_op_get_arg(call, d + 1);
        if (is_id(a, id))
            k = k < 0 ? d : -2;
        else if (mentions(a, id))
            k = -2;
        isl_ast_expr_free(a);
    }
    return k < 0 ? -1 : k;
}

static bool calls_func(const pm_expr *e, const pm_func *f)
{
    if (!e)
        return false;
    if (e->kind == PM_EXPR_CALL && e->callee == f)
        return true;
    for (int i = 0; e->kind == PM_EXPR_CALL && i < e->nargs; i++)
        if (calls_func(e->args[i], f))
            return true;
    return calls_func(e->a, f) || calls_func(e->b, f) || calls_func(e->c, f);
}

/* May reduction update s run with vectors along iterator id? The iterator is one
 * dimension k of the reduction domain along which no two updates share a cell
 * (poly.c, distinct_cell_dims: a histogram's cell column), so the lanes write W
 * different cells and a gather, the operation and a scatter give each cell its updates
 * in their order (stmt.c); and the update reads nothing of its own reduction. */
static bool update_vector_ok(pm_llvm *g, __isl_keep isl_ast_expr *call, const pm_poly_stmt *s,
                             __isl_keep isl_id *id)
{
    const pm_func *f = g->poly->stages[s->stage].func;
    int k = lane_dim(call, s, id);
    if (k < 0 || k >= 32 || !(s->distinct_cell_dims & (1u << k)) || s->border_dims ||
        s->nparts > 0 || calls_func(f->rvalue, f))
        return false;
    for (int d = 0; d < f->ndims; d++)
        if (calls_func(f->rindex[d], f))
            return false;
    return true;
}

/* Does the user node's statement qualify along iterator id? */
static bool user_ok(pm_llvm *g, __isl_keep isl_ast_node *user, __isl_keep isl_id *id)
{
    isl_ast_expr *call = isl_ast_node_user_get_expr(user);
    const pm_poly_stmt *s = pm_llvm_call_stmt(g, call);
    bool ok = s && s->kind == PM_STMT_UPDATE
                  ? update_vector_ok(g, call, s, id)
                  : stmt_vector_ok(g, s) && call_along(call, s, id);
    isl_ast_expr_free(call);
    return ok;
}

/* A body of updates runs with vectors only when they are all instances of one update
 * statement (its unrolled channels): two of them that share a cell agree along the
 * lanes' dimension, so running each for all lanes before the next keeps every cell's
 * updates in order. Returns whether the body has updates; *ok false when it mixes. */
static bool body_updates(pm_llvm *g, isl_ast_node **users, int n, bool *ok)
{
    const pm_poly_stmt *first = NULL;
    bool any = false, all = true;
    for (int i = 0; i < n; i++) {
        isl_ast_expr *call = isl_ast_node_user_get_expr(users[i]);
        const pm_poly_stmt *s = pm_llvm_call_stmt(g, call);
        isl_ast_expr_free(call);
        bool upd = s && s->kind == PM_STMT_UPDATE;
        any |= upd;
        all &= upd && (!first || first == s);
        if (!first)
            first = s;
    }
    *ok = !any || all;
    return any;
}

/* A for node's iterator, condition and body (for_node_get; for_node_clear frees them). */
typedef struct for_node {
    isl_id *id;
    isl_ast_expr *cond;
    isl_ast_node *body;
} for_node;

static for_node for_node_get(__isl_keep isl_ast_node *node)
{
    isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
    for_node f = {isl_ast_expr_id_get_id(it), isl_ast_node_for_get_cond(node),
                  isl_ast_node_for_get_body(node)};
    isl_ast_expr_free(it);
    return f;
}

static void for_node_clear(for_node *f)
{
    isl_ast_node_free(f->body);
    isl_ast_expr_free(f->cond);
    isl_id_free(f->id);
}

/* What a vector loop's statements do, for the choice of its shape (pm_llvm_vector_for). */
typedef struct body_traits {
    bool start_dependent; /* some lanes follow a pattern set by the start's parity     */
    int reads;            /* buffer reads (calls not inlined), through inlined callees  */
    int budget;           /* nodes left to visit; running out counts as start_dependent */
} body_traits;

/* Integer division, residue or shift: upsampling's x / 2, cases merged by residue. Their
 * lanes follow the parity of the vector's start: invariant while every vector starts W
 * after the previous one, varying if the last one were moved back to end at the last
 * point (interpolate: 3% slower). */
static void walk_traits(const pm_poly *poly, const pm_expr *e, body_traits *t)
{
    if (!e || t->start_dependent)
        return;
    if (--t->budget < 0) {
        t->start_dependent = true;
        return;
    }
    if (e->kind == PM_EXPR_BINARY && pm_type_is_int(e->a->type) &&
        (e->op == PM_OP_DIV || e->op == PM_OP_MOD || e->op == PM_OP_CDIV ||
         e->op == PM_OP_CMOD || e->op == PM_OP_SHR || e->op == PM_OP_BAND))
        t->start_dependent = true;
    walk_traits(poly, e->a, t);
    walk_traits(poly, e->b, t);
    walk_traits(poly, e->c, t);
    for (int i = 0; i < e->nargs; i++)
        walk_traits(poly, e->args[i], t);
    if (e->kind != PM_EXPR_CALL)
        return;
    if (!pm_poly_call_inlined(poly, e)) {
        t->reads++;
        return;
    }
    for (int c = 0; c < e->callee->ncases; c++) {
        walk_traits(poly, e->callee->cases[c]->cond, t);
        walk_traits(poly, e->callee->cases[c]->value, t);
    }
}

static void stmt_traits(pm_llvm *g, const pm_poly_stmt *s, body_traits *t)
{
    const pm_func *f = g->poly->stages[s->stage].func;
    for (int r = 0; r < s->nresidual; r++)
        walk_traits(g->poly, s->residual[r], t);
    for (int c = s->case_index; c < s->case_index + s->ncases && c < f->ncases; c++) {
        walk_traits(g->poly, f->cases[c]->cond, t);
        walk_traits(g->poly, f->cases[c]->value, t);
    }
}

static body_traits loop_traits(pm_llvm *g, isl_ast_node **users, int n)
{
    body_traits t = {.budget = 20000};
    for (int k = 0; k < n; k++) {
        isl_ast_expr *call = isl_ast_node_user_get_expr(users[k]);
        const pm_poly_stmt *s = pm_llvm_call_stmt(g, call);
        isl_ast_expr_free(call);
        if (!s) {
            t.start_dependent = true;
            return t;
        }
        stmt_traits(g, s, &t);
    }
    return t;
}

/* One body for a loop and its tail (one_body_loop) from this many reads: a body of
 * few reads is memory-bound and ran 2-3% slower so (pyramid blending's down-sampling,
 * 5 reads: 14% slower; the select of the start sits on every address), while the copy
 * it saves is small; Harris's 18-read body ran as fast, and its copy was a quarter of
 * the kernel's IR. */
#define ONE_BODY_MIN_READS 10

/* The body's user nodes, when it has only those. */
static int body_users_at(__isl_keep isl_ast_node *body, isl_ast_node **users, int k, int max)
{
    if (isl_ast_node_get_type(body) == isl_ast_node_user) {
        if (k == max)
            return -1;
        users[k] = isl_ast_node_copy(body);
        return k + 1;
    }
    if (isl_ast_node_get_type(body) != isl_ast_node_block)
        return -1;
    /* isl nests blocks (a box template's statements, ast.h): flattened */
    isl_ast_node_list *list = isl_ast_node_block_get_children(body);
    int n = isl_ast_node_list_n_ast_node(list);
    for (int i = 0; i < n && k >= 0; i++) {
        isl_ast_node *c = isl_ast_node_list_get_ast_node(list, i);
        k = body_users_at(c, users, k, max);
        isl_ast_node_free(c);
    }
    isl_ast_node_list_free(list);
    return k;
}

static int body_users(__isl_keep isl_ast_node *body, isl_ast_node **users, int max)
{
    for (int i = 0; i < max; i++)
        users[i] = NULL;
    int k = body_users_at(body, users, 0, max);
    if (k < 0)
        for (int i = 0; i < max; i++)
            users[i] = isl_ast_node_free(users[i]);
    return k < 0 ? 0 : k;
}

static bool unit_inc(__isl_keep isl_ast_node *node)
{
    isl_ast_expr *inc = isl_ast_node_for_get_inc(node);
    bool one = false;
    if (isl_ast_expr_get_type(inc) == isl_ast_expr_int) {
        isl_val *v = isl_ast_expr_int_get_val(inc);
        one = isl_val_is_one(v);
        isl_val_free(v);
    }
    isl_ast_expr_free(inc);
    return one;
}

/* cond is `id <= e` or `id < e` with e free of id. */
static bool upper_bound_cond(__isl_keep isl_ast_expr *cond, __isl_keep isl_id *id)
{
    if (isl_ast_expr_get_type(cond) != isl_ast_expr_op)
        return false;
    enum isl_ast_expr_op_type op = isl_ast_expr_op_get_type(cond);
    if (op != isl_ast_expr_op_le && op != isl_ast_expr_op_lt)
        return false;
    isl_ast_expr *a = isl_ast_expr_op_get_arg(cond, 0), *b = isl_ast_expr_op_get_arg(cond, 1);
    bool ok = is_id(a, id) && !mentions(b, id);
    isl_ast_expr_free(a);
    isl_ast_expr_free(b);
    return ok;
}

/* The last point of a loop whose condition upper_bound_cond accepts: e for `i <= e`,
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
        if ((st->kind != PM_STORAGE_INPUT && st->kind != PM_STORAGE_OUTPUT) || st->ndims == 0)
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
                int k = pt.stmt->kind == PM_STMT_UPDATE ? lane_dim(call, pt.stmt, L->id)
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

/* The loop's trip count when its start and bound are integer constants, else -1. */
static long long constant_trip(__isl_keep isl_ast_node *node, __isl_keep isl_ast_expr *cond)
{
    isl_ast_expr *init = isl_ast_node_for_get_init(node);
    isl_ast_expr *bound = isl_ast_expr_op_get_arg(cond, 1);
    long long trip = -1;
    if (init && bound && isl_ast_expr_get_type(init) == isl_ast_expr_int &&
        isl_ast_expr_get_type(bound) == isl_ast_expr_int) {
        isl_val *a = isl_ast_expr_int_get_val(init), *b = isl_ast_expr_int_get_val(bound);
        if (isl_val_is_int(a) && isl_val_is_int(b)) {
            long long lo = isl_val_get_num_si(a), hi = isl_val_get_num_si(b);
            if (isl_ast_expr_op_get_type(cond) == isl_ast_expr_op_lt)
                hi -= 1;
            trip = hi >= lo ? hi - lo + 1 : 0;
        }
        isl_val_free(a);
        isl_val_free(b);
    }
    isl_ast_expr_free(init);
    isl_ast_expr_free(bound);
    return trip;
}

/* The lanes for a loop of a constant trip count shorter than W: the widest power of two
 * (at least 4) that fits in it, so that two overlapping vectors cover the loop (bilateral
 * grid's 11 intensity bins: two <8 x float> instead of 11 scalar points); 0 when none. */
static int short_lanes(long long trip, int W)
{
    if (trip < 4 || trip >= W)
        return 0;
    int w = 4;
    while (2 * w <= trip)
        w *= 2;
    return w;
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

/* The bytes a streamed loop aligns its stores to, or 0 when loop L does not stream: its
 * one statement (or part) writes an output the storage phase marked streamed, a vector
 * is 16 bytes or more (the widest aligned non-temporal store is 64 bytes; a wider vector
 * is stored as several), and no lane pattern depends on the parity of a vector's start
 * (the aligned vectors start where the row's address says, so the pattern's setup
 * moved into every vector: pyramid blending's blend, two cases by column parity, ran
 * 1.01-1.03x slower streamed). */
static int stream_alignment(pm_llvm *g, const vector_loop *L, body_traits traits, int *elem)
{
    if (traits.start_dependent)
        return 0;
    const pm_poly_stmt *s = L->part;
    if (!s && L->n == 1) {
        isl_ast_expr *call = isl_ast_node_user_get_expr(L->users[0]);
        s = pm_llvm_call_stmt(g, call);
        isl_ast_expr_free(call);
    }
    const pm_poly_storage *st = s ? pm_poly_storage_of(g->poly, g->poly->stages[s->stage].func) : NULL;
    if (!st || st->kind != PM_STORAGE_OUTPUT || !st->streamed)
        return 0;
    *elem = pm_type_size(st->type);
    int bytes = L->W * *elem;
    return bytes < 16 ? 0 : bytes > 64 ? 64 : bytes;
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

/* Emits loop L (start and last set, users or part set) with vectors of W lanes under the
 * gather guard, scalar code for what they leave; trip is the constant trip count or -1. */
static void emit_vector_loop(pm_llvm *g, vector_loop *L, long long trip, body_traits traits)
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
    int w = L->updates ? 0 : short_lanes(trip, W), A = 0, elem = 1;
    if (L->updates) {
        loop_then_scalar(g, L);
    } else if (w > 0) {
        /* fewer points than W: one vector of w lanes from the start and one ending at
         * the last point (overlapping, harmless: the statements are pure) */
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
    } else if ((A = stream_alignment(g, L, traits, &elem)) > 0) {
        streamed_loop(g, L, A, elem);
    } else if (traits.start_dependent || traits.reads < ONE_BODY_MIN_READS) {
        loop_and_tail(g, L);
    } else {
        one_body_loop(g, L);
    }
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

static bool vector_loop_of(pm_llvm *g, __isl_keep isl_ast_node *node, LLVMValueRef first,
                           LLVMValueRef last)
{
    int W = g->vector_width;
    if (W <= 1 || W > 64 || !unit_inc(node))
        return false;
    for_node f = for_node_get(node);
    isl_ast_node *users[MAX_USERS] = {0};
    int n = upper_bound_cond(f.cond, f.id) ? body_users(f.body, users, MAX_USERS) : 0;
    /* a constant loop of fewer than 4 points (a border piece's two columns) stays
     * scalar: vectors would never run, yet their bodies would be built and compiled */
    long long trip = n > 0 && !first ? constant_trip(node, f.cond) : -1;
    LLVMValueRef start = first, end = last;
    if (n > 0 && !first) {
        isl_ast_expr *init = isl_ast_node_for_get_init(node);
        start = pm_llvm_ast_expr(g, init);
        end = loop_last(g, f.cond);
        isl_ast_expr_free(init);
        /* bounds that are constants only in LLVM (a box template's, ast.h: bilateral
         * grid's 11 bins ran scalar, its blurs 2.5-4x slower) */
        if (trip < 0 && LLVMIsAConstantInt(start) && LLVMIsAConstantInt(end)) {
            long long a = LLVMConstIntGetSExtValue(start), b = LLVMConstIntGetSExtValue(end);
            trip = b >= a ? b - a + 1 : 0;
        }
    }
    bool ok = n > 0 && (trip < 0 || trip >= 4);
    for (int i = 0; ok && i < n; i++)
        ok = user_ok(g, users[i], f.id);
    bool updates = ok && body_updates(g, users, n, &ok);
    if (updates && trip >= 0 && trip < W)
        ok = false; /* no full vector */
    if (ok) {
        vector_loop loop = {.node = node, .id = f.id, .users = users, .n = n, .W = W,
                            .ranged = first != NULL, .updates = updates, .start = start,
                            .last = end};
        emit_vector_loop(g, &loop, trip, loop_traits(g, users, n));
    }
    for (int k = 0; k < n; k++)
        isl_ast_node_free(users[k]);
    for_node_clear(&f);
    return ok;
}

/* A part's points lo .. hi at the row of point `row`: with vectors when the part
 * qualifies (as user_ok), else a scalar loop. */
static void part_loop(pm_llvm *g, const pm_poly_stmt *part, const pm_point *row,
                      LLVMValueRef lo, LLVMValueRef hi)
{
    int W = g->vector_width;
    vector_loop loop = {.part = part, .row = row, .W = W, .start = lo, .last = hi};
    if (W <= 1 || W > 64 || !stmt_vector_ok(g, part)) {
        pm_llvm_counted_loop(g, lo, hi, 1, part_point, &loop);
        return;
    }
    body_traits t = {.budget = 20000};
    stmt_traits(g, part, &t);
    emit_vector_loop(g, &loop, -1, t);
}

bool pm_llvm_parts_for(pm_llvm *g, __isl_keep isl_ast_node *node)
{
    if (!unit_inc(node))
        return false;
    for_node f = for_node_get(node);
    isl_ast_node *user = NULL;
    bool ok = upper_bound_cond(f.cond, f.id) && body_users(f.body, &user, 1) == 1;
    isl_ast_expr *call = ok ? isl_ast_node_user_get_expr(user) : NULL;
    const pm_poly_stmt *s = call ? pm_llvm_call_stmt(g, call) : NULL;
    ok = s && s->nparts > 0 && call_along(call, s, f.id);
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
            pm_llvm_part_interval(g, s, p, row.pos, &lo, &hi);
            lo = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, lo, start, ""), lo, start, "part_lo");
            hi = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, hi, last, ""), hi, last, "part_hi");
            part_loop(g, &s->parts[p], &row, lo, hi);
            if (next) {
                LLVMBuildBr(B, next);
                LLVMPositionBuilderAtEnd(B, next);
            }
        }
    }
    isl_ast_expr_free(call);
    isl_ast_node_free(user);
    for_node_clear(&f);
    return ok;
}

/* ---- rows of bins in registers (schedule.c, PM_MARK_PRIVATE) --------------------------- */

/* A privatized block: the window's loops (iterators and first values) down to the lanes'
 * loop, whose body is instances of one reduction update with a bin (poly.h). */
typedef struct private_shape {
    isl_id *window[2 * PM_MAX_DIMS];
    isl_ast_expr *winit[2 * PM_MAX_DIMS];
    int nwindow;
    isl_ast_node *lanes;
    isl_id *id;
    isl_ast_expr *init, *cond;
    isl_ast_node *users[PM_PRIVATE_MAX_USERS];
    int n;
    const pm_poly_stmt *s;
} private_shape;

static void private_shape_clear(private_shape *sh)
{
    for (int w = 0; w < sh->nwindow; w++) {
        isl_id_free(sh->window[w]);
        isl_ast_expr_free(sh->winit[w]);
    }
    for (int k = 0; k < sh->n; k++)
        isl_ast_node_free(sh->users[k]);
    isl_ast_node_free(sh->lanes);
    isl_id_free(sh->id);
    isl_ast_expr_free(sh->init);
    isl_ast_expr_free(sh->cond);
}

static bool private_shape_get(pm_llvm *g, __isl_keep isl_ast_node *node, int W,
                              private_shape *sh)
{
    isl_ast_node *cur = isl_ast_node_copy(node);
    while (isl_ast_node_get_type(cur) == isl_ast_node_for) {
        isl_ast_node *body = isl_ast_node_for_get_body(cur);
        if (isl_ast_node_get_type(body) != isl_ast_node_for || sh->nwindow == 2 * PM_MAX_DIMS) {
            isl_ast_node_free(body);
            break;
        }
        isl_ast_expr *it = isl_ast_node_for_get_iterator(cur);
        sh->window[sh->nwindow] = isl_ast_expr_id_get_id(it);
        sh->winit[sh->nwindow++] = isl_ast_node_for_get_init(cur);
        isl_ast_expr_free(it);
        isl_ast_node_free(cur);
        cur = body;
    }
    sh->lanes = cur;
    if (isl_ast_node_get_type(cur) != isl_ast_node_for || !unit_inc(cur))
        return false;
    for_node f = for_node_get(cur);
    sh->id = isl_id_copy(f.id);
    sh->init = isl_ast_node_for_get_init(cur);
    sh->cond = isl_ast_expr_copy(f.cond);
    bool ok = upper_bound_cond(f.cond, f.id);
    for (int w = 0; ok && w < sh->nwindow; w++)
        ok = !mentions(sh->init, sh->window[w]) && !mentions(sh->cond, sh->window[w]);
    sh->n = ok ? body_users(f.body, sh->users, PM_PRIVATE_MAX_USERS) : 0;
    ok = ok && sh->n > 0;
    for (int k = 0; ok && k < sh->n; k++) {
        isl_ast_expr *call = isl_ast_node_user_get_expr(sh->users[k]);
        const pm_poly_stmt *s = pm_llvm_call_stmt(g, call);
        ok = s && (!sh->s || s == sh->s) && s->kind == PM_STMT_UPDATE && s->bin_extent > 0 &&
             s->bin_extent <= W && update_vector_ok(g, call, s, f.id);
        sh->s = s;
        isl_ast_expr_free(call);
    }
    const pm_poly_storage *st = ok ? pm_poly_storage_of(g->poly, g->poly->stages[sh->s->stage].func) : NULL;
    ok = ok && st;
    for (int d = 0; ok && d < st->ndims; d++)
        ok = st->step[d] == 1;
    for_node_clear(&f);
    return ok;
}

/* The point of update instance `user` at the lanes from the lanes' iterator's value. */
static bool private_point(pm_llvm *g, __isl_keep isl_ast_node *user, __isl_keep isl_id *lane,
                          int W, pm_point *pt)
{
    isl_ast_expr *call = isl_ast_node_user_get_expr(user);
    bool ok = pm_llvm_point_of_call(g, call, pt);
    int k = ok ? lane_dim(call, pt->stmt, lane) : -1;
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

/* The bins of a lane's cell row are contiguous (the innermost dimension) and 16 lanes of
 * 32 bits hold at most 16 bins: the rows of bins are stored by transposing the bins'
 * vectors (lane l of bin e to element e of row l) and one masked store of E elements
 * per lane's row, instead of E scatters (bilateral grid's histogram spent a quarter of
 * its samples in the 30 scatters after each block's window). */
static bool bins_by_rows(const pm_llvm *g, const pm_point *pt, int si, int bin, int E)
{
    const pm_poly_storage *st = &g->poly->storage[si];
    return pt->W == 16 && E <= 16 && bin == st->ndims - 1 && pm_type_size(st->type) == 4 &&
           st->step[bin] == 1;
}

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
    int W = g->vector_width;
    private_shape sh = {.nwindow = 0};
    if (W <= 1 || W > 64 || g->priv || !private_shape_get(g, node, W, &sh)) {
        private_shape_clear(&sh);
        return false;
    }
    LLVMBuilderRef B = g->B;
    const pm_poly_stmt *s = sh.s;
    const pm_func *f = g->poly->stages[s->stage].func;
    int si = pm_llvm_storage_index(g, f), E = s->bin_extent, bin = s->bin_dim;
    const pm_llvm_buf *b = &g->env.bufs[si];
    pm_llvm_memo_off(g);
    /* the window's first point names the points outside its loops: the rows' indices do
     * not depend on it */
    for (int w = 0; w < sh.nwindow; w++)
        pm_llvm_push_iter(g, sh.window[w], pm_llvm_ast_expr(g, sh.winit[w]));
    LLVMValueRef start = pm_llvm_ast_expr(g, sh.init), last = loop_last(g, sh.cond);
    LLVMValueRef full = LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildNSWSub(B, last, start, ""),
                                      LLVMConstInt(g->t_i64, (unsigned)W - 1, 0), "");
    bool *gathered = calloc((size_t)g->poly->nstorage + 1, sizeof *gathered);
    bool *outer_gathered = g->gathered;
    g->gathered = gathered;
    if (gathered) /* the rows' offsets are 32-bit, whether scattered to or stored by row */
        gathered[si] = true;
    LLVMValueRef fits_later = LLVMBuildFreeze(B, LLVMGetUndef(g->t_i1), "fits32");
    LLVMValueRef ok = LLVMBuildAnd(B, LLVMBuildAnd(B, g->env.unit_stride, fits_later, ""), full, "");
    LLVMBasicBlockRef rows = pm_llvm_block(g, "bin_rows"), usual = pm_llvm_block(g, "bin_usual");
    LLVMBasicBlockRef done = pm_llvm_block(g, "bin_done");
    LLVMBuildCondBr(B, ok, rows, usual);
    LLVMPositionBuilderAtEnd(B, rows);
    LLVMValueRef strides[PM_POLY_MAX_STORAGE_UNIT];
    int nsaved = unit_strides(g, strides, true);
    pm_private_rows pr = {.lane = sh.id, .start = start, .n = sh.n};
    pm_point pts[PM_PRIVATE_MAX_USERS];
    LLVMValueRef row[PM_PRIVATE_MAX_USERS];
    LLVMTypeRef v32 = LLVMVectorType(g->t_i32, (unsigned)W);
    LLVMTypeRef vt = LLVMVectorType(pm_llvm_type(g, f->type), (unsigned)W);
    LLVMValueRef all = pm_llvm_splat_n(g, (unsigned)W, LLVMConstInt(g->t_i1, 1, 0));
    LLVMValueRef bin_stride = LLVMBuildTrunc(B, b->stride[bin], g->t_i32, "");
    /* When two updates of a common cell agree in every dimension but the window's (poly.h:
     * distinct_cell_dims; the window being the dimensions after the lanes' but the
     * channel), all of a cell's updates are in this block, so its rows hold their initial
     * value here: a constant one needs no load. A dimension outside the blocks that adds
     * to the same rows (layers summed) needs the load. */
    LLVMValueRef fresh = NULL;
    isl_ast_expr *call0 = isl_ast_node_user_get_expr(sh.users[0]);
    int lane_k = lane_dim(call0, s, sh.id);
    isl_ast_expr_free(call0);
    bool own_cells = lane_k >= 0 && s->ndims <= 32;
    for (int k = 0; own_cells && k < s->ndims; k++)
        own_cells = (k > lane_k && k != s->free_channel_dim) || (s->distinct_cell_dims & (1u << k));
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
            fresh = pm_llvm_splat_n(g, (unsigned)W, fresh);
    }
    pm_llvm_push_iter(g, sh.id, start);
    bool got = true;
    for (int k = 0; got && k < sh.n; k++) {
        got = private_point(g, sh.users[k], sh.id, W, &pts[k]);
        row[k] = LLVMConstNull(v32);
        for (int d = 0; got && d < f->ndims; d++) {
            if (d == bin)
                continue;
            const pm_expr *ie = f->rindex[d];
            g->exact++; /* an index is discrete */
            LLVMValueRef c = pm_llvm_convert(g, pm_llvm_expr(g, &pts[k], ie), ie->type, PM_I64);
            g->exact--;
            LLVMValueRef i = pm_llvm_index(g, &pts[k], si, d, pm_llvm_splat(g, &pts[k], c));
            LLVMValueRef t = LLVMBuildMul(B, LLVMBuildTrunc(B, i, v32, ""),
                                          pm_llvm_splat(g, &pts[k], LLVMBuildTrunc(B, b->stride[d], g->t_i32, "")), "");
            row[k] = LLVMBuildAdd(B, row[k], t, "");
        }
        for (int e = 0; got && e < E; e++) {
            pr.acc[k][e] = pm_llvm_entry_alloca(g, vt, "bins"); /* registers after the passes */
            if (fresh) {
                LLVMBuildStore(B, fresh, pr.acc[k][e]);
                continue;
            }
            LLVMValueRef at = bin_offsets(g, &pts[k], row[k], e, bin_stride);
            LLVMBuildStore(B, pm_llvm_gather_cells(g, &pts[k], si, at, all), pr.acc[k][e]);
        }
    }
    pm_llvm_pop_iter(g);
    for (int w = 0; w < sh.nwindow; w++)
        pm_llvm_pop_iter(g);
    /* The accumulators of a pass fit the vector registers (AVX-512's 32, AVX2's 16) beside
     * the bins' compare constants and a few values of the point (its pixel, bin, value
     * and mask): with more, the window runs once per pass, its shared work done again.
     * Bilateral grid's two channels of 15 bins run in two passes: in one, 30 accumulators
     * and 15 constants spilled every window step, 1.03-1.05x slower (pm_sweep, 1 and 2
     * threads) since its pixels are read by strided loads, not gathers. */
    int reg_bytes = g->avx512f ? 64 : 32, budget = (g->avx512f ? 32 : 16) - E - 4;
    int per_acc = (W * pm_type_size(f->type) + reg_bytes - 1) / reg_bytes;
    int per_pass = budget / (E * per_acc);
    per_pass = per_pass < 1 ? 1 : per_pass;
    if (!got)
        pm_error_set(g->err, PM_ERR_INTERNAL, "%s: a privatized block's point", f->name);
    for (int first = 0; got && first < sh.n; first += per_pass) {
        pr.first = first;
        pr.count = sh.n - first < per_pass ? sh.n - first : per_pass;
        g->priv = &pr;
        pm_llvm_node(g, node);
        g->priv = NULL;
        for (int k = first; k < first + pr.count; k++) {
            if (bins_by_rows(g, &pts[k], si, bin, E)) {
                store_rows_of_bins(g, &pts[k], si, row[k], E, pr.acc[k], vt);
                continue;
            }
            for (int e = 0; e < E; e++)
                pm_llvm_scatter_cells(g, &pts[k], si, bin_offsets(g, &pts[k], row[k], e, bin_stride),
                                      all, LLVMBuildLoad2(B, vt, pr.acc[k][e], ""));
        }
    }
    if (nsaved >= 0)
        unit_strides(g, strides, false);
    LLVMBuildBr(B, done);
    g->gathered = outer_gathered;
    finish_gather_guard(g, fits_later, gathered);
    LLVMPositionBuilderAtEnd(B, usual);
    pm_llvm_node(g, node);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
    private_shape_clear(&sh);
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
    int n = body_users(body, users, PM_PRIVATE_MAX_USERS);
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
