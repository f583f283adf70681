/* llvm/loops.c — isl AST nodes and isl AST expressions to LLVM IR (see llvm.h).
 *
 * isl AST expressions are integers (i64 here) or conditions (i1). Loops become the
 * usual header/body/latch blocks with a phi for the iterator. The innermost loop over a
 * unit-stride dimension is handed to the vector emitter first (the lowering decided
 * whether it runs with vectors); a loop below a "parallel" mark goes to parallel.c.
 */
#include "codegen/llvm/llvm.h"

#include "codegen/ast.h"
#include "codegen/schedule.h"

#include <isl/aff.h>
#include <isl/id.h>
#include <isl/space.h>
#include <isl/val.h>
#include <stdlib.h>
#include <string.h>

void pm_llvm_push_iter(pm_llvm *g, __isl_keep isl_id *id, LLVMValueRef v)
{
    if (g->env.niters == PM_LLVM_MAX_ITERS) {
        pm_error_set(g->err, PM_ERR_UNSUPPORTED, "%s: loop nest deeper than %d",
                     g->poly->pipeline->name, PM_LLVM_MAX_ITERS);
        return;
    }
    g->env.iter_id[g->env.niters] = id;
    g->env.iter[g->env.niters++] = v;
}

void pm_llvm_pop_iter(pm_llvm *g)
{
    if (g->env.niters > 0)
        g->env.niters--;
}

/* ---- expressions ---------------------------------------------------------------------- */

static LLVMValueRef as_int(pm_llvm *g, LLVMValueRef v)
{
    if (LLVMTypeOf(v) == g->t_i1)
        return LLVMBuildZExt(g->B, v, g->t_i64, "");
    return v;
}

static LLVMValueRef as_bool(pm_llvm *g, LLVMValueRef v)
{
    if (LLVMTypeOf(v) != g->t_i1)
        return LLVMBuildICmp(g->B, LLVMIntNE, v, pm_llvm_i64(g, 0), "");
    return v;
}

static LLVMValueRef arg(pm_llvm *g, __isl_keep isl_ast_expr *e, int i)
{
    isl_ast_expr *a = isl_ast_expr_op_get_arg(e, i);
    LLVMValueRef v = pm_llvm_ast_expr(g, a);
    isl_ast_expr_free(a);
    return v;
}

/* floor(a / b) for any signs (isl's fdiv_q; b is a positive constant in practice). */
static LLVMValueRef floor_div(pm_llvm *g, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef q = LLVMBuildSDiv(g->B, a, b, "");
    LLVMValueRef r = LLVMBuildSRem(g->B, a, b, "");
    LLVMValueRef nz = LLVMBuildICmp(g->B, LLVMIntNE, r, pm_llvm_i64(g, 0), "");
    LLVMValueRef neg = LLVMBuildICmp(g->B, LLVMIntSLT, LLVMBuildXor(g->B, r, b, ""), pm_llvm_i64(g, 0), "");
    return LLVMBuildSub(g->B, q, LLVMBuildZExt(g->B, LLVMBuildAnd(g->B, nz, neg, ""), g->t_i64, ""), "");
}

static LLVMValueRef id_value(pm_llvm *g, __isl_keep isl_id *id)
{
    for (int i = g->env.niters - 1; i >= 0; i--)
        if (g->env.iter_id[i] == id)
            return g->env.iter[i];
    const pm_expr *param = isl_id_get_user(id);
    if (!param) { /* a part's AST built in a context of its own (ast.h): by name */
        const char *name = isl_id_get_name(id);
        isl_size np = isl_space_dim(g->poly->params, isl_dim_param);
        for (int i = 0; name && i < np && !param; i++) {
            isl_id *pid = isl_space_get_dim_id(g->poly->params, isl_dim_param, (unsigned)i);
            if (pid && strcmp(isl_id_get_name(pid), name) == 0)
                param = isl_id_get_user(pid);
            isl_id_free(pid);
        }
    }
    if (param && param->kind == PM_EXPR_PARAM)
        return pm_llvm_param(g, param);
    pm_error_set(g->err, PM_ERR_INTERNAL, "AST refers to unknown identifier %s", isl_id_get_name(id));
    return pm_llvm_i64(g, 0);
}

/* i64 k * v, with k an integer isl value (taken) that fits in i64. */
static LLVMValueRef times(pm_llvm *g, __isl_take isl_val *k, LLVMValueRef v)
{
    int64_t c = isl_val_get_num_si(k);
    isl_val_free(k);
    return c == 1 ? v : LLVMBuildNSWMul(g->B, pm_llvm_i64(g, c), v, "");
}

LLVMValueRef pm_llvm_aff_floor(pm_llvm *g, __isl_keep isl_aff *aff)
{
    /* aff = (constant + sum of coefficient * parameter or division) / denominator, with
     * each division floor(its own aff), which may use only earlier divisions */
    isl_val *den = isl_aff_get_denominator_val(aff);
    isl_val *k = isl_val_mul(isl_aff_get_constant_val(aff), isl_val_copy(den));
    LLVMValueRef sum = pm_llvm_i64(g, isl_val_get_num_si(k));
    isl_val_free(k);
    static const enum isl_dim_type kinds[] = {isl_dim_param, isl_dim_in, isl_dim_div};
    for (int t = 0; t < 3; t++) {
        isl_size n = isl_aff_dim(aff, kinds[t]);
        for (int i = 0; i < n; i++) {
            k = isl_val_mul(isl_aff_get_coefficient_val(aff, kinds[t], i), isl_val_copy(den));
            if (isl_val_is_zero(k) == isl_bool_true) {
                isl_val_free(k);
                continue;
            }
            LLVMValueRef v;
            if (kinds[t] == isl_dim_param) {
                isl_space *sp = isl_aff_get_domain_space(aff);
                isl_id *id = isl_space_get_dim_id(sp, isl_dim_param, (unsigned)i);
                v = id_value(g, id);
                isl_id_free(id);
                isl_space_free(sp);
            } else if (kinds[t] == isl_dim_div) {
                isl_aff *div = isl_aff_get_div(aff, i);
                v = pm_llvm_aff_floor(g, div);
                isl_aff_free(div);
            } else { /* an expression over the parameters only (poly.h) */
                pm_error_set(g->err, PM_ERR_INTERNAL, "%s: a bound over a loop dimension",
                             g->poly->pipeline->name);
                v = pm_llvm_i64(g, 0);
            }
            sum = LLVMBuildNSWAdd(g->B, sum, times(g, k, v), "");
        }
    }
    bool one = isl_val_is_one(den) == isl_bool_true;
    LLVMValueRef r = one ? sum : floor_div(g, sum, pm_llvm_i64(g, isl_val_get_num_si(den)));
    isl_val_free(den);
    return r;
}

/* An isl AST expression that is a leaf: an integer, or an iterator's or a parameter's
 * value. */
static LLVMValueRef ast_leaf(pm_llvm *g, __isl_keep isl_ast_expr *e)
{
    if (isl_ast_expr_get_type(e) == isl_ast_expr_int) {
        isl_val *v = isl_ast_expr_int_get_val(e);
        int64_t x = isl_val_get_num_si(v);
        isl_val_free(v);
        return pm_llvm_i64(g, x);
    }
    isl_id *id = isl_ast_expr_id_get_id(e);
    LLVMValueRef v = id_value(g, id);
    isl_id_free(id);
    return v;
}

/* max(a, b, ...) or min(a, b, ...) as a chain of compares and selects. */
static LLVMValueRef ast_min_max(pm_llvm *g, __isl_keep isl_ast_expr *e,
                                enum isl_ast_expr_op_type op)
{
    LLVMBuilderRef B = g->B;
    int n = isl_ast_expr_op_get_n_arg(e);
    LLVMValueRef r = as_int(g, arg(g, e, 0));
    for (int i = 1; i < n; i++) {
        LLVMValueRef b = as_int(g, arg(g, e, i));
        LLVMValueRef c = LLVMBuildICmp(B, op == isl_ast_expr_op_max ? LLVMIntSGT : LLVMIntSLT,
                                       r, b, "");
        r = LLVMBuildSelect(B, c, r, b, "");
    }
    return r;
}

/* An arithmetic operation (minus, add, sub, mul and the divisions). isl's expressions
 * are exact integers of values that fit in i64 (coordinates and extents of checked
 * buffers): nsw tells LLVM so, for its induction-variable and address analyses. */
static LLVMValueRef ast_arith(pm_llvm *g, __isl_keep isl_ast_expr *e,
                              enum isl_ast_expr_op_type op)
{
    LLVMBuilderRef B = g->B;
    switch (op) {
    case isl_ast_expr_op_minus:
        return LLVMBuildNSWNeg(B, as_int(g, arg(g, e, 0)), "");
    case isl_ast_expr_op_add:
        return LLVMBuildNSWAdd(B, as_int(g, arg(g, e, 0)), as_int(g, arg(g, e, 1)), "");
    case isl_ast_expr_op_sub:
        return LLVMBuildNSWSub(B, as_int(g, arg(g, e, 0)), as_int(g, arg(g, e, 1)), "");
    case isl_ast_expr_op_mul:
        return LLVMBuildNSWMul(B, as_int(g, arg(g, e, 0)), as_int(g, arg(g, e, 1)), "");
    case isl_ast_expr_op_div: /* exact */
        return LLVMBuildExactSDiv(B, as_int(g, arg(g, e, 0)), as_int(g, arg(g, e, 1)), "");
    case isl_ast_expr_op_fdiv_q:
        return floor_div(g, as_int(g, arg(g, e, 0)), as_int(g, arg(g, e, 1)));
    case isl_ast_expr_op_pdiv_q: /* non-negative dividend, positive divisor */
        return LLVMBuildSDiv(B, as_int(g, arg(g, e, 0)), as_int(g, arg(g, e, 1)), "");
    default: /* isl_ast_expr_op_pdiv_r, isl_ast_expr_op_zdiv_r: only compared with zero:
                the C remainder will do */
        return LLVMBuildSRem(B, as_int(g, arg(g, e, 0)), as_int(g, arg(g, e, 1)), "");
    }
}

/* c ? a : b, both sides integers when their types differ. */
static LLVMValueRef ast_select(pm_llvm *g, __isl_keep isl_ast_expr *e)
{
    LLVMValueRef c = as_bool(g, arg(g, e, 0));
    LLVMValueRef a = arg(g, e, 1), b = arg(g, e, 2);
    if (LLVMTypeOf(a) != LLVMTypeOf(b)) {
        a = as_int(g, a);
        b = as_int(g, b);
    }
    return LLVMBuildSelect(g->B, c, a, b, "");
}

LLVMValueRef pm_llvm_ast_expr(pm_llvm *g, __isl_keep isl_ast_expr *e)
{
    enum isl_ast_expr_type type = isl_ast_expr_get_type(e);
    if (type == isl_ast_expr_int || type == isl_ast_expr_id)
        return ast_leaf(g, e);
    if (type != isl_ast_expr_op) {
        pm_error_set(g->err, PM_ERR_INTERNAL, "bad isl AST expression");
        return pm_llvm_i64(g, 0);
    }
    LLVMBuilderRef B = g->B;
    enum isl_ast_expr_op_type op = isl_ast_expr_op_get_type(e);
    switch (op) {
    case isl_ast_expr_op_and:
    case isl_ast_expr_op_and_then: /* no side effects: evaluating both is fine */
        return LLVMBuildAnd(B, as_bool(g, arg(g, e, 0)), as_bool(g, arg(g, e, 1)), "");
    case isl_ast_expr_op_or:
    case isl_ast_expr_op_or_else:
        return LLVMBuildOr(B, as_bool(g, arg(g, e, 0)), as_bool(g, arg(g, e, 1)), "");
    case isl_ast_expr_op_max:
    case isl_ast_expr_op_min:
        return ast_min_max(g, e, op);
    case isl_ast_expr_op_minus:
    case isl_ast_expr_op_add:
    case isl_ast_expr_op_sub:
    case isl_ast_expr_op_mul:
    case isl_ast_expr_op_div:
    case isl_ast_expr_op_fdiv_q:
    case isl_ast_expr_op_pdiv_q:
    case isl_ast_expr_op_pdiv_r:
    case isl_ast_expr_op_zdiv_r:
        return ast_arith(g, e, op);
    case isl_ast_expr_op_cond:
    case isl_ast_expr_op_select:
        return ast_select(g, e);
    case isl_ast_expr_op_eq:
    case isl_ast_expr_op_le:
    case isl_ast_expr_op_lt:
    case isl_ast_expr_op_ge:
    case isl_ast_expr_op_gt: {
        static const LLVMIntPredicate pred[] = {
            [isl_ast_expr_op_eq] = LLVMIntEQ, [isl_ast_expr_op_le] = LLVMIntSLE,
            [isl_ast_expr_op_lt] = LLVMIntSLT, [isl_ast_expr_op_ge] = LLVMIntSGE,
            [isl_ast_expr_op_gt] = LLVMIntSGT};
        return LLVMBuildICmp(B, pred[op], as_int(g, arg(g, e, 0)), as_int(g, arg(g, e, 1)), "");
    }
    default:
        pm_error_set(g->err, PM_ERR_UNSUPPORTED, "%s: isl AST operation %d is not supported",
                     g->poly->pipeline->name, (int)op);
        return pm_llvm_i64(g, 0);
    }
}

/* ---- loops ---------------------------------------------------------------------------- */

void pm_llvm_counted_loop(pm_llvm *g, LLVMValueRef lo, LLVMValueRef hi, int64_t step,
                          void (*body)(pm_llvm *g, LLVMValueRef i, void *user), void *user)
{
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->B);
    LLVMBasicBlockRef head = pm_llvm_block(g, "loop"), bb = pm_llvm_block(g, "body");
    LLVMBasicBlockRef done = pm_llvm_block(g, "done");
    LLVMBuildBr(g->B, head);
    LLVMPositionBuilderAtEnd(g->B, head);
    LLVMValueRef i = LLVMBuildPhi(g->B, g->t_i64, "i");
    LLVMAddIncoming(i, &lo, &pre, 1);
    LLVMBuildCondBr(g->B, LLVMBuildICmp(g->B, LLVMIntSLE, i, hi, ""), bb, done);
    LLVMPositionBuilderAtEnd(g->B, bb);
    body(g, i, user);
    LLVMValueRef next = LLVMBuildNSWAdd(g->B, i, pm_llvm_i64(g, step), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->B);
    LLVMAddIncoming(i, &next, &latch, 1);
    LLVMBuildBr(g->B, head);
    LLVMPositionBuilderAtEnd(g->B, done);
}

/* A for node with its iterator's start value given: header/body/latch, condition and
 * increment from the AST. Returns nothing; the builder ends after the loop. */
static void for_loop_from(pm_llvm *g, __isl_keep isl_ast_node *node, LLVMValueRef start)
{
    isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
    isl_id *id = isl_ast_expr_id_get_id(it);
    isl_ast_expr *cond = isl_ast_node_for_get_cond(node);
    isl_ast_expr *inc = isl_ast_node_for_get_inc(node);
    isl_ast_node *body = isl_ast_node_for_get_body(node);

    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->B);
    LLVMBasicBlockRef head = pm_llvm_block(g, "for"), bb = pm_llvm_block(g, "for_body");
    LLVMBasicBlockRef done = pm_llvm_block(g, "for_end");
    LLVMBuildBr(g->B, head);
    LLVMPositionBuilderAtEnd(g->B, head);
    LLVMValueRef i = LLVMBuildPhi(g->B, g->t_i64, isl_id_get_name(id));
    LLVMAddIncoming(i, &start, &pre, 1);
    pm_llvm_push_iter(g, id, i);
    LLVMBuildCondBr(g->B, as_bool(g, pm_llvm_ast_expr(g, cond)), bb, done);
    LLVMPositionBuilderAtEnd(g->B, bb);
    pm_llvm_node(g, body);
    LLVMValueRef next = LLVMBuildNSWAdd(g->B, i, pm_llvm_ast_expr(g, inc), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->B);
    LLVMAddIncoming(i, &next, &latch, 1);
    LLVMBuildBr(g->B, head);
    pm_llvm_pop_iter(g);
    LLVMPositionBuilderAtEnd(g->B, done);

    isl_ast_node_free(body);
    isl_ast_expr_free(inc);
    isl_ast_expr_free(cond);
    isl_id_free(id);
    isl_ast_expr_free(it);
}

static void for_node(pm_llvm *g, __isl_keep isl_ast_node *node)
{
    if (g->priv && pm_llvm_private_lanes(g, node))
        return;
    if (isl_ast_node_for_is_degenerate(node) == isl_bool_true) {
        /* one iteration: the iterator is just a name for init */
        isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
        isl_id *id = isl_ast_expr_id_get_id(it);
        isl_ast_expr *init = isl_ast_node_for_get_init(node);
        isl_ast_node *body = isl_ast_node_for_get_body(node);
        pm_llvm_push_iter(g, id, pm_llvm_ast_expr(g, init));
        pm_llvm_node(g, body);
        pm_llvm_pop_iter(g);
        isl_ast_node_free(body);
        isl_ast_expr_free(init);
        isl_id_free(id);
        isl_ast_expr_free(it);
        return;
    }
    if (pm_llvm_parts_for(g, node) || pm_llvm_vector_for(g, node))
        return;
    isl_ast_expr *init = isl_ast_node_for_get_init(node);
    LLVMValueRef start = pm_llvm_ast_expr(g, init);
    isl_ast_expr_free(init);
    for_loop_from(g, node, start);
}

/* Exported for the vector emitter: the scalar remainder loop from a given start. */
void pm_llvm_for_from(pm_llvm *g, __isl_keep isl_ast_node *node, LLVMValueRef start)
{
    for_loop_from(g, node, start);
}

static void if_node(pm_llvm *g, __isl_keep isl_ast_node *node)
{
    isl_ast_expr *cond = isl_ast_node_if_get_cond(node);
    LLVMValueRef c = as_bool(g, pm_llvm_ast_expr(g, cond));
    isl_ast_expr_free(cond);
    LLVMBasicBlockRef then_bb = pm_llvm_block(g, "then"), merge = pm_llvm_block(g, "endif");
    bool has_else = isl_ast_node_if_has_else_node(node) == isl_bool_true;
    LLVMBasicBlockRef else_bb = has_else ? pm_llvm_block(g, "else") : merge;
    LLVMBuildCondBr(g->B, c, then_bb, else_bb);
    LLVMPositionBuilderAtEnd(g->B, then_bb);
    isl_ast_node *t = isl_ast_node_if_get_then_node(node);
    pm_llvm_node(g, t);
    isl_ast_node_free(t);
    LLVMBuildBr(g->B, merge);
    if (has_else) {
        LLVMPositionBuilderAtEnd(g->B, else_bb);
        isl_ast_node *e = isl_ast_node_if_get_else_node(node);
        pm_llvm_node(g, e);
        isl_ast_node_free(e);
        LLVMBuildBr(g->B, merge);
    }
    LLVMPositionBuilderAtEnd(g->B, merge);
}

static void user_node(pm_llvm *g, __isl_keep isl_ast_node *node)
{
    isl_ast_expr *call = isl_ast_node_user_get_expr(node);
    pm_point pt;
    if (pm_llvm_point_of_call(g, call, &pt))
        pm_llvm_stmt(g, &pt);
    isl_ast_expr_free(call);
}

/* The max (lower) or min (upper) of a box dimension's bounds of that kind. */
static LLVMValueRef box_extreme(pm_llvm *g, const pm_poly_part_bounds *b, int kind)
{
    LLVMBuilderRef B = g->B;
    LLVMValueRef r = NULL;
    for (int i = 0; i < b->n; i++) {
        if (b->kind[i] != kind)
            continue;
        LLVMValueRef v = pm_llvm_aff_floor(g, b->aff[i]);
        LLVMIntPredicate keep = kind == PM_BOUND_LOWER ? LLVMIntSGT : LLVMIntSLT;
        r = !r ? v : LLVMBuildSelect(B, LLVMBuildICmp(B, keep, v, r, ""), v, r, "");
    }
    return r ? r : pm_llvm_i64(g, 0); /* ast.c gives every dimension both kinds */
}

/* A box body's run of producers (ast.h): where its guards hold, the template's loops over
 * the box of this tile (the tile ids bound by the caller), in a function of its own; in
 * row blocks (first_row = rows * block), the rows of this block only, inline. */
static void box_run(pm_llvm *g, const pm_ast_box *b, LLVMValueRef first_row, LLVMValueRef later,
                    int64_t rows)
{
    const pm_ast *ast = g->ast;
    int n = b->nstmts > 0 ? b->stmts[0]->ndims : 0;
    if (b->empty || !b->loops || n < 1 || n > PM_MAX_DIMS)
        return;
    LLVMBuilderRef B = g->B;
    LLVMValueRef holds = LLVMConstInt(g->t_i1, 1, 0), zero = pm_llvm_i64(g, 0);
    for (int i = 0; i < b->guard.n; i++)
        holds = LLVMBuildAnd(B, holds,
                             LLVMBuildICmp(B, b->guard.kind[i] == PM_BOUND_ROW_EQ ? LLVMIntEQ : LLVMIntSGE,
                                           pm_llvm_aff_floor(g, b->guard.aff[i]), zero, ""), "");
    LLVMBasicBlockRef next = NULL;
    if (LLVMIsAConstantInt(holds) && LLVMConstIntGetZExtValue(holds) == 0)
        return;
    if (!LLVMIsAConstantInt(holds)) {
        LLVMBasicBlockRef yes = pm_llvm_block(g, "box");
        next = pm_llvm_block(g, "box_next");
        LLVMBuildCondBr(B, holds, yes, next);
        LLVMPositionBuilderAtEnd(B, yes);
    }
    for (int d = 0; d < n; d++) {
        LLVMValueRef lo = box_extreme(g, &b->dim[d], PM_BOUND_LOWER);
        LLVMValueRef hi = box_extreme(g, &b->dim[d], PM_BOUND_UPPER);
        if (first_row && d == b->row_dim) { /* the block's rows (ast.h) */
            LLVMValueRef r0 = LLVMBuildAdd(B, first_row, pm_llvm_i64(g, b->reach), "");
            LLVMValueRef r1 = LLVMBuildAdd(B, r0, pm_llvm_i64(g, rows - 1), "");
            LLVMValueRef clip = LLVMBuildAnd(B, later, LLVMBuildICmp(B, LLVMIntSGT, r0, lo, ""), "");
            lo = LLVMBuildSelect(B, clip, r0, lo, "");
            hi = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, r1, hi, ""), r1, hi, "");
        }
        pm_llvm_push_iter(g, ast->box_lo[d], lo);
        pm_llvm_push_iter(g, ast->box_hi[d], hi);
    }
    g->box = b;
    /* in a block, inline: the block loop is the tile's function */
    if (first_row || !pm_llvm_outline(g, b->loops))
        pm_llvm_node(g, b->loops);
    g->box = NULL;
    for (int d = 0; d < 2 * n; d++)
        pm_llvm_pop_iter(g);
    if (next) {
        LLVMBuildBr(B, next);
        LLVMPositionBuilderAtEnd(B, next);
    }
}

/* The user pointer of a mark node's annotation (ast.c), or NULL. */
static void *annotation_of(__isl_keep isl_ast_node *node)
{
    isl_id *ann = isl_ast_node_get_annotation(node);
    void *user = ann ? isl_id_get_user(ann) : NULL;
    isl_id_free(ann);
    return user;
}

/* The copy of an exported member's own part (plan.h's pm_group.exported): from its
 * scratchpad (`from`, re-based for this tile) to its full buffer (`to`), row by row; a
 * row in vectors of the kernel's width, then one element at a time. */
typedef struct copy_ctx {
    int s, n, d, W;
    const pm_llvm_buf *from, *to;
    LLVMValueRef lo[PM_MAX_DIMS], hi[PM_MAX_DIMS], x[PM_MAX_DIMS];
} copy_ctx;

static LLVMValueRef copy_addr(pm_llvm *g, const copy_ctx *c, const pm_llvm_buf *b)
{
    LLVMValueRef off = pm_llvm_i64(g, 0);
    for (int d = 0; d < c->n; d++)
        off = LLVMBuildAdd(g->B, off,
                           LLVMBuildMul(g->B, LLVMBuildSub(g->B, c->x[d], b->lb[d], ""),
                                        b->stride[d], ""), "");
    LLVMTypeRef et = pm_llvm_type(g, g->poly->storage[c->s].type);
    return LLVMBuildGEP2(g->B, et, b->base, &off, 1, "");
}

static void copy_elements(pm_llvm *g, copy_ctx *c, LLVMValueRef x, int W)
{
    c->x[c->n - 1] = x;
    const pm_poly_storage *st = &g->poly->storage[c->s];
    LLVMTypeRef et = pm_llvm_type(g, st->type);
    LLVMTypeRef t = W > 1 ? LLVMVectorType(et, (unsigned)W) : et;
    unsigned align = (unsigned)pm_type_size(st->type);
    LLVMValueRef v = LLVMBuildLoad2(g->B, t, copy_addr(g, c, c->from), "");
    LLVMSetAlignment(v, align);
    pm_llvm_tag_access(g, v, c->s);
    LLVMValueRef w = LLVMBuildStore(g->B, v, copy_addr(g, c, c->to));
    LLVMSetAlignment(w, align);
    pm_llvm_tag_access(g, w, c->s);
}

static void copy_vector(pm_llvm *g, LLVMValueRef x, void *user)
{
    copy_ctx *c = user;
    copy_elements(g, c, x, c->W);
}

static void copy_scalar(pm_llvm *g, LLVMValueRef x, void *user)
{
    copy_elements(g, user, x, 1);
}

static void copy_dim(pm_llvm *g, copy_ctx *c, int d);

static void copy_outer(pm_llvm *g, LLVMValueRef x, void *user)
{
    copy_ctx *c = user;
    int d = c->d;
    c->x[d] = x;
    copy_dim(g, c, d + 1);
    c->d = d;
}

/* The copy's loops from dimension d inward: along the innermost, whole vectors while
 * their last lane is inside (x <= hi - W + 1), then the elements from where they end,
 * lo + W * floor(max(0, hi - lo + 1) / W). */
static void copy_dim(pm_llvm *g, copy_ctx *c, int d)
{
    c->d = d;
    if (d < c->n - 1) {
        pm_llvm_counted_loop(g, c->lo[d], c->hi[d], 1, copy_outer, c);
        return;
    }
    LLVMValueRef tail = c->lo[d];
    if (c->W > 1) {
        pm_llvm_counted_loop(g, c->lo[d], LLVMBuildSub(g->B, c->hi[d], pm_llvm_i64(g, c->W - 1), ""),
                             c->W, copy_vector, c);
        LLVMValueRef span = LLVMBuildAdd(g->B, LLVMBuildSub(g->B, c->hi[d], c->lo[d], ""),
                                         pm_llvm_i64(g, 1), "");
        LLVMValueRef none = LLVMBuildICmp(g->B, LLVMIntSLT, span, pm_llvm_i64(g, 0), "");
        span = LLVMBuildSelect(g->B, none, pm_llvm_i64(g, 0), span, "");
        LLVMValueRef whole = LLVMBuildMul(g->B, LLVMBuildSDiv(g->B, span, pm_llvm_i64(g, c->W), ""),
                                          pm_llvm_i64(g, c->W), "");
        tail = LLVMBuildAdd(g->B, c->lo[d], whole, "tail");
    }
    pm_llvm_counted_loop(g, tail, c->hi[d], 1, copy_scalar, c);
}

/* Below a "tile" mark: every scratchpad of the group gets this thread's memory and
 * this tile's origin (the annotation's AST expressions of the tile iterators). An
 * exported member's full buffer is its description outside the tile: its scratchpads
 * follow it in the slot, and at the tile's end its own part is copied out. */
static void tile_body(pm_llvm *g, __isl_keep isl_ast_node *node, __isl_keep isl_ast_node *child)
{
    const pm_tile_origins *o = annotation_of(node);
    if (!o) {
        pm_error_set(g->err, PM_ERR_INTERNAL, "%s: a tile without origins", g->poly->pipeline->name);
        return;
    }
    pm_llvm_buf *saved = malloc((size_t)(o->n + 1) * sizeof *saved);
    if (!saved) {
        pm_error_set(g->err, PM_ERR_NOMEM, "%s: out of memory", g->poly->pipeline->name);
        return;
    }
    LLVMTypeRef ity = LLVMFunctionType(g->t_i32, NULL, 0, 0);
    LLVMValueRef tid = LLVMBuildSExt(
        g->B, LLVMBuildCall2(g->B, ity, pm_llvm_declare(g, "omp_get_thread_num", ity), NULL, 0, "tid"),
        g->t_i64, "");
    for (int i = 0; i < o->n; i++) {
        int s = o->storage[i];
        const pm_poly_storage *st = &g->poly->storage[s];
        pm_llvm_buf *b = &g->env.bufs[s];
        saved[i] = *b;
        LLVMValueRef off = LLVMBuildMul(g->B, tid, pm_llvm_i64(g, g->place[s].tile_bytes), "");
        if (g->place[s].exported) {
            off = LLVMBuildAdd(g->B, off, pm_llvm_full_part_bytes(g, s, b), "");
            pm_llvm_tile_shape(g, s, b);
        }
        b->base = LLVMBuildGEP2(g->B, g->t_i8, b->base, &off, 1, st->func->name);
        for (int d = 0; d < st->ndims; d++)
            b->lb[d] = pm_llvm_ast_expr(g, o->lb[i][d]);
    }
    /* a box body's producers (ast.h), then the rest; each stage of the tile in a
     * function of its own (llvm/parallel.c) */
    int gi = (int)(o->group - g->ast->plan->groups);
    int nboxes = o->ntile > 0 ? g->ast->nboxes[gi] : 0;
    for (int d = 0; d < o->ntile && nboxes > 0; d++)
        pm_llvm_push_iter(g, g->ast->tile_id[d], pm_llvm_ast_expr(g, o->tile[d]));
    if (o->first_block)
        pm_llvm_push_iter(g, g->ast->first_block_id, pm_llvm_ast_expr(g, o->first_block));
    for (int m = 0; m < nboxes && g->ast->block_rows[gi] == 0; m++)
        box_run(g, &g->ast->boxes[gi][m], NULL, NULL, 0); /* in blocks: at the "block" mark */
    if (isl_ast_node_get_type(child) == isl_ast_node_block) {
        isl_ast_node_list *list = isl_ast_node_block_get_children(child);
        int n = isl_ast_node_list_n_ast_node(list);
        for (int i = 0; i < n; i++) {
            isl_ast_node *c = isl_ast_node_list_get_ast_node(list, i);
            if (!pm_llvm_outline(g, c))
                pm_llvm_node(g, c);
            isl_ast_node_free(c);
        }
        isl_ast_node_list_free(list);
    } else if (!pm_llvm_outline(g, child)) {
        pm_llvm_node(g, child);
    }
    for (int i = 0; i < o->n; i++) {
        int s = o->storage[i];
        if (!g->place[s].exported)
            continue;
        copy_ctx c = {.s = s, .n = g->poly->storage[s].ndims, .d = 0,
                      .W = g->vector_width > 1 ? g->vector_width : 1,
                      .from = &g->env.bufs[s], .to = &saved[i]};
        for (int d = 0; d < c.n; d++) {
            c.lo[d] = pm_llvm_ast_expr(g, o->own_lb[i][d]);
            c.hi[d] = pm_llvm_ast_expr(g, o->own_ub[i][d]);
        }
        if (c.n > 0)
            copy_dim(g, &c, 0);
    }
    for (int d = 0; d < o->ntile && nboxes > 0; d++)
        pm_llvm_pop_iter(g);
    if (o->first_block)
        pm_llvm_pop_iter(g);
    for (int i = 0; i < o->n; i++)
        g->env.bufs[o->storage[i]] = saved[i];
    free(saved);
}

/* Below a "block" mark (a box body in row blocks): the runs' rows of this block, then
 * the rest (the tile ids were bound at the "tile" mark above). */
static void block_body(pm_llvm *g, __isl_keep isl_ast_node *node, __isl_keep isl_ast_node *child)
{
    const pm_block_index *bi = annotation_of(node);
    if (!bi) {
        pm_error_set(g->err, PM_ERR_INTERNAL, "%s: a block without its index", g->poly->pipeline->name);
        return;
    }
    int gi = (int)(bi->group - g->ast->plan->groups);
    int64_t B = g->ast->block_rows[gi];
    LLVMValueRef block = pm_llvm_ast_expr(g, bi->block);
    /* blocks start with the tiles, at their origin (schedule.c's block band) */
    LLVMValueRef first_row =
        LLVMBuildAdd(g->B, LLVMBuildMul(g->B, block, pm_llvm_i64(g, B), ""),
                     pm_llvm_i64(g, g->ast->plan->groups[gi].tile_origin[0]), "");
    /* the tile's first block computes its producers' rows from their boxes' first */
    LLVMValueRef later = LLVMBuildICmp(g->B, LLVMIntSGT, block,
                                       id_value(g, g->ast->first_block_id), "");
    for (int m = 0; m < g->ast->nboxes[gi]; m++)
        box_run(g, &g->ast->boxes[gi][m], first_row, later, B);
    pm_llvm_node(g, child);
}

static void mark_node(pm_llvm *g, __isl_keep isl_ast_node *node)
{
    isl_id *id = isl_ast_node_mark_get_id(node);
    const char *name = isl_id_get_name(id);
    bool tiles = strcmp(name, PM_MARK_TILES) == 0;
    bool parallel = (strcmp(name, PM_MARK_PARALLEL) == 0 || tiles) && !g->in_parallel;
    bool tile = strcmp(name, PM_MARK_TILE) == 0, block = strcmp(name, PM_MARK_BLOCK) == 0;
    bool private_rows = strcmp(name, PM_MARK_PRIVATE) == 0;
    isl_id_free(id);
    isl_ast_node *child = isl_ast_node_mark_get_node(node);
    if (private_rows) {
        if (!pm_llvm_private_block(g, child))
            pm_llvm_node(g, child);
    } else if (tile) {
        tile_body(g, node, child);
    } else if (block) {
        block_body(g, node, child);
    } else if (!parallel) {
        pm_llvm_node(g, child);
    } else if (isl_ast_node_get_type(child) == isl_ast_node_for) {
        if (!pm_llvm_parallel_for(g, child, tiles))
            pm_llvm_node(g, child);
    } else if (isl_ast_node_get_type(child) == isl_ast_node_block) {
        /* separation may split the parallel loop into several: each runs in parallel */
        isl_ast_node_list *list = isl_ast_node_block_get_children(child);
        int n = isl_ast_node_list_n_ast_node(list);
        for (int i = 0; i < n; i++) {
            isl_ast_node *c = isl_ast_node_list_get_ast_node(list, i);
            if (isl_ast_node_get_type(c) != isl_ast_node_for || !pm_llvm_parallel_for(g, c, tiles))
                pm_llvm_node(g, c);
            isl_ast_node_free(c);
        }
        isl_ast_node_list_free(list);
    } else {
        pm_llvm_node(g, child);
    }
    isl_ast_node_free(child);
}

void pm_llvm_node(pm_llvm *g, __isl_keep isl_ast_node *node)
{
    if (g->err->status != PM_OK)
        return;
    switch (isl_ast_node_get_type(node)) {
    case isl_ast_node_for:
        for_node(g, node);
        break;
    case isl_ast_node_if:
        if_node(g, node);
        break;
    case isl_ast_node_block: {
        isl_ast_node_list *list = isl_ast_node_block_get_children(node);
        int n = isl_ast_node_list_n_ast_node(list);
        for (int i = 0; i < n; i++) {
            isl_ast_node *c = isl_ast_node_list_get_ast_node(list, i);
            pm_llvm_node(g, c);
            isl_ast_node_free(c);
        }
        isl_ast_node_list_free(list);
        break;
    }
    case isl_ast_node_user:
        user_node(g, node);
        break;
    case isl_ast_node_mark:
        mark_node(g, node);
        break;
    default:
        pm_error_set(g->err, PM_ERR_INTERNAL, "unknown isl AST node");
    }
}
