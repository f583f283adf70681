/* llvm/access.c — reads and writes of buffers (see llvm.h).
 *
 * Element (i0, i1, ...) of a storage lives at base + sum(i_d * stride_d), with
 * i_d = floor((coord_d - lb_d) / step_d); a scalar address of a step-1 innermost index is
 * built as a row origin (base + the outer terms - lb * stride) plus coord * stride, so
 * loops along that dimension need no strength reduction (runtime/jit_engine.c).
 * Reads proven inside the callee's box use the index as is; every other read clamps each
 * index to [0, extent_d - 1]: it never leaves the buffer, and where the value is used
 * the index was in range anyway, so clamping changes no result.
 * A read of W lanes follows the strategy the lowering chose (lower.h, pm_read_plan):
 * broadcast, contiguous load, strided loads and a shuffle tree (strided_load), a masked
 * load for up-sampling (upsample_load), a row per level (level_select), a gather
 * (gather_at), two short rows permuted by lane (table_read), a small table's permutes
 * (small_table_read); an unproven row read is guarded (guarded_row_load).
 * Contiguous loads and stores rely on unit innermost strides: the vector loop only runs
 * when every caller buffer has them (env.unit_stride); scratch buffers are dense.
 */
#include "codegen/llvm/llvm.h"

#include <isl/aff.h>
#include <isl/val.h>
#include <limits.h>
#include <string.h>

#define NONLINEAR PM_LANE_NONLINEAR

static bool is_vec(LLVMValueRef v)
{
    return LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind;
}

int pm_llvm_storage_index(const pm_llvm *g, const pm_func *f)
{
    const pm_poly_storage *s = pm_poly_storage_of(g->poly, f);
    return s ? (int)(s - g->poly->storage) : -1;
}

/* A buffer value (scalar i64) in pt's lanes. */
static LLVMValueRef lanes(pm_llvm *g, const pm_point *pt, LLVMValueRef v)
{
    return pm_llvm_splat(g, pt, v);
}

static LLVMValueRef k64(pm_llvm *g, const pm_point *pt, int64_t v)
{
    return lanes(g, pt, pm_llvm_i64(g, v));
}

LLVMValueRef pm_llvm_index(pm_llvm *g, const pm_point *pt, int storage, int d, LLVMValueRef c)
{
    const pm_poly_storage *st = &g->poly->storage[storage];
    LLVMValueRef r = LLVMBuildNSWSub(g->B, c, lanes(g, pt, g->env.bufs[storage].lb[d]), "");
    if (st->step[d] != 1) {
        /* floor division by the (positive) step */
        LLVMValueRef s = k64(g, pt, st->step[d]);
        LLVMValueRef q = LLVMBuildSDiv(g->B, r, s, "");
        LLVMValueRef neg = LLVMBuildICmp(g->B, LLVMIntSLT, LLVMBuildSRem(g->B, r, s, ""),
                                         k64(g, pt, 0), "");
        r = LLVMBuildSub(g->B, q, LLVMBuildZExt(g->B, neg, LLVMTypeOf(q), ""), "");
    }
    return r;
}

LLVMValueRef pm_llvm_addr(pm_llvm *g, int storage, LLVMValueRef *idx)
{
    const pm_poly_storage *st = &g->poly->storage[storage];
    const pm_llvm_buf *b = &g->env.bufs[storage];
    LLVMValueRef off = NULL;
    int n = st->ndims;
    /* A scalar address whose innermost index is coordinate - lb (pm_llvm_index, step 1):
     * the row's origin, base + outer offsets - lb * stride, apart from coordinate * stride,
     * so the origin is invariant in the innermost loop (LICM hoists it) and the loop's
     * addresses are origin + coordinate * stride: one induction variable for every
     * access, nothing for loop strength reduction to rewrite. */
    if (n > 0 && !is_vec(idx[n - 1]) && LLVMIsABinaryOperator(idx[n - 1]) &&
        LLVMGetInstructionOpcode(idx[n - 1]) == LLVMSub &&
        LLVMGetOperand(idx[n - 1], 1) == b->lb[n - 1] && st->step[n - 1] == 1) {
        LLVMValueRef coord = LLVMGetOperand(idx[n - 1], 0);
        for (int d = 0; d < n - 1; d++) {
            LLVMValueRef t = LLVMBuildNSWMul(g->B, idx[d], b->stride[d], "");
            off = off ? LLVMBuildNSWAdd(g->B, off, t, "") : t;
        }
        LLVMValueRef lbs = LLVMBuildNSWMul(g->B, b->lb[n - 1], b->stride[n - 1], "");
        off = off ? LLVMBuildNSWSub(g->B, off, lbs, "") : LLVMBuildNSWNeg(g->B, lbs, "");
        LLVMTypeRef et = pm_llvm_type(g, st->type);
        LLVMValueRef row = LLVMBuildGEP2(g->B, et, b->base, &off, 1, "row");
        LLVMValueRef in = LLVMBuildNSWMul(g->B, coord, b->stride[n - 1], "");
        return LLVMBuildGEP2(g->B, et, row, &in, 1, "");
    }
    for (int d = 0; d < st->ndims; d++) {
        LLVMValueRef s = b->stride[d];
        if (is_vec(idx[d]))
            s = pm_llvm_splat_n(g, LLVMGetVectorSize(LLVMTypeOf(idx[d])), s);
        /* an element's offset fits: buffer sizes are checked before any code runs (frontend/signature.c) */
        LLVMValueRef t = LLVMBuildNSWMul(g->B, idx[d], s, "");
        off = off ? LLVMBuildNSWAdd(g->B, off, t, "") : t;
    }
    if (!off)
        off = pm_llvm_i64(g, 0);
    return LLVMBuildGEP2(g->B, pm_llvm_type(g, st->type), b->base, &off, 1, "");
}

/* pt's lanes as the lowering sees them. */
static pm_lane_shape shape_of(const pm_point *pt)
{
    pm_lane_shape s = {.stmt = pt->stmt, .W = pt->W, .where = pt->where};
    for (int d = 0; d < PM_MAX_DIMS; d++) {
        s.lane_step[d] = pt->lane_step[d];
        s.lanes[d] = pt->lanes[d] != NULL;
    }
    return s;
}

/* How an integer expression moves from lane to lane (lower.h). */
static int lane_coef(const pm_point *pt, const pm_expr *e)
{
    pm_lane_shape s = shape_of(pt);
    return pm_lower_lane_coef(&s, e);
}

/* The buffer indices of a call's arguments for pt's lanes (vectors when W > 1). */
/* An integer argument as its exact i64 value, or NULL when it is not an affine form of
 * the point's coordinates, integer parameters and constants (then the caller evaluates
 * it in the language's types). Only for reads proven in bounds: there the exact value is
 * the element read, and i64 arithmetic marked nsw lets LLVM see the addresses as affine
 * functions of the loop counters (strength reduction, hoisting), which sext(i32) hides. */
static LLVMValueRef affine_i64(pm_llvm *g, const pm_point *pt, const pm_expr *e)
{
    if (pt->W > 1 || !pm_type_is_int(e->type))
        return NULL;
    switch (e->kind) {
    case PM_EXPR_INT:
        return pm_llvm_i64(g, e->ival);
    case PM_EXPR_VAR:
        for (int d = 0; d < pt->stmt->ndims; d++)
            if (pt->stmt->vars[d]->id == e->id)
                return pt->pos[d];
        return NULL;
    case PM_EXPR_PARAM: {
        int slot = g->poly->pipeline->param_slot[e->id];
        /* the raw slot holds an integer parameter's value as an i64 */
        return slot >= 0 ? g->env.param_raw[slot] : NULL;
    }
    case PM_EXPR_CAST: /* integer widening (or same width) keeps the value */
        if (!pm_type_is_int(e->a->type) || pm_type_bits(e->type) < pm_type_bits(e->a->type) ||
            (pm_type_bits(e->type) == pm_type_bits(e->a->type) &&
             pm_type_is_signed(e->type) != pm_type_is_signed(e->a->type)))
            return NULL;
        return affine_i64(g, pt, e->a);
    case PM_EXPR_UNARY: {
        LLVMValueRef a = e->op == PM_OP_NEG ? affine_i64(g, pt, e->a) : NULL;
        return a ? LLVMBuildNSWNeg(g->B, a, "") : NULL;
    }
    case PM_EXPR_BINARY: {
        if (e->op != PM_OP_ADD && e->op != PM_OP_SUB && e->op != PM_OP_MUL &&
            !(e->op == PM_OP_DIV && e->b->kind == PM_EXPR_INT && e->b->ival > 0))
            return NULL;
        LLVMValueRef a = affine_i64(g, pt, e->a);
        LLVMValueRef b = a ? affine_i64(g, pt, e->b) : NULL;
        if (!b)
            return NULL;
        switch (e->op) {
        case PM_OP_ADD: return LLVMBuildNSWAdd(g->B, a, b, "");
        case PM_OP_SUB: return LLVMBuildNSWSub(g->B, a, b, "");
        case PM_OP_MUL: return LLVMBuildNSWMul(g->B, a, b, "");
        default: { /* floor division by a positive constant */
            LLVMValueRef q = LLVMBuildSDiv(g->B, a, b, "");
            LLVMValueRef neg = LLVMBuildICmp(g->B, LLVMIntSLT, LLVMBuildSRem(g->B, a, b, ""),
                                             pm_llvm_i64(g, 0), "");
            return LLVMBuildNSWSub(g->B, q, LLVMBuildZExt(g->B, neg, g->t_i64, ""), "");
        }
        }
    }
    default:
        return NULL;
    }
}

static void call_indices(pm_llvm *g, const pm_point *pt, int s, const pm_expr *call, bool clamp,
                         LLVMValueRef *idx)
{
    const pm_llvm_buf *b = &g->env.bufs[s];
    for (int d = 0; d < call->nargs; d++) {
        const pm_expr *a = call->args[d];
        LLVMValueRef v = clamp ? NULL : affine_i64(g, pt, a);
        if (!v)
            v = pm_llvm_convert(g, pm_llvm_expr(g, pt, a), a->type, PM_I64);
        LLVMValueRef i = pm_llvm_index(g, pt, s, d, v);
        if (clamp) {
            LLVMValueRef hi = lanes(g, pt, LLVMBuildSub(g->B, b->ext[d], pm_llvm_i64(g, 1), ""));
            LLVMValueRef zero = k64(g, pt, 0);
            i = LLVMBuildSelect(g->B, LLVMBuildICmp(g->B, LLVMIntSGT, i, hi, ""), hi, i, "");
            i = LLVMBuildSelect(g->B, LLVMBuildICmp(g->B, LLVMIntSLT, i, zero, ""), zero, i, "");
        }
        idx[d] = i;
    }
}

/* A clamped read of a callee with an empty box has no element to read: the language
 * says it gives 0 (polymage.h), and the buffer may be a 64-byte scratch of garbage or an
 * empty output whose data is NULL. Such reads load from a zeroed constant instead. */
static LLVMValueRef empty_safe(pm_llvm *g, int s, LLVMValueRef ptrs)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    const pm_llvm_buf *b = &g->env.bufs[s];
    LLVMValueRef empty = NULL;
    for (int d = 0; d < st->ndims; d++) {
        LLVMValueRef e = LLVMBuildICmp(g->B, LLVMIntSLE, b->ext[d], pm_llvm_i64(g, 0), "");
        empty = empty ? LLVMBuildOr(g->B, empty, e, "") : e;
    }
    if (!empty)
        return ptrs;
    LLVMValueRef zero = LLVMGetNamedGlobal(g->M, "pm_zero");
    if (!zero) {
        LLVMTypeRef ty = LLVMArrayType(g->t_i8, 64);
        zero = LLVMAddGlobal(g->M, ty, "pm_zero");
        LLVMSetInitializer(zero, LLVMConstNull(ty));
        LLVMSetGlobalConstant(zero, 1);
        LLVMSetLinkage(zero, LLVMPrivateLinkage);
        LLVMSetAlignment(zero, 64);
    }
    if (is_vec(ptrs))
        zero = pm_llvm_splat_n(g, LLVMGetVectorSize(LLVMTypeOf(ptrs)), zero);
    return LLVMBuildSelect(g->B, empty, zero, ptrs, "");
}

static unsigned elem_align(const pm_poly_storage *st)
{
    return (unsigned)pm_type_size(st->type);
}

static LLVMValueRef scalar_load(pm_llvm *g, const pm_point *pt, int s, const pm_expr *call,
                                bool clamp)
{
    LLVMValueRef idx[PM_MAX_DIMS];
    call_indices(g, pt, s, call, clamp, idx);
    const pm_poly_storage *st = &g->poly->storage[s];
    LLVMValueRef ptr = pm_llvm_addr(g, s, idx);
    if (clamp)
        ptr = empty_safe(g, s, ptr);
    LLVMValueRef v = LLVMBuildLoad2(g->B, pm_llvm_type(g, st->type), ptr, st->func->name);
    LLVMSetAlignment(v, elem_align(st));
    return pm_llvm_tag_access(g, v, s);
}

static LLVMValueRef vector_load_at(pm_llvm *g, int s, LLVMValueRef ptr, unsigned n)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    LLVMValueRef v = LLVMBuildLoad2(g->B, LLVMVectorType(pm_llvm_type(g, st->type), n), ptr,
                                    st->func->name);
    LLVMSetAlignment(v, elem_align(st));
    return pm_llvm_tag_access(g, v, s);
}

/* A prefetch of the line plan->prefetch_bytes past p0 (the storage phase's choice, for
 * a leading read of a buffer read from memory): the hardware prefetcher alone left
 * unsharp mask's loads of its next input row waiting on memory. A prefetch never
 * faults, so an address past the buffer's end is harmless; the GEP is not inbounds. */
static void prefetch_ahead(pm_llvm *g, LLVMValueRef p0)
{
    LLVMTypeRef args[] = {g->t_ptr, g->t_i32, g->t_i32, g->t_i32};
    LLVMTypeRef fnty = LLVMFunctionType(g->t_void, args, 4, 0);
    LLVMValueRef off = pm_llvm_i64(g, g->ast->plan->prefetch_bytes);
    LLVMValueRef ahead = LLVMBuildGEP2(g->B, g->t_i8, p0, &off, 1, "ahead");
    /* a read, kept in every cache level (locality 3), of data */
    LLVMValueRef call_args[] = {ahead, LLVMConstInt(g->t_i32, 0, 0), LLVMConstInt(g->t_i32, 3, 0),
                                LLVMConstInt(g->t_i32, 1, 0)};
    LLVMBuildCall2(g->B, fnty, pm_llvm_declare(g, "llvm.prefetch.p0", fnty), call_args, 4, "");
}

/* align: the elements' alignment, or 1 (x86 gathers need none). */
static LLVMValueRef masked_gather(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef ptrs,
                                  unsigned align)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    LLVMTypeRef vt = LLVMVectorType(pm_llvm_type(g, st->type), (unsigned)pt->W);
    LLVMTypeRef tys[2] = {vt, LLVMTypeOf(ptrs)};
    LLVMTypeRef fnty;
    LLVMValueRef fn = pm_llvm_intrinsic(g, "llvm.masked.gather", tys, 2, &fnty);
    if (!fn)
        return LLVMGetPoison(vt);
    LLVMValueRef args[4] = {ptrs, LLVMConstInt(g->t_i32, align, 0),
                            pm_llvm_splat(g, pt, LLVMConstInt(g->t_i1, 1, 0)), LLVMGetPoison(vt)};
    return pm_llvm_tag_access(g, LLVMBuildCall2(g->B, fnty, fn, args, 4, ""), s);
}

/* AVX-512's gathers of 32- and 64-bit elements at 32-bit offsets from one base, or NULL
 * when the target or the shape has none. LLVM's generic gather of base + sext(offsets)
 * selects them only when instruction selection can prove the offsets' sign bit clear:
 * after a clamp (an smax with the buffer's lower bound) InstCombine turns the sign
 * extension into a zero extension that instruction selection cannot see through, and
 * every 16-lane gather became two 8-lane gathers of 64-bit addresses (local Laplacian's
 * remapping table). */
static LLVMValueRef x86_gather_narrow(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef base,
                                      LLVMValueRef off);

/* The AVX-512 gather intrinsic `name` of W lanes of type lane at base + off * scale, all
 * lanes on, tagged as a read of storage s; NULL when LLVM lacks it. */
static LLVMValueRef x86_gather_call(pm_llvm *g, const pm_point *pt, int s, const char *name,
                                    LLVMTypeRef lane, LLVMValueRef base, LLVMValueRef off,
                                    int scale)
{
    LLVMTypeRef fnty;
    LLVMValueRef fn = pm_llvm_intrinsic(g, name, NULL, 0, &fnty);
    if (!fn)
        return NULL;
    LLVMTypeRef vt = LLVMVectorType(lane, (unsigned)pt->W);
    LLVMValueRef args[5] = {LLVMGetPoison(vt), base, off,
                            pm_llvm_splat(g, pt, LLVMConstInt(g->t_i1, 1, 0)),
                            LLVMConstInt(g->t_i32, (unsigned)scale, 0)};
    return pm_llvm_tag_access(g, LLVMBuildCall2(g->B, fnty, fn, args, 5, "gather32"), s);
}

static LLVMValueRef x86_gather32(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef base,
                                 LLVMValueRef off)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    int bytes = pm_type_size(st->type);
    bool fp = !pm_type_is_int(st->type);
    const char *name = NULL;
    if (g->avx512f && (bytes == 1 || bytes == 2))
        return x86_gather_narrow(g, pt, s, base, off);
    if (!g->avx512f || (bytes != 4 && bytes != 8))
        return NULL;
    if (bytes == 4 && pt->W == 16)
        name = fp ? "llvm.x86.avx512.mask.gather.dps.512" : "llvm.x86.avx512.mask.gather.dpi.512";
    else if (bytes == 4 && pt->W == 8 && g->avx512vl)
        name = fp ? "llvm.x86.avx512.mask.gather3siv8.sf" : "llvm.x86.avx512.mask.gather3siv8.si";
    else if (bytes == 8 && pt->W == 8)
        name = fp ? "llvm.x86.avx512.mask.gather.dpd.512" : "llvm.x86.avx512.mask.gather.dpq.512";
    if (!name)
        return NULL;
    return x86_gather_call(g, pt, s, name, pm_llvm_type(g, st->type), base, off, bytes);
}

/* 8- and 16-bit lanes from a buffer the kernel allocated: x86 has no gather of them, and
 * LLVM's generic gather becomes one scalar load and insert per lane (camera pipe's tone
 * curve, a u8 table: two thirds of its output stage's time). A 32-bit gather at the
 * elements' addresses (scale = the element size) reads each element with the 1 or 3
 * bytes after it, which pm_rt_buffer's tail keeps readable past the last one
 * (PM_RT_BUFFER_TAIL), and the low bytes are the elements. Not for the caller's
 * buffers, whose ends may be the end of a page. */
static LLVMValueRef x86_gather_narrow(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef base,
                                      LLVMValueRef off)
{
    const pm_storage_plan *st = &g->place[s];
    if (st->kind != PM_STORAGE_SCRATCH && st->kind != PM_STORAGE_TILE)
        return NULL;
    const char *name = pt->W == 16                  ? "llvm.x86.avx512.mask.gather.dpi.512"
                       : pt->W == 8 && g->avx512vl ? "llvm.x86.avx512.mask.gather3siv8.si"
                                                   : NULL;
    if (!name)
        return NULL;
    pm_type type = g->poly->storage[s].type;
    LLVMValueRef v = x86_gather_call(g, pt, s, name, g->t_i32, base, off, pm_type_size(type));
    return v ? LLVMBuildTrunc(g->B, v, LLVMVectorType(pm_llvm_type(g, type), (unsigned)pt->W), "")
             : NULL;
}

LLVMValueRef pm_llvm_offsets_fit_i32(pm_llvm *g, int s)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    const pm_llvm_buf *b = &g->env.bufs[s];
    LLVMValueRef span = pm_llvm_i64(g, 0), fits = LLVMConstInt(g->t_i1, 1, 0);
    for (int d = 0; d < st->ndims; d++) {
        LLVMValueRef last = LLVMBuildSub(g->B, b->ext[d], pm_llvm_i64(g, 1), "");
        fits = LLVMBuildAnd(g->B, fits, LLVMBuildICmp(g->B, LLVMIntSGE, last, pm_llvm_i64(g, 0), ""), "");
        LLVMValueRef neg = LLVMBuildICmp(g->B, LLVMIntSLT, b->stride[d], pm_llvm_i64(g, 0), "");
        LLVMValueRef mag = LLVMBuildSelect(g->B, neg, LLVMBuildNeg(g->B, b->stride[d], ""),
                                           b->stride[d], "");
        /* both factors are bounded by the checked buffer size: no overflow */
        span = LLVMBuildAdd(g->B, span, LLVMBuildMul(g->B, last, mag, ""), "");
    }
    for (int d = 0; d < st->ndims; d++) { /* coordinates are i32 values */
        LLVMValueRef last = LLVMBuildAdd(g->B, b->lb[d], LLVMBuildSub(g->B, b->ext[d], pm_llvm_i64(g, 1), ""), "");
        fits = LLVMBuildAnd(g->B, fits, LLVMBuildICmp(g->B, LLVMIntSGE, b->lb[d], pm_llvm_i64(g, INT32_MIN), ""), "");
        fits = LLVMBuildAnd(g->B, fits, LLVMBuildICmp(g->B, LLVMIntSLE, last, pm_llvm_i64(g, INT32_MAX), ""), "");
    }
    return LLVMBuildAnd(g->B, fits,
                        LLVMBuildICmp(g->B, LLVMIntSLE, span, pm_llvm_i64(g, INT32_MAX), ""), "fits32");
}

/* Lanes at indices idx (in bounds: proven, or clamped). Gathers take 32-bit offsets
 * from the buffer's base: AVX-512 gathers 16 floats with one instruction that way but
 * needs two with 64-bit addresses. The vector loop that holds this read runs only when
 * the buffer's offsets and coordinates fit in 32 bits (vector.c asks
 * pm_llvm_offsets_fit_i32 for every buffer recorded in g->gathered), and a buffer that
 * fits is not empty, so clamping keeps every lane inside it; otherwise the loop's scalar
 * code reads with 64-bit indices. */
static LLVMValueRef table_read(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef off,
                               LLVMValueRef inner, LLVMValueRef row_term, LLVMValueRef key);

/* All W lanes of storage s at the 32-bit element offsets off. */
static LLVMValueRef gather_offsets(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef off)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    const pm_llvm_buf *b = &g->env.bufs[s];
    LLVMValueRef v = x86_gather32(g, pt, s, b->base, off);
    if (!v) {
        LLVMValueRef p32 = LLVMBuildGEP2(g->B, pm_llvm_type(g, st->type), b->base, &off, 1, "");
        v = masked_gather(g, pt, s, p32, elem_align(st));
    }
    return v;
}

static LLVMValueRef gather_at(pm_llvm *g, const pm_point *pt, int s, const pm_expr *call,
                              LLVMValueRef *idx, bool clamp, bool table)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    const pm_llvm_buf *b = &g->env.bufs[s];
    if (g->gathered)
        g->gathered[s] = true;
    LLVMTypeRef v32 = LLVMVectorType(g->t_i32, (unsigned)pt->W);
    LLVMValueRef off = NULL, inner = NULL, inner_term = NULL, key = NULL;
    for (int d = 0; d < st->ndims; d++) {
        const pm_expr *a = call->args[d];
        LLVMValueRef i32;
        /* An argument of 32 bits or fewer (every variable is i32) indexes in i32 from
         * the start: truncating the i64 index instead, LLVM folds the truncation back
         * into 64-bit lanes. Coordinates lb .. lb + ext - 1 are i32 values when the
         * offsets fit, so clamping first never overflows. */
        if (st->step[d] == 1 && pm_type_is_int(a->type) && pm_type_bits(a->type) <= 32) {
            LLVMValueRef v = pm_llvm_splat(g, pt, pm_llvm_convert(g, pm_llvm_expr(g, pt, a), a->type, PM_I32));
            LLVMValueRef lo = LLVMBuildTrunc(g->B, b->lb[d], g->t_i32, "");
            LLVMValueRef los = pm_llvm_splat(g, pt, lo);
            if (clamp) {
                LLVMValueRef hi = LLVMBuildTrunc(
                    g->B, LLVMBuildAdd(g->B, b->lb[d], LLVMBuildSub(g->B, b->ext[d], pm_llvm_i64(g, 1), ""), ""),
                    g->t_i32, "");
                LLVMValueRef his = pm_llvm_splat(g, pt, hi);
                v = LLVMBuildSelect(g->B, LLVMBuildICmp(g->B, LLVMIntSGT, v, his, ""), his, v, "");
                v = LLVMBuildSelect(g->B, LLVMBuildICmp(g->B, LLVMIntSLT, v, los, ""), los, v, "");
            }
            i32 = LLVMBuildNSWSub(g->B, v, los, "");
        } else {
            i32 = LLVMBuildTrunc(g->B, idx[d], v32, "");
        }
        LLVMValueRef s32 = pm_llvm_splat(g, pt, LLVMBuildTrunc(g->B, b->stride[d], g->t_i32, ""));
        LLVMValueRef t = LLVMBuildNSWMul(g->B, i32, s32, "");
        off = off ? LLVMBuildNSWAdd(g->B, off, t, "") : t;
        inner = i32;
        inner_term = t;
        /* table_read's row key: the outer indices' lane-varying cores (y/8 of y/8 + 1)
         * times their strides, the same for every read whose rows move alike */
        const pm_expr *core = table && !clamp && d < st->ndims - 1 ? pm_lower_strip_constant(a) : NULL;
        if (core && lane_coef(pt, core) != 0) {
            LLVMValueRef c = pm_llvm_splat(g, pt, pm_llvm_convert(g, pm_llvm_expr(g, pt, core), core->type, PM_I32));
            LLVMValueRef k = LLVMBuildMul(g->B, c, s32, "");
            key = key ? LLVMBuildAdd(g->B, key, k, "") : k;
        }
    }
    if (table && inner)
        return table_read(g, pt, s, off, inner, inner_term,
                          clamp ? NULL : key ? key : LLVMConstNull(v32));
    return gather_offsets(g, pt, s, off);
}

/* The AVX-512 permute of two tables by lane (vpermi2ps and its kin) for storage s's
 * element type at pt's width, or NULL when the target or the shape has none. */
static const char *two_table_permute(const pm_llvm *g, const pm_point *pt, int s)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    int bytes = pm_type_size(st->type);
    bool fp = !pm_type_is_int(st->type);
    if (!g->avx512f)
        return NULL;
    if (bytes == 4 && pt->W == 16)
        return fp ? "llvm.x86.avx512.vpermi2var.ps.512" : "llvm.x86.avx512.vpermi2var.d.512";
    if (bytes == 4 && pt->W == 8 && g->avx512vl)
        return fp ? "llvm.x86.avx512.vpermi2var.ps.256" : "llvm.x86.avx512.vpermi2var.d.256";
    if (bytes == 8 && pt->W == 8)
        return fp ? "llvm.x86.avx512.vpermi2var.pd.512" : "llvm.x86.avx512.vpermi2var.q.512";
    return NULL;
}

/* A read from a table of short rows (table_shaped): each lane's element lies in one of
 * the rows of lanes 0 and W-1 — the usual case, where the outer indices change once
 * across the vector (bilateral grid's y/8) and the innermost one is data-dependent
 * (its z bin) — loads both rows whole (a masked load of the row's ext <= W elements)
 * and picks each lane's element with one two-table permute; otherwise it gathers.
 * off is each lane's element offset, inner its innermost index, row_term the part of
 * off that index makes, key the outer indices' lane-varying part (the row is key plus
 * a uniform offset, so key decides which lanes share a row; NULL: the row itself);
 * nothing here evaluates an expression, so the memo's values stay valid on both
 * sides. */
static LLVMValueRef table_read(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef off,
                               LLVMValueRef inner, LLVMValueRef row_term, LLVMValueRef key)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    const pm_llvm_buf *b = &g->env.bufs[s];
    LLVMBuilderRef B = g->B;
    unsigned W = (unsigned)pt->W;
    int n = st->ndims;
    LLVMTypeRef et = pm_llvm_type(g, st->type), vt = LLVMVectorType(et, W);
    LLVMTypeRef v32 = LLVMVectorType(g->t_i32, W);
    /* the offset of each lane's row, and the rows of the first and the last lane */
    LLVMValueRef row = LLVMBuildNSWSub(B, off, row_term, "row");
    LLVMValueRef r0 = LLVMBuildExtractElement(B, row, LLVMConstInt(g->t_i32, 0, 0), "");
    LLVMValueRef r1 = LLVMBuildExtractElement(B, row, LLVMConstInt(g->t_i32, W - 1, 0), "");
    if (!key) /* clamped indices: the rows themselves */
        key = row;
    /* row = key + a uniform offset: the lanes' rows are those of lanes 0 and W-1 where
     * their keys are, and reads with equal keys share this check */
    LLVMValueRef k0 = LLVMBuildExtractElement(B, key, LLVMConstInt(g->t_i32, 0, 0), "");
    LLVMValueRef k1 = LLVMBuildExtractElement(B, key, LLVMConstInt(g->t_i32, W - 1, 0), "");
    LLVMValueRef second = LLVMBuildICmp(B, LLVMIntNE, key, pm_llvm_splat(g, pt, k0), "");
    LLVMValueRef other = LLVMBuildAnd(B, second,
                                      LLVMBuildICmp(B, LLVMIntNE, key, pm_llvm_splat(g, pt, k1), ""), "");
    LLVMValueRef bits = LLVMBuildBitCast(B, other, LLVMIntTypeInContext(g->C, W), "");
    LLVMValueRef two_rows = LLVMBuildICmp(B, LLVMIntEQ, bits, LLVMConstInt(LLVMTypeOf(bits), 0, 0), "");
    /* a row is ext <= W contiguous elements (checked here; the vector loop's caller
     * buffers have unit innermost strides, scratch buffers are dense) */
    LLVMValueRef short_rows = LLVMBuildAnd(
        B, LLVMBuildICmp(B, LLVMIntSLE, b->ext[n - 1], pm_llvm_i64(g, W), ""),
        LLVMBuildICmp(B, LLVMIntEQ, b->stride[n - 1], pm_llvm_i64(g, 1), ""), "");
    LLVMValueRef ok = LLVMBuildAnd(B, short_rows, two_rows, "table_ok");
    /* Lanes 0 and W-1 read inside the buffer (proven or clamped indices) and rows are
     * contiguous in a vector loop, so both rows' loads are safe before the check: reads
     * of the same rows share them (bilateral grid's z and z + 1 corners). */
    LLVMValueRef lane[64];
    for (unsigned l = 0; l < W; l++)
        lane[l] = LLVMConstInt(g->t_i64, l, 0);
    LLVMValueRef in_row = LLVMBuildICmp(B, LLVMIntSLT, LLVMConstVector(lane, W),
                                        pm_llvm_splat_n(g, W, b->ext[n - 1]), "");
    LLVMTypeRef tys[2] = {vt, g->t_ptr};
    LLVMTypeRef load_ty, perm_ty;
    LLVMValueRef load = pm_llvm_intrinsic(g, "llvm.masked.load", tys, 2, &load_ty);
    LLVMValueRef perm = pm_llvm_intrinsic(g, two_table_permute(g, pt, s), NULL, 0, &perm_ty);
    LLVMValueRef t[2];
    LLVMValueRef r[2] = {r0, r1};
    for (int k = 0; k < 2; k++) {
        LLVMValueRef at = LLVMBuildSExt(B, r[k], g->t_i64, "");
        LLVMValueRef p = LLVMBuildGEP2(B, et, b->base, &at, 1, "");
        LLVMValueRef args[4] = {p, LLVMConstInt(g->t_i32, elem_align(st), 0), in_row,
                                LLVMGetPoison(vt)};
        t[k] = pm_llvm_tag_access(g, LLVMBuildCall2(B, load_ty, load, args, 4, "table"), s);
    }
    /* lanes of the second row index the permute's second table: + W */
    LLVMValueRef pick = LLVMBuildAdd(
        B, inner,
        LLVMBuildSelect(B, second, pm_llvm_splat_n(g, W, LLVMConstInt(g->t_i32, W, 0)),
                        LLVMConstNull(v32), ""), "pick");
    if (pm_type_size(st->type) == 8) /* the 64-bit permutes index with 64-bit lanes */
        pick = LLVMBuildSExt(B, pick, LLVMVectorType(g->t_i64, W), "");
    LLVMValueRef pargs[3] = {t[0], pick, t[1]};
    LLVMValueRef fast = LLVMBuildCall2(B, perm_ty, perm, pargs, 3, "looked_up");
    LLVMBasicBlockRef fast_end = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef gat = pm_llvm_block(g, "table_gather"), join = pm_llvm_block(g, "table_join");
    LLVMBuildCondBr(B, ok, join, gat);

    LLVMPositionBuilderAtEnd(B, gat);
    LLVMValueRef slow = gather_offsets(g, pt, s, off);
    LLVMBasicBlockRef slow_end = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, join);

    LLVMPositionBuilderAtEnd(B, join);
    LLVMValueRef v = LLVMBuildPhi(B, vt, "read");
    LLVMValueRef vals[2] = {fast, slow};
    LLVMBasicBlockRef from[2] = {fast_end, slow_end};
    LLVMAddIncoming(v, vals, from, 2);
    return v;
}

/* ---- small tables ------------------------------------------------------------------ */

/* The AVX-512 two-table permute of elements of `bytes` bytes at 512 bits, or NULL when
 * the target has none. */
static const char *table_permute(const pm_llvm *g, int bytes)
{
    if (bytes == 1 && g->avx512vbmi)
        return "llvm.x86.avx512.vpermi2var.qi.512";
    if (bytes == 2 && g->avx512bw)
        return "llvm.x86.avx512.vpermi2var.hi.512";
    if (bytes == 4 && g->avx512f)
        return "llvm.x86.avx512.vpermi2var.d.512";
    return NULL;
}

/* The small table's lookup: each lane's index clamped to flat_lo .. flat_hi (the same
 * entry's value), the table's 128-byte pieces permuted by the index's low bits, and a
 * tree of selects on its higher bits picking each lane's piece. The index and the
 * result ride in 32-bit lanes; the permutes read the index's low byte or word in each. */
static LLVMValueRef small_table_read(pm_llvm *g, const pm_point *pt, int s, const pm_expr *call,
                                     int64_t start, int permutes)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    const pm_llvm_buf *b = &g->env.bufs[s];
    LLVMBuilderRef B = g->B;
    int bytes = pm_type_size(st->type);
    LLVMTypeRef v32 = LLVMVectorType(g->t_i32, 16);
    LLVMTypeRef piece = LLVMVectorType(LLVMIntTypeInContext(g->C, (unsigned)(8 * bytes)),
                                       (unsigned)(64 / bytes));
    const pm_expr *a = call->args[0];
    LLVMValueRef v = pm_llvm_splat(g, pt, pm_llvm_convert(g, pm_llvm_expr(g, pt, a), a->type, PM_I32));
    LLVMValueRef lo = pm_llvm_splat_n(g, 16, LLVMConstInt(g->t_i32, (unsigned long long)st->flat_lo, 1));
    LLVMValueRef hi = pm_llvm_splat_n(g, 16, LLVMConstInt(g->t_i32, (unsigned long long)st->flat_hi, 1));
    v = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, v, hi, ""), hi, v, "");
    v = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, v, lo, ""), lo, v, "");
    LLVMValueRef rel = LLVMBuildNSWSub(
        B, v, pm_llvm_splat_n(g, 16, LLVMConstInt(g->t_i32, (unsigned long long)start, 1)), "entry");
    LLVMValueRef ix = LLVMBuildBitCast(B, rel, piece, "");
    /* the pieces: start - lb elements past the base, 64 bytes each */
    LLVMValueRef at = LLVMBuildMul(B, LLVMBuildSub(B, pm_llvm_i64(g, start), b->lb[0], ""), pm_llvm_i64(g, bytes), "");
    LLVMValueRef first = LLVMBuildGEP2(B, g->t_i8, b->base, &at, 1, "table");
    LLVMTypeRef perm_ty;
    LLVMValueRef perm = pm_llvm_intrinsic(g, table_permute(g, bytes), NULL, 0, &perm_ty);
    LLVMValueRef r[64] = {NULL}; /* permutes <= costs.small_table_permutes, checked */
    for (int k = 0; k < permutes; k++) {
        LLVMValueRef half[2];
        for (int h = 0; h < 2; h++) {
            LLVMValueRef off = pm_llvm_i64(g, 128 * k + 64 * h);
            LLVMValueRef p = LLVMBuildGEP2(B, g->t_i8, first, &off, 1, "");
            half[h] = pm_llvm_tag_access(g, LLVMBuildLoad2(B, piece, p, "piece"), s);
            LLVMSetAlignment(half[h], (unsigned)bytes);
        }
        LLVMValueRef args[3] = {half[0], ix, half[1]};
        r[k] = LLVMBuildBitCast(B, LLVMBuildCall2(B, perm_ty, perm, args, 3, "looked_up"), v32, "");
    }
    /* piece k holds entries 128 / bytes * k ...: bit log2(128 / bytes) and up pick it */
    int bit = bytes == 1 ? 7 : bytes == 2 ? 6 : 5;
    for (int n = permutes; n > 1; n = (n + 1) / 2, bit++) {
        LLVMValueRef mask = pm_llvm_splat_n(g, 16, LLVMConstInt(g->t_i32, 1ull << bit, 0));
        LLVMValueRef upper = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, rel, mask, ""),
                                           LLVMConstNull(v32), "");
        for (int i = 0; 2 * i + 1 < n; i++)
            r[i] = LLVMBuildSelect(B, upper, r[2 * i + 1], r[2 * i], "");
        if (n % 2)
            r[n / 2] = r[n - 1];
    }
    LLVMTypeRef vt = LLVMVectorType(pm_llvm_type(g, st->type), 16);
    return bytes < 4 ? LLVMBuildTrunc(B, r[0], vt, "") : LLVMBuildBitCast(B, r[0], vt, "");
}

/* A gather the lowering chose (kind: the plan's, or a guarded row read's other side):
 * a small table's permutes, two short rows' permute, or a plain gather. */
static LLVMValueRef gather(pm_llvm *g, const pm_point *pt, int s, const pm_expr *call, bool clamp,
                           const pm_read_plan *plan, pm_read_kind kind)
{
    if (kind == PM_READ_SMALL_TABLE && plan->permutes <= 64)
        return small_table_read(g, pt, s, call, plan->table_start, plan->permutes);
    LLVMValueRef idx[PM_MAX_DIMS];
    call_indices(g, pt, s, call, clamp, idx);
    for (int d = 0; d < call->nargs; d++)
        idx[d] = pm_llvm_splat(g, pt, idx[d]);
    if (call->nargs == 0) /* 0-dimensional: every lane reads the one element */
        return pm_llvm_splat(g, pt, scalar_load(g, pt, s, call, clamp));
    return gather_at(g, pt, s, call, idx, clamp, kind == PM_READ_TABLE);
}

/* Lanes read p[floor((e0 + l) / 2) - floor(e0 / 2)]: W/2 elements from p when e0 is
 * even, W/2 + 1 when odd. A masked load touches exactly those (all read by some lane,
 * so inside the buffer), then each lane picks its element: l/2 or (l+1)/2. */
static LLVMValueRef upsample_load(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef p0,
                                  LLVMValueRef odd)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    unsigned W = (unsigned)pt->W;
    LLVMTypeRef vt = LLVMVectorType(pm_llvm_type(g, st->type), W);
    LLVMValueRef me[64], mo[64], se[64], so[64];
    for (unsigned l = 0; l < W; l++) {
        me[l] = LLVMConstInt(g->t_i1, l < W / 2, 0);
        mo[l] = LLVMConstInt(g->t_i1, l <= W / 2, 0);
        se[l] = LLVMConstInt(g->t_i32, l / 2, 0);
        so[l] = LLVMConstInt(g->t_i32, (l + 1) / 2, 0);
    }
    LLVMValueRef mask = LLVMBuildSelect(g->B, odd, LLVMConstVector(mo, W), LLVMConstVector(me, W), "");
    LLVMTypeRef tys[2] = {vt, g->t_ptr};
    LLVMTypeRef fnty;
    LLVMValueRef fn = pm_llvm_intrinsic(g, "llvm.masked.load", tys, 2, &fnty);
    if (!fn)
        return LLVMGetPoison(vt);
    LLVMValueRef args[4] = {p0, LLVMConstInt(g->t_i32, elem_align(st), 0), mask, LLVMGetPoison(vt)};
    LLVMValueRef v = pm_llvm_tag_access(g, LLVMBuildCall2(g->B, fnty, fn, args, 4, "half"), s);
    LLVMValueRef even_v = LLVMBuildShuffleVector(g->B, v, LLVMGetPoison(vt), LLVMConstVector(se, W), "");
    LLVMValueRef odd_v = LLVMBuildShuffleVector(g->B, v, LLVMGetPoison(vt), LLVMConstVector(so, W), "");
    return LLVMBuildSelect(g->B, odd, odd_v, even_v, "up");
}

static bool read_proven(pm_llvm *g, const pm_point *pt, const pm_expr *call)
{
    pm_lane_shape shape = shape_of(pt);
    return pm_lower_read_proven(g->ast->plan, &shape, call);
}

/* A read of an inlined function: its definition evaluated at the read's point. The
 * inline phase guarantees arguments that are shifts of pt's variables (each moves by 0, 1
 * or 2 per lane, as a pm_point describes) or data-dependent indices proven inside the
 * function's box (their lanes are carried as vectors, and reads through them gather),
 * and cases that cover every point read. Several cases: each is evaluated at every lane
 * and the first whose condition holds gives the lane's value, so reads clamp. */
static LLVMValueRef inline_call(pm_llvm *g, const pm_point *pt, const pm_expr *call)
{
    const pm_poly *poly = g->poly;
    const pm_func *f = call->callee;
    const pm_poly_stmt *s = NULL;
    for (int i = 0; i < poly->nstages && !s; i++)
        if (poly->stages[i].func == f)
            s = &poly->stmts[poly->stages[i].first_stmt];
    if (!s || f->kind != PM_FUNC_FUNCTION || f->ncases < 1 || call->nargs != s->ndims) {
        pm_error_set(g->err, PM_ERR_INTERNAL, "%s: %s cannot be inlined", poly->pipeline->name, f->name);
        return pm_llvm_const(g, pt, call->type, 0, 0);
    }
    /* the callee's point, its lanes as the lowering sees them */
    pm_lane_shape ps = shape_of(pt);
    pm_lane_shape qs = pm_lower_inlined_shape(g->ast->plan, &ps, call, s);
    pm_point q = {.stmt = s, .W = pt->W, .where = qs.where};
    pm_point first = *pt;
    first.W = 1;
    for (int d = 0; d < call->nargs; d++) {
        const pm_expr *a = call->args[d];
        if (qs.lanes[d]) {
            /* a data-dependent index: every lane its own */
            LLVMValueRef v = pm_llvm_convert(g, pm_llvm_expr(g, pt, a), a->type, PM_I32);
            q.lanes[d] = v;
            q.var[d] = LLVMBuildExtractElement(g->B, v, LLVMConstInt(g->t_i32, 0, 0), "");
            continue;
        }
        q.var[d] = pm_llvm_convert(g, pm_llvm_expr(g, &first, a), a->type, PM_I32);
        q.pos[d] = affine_i64(g, &first, a);
        q.lane_step[d] = qs.lane_step[d];
    }
    /* the last case is where every other fails (the inline phase proved the reads
     * covered); earlier ones win in order */
    const pm_expr *last = f->cases[f->ncases - 1]->value;
    LLVMValueRef v = pm_llvm_convert(g, pm_llvm_expr(g, &q, last), last->type, f->type);
    for (int c = f->ncases - 2; c >= 0; c--) {
        const pm_case *k = f->cases[c];
        LLVMValueRef here = pm_llvm_convert(g, pm_llvm_expr(g, &q, k->value), k->value->type, f->type);
        v = k->cond ? LLVMBuildSelect(g->B, pm_llvm_cond(g, &q, k->cond), here, v, "") : here;
    }
    return v;
}

/* A vector read along one row of the callee: its outer arguments the same in every
 * lane, its innermost one moving +1 per lane (contiguous), +k for 2 <= k <= the cost table's
 * (down-sampling by 2, bilateral grid's histogram reading every 8th pixel: the lanes'
 * elements picked out of contiguous loads) or as (e + lane)/2 (up-sampling: each element
 * twice). */
typedef enum { ROW_NONE, ROW_CONTIGUOUS, ROW_STRIDED, ROW_HALF } row_kind;

typedef struct row_read {
    row_kind kind;
    int stride;                    /* ROW_STRIDED: k, the lanes' elements k apart      */
    const pm_expr *twice;          /* ROW_HALF: e, the innermost argument being e/2 + k */
    LLVMValueRef odd;              /* ROW_HALF: e's parity at lane 0 (i1)             */
    LLVMValueRef idx[PM_MAX_DIMS]; /* lane 0's indices, unclamped                      */
} row_read;

/* How far past lane 0's element the lanes of r reach. */
static int64_t row_reach(const row_read *r, int W)
{
    return r->kind == ROW_CONTIGUOUS ? W - 1
           : r->kind == ROW_STRIDED  ? (int64_t)r->stride * (W - 1)
                                     : W / 2;
}

/* Lanes read p0[0], p0[k], ..., p0[k(W-1)]. Load j covers p0[jW .. jW + W - 1], the last
 * one moved back to end at p0[k(W-1)], so every load lies inside what the lanes read.
 * Each lane takes its element from the first load that holds it; the loads merge in a
 * tree of two-input shuffles, each putting its lanes at their final places. */
static LLVMValueRef strided_load(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef p0, int k)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    unsigned W = (unsigned)pt->W;
    LLVMTypeRef et = pm_llvm_type(g, st->type);
    int64_t last = (int64_t)k * (W - 1);
    LLVMValueRef part[64];
    int pos[64][64]; /* lane l's place in part j, or -1 (k <= W <= 64: lower.c) */
    int n = 0;
    for (int j = 0; j < k; j++) {
        int64_t at = (int64_t)j * W;
        if (at > last)
            break;
        if (at + W - 1 > last)
            at = last - (W - 1);
        bool any = false;
        for (unsigned l = 0; l < W; l++) {
            int64_t e = (int64_t)k * l;
            bool earlier = n > 0 && e < (int64_t)j * W; /* held by a load before */
            pos[n][l] = !earlier && e >= at && e < at + W ? (int)(e - at) : -1;
            any = any || pos[n][l] >= 0;
        }
        if (!any)
            continue;
        LLVMValueRef off = pm_llvm_i64(g, at);
        LLVMValueRef p = at ? LLVMBuildGEP2(g->B, et, p0, &off, 1, "") : p0;
        part[n++] = vector_load_at(g, s, p, W);
    }
    while (n > 1) {
        int m = 0;
        for (int a = 0; a < n; a += 2, m++) {
            if (a + 1 == n) {
                part[m] = part[a];
                memmove(pos[m], pos[a], sizeof pos[a]);
                continue;
            }
            LLVMValueRef mask[64];
            for (unsigned l = 0; l < W; l++) {
                int from = pos[a][l] >= 0       ? pos[a][l]
                           : pos[a + 1][l] >= 0 ? (int)W + pos[a + 1][l]
                                                : -1;
                mask[l] = from >= 0 ? LLVMConstInt(g->t_i32, (unsigned)from, 0)
                                    : LLVMGetPoison(g->t_i32);
                pos[m][l] = from >= 0 ? (int)l : -1;
            }
            part[m] = LLVMBuildShuffleVector(g->B, part[a], part[a + 1],
                                             LLVMConstVector(mask, W), "strided");
        }
        n = m;
    }
    return part[0];
}

/* The lanes of a row read whose elements are inside the buffer. */
static LLVMValueRef row_load(pm_llvm *g, const pm_point *pt, int s, const pm_expr *call,
                             const row_read *r)
{
    LLVMValueRef idx[PM_MAX_DIMS];
    memcpy(idx, r->idx, sizeof idx);
    LLVMValueRef p0 = pm_llvm_addr(g, s, idx);
    if (pm_plan_call_prefetched(g->ast->plan, call))
        prefetch_ahead(g, p0);
    unsigned W = (unsigned)pt->W;
    if (r->kind == ROW_CONTIGUOUS)
        return vector_load_at(g, s, p0, W);
    if (r->kind == ROW_HALF)
        return upsample_load(g, pt, s, p0, r->odd);
    return strided_load(g, pt, s, p0, r->stride);
}

/* A tile scratchpad read at one data-dependent outer index of a few levels, every other
 * outer index the same in every lane and the innermost one a row read's (local
 * Laplacian's output pyramid reading its Laplacian pyramids, up-sampled, at each
 * pixel's intensity level): each level's row read as a row read, and each lane takes
 * its level's. The scratchpad is in cache, so the rows no lane reads cost little. */
/* The read, proven inside the callee's box: every lane's point lies in the tile's
 * footprint, so the rows of the other levels at the same outer indices and innermost
 * range lie in the scratchpad too. r: lane 0's indices (its level's unused). */
static LLVMValueRef level_select(pm_llvm *g, const pm_point *pt, int s, const pm_expr *call,
                                 int level_dim, row_read *r)
{
    LLVMBuilderRef B = g->B;
    const pm_expr *a = call->args[level_dim];
    LLVMValueRef coord = pm_llvm_convert(g, pm_llvm_expr(g, pt, a), a->type, PM_I64);
    LLVMValueRef level = pm_llvm_index(g, pt, s, level_dim, pm_llvm_splat(g, pt, coord));
    level = LLVMBuildTrunc(B, level, LLVMVectorType(g->t_i32, (unsigned)pt->W), "level");
    LLVMValueRef v = NULL;
    for (int64_t e = g->place[s].tile_ext[level_dim] - 1; e >= 0; e--) {
        r->idx[level_dim] = pm_llvm_i64(g, e);
        LLVMValueRef row = row_load(g, pt, s, call, r);
        if (!v) {
            v = row; /* the last level's, and every lane's past it (none: proven) */
            continue;
        }
        LLVMValueRef here = LLVMBuildICmp(
            B, LLVMIntEQ, level, pm_llvm_splat(g, pt, LLVMConstInt(g->t_i32, (unsigned long long)e, 0)), "");
        v = LLVMBuildSelect(B, here, row, v, "level_row");
    }
    return v;
}

/* A row read not proven inside the callee's box (an inlined function of several cases
 * evaluates each case at every lane, outside its own domain too: pyramid blending's
 * even up-sampling case read at odd lanes): every element it touches inside the buffer
 * (the usual case, away from the picture's borders) reads the row as row_load does,
 * else a gather of clamped indices. Clamping changes no index in the first case, so
 * the values are the same either way (the lowering chose it: lower.c). Each side's values stay on its side: the memo forgets before the gather and after
 * the join. */
static LLVMValueRef guarded_row_load(pm_llvm *g, const pm_point *pt, int s,
                                     const pm_expr *call, const row_read *r,
                                     const pm_read_plan *plan)
{
    const pm_llvm_buf *b = &g->env.bufs[s];
    int n = call->nargs, W = pt->W;
    /* how far past lane 0's element the lanes' loads reach */
    int64_t reach = row_reach(r, W);
    LLVMBuilderRef B = g->B;
    LLVMValueRef in = NULL;
    for (int d = 0; d < n; d++) {
        LLVMValueRef ok;
        if (d < n - 1) {
            ok = LLVMBuildICmp(B, LLVMIntULT, r->idx[d], b->ext[d], "");
        } else {
            LLVMValueRef last = LLVMBuildAdd(B, r->idx[d], pm_llvm_i64(g, reach), "");
            ok = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSGE, r->idx[d], pm_llvm_i64(g, 0), ""),
                              LLVMBuildICmp(B, LLVMIntSLT, last, b->ext[d], ""), "");
        }
        in = in ? LLVMBuildAnd(B, in, ok, "") : ok;
    }
    LLVMBasicBlockRef row = pm_llvm_block(g, "row_read"), clamped = pm_llvm_block(g, "clamped_read");
    LLVMBasicBlockRef join = pm_llvm_block(g, "read_join");
    LLVMBuildCondBr(B, in, row, clamped);
    LLVMPositionBuilderAtEnd(B, row);
    LLVMValueRef fast = row_load(g, pt, s, call, r);
    LLVMBasicBlockRef fast_end = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, clamped);
    bool memo_on = g->nmemo >= 0;
    if (memo_on)
        pm_llvm_memo_reset(g);
    LLVMValueRef slow = gather(g, pt, s, call, true, plan, plan->fallback);
    LLVMBasicBlockRef slow_end = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, join);
    if (memo_on)
        pm_llvm_memo_reset(g);
    LLVMValueRef v = LLVMBuildPhi(B, LLVMTypeOf(fast), "read");
    LLVMValueRef vals[2] = {fast, slow};
    LLVMBasicBlockRef from[2] = {fast_end, slow_end};
    LLVMAddIncoming(v, vals, from, 2);
    return v;
}

LLVMValueRef pm_llvm_load(pm_llvm *g, const pm_point *pt, const pm_expr *call)
{
    int s = pm_llvm_storage_index(g, call->callee);
    if (s < 0) {
        pm_error_set(g->err, PM_ERR_INTERNAL, "%s: no storage for %s", g->poly->pipeline->name,
                     call->callee->name);
        return pm_llvm_const(g, pt, call->type, 0, 0);
    }
    if (pm_plan_call_inlined(g->ast->plan, call))
        return inline_call(g, pt, call);
    bool proven = read_proven(g, pt, call);
    if (pt->W <= 1)
        return scalar_load(g, pt, s, call, !proven);
    pm_lane_shape shape = shape_of(pt);
    const pm_read_plan *plan = pm_lower_read(g->lower, &shape, call);
    if (!plan) {
        pm_error_set(g->err, PM_ERR_NOMEM, "%s: out of memory", g->poly->pipeline->name);
        return pm_llvm_const(g, pt, call->type, 0, 0);
    }
    pm_point first = *pt; /* lane 0 as a scalar point */
    first.W = 1;
    row_read r = {.kind = ROW_NONE};
    /* a level read reads each level's row as the row read it is */
    switch (plan->kind == PM_READ_LEVEL_ROWS ? plan->row : plan->kind) {
    case PM_READ_BROADCAST:
        return pm_llvm_splat(g, pt, scalar_load(g, &first, s, call, !proven));
    case PM_READ_CONTIGUOUS:
        r.kind = ROW_CONTIGUOUS;
        break;
    case PM_READ_STRIDED:
        r = (row_read){.kind = ROW_STRIDED, .stride = plan->stride};
        break;
    case PM_READ_HALF:
        r.kind = ROW_HALF;
        r.twice = pm_lower_half_of_lane(&shape, call->args[call->nargs - 1]);
        break;
    default:
        return gather(g, pt, s, call, !proven, plan, plan->kind);
    }
    call_indices(g, &first, s, call, false, r.idx);
    if (r.twice)
        r.odd = LLVMBuildTrunc(g->B, pm_llvm_expr(g, &first, r.twice), g->t_i1, "odd");
    if (plan->kind == PM_READ_LEVEL_ROWS)
        return level_select(g, pt, s, call, plan->level_dim, &r);
    if (proven)
        return row_load(g, pt, s, call, &r);
    return guarded_row_load(g, pt, s, call, &r, plan);
}

/* AVX-512's masked gather and scatter of storage s's element type at pt's width with
 * 32-bit offsets, or NULL names when it has none. */
static void x86_cell_ops(const pm_llvm *g, const pm_point *pt, int s, const char **gather_name,
                         const char **scatter_name)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    int bytes = pm_type_size(st->type);
    bool fp = !pm_type_is_int(st->type);
    *gather_name = *scatter_name = NULL;
    if (!g->avx512f)
        return;
    if (bytes == 4 && pt->W == 16) {
        *gather_name = fp ? "llvm.x86.avx512.mask.gather.dps.512" : "llvm.x86.avx512.mask.gather.dpi.512";
        *scatter_name = fp ? "llvm.x86.avx512.mask.scatter.dps.512" : "llvm.x86.avx512.mask.scatter.dpi.512";
    } else if (bytes == 4 && pt->W == 8 && g->avx512vl) {
        *gather_name = fp ? "llvm.x86.avx512.mask.gather3siv8.sf" : "llvm.x86.avx512.mask.gather3siv8.si";
        *scatter_name = fp ? "llvm.x86.avx512.mask.scattersiv8.sf" : "llvm.x86.avx512.mask.scattersiv8.si";
    } else if (bytes == 8 && pt->W == 8) {
        *gather_name = fp ? "llvm.x86.avx512.mask.gather.dpd.512" : "llvm.x86.avx512.mask.gather.dpq.512";
        *scatter_name = fp ? "llvm.x86.avx512.mask.scatter.dpd.512" : "llvm.x86.avx512.mask.scatter.dpq.512";
    }
}

/* The mask as the intrinsic's parameter k wants it: <W x i1>, or an integer of W bits. */
static LLVMValueRef mask_as(pm_llvm *g, LLVMTypeRef fnty, unsigned k, LLVMValueRef mask)
{
    LLVMTypeRef params[8];
    if (LLVMCountParamTypes(fnty) > 8)
        return mask;
    LLVMGetParamTypes(fnty, params);
    LLVMTypeRef want = params[k];
    if (LLVMGetTypeKind(want) != LLVMIntegerTypeKind)
        return mask;
    unsigned W = LLVMGetVectorSize(LLVMTypeOf(mask));
    LLVMValueRef bits = LLVMBuildBitCast(g->B, mask, LLVMIntTypeInContext(g->C, W), "");
    return LLVMGetIntTypeWidth(want) == W ? bits : LLVMBuildZExt(g->B, bits, want, "");
}

LLVMValueRef pm_llvm_gather_cells(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef off,
                                  LLVMValueRef mask)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    const pm_llvm_buf *b = &g->env.bufs[s];
    if (g->gathered)
        g->gathered[s] = true;
    LLVMTypeRef et = pm_llvm_type(g, st->type), vt = LLVMVectorType(et, (unsigned)pt->W);
    const char *gname, *sname;
    x86_cell_ops(g, pt, s, &gname, &sname);
    LLVMTypeRef fnty;
    LLVMValueRef fn = gname ? pm_llvm_intrinsic(g, gname, NULL, 0, &fnty) : NULL;
    if (fn) {
        LLVMValueRef args[5] = {LLVMConstNull(vt), b->base, off, mask_as(g, fnty, 3, mask),
                                LLVMConstInt(g->t_i32, (unsigned)pm_type_size(st->type), 0)};
        return pm_llvm_tag_access(g, LLVMBuildCall2(g->B, fnty, fn, args, 5, "cells"), s);
    }
    LLVMValueRef ptrs = LLVMBuildGEP2(g->B, et, b->base, &off, 1, "");
    LLVMTypeRef tys[2] = {vt, LLVMTypeOf(ptrs)};
    fn = pm_llvm_intrinsic(g, "llvm.masked.gather", tys, 2, &fnty);
    if (!fn)
        return LLVMGetPoison(vt);
    LLVMValueRef args[4] = {ptrs, LLVMConstInt(g->t_i32, elem_align(st), 0), mask, LLVMConstNull(vt)};
    return pm_llvm_tag_access(g, LLVMBuildCall2(g->B, fnty, fn, args, 4, "cells"), s);
}

void pm_llvm_scatter_cells(pm_llvm *g, const pm_point *pt, int s, LLVMValueRef off,
                           LLVMValueRef mask, LLVMValueRef v)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    const pm_llvm_buf *b = &g->env.bufs[s];
    LLVMTypeRef et = pm_llvm_type(g, st->type);
    const char *gname, *sname;
    x86_cell_ops(g, pt, s, &gname, &sname);
    LLVMTypeRef fnty;
    LLVMValueRef fn = sname ? pm_llvm_intrinsic(g, sname, NULL, 0, &fnty) : NULL;
    if (fn) {
        LLVMValueRef args[5] = {b->base, mask_as(g, fnty, 1, mask), off, v,
                                LLVMConstInt(g->t_i32, (unsigned)pm_type_size(st->type), 0)};
        pm_llvm_tag_access(g, LLVMBuildCall2(g->B, fnty, fn, args, 5, ""), s);
        return;
    }
    LLVMValueRef ptrs = LLVMBuildGEP2(g->B, et, b->base, &off, 1, "");
    LLVMTypeRef tys[2] = {LLVMTypeOf(v), LLVMTypeOf(ptrs)};
    fn = pm_llvm_intrinsic(g, "llvm.masked.scatter", tys, 2, &fnty);
    if (!fn)
        return;
    LLVMValueRef args[4] = {v, ptrs, LLVMConstInt(g->t_i32, elem_align(st), 0), mask};
    pm_llvm_tag_access(g, LLVMBuildCall2(g->B, fnty, fn, args, 4, ""), s);
}

LLVMValueRef pm_llvm_own_addr(pm_llvm *g, const pm_point *pt)
{
    int s = pm_llvm_storage_index(g, g->poly->stages[pt->stmt->stage].func);
    const pm_poly_storage *st = &g->poly->storage[s];
    pm_point first = *pt;
    first.W = 1;
    LLVMValueRef idx[PM_MAX_DIMS];
    for (int d = 0; d < st->ndims; d++)
        idx[d] = pm_llvm_index(g, &first, s, d,
                               pt->pos[d] ? pt->pos[d]
                                          : LLVMBuildSExt(g->B, pt->var[d], g->t_i64, ""));
    return pm_llvm_addr(g, s, idx);
}

void pm_llvm_store_own(pm_llvm *g, const pm_point *pt, LLVMValueRef v, LLVMValueRef mask)
{
    int s = pm_llvm_storage_index(g, g->poly->stages[pt->stmt->stage].func);
    const pm_poly_storage *st = &g->poly->storage[s];
    LLVMValueRef p = pm_llvm_own_addr(g, pt);
    if (pt->W <= 1 || !mask) {
        LLVMValueRef store = LLVMBuildStore(g->B, v, p);
        if (pt->W > 1 && g->stream_align > 0 && g->place[s].streamed) {
            /* a streamed loop's aligned body (vector.c): past the caches */
            LLVMSetAlignment(store, (unsigned)g->stream_align);
            LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(g->t_i32, 1, 0));
            LLVMSetMetadata(store, LLVMGetMDKindIDInContext(g->C, "nontemporal", 11),
                            LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, &one, 1)));
            g->streamed = true;
        } else {
            LLVMSetAlignment(store, elem_align(st));
        }
        pm_llvm_tag_access(g, store, s);
        return;
    }
    /* the vector runs along the innermost dimension (vector.c checks): contiguous */
    LLVMTypeRef tys[2] = {LLVMTypeOf(v), g->t_ptr};
    LLVMTypeRef fnty;
    LLVMValueRef fn = pm_llvm_intrinsic(g, "llvm.masked.store", tys, 2, &fnty);
    if (!fn)
        return;
    LLVMValueRef args[4] = {v, p, LLVMConstInt(g->t_i32, elem_align(st), 0), mask};
    pm_llvm_tag_access(g, LLVMBuildCall2(g->B, fnty, fn, args, 4, ""), s);
}
