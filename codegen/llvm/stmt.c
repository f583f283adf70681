/* llvm/stmt.c — statement bodies (see llvm.h).
 *
 *  case piece:  if (residual conditions) f(x) = value      (vectors: a masked store)
 *  merged cases: f(x) = cond_0 ? value_0 : cond_1 ? value_1 : ... value_last
 *  cases merged by row: if (cond_0) f(x) = value_0; else if (cond_1) ... else value_last
 *  init:        f(x) = initial
 *  update:      i = index(r); if (i inside f's domain) f(i) = op(f(i), value(r))
 *               (vectors, lanes on W different cells: gather, op, scatter, masked to
 *               the lanes inside)
 *  merged:      the part whose interval at the point's row holds it (poly.h)
 * A point's coordinates come from the user node's arguments (i64 expressions of the
 * iterators) converted to the variables' type, i32.
 */
#include "codegen/llvm/llvm.h"

#include "codegen/ast.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const pm_poly_stmt *pm_llvm_call_stmt(pm_llvm *g, __isl_keep isl_ast_expr *call)
{
    return pm_lower_call_stmt(g->poly, g->box, call);
}

bool pm_llvm_point_of_call(pm_llvm *g, __isl_keep isl_ast_expr *call, pm_point *pt)
{
    const pm_poly_stmt *s = pm_llvm_call_stmt(g, call);
    int n = isl_ast_expr_op_get_n_arg(call) - 1;
    if (!s || n != s->ndims) {
        pm_error_set(g->err, PM_ERR_INTERNAL, "%s: AST calls an unknown statement",
                     g->poly->pipeline->name);
        return false;
    }
    *pt = (pm_point){.stmt = s, .W = 1};
    for (int d = 0; d < n; d++) {
        isl_ast_expr *a = isl_ast_expr_op_get_arg(call, d + 1);
        pt->pos[d] = pm_llvm_ast_expr(g, a);
        pt->var[d] = LLVMBuildTrunc(g->B, pt->pos[d], g->t_i32, s->vars[d]->name);
        pt->lane_step[d] = 0;
        isl_ast_expr_free(a);
    }
    return true;
}

/* Cases merged by row (poly.h, branch_cases): their conditions do not involve the
 * innermost dimension, the only one whose lanes differ, so lane 0 decides for the vector;
 * a branch to the first case that holds, each case evaluated and stored on its own path
 * (calls memoized per path: a value of one path does not reach the others). */
static void branch_cases(pm_llvm *g, const pm_point *pt, pm_func *f)
{
    const pm_poly_stmt *s = pt->stmt;
    pm_point row = *pt;
    row.W = 1;
    for (int d = 0; d < s->ndims; d++) {
        row.lane_step[d] = 0;
        row.lanes[d] = NULL;
    }
    LLVMBasicBlockRef done = pm_llvm_block(g, "cases_end");
    int last = s->case_index + s->ncases - 1;
    for (int c = s->case_index; c <= last; c++) {
        const pm_case *k = f->cases[c];
        if (c < last) {
            /* this block follows the previous case's path, whose values it cannot use */
            pm_llvm_memo_reset(g);
            LLVMValueRef holds =
                pm_llvm_cond(g, &row, k->cond);
            LLVMBasicBlockRef yes = pm_llvm_block(g, "case"), next = pm_llvm_block(g, "case_next");
            LLVMBuildCondBr(g->B, holds, yes, next);
            LLVMPositionBuilderAtEnd(g->B, yes);
            pm_llvm_memo_reset(g);
            LLVMValueRef v = pm_llvm_convert(g, pm_llvm_expr(g, pt, k->value), k->value->type, f->type);
            pm_llvm_store_own(g, pt, v, NULL);
            LLVMBuildBr(g->B, done);
            LLVMPositionBuilderAtEnd(g->B, next);
        } else {
            pm_llvm_memo_reset(g);
            LLVMValueRef v = pm_llvm_convert(g, pm_llvm_expr(g, pt, k->value), k->value->type, f->type);
            pm_llvm_store_own(g, pt, v, NULL);
            LLVMBuildBr(g->B, done);
        }
    }
    LLVMPositionBuilderAtEnd(g->B, done);
}

static void case_stmt(pm_llvm *g, const pm_point *pt, pm_func *f)
{
    const pm_poly_stmt *s = pt->stmt;
    LLVMValueRef mask = NULL;
    for (int r = 0; r < s->nresidual; r++) {
        const pm_expr *c = s->residual[r];
        LLVMValueRef v = pm_llvm_cond(g, pt, c);
        mask = mask ? LLVMBuildAnd(g->B, mask, v, "") : v;
    }
    if (s->branch_cases) {
        branch_cases(g, pt, f);
        return;
    }
    if (s->ncases > 1) { /* merged cases (poly.h): the first whose condition holds */
        int last = s->case_index + s->ncases - 1;
        const pm_expr *lv = f->cases[last]->value;
        LLVMValueRef v = pm_llvm_convert(g, pm_llvm_expr(g, pt, lv), lv->type, f->type);
        for (int c = last - 1; c >= s->case_index; c--) {
            const pm_case *k = f->cases[c];
            LLVMValueRef cv = pm_llvm_convert(g, pm_llvm_expr(g, pt, k->value), k->value->type, f->type);
            LLVMValueRef holds = pm_llvm_cond(g, pt, k->cond);
            v = LLVMBuildSelect(g->B, holds, cv, v, "");
        }
        pm_llvm_store_own(g, pt, v, NULL);
        return;
    }
    const pm_expr *value = f->cases[s->case_index]->value;
    if (mask && pt->W <= 1) {
        /* points where the condition fails are not written (and not computed) */
        LLVMBasicBlockRef yes = pm_llvm_block(g, "case"), done = pm_llvm_block(g, "case_end");
        LLVMBuildCondBr(g->B, mask, yes, done);
        LLVMPositionBuilderAtEnd(g->B, yes);
        LLVMValueRef v = pm_llvm_convert(g, pm_llvm_expr(g, pt, value), value->type, f->type);
        pm_llvm_store_own(g, pt, v, NULL);
        LLVMBuildBr(g->B, done);
        LLVMPositionBuilderAtEnd(g->B, done);
        return;
    }
    LLVMValueRef v = pm_llvm_convert(g, pm_llvm_expr(g, pt, value), value->type, f->type);
    pm_llvm_store_own(g, pt, v, mask);
}

static void init_stmt(pm_llvm *g, const pm_point *pt, pm_func *f)
{
    LLVMValueRef v = f->initial
                         ? pm_llvm_convert(g, pm_llvm_expr(g, pt, f->initial), f->initial->type,
                                           f->type)
                         : pm_llvm_const(g, pt, f->type, 0, 0);
    pm_llvm_store_own(g, pt, v, NULL);
}

/* The update of pt's W lanes in a privatized block (vector.c, pm_llvm_private_block):
 * each lane's row of bins is in registers, one <W x T> per bin; the bin holding the
 * lane's index takes the operation (exact, as the scalar update), the others stay. An
 * index outside the bins matches none (the update is skipped, polymage.h). */
static void private_update(pm_llvm *g, const pm_point *pt, pm_func *f, int s)
{
    LLVMBuilderRef B = g->B;
    pm_private_rows *pr = g->priv;
    int bin = pt->stmt->bin_dim;
    const pm_expr *ie = f->rindex[bin];
    g->exact++; /* an index is discrete */
    LLVMValueRef c = pm_llvm_convert(g, pm_llvm_expr(g, pt, ie), ie->type, PM_I64);
    g->exact--;
    LLVMValueRef i = pm_llvm_index(g, pt, s, bin, pm_llvm_splat(g, pt, c));
    /* An index of a signed 32-bit or narrower type less a lower bound within 2^30 lies
     * in (-3 * 2^30, 3 * 2^30): its low 32 bits are in [0, bins) exactly when it is, and
     * the compares then take one instruction a vector, not two and a merge of masks. */
    int64_t lb = f->intervals[bin]->lb->ival;
    LLVMTypeRef it = g->t_i64;
    if ((ie->type == PM_I32 || (pm_type_bits(ie->type) < 32 && ie->type != PM_BOOL)) &&
        lb >= -(INT64_C(1) << 30) && lb <= (INT64_C(1) << 30)) {
        it = g->t_i32;
        i = LLVMBuildTrunc(B, i, LLVMVectorType(it, (unsigned)pt->W), "");
    }
    LLVMValueRef v = pm_llvm_splat(g, pt, pm_llvm_convert(g, pm_llvm_expr(g, pt, f->rvalue),
                                                          f->rvalue->type, f->type));
    LLVMTypeRef vt = LLVMVectorType(pm_llvm_type(g, f->type), (unsigned)pt->W);
    for (int e = 0; e < pt->stmt->bin_extent; e++) {
        LLVMValueRef here = LLVMBuildICmp(
            B, LLVMIntEQ, i, pm_llvm_splat(g, pt, LLVMConstInt(it, (unsigned)e, 0)), "");
        LLVMValueRef a = LLVMBuildLoad2(B, vt, pr->acc[pr->current][e], "");
        g->exact++;
        LLVMValueRef na = pm_llvm_binop(g, pm_reduce_binop(f->reduce_op), f->type, a, v);
        g->exact--;
        LLVMBuildStore(B, LLVMBuildSelect(B, here, na, a, ""), pr->acc[pr->current][e]);
    }
}

/* The updates of pt's W lanes, which write W different cells (vector.c,
 * update_vector_ok): each lane's cell index and inside test as vectors, the cells
 * gathered where inside, combined with the lanes' values and scattered back. */
static void vector_update(pm_llvm *g, const pm_point *pt, pm_func *f, int s)
{
    LLVMBuilderRef B = g->B;
    if (g->priv) {
        private_update(g, pt, f, s);
        return;
    }
    const pm_poly_storage *st = &g->poly->storage[s];
    const pm_llvm_buf *b = &g->env.bufs[s];
    unsigned W = (unsigned)pt->W;
    LLVMTypeRef v32 = LLVMVectorType(g->t_i32, W);
    LLVMValueRef inside = pm_llvm_splat(g, pt, LLVMConstInt(g->t_i1, 1, 0)), off = NULL;
    for (int d = 0; d < f->ndims; d++) {
        const pm_expr *ie = f->rindex[d];
        g->exact++; /* an index is discrete */
        LLVMValueRef c = pm_llvm_convert(g, pm_llvm_expr(g, pt, ie), ie->type, PM_I64);
        g->exact--;
        LLVMValueRef i = pm_llvm_index(g, pt, s, d, pm_llvm_splat(g, pt, c));
        if (!(d < 32 && (pt->stmt->write_inside_dims & (1u << d)) && st->step[d] == 1)) {
            LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntULT, i, pm_llvm_splat(g, pt, b->ext[d]), "");
            if (st->step[d] != 1) {
                LLVMValueRef step = pm_llvm_splat(g, pt, LLVMConstInt(g->t_i64, (unsigned long long)st->step[d], 0));
                LLVMValueRef rel = LLVMBuildSub(B, pm_llvm_splat(g, pt, c), pm_llvm_splat(g, pt, b->lb[d]), "");
                ok = LLVMBuildAnd(B, ok, LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildSRem(B, rel, step, ""),
                                                       LLVMConstNull(LLVMTypeOf(rel)), ""), "");
            }
            inside = LLVMBuildAnd(B, inside, ok, "");
        }
        /* no wrap flags: a lane outside the domain may hold any index (it is masked) */
        LLVMValueRef t = LLVMBuildMul(B, LLVMBuildTrunc(B, i, v32, ""),
                                      pm_llvm_splat(g, pt, LLVMBuildTrunc(B, b->stride[d], g->t_i32, "")), "");
        off = off ? LLVMBuildAdd(B, off, t, "") : t;
    }
    if (!off)
        return;
    LLVMValueRef v = pm_llvm_splat(g, pt, pm_llvm_convert(g, pm_llvm_expr(g, pt, f->rvalue),
                                                          f->rvalue->type, f->type));
    LLVMValueRef old = pm_llvm_gather_cells(g, pt, s, off, inside);
    g->exact++; /* as the scalar update: the interpreter's rounding, cell by cell */
    LLVMValueRef nv = pm_llvm_binop(g, pm_reduce_binop(f->reduce_op), f->type, old, v);
    g->exact--;
    pm_llvm_scatter_cells(g, pt, s, off, inside, nv);
}

static void update_stmt(pm_llvm *g, const pm_point *pt, pm_func *f)
{
    LLVMBuilderRef B = g->B;
    int s = pm_llvm_storage_index(g, f);
    const pm_poly_storage *st = &g->poly->storage[s];
    const pm_llvm_buf *b = &g->env.bufs[s];
    if (pm_type_is_float(f->type) &&
        (f->reduce_op == PM_REDUCE_AND || f->reduce_op == PM_REDUCE_OR)) {
        pm_error_set(g->err, PM_ERR_UNSUPPORTED, "%s: and/or reduction of a float", f->name);
        return;
    }
    if (pt->W > 1) {
        vector_update(g, pt, f, s);
        return;
    }
    /* An index outside the variable domain skips the update (polymage.h). */
    LLVMValueRef idx[PM_MAX_DIMS], inside = LLVMConstInt(g->t_i1, 1, 0);
    LLVMValueRef zero = LLVMConstInt(g->t_i64, 0, 0);
    for (int d = 0; d < f->ndims; d++) {
        const pm_expr *ie = f->rindex[d];
        g->exact++; /* an index is discrete */
        LLVMValueRef c = pm_llvm_convert(g, pm_llvm_expr(g, pt, ie), ie->type, PM_I64);
        g->exact--;
        idx[d] = pm_llvm_index(g, pt, s, d, c);
        if (d < 32 && (pt->stmt->write_inside_dims & (1u << d)) && st->step[d] == 1)
            continue; /* proven inside (poly.c) */
        /* 0 <= idx < ext as one unsigned comparison: every extent is at least 0 (a
         * scratch buffer's is clamped to 0, an output's checked against its shape before
         * the kernel runs), and a negative index is a huge unsigned one. LLVM could not
         * tell the extent's sign: two compares and branches per update (bilateral grid's
         * histogram) */
        LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntULT, idx[d], b->ext[d], "");
        if (st->step[d] != 1) {
            LLVMValueRef off = LLVMBuildSub(B, c, b->lb[d], "");
            LLVMValueRef on = LLVMBuildICmp(
                B, LLVMIntEQ,
                LLVMBuildSRem(B, off, LLVMConstInt(g->t_i64, (unsigned long long)st->step[d], 0), ""),
                zero, "");
            ok = LLVMBuildAnd(B, ok, on, "");
        }
        inside = LLVMBuildAnd(B, inside, ok, "");
    }
    LLVMBasicBlockRef yes = pm_llvm_block(g, "update"), done = pm_llvm_block(g, "update_end");
    LLVMBuildCondBr(B, inside, yes, done);
    LLVMPositionBuilderAtEnd(B, yes);
    LLVMValueRef p = pm_llvm_addr(g, s, idx);
    LLVMTypeRef ty = pm_llvm_type(g, f->type);
    LLVMValueRef old = LLVMBuildLoad2(B, ty, p, f->name);
    LLVMSetAlignment(old, (unsigned)pm_type_size(f->type));
    pm_llvm_tag_access(g, old, s);
    LLVMValueRef v = pm_llvm_convert(g, pm_llvm_expr(g, pt, f->rvalue), f->rvalue->type, f->type);
    /* the update itself rounds as the interpreter's does: a product added to the cell
     * (hist += px * w) stays two roundings, so sums keep the interpreter's value in its
     * order */
    g->exact++;
    LLVMValueRef nv = pm_llvm_binop(g, pm_reduce_binop(f->reduce_op), f->type, old, v);
    g->exact--;
    LLVMValueRef store = LLVMBuildStore(B, nv, p);
    LLVMSetAlignment(store, (unsigned)pm_type_size(f->type));
    pm_llvm_tag_access(g, store, s);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
}

/* Part p's bounds of the given kinds at the row pos: lower and upper (the max of the
 * lower bounds in *lo, the min of the upper ones in *hi) or the row conditions (their
 * conjunction in *lo, true when there are none). */
static void part_bounds(pm_llvm *g, const pm_poly_stmt *s, int p, const LLVMValueRef *pos,
                        bool row_kinds, LLVMValueRef *lo, LLVMValueRef *hi)
{
    LLVMBuilderRef B = g->B;
    const pm_poly_part_bounds *b = &s->part_bounds[p];
    for (int d = 0; d < s->ndims - 1; d++)
        pm_llvm_push_iter(g, s->row_id[d], pos[d]);
    LLVMValueRef l = NULL, h = NULL, row = LLVMConstInt(g->t_i1, 1, 0);
    LLVMValueRef zero = LLVMConstInt(g->t_i64, 0, 0);
    for (int i = 0; i < b->n; i++) {
        bool is_row = b->kind[i] == PM_BOUND_ROW_GE || b->kind[i] == PM_BOUND_ROW_EQ;
        if (is_row != row_kinds)
            continue;
        LLVMValueRef v = pm_llvm_aff_floor(g, b->aff[i]);
        if (b->kind[i] == PM_BOUND_LOWER)
            l = !l ? v : LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, v, l, ""), v, l, "");
        else if (b->kind[i] == PM_BOUND_UPPER)
            h = !h ? v : LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, v, h, ""), v, h, "");
        else
            row = LLVMBuildAnd(B, row, LLVMBuildICmp(B, b->kind[i] == PM_BOUND_ROW_EQ ? LLVMIntEQ
                                                                                    : LLVMIntSGE,
                                                     v, zero, ""), "");
    }
    for (int d = 0; d < s->ndims - 1; d++)
        pm_llvm_pop_iter(g);
    if (row_kinds) {
        *lo = row;
        return;
    }
    if (!l || !h) { /* poly.c never makes such a part */
        pm_error_set(g->err, PM_ERR_INTERNAL, "%s: part %d without bounds", s->name, p);
        l = h = zero;
    }
    *lo = l;
    *hi = h;
}

LLVMValueRef pm_llvm_part_row(pm_llvm *g, const pm_poly_stmt *s, int p, const LLVMValueRef *pos)
{
    LLVMValueRef row;
    part_bounds(g, s, p, pos, true, &row, NULL);
    return row;
}

void pm_llvm_part_interval(pm_llvm *g, const pm_poly_stmt *s, int p, const LLVMValueRef *pos,
                           LLVMValueRef *lo, LLVMValueRef *hi)
{
    part_bounds(g, s, p, pos, false, lo, hi);
}

/* A merged statement's point (poly.h): the part whose interval at the point's row holds
 * its innermost coordinate, or none (the statement covers the function's box, the parts
 * what its cases define). Rows' loops split at the intervals instead
 * (pm_llvm_parts_for); this is for points isl emits alone and loops that do not qualify. */
static void parts_point(pm_llvm *g, const pm_point *pt)
{
    const pm_poly_stmt *s = pt->stmt;
    if (pt->W != 1) {
        pm_error_set(g->err, PM_ERR_INTERNAL, "%s: a merged statement in a vector loop", s->name);
        return;
    }
    LLVMBuilderRef B = g->B;
    LLVMValueRef x = pt->pos[s->ndims - 1];
    LLVMBasicBlockRef done = pm_llvm_block(g, "parts_end");
    for (int p = 0; p < s->nparts; p++) {
        pm_point q = *pt;
        q.stmt = &s->parts[p];
        LLVMValueRef lo, hi, row = pm_llvm_part_row(g, s, p, pt->pos);
        pm_llvm_part_interval(g, s, p, pt->pos, &lo, &hi);
        LLVMValueRef in = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSLE, lo, x, ""),
                                       LLVMBuildICmp(B, LLVMIntSLE, x, hi, ""), "");
        in = LLVMBuildAnd(B, row, in, "in_part");
        LLVMBasicBlockRef yes = pm_llvm_block(g, "part"), next = pm_llvm_block(g, "part_next");
        LLVMBuildCondBr(B, in, yes, next);
        LLVMPositionBuilderAtEnd(B, yes);
        pm_llvm_stmt(g, &q);
        LLVMBuildBr(B, done);
        LLVMPositionBuilderAtEnd(B, next);
    }
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
}

void pm_llvm_stmt(pm_llvm *g, const pm_point *pt)
{
    if (pt->stmt->nparts > 0) {
        parts_point(g, pt);
        return;
    }
    pm_func *f = g->poly->stages[pt->stmt->stage].func;
    pm_llvm_memo_reset(g); /* nodes are computed once per statement and point (llvm.h) */
    g->exact = g->poly->stages[pt->stmt->stage].float_exact;
    switch (pt->stmt->kind) {
    case PM_STMT_CASE: case_stmt(g, pt, f); break;
    case PM_STMT_INIT: init_stmt(g, pt, f); break;
    case PM_STMT_UPDATE: update_stmt(g, pt, f); break;
    }
    g->exact = 0;
    pm_llvm_memo_off(g);
}
