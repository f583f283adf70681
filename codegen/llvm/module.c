/* llvm/module.c — the module and its entry function (see llvm.h).
 *
 * Shape: pm_llvm_build makes the module, the types and the target, then the entry
 *     int32_t entry(params, inputs, outputs, rt) {
 *         parameters loaded; every buffer described (setup_buffers: caller buffers from
 *         their pm_buffer, scratch from pm_rt_buffer by slot); the AST's code; return 0
 *     fail: return the status }
 */
#include "codegen/llvm/llvm.h"

#include <isl/ast_build.h>
#include <isl/set.h>
#include <isl/space.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

LLVMTypeRef pm_llvm_type(pm_llvm *g, pm_type t)
{
    switch (t) {
    case PM_BOOL: return g->t_i1;
    case PM_U8: case PM_I8: return g->t_i8;
    case PM_U16: case PM_I16: return g->t_i16;
    case PM_U32: case PM_I32: return g->t_i32;
    case PM_I64: return g->t_i64;
    case PM_F32: return g->t_f32;
    case PM_F64: return g->t_f64;
    }
    return g->t_i32;
}

LLVMValueRef pm_llvm_declare(pm_llvm *g, const char *name, LLVMTypeRef fnty)
{
    LLVMValueRef f = LLVMGetNamedFunction(g->M, name);
    if (!f)
        f = LLVMAddFunction(g->M, name, fnty);
    return f;
}

LLVMValueRef pm_llvm_intrinsic(pm_llvm *g, const char *name, LLVMTypeRef *tys, int n,
                               LLVMTypeRef *fnty)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    if (id == 0) {
        pm_error_set(g->err, PM_ERR_INTERNAL, "LLVM has no intrinsic %s", name);
        return NULL;
    }
    *fnty = LLVMIntrinsicGetType(g->C, id, tys, n);
    return LLVMGetIntrinsicDeclaration(g->M, id, tys, n);
}

LLVMBasicBlockRef pm_llvm_block(pm_llvm *g, const char *name)
{
    return LLVMAppendBasicBlockInContext(g->C, g->fn, name);
}

/* The vector width is told to LLVM's own passes too: without "prefer-vector-width" its
 * loop vectorizer picks 256-bit registers on AVX-512 hosts. */
void pm_llvm_set_fn_attrs(pm_llvm *g, LLVMValueRef fn)
{
    static const char *kinds[][2] = {{"prefer-vector-width", "512"},
                                     {"min-legal-vector-width", "512"}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        LLVMAttributeRef a = LLVMCreateStringAttribute(g->C, kinds[i][0], strlen(kinds[i][0]),
                                                       kinds[i][1], strlen(kinds[i][1]));
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, a);
    }
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(g->C, nounwind, 0));
    if (g->tm) {
        char *cpu = LLVMGetTargetMachineCPU(g->tm);
        char *feat = LLVMGetTargetMachineFeatureString(g->tm);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(g->C, "target-cpu", 10, cpu, strlen(cpu)));
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(g->C, "target-features", 15, feat,
                                                          strlen(feat)));
        LLVMDisposeMessage(cpu);
        LLVMDisposeMessage(feat);
    }
}

/* ---- which memory an access touches ----------------------------------------------------
 *
 * Loads and stores of buffers are reached through pointers LLVM knows nothing about
 * (loaded from the caller's descriptors, returned by pm_rt_buffer, unpacked from an
 * outlined body's data block), so it had to assume that a store to a histogram may
 * change the picture it reads: the two channels' updates of bilateral grid's grid each
 * read the pixel and computed its bin again. Each distinct memory gets a TBAA type of
 * its own under one root: an input, an output (the run-time check keeps outputs apart
 * from every other buffer, signature.c), a run-time buffer (pm_rt_buffer's index: full
 * buffers sharing a slot share it, scratchpads have their own). Accesses without a tag
 * (data blocks, parameters) still alias everything. */
LLVMValueRef pm_llvm_tag_access(pm_llvm *g, LLVMValueRef inst, int s)
{
    if (!inst || s < 0 || s >= g->poly->nstorage)
        return inst;
    if (!g->buffer_tag) {
        g->buffer_tag = calloc((size_t)g->poly->nstorage, sizeof *g->buffer_tag);
        if (!g->buffer_tag)
            return inst; /* no tag: only less optimization */
    }
    if (!g->buffer_tag[s]) {
        const pm_storage_plan *st = &g->place[s];
        char name[48];
        snprintf(name, sizeof name, "pm %s %d",
                 st->kind == PM_STORAGE_INPUT ? "input" :
                 st->kind == PM_STORAGE_OUTPUT ? "output" : "buffer", st->index);
        LLVMMetadataRef zero = LLVMValueAsMetadata(LLVMConstInt(g->t_i64, 0, 0));
        LLVMMetadataRef root_name = LLVMMDStringInContext2(g->C, "pm buffers", 10);
        LLVMMetadataRef root = LLVMMDNodeInContext2(g->C, &root_name, 1);
        LLVMMetadataRef type_ops[3] = {LLVMMDStringInContext2(g->C, name, strlen(name)), root,
                                       zero};
        LLVMMetadataRef type = LLVMMDNodeInContext2(g->C, type_ops, 3);
        LLVMMetadataRef tag_ops[3] = {type, type, zero};
        g->buffer_tag[s] = LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, tag_ops, 3));
    }
    LLVMSetMetadata(inst, LLVMGetMDKindIDInContext(g->C, "tbaa", 4), g->buffer_tag[s]);
    return inst;
}

/* ---- the entry's prologue: parameters and buffers ------------------------------------ */

/* A field of a pm_buffer (caller's struct) at byte offset off. */
static LLVMValueRef buffer_field(pm_llvm *g, LLVMValueRef bufs, int index, size_t off,
                                 LLVMTypeRef ty, const char *name)
{
    LLVMValueRef byte = pm_llvm_i64(g, (int64_t)(index * sizeof(pm_buffer) + off));
    LLVMValueRef p = LLVMBuildGEP2(g->B, g->t_i8, bufs, &byte, 1, "");
    return LLVMBuildLoad2(g->B, ty, p, name);
}

/* A parameter-only isl function evaluated at the run-time parameters. */
static LLVMValueRef param_expr(pm_llvm *g, __isl_keep isl_pw_aff *pa)
{
    isl_ctx *ctx = isl_pw_aff_get_ctx(pa);
    (void)ctx;
    isl_ast_build *build = isl_ast_build_from_context(
        isl_set_universe(isl_space_copy(g->poly->params)));
    /* the build wants a function on the parameter domain itself */
    isl_ast_expr *e = isl_ast_build_expr_from_pw_aff(
        build, isl_pw_aff_project_domain_on_params(isl_pw_aff_copy(pa)));
    isl_ast_build_free(build);
    if (!e) {
        pm_error_set(g->err, PM_ERR_INTERNAL, "isl could not express a buffer bound");
        return pm_llvm_i64(g, 0);
    }
    LLVMValueRef v = pm_llvm_ast_expr(g, e);
    isl_ast_expr_free(e);
    return v;
}

static LLVMValueRef smax64(pm_llvm *g, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(g->B, LLVMBuildICmp(g->B, LLVMIntSGT, a, b, ""), a, b, "");
}

/* a op b through llvm.<op>.with.overflow.i64; ORs the overflow bit into *flag. */
static LLVMValueRef checked(pm_llvm *g, const char *op, LLVMValueRef a, LLVMValueRef b,
                            LLVMValueRef *flag)
{
    char name[48];
    snprintf(name, sizeof name, "llvm.%s.with.overflow", op);
    LLVMTypeRef fnty, tys[1] = {g->t_i64};
    LLVMValueRef fn = pm_llvm_intrinsic(g, name, tys, 1, &fnty);
    if (!fn)
        return pm_llvm_i64(g, 0);
    LLVMValueRef r = LLVMBuildCall2(g->B, fnty, fn, (LLVMValueRef[]){a, b}, 2, "");
    *flag = LLVMBuildOr(g->B, *flag, LLVMBuildExtractValue(g->B, r, 1, ""), "ovf");
    return LLVMBuildExtractValue(g->B, r, 0, "");
}

void pm_llvm_fence_streams(pm_llvm *g)
{
    if (!g->streamed)
        return;
    /* mfence on x86: non-temporal stores are weakly ordered; this one orders them before
     * the thread's later stores (the parallel region's barrier, the kernel's return).
     * The flag stays set: the entry fences too, whichever branches ran. */
    LLVMBuildFence(g->B, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
}

/* When flag holds, the entry records `why` and returns `status` (nothing written yet). */
static void fail_if(pm_llvm *g, LLVMValueRef flag, pm_status status, const char *why)
{
    LLVMBasicBlockRef bad = pm_llvm_block(g, "size_overflow"), ok = pm_llvm_block(g, "size_ok");
    LLVMBuildCondBr(g->B, flag, bad, ok);
    LLVMPositionBuilderAtEnd(g->B, bad);
    LLVMTypeRef fail_ty = LLVMFunctionType(g->t_void, (LLVMTypeRef[]){g->t_ptr, g->t_i32,
                                           g->t_ptr}, 3, 0);
    LLVMValueRef args[3] = {g->rt_arg, LLVMConstInt(g->t_i32, (unsigned)status, 0),
                            LLVMBuildGlobalStringPtr(g->B, why, "why")};
    LLVMBuildCall2(g->B, fail_ty, pm_llvm_declare(g, "pm_rt_fail", fail_ty), args, 3, "");
    LLVMBuildRet(g->B, LLVMConstInt(g->t_i32, (unsigned)status, 0));
    LLVMPositionBuilderAtEnd(g->B, ok);
}

/* A scratch buffer's shape (the function's box at these parameters, dense row-major)
 * into b, and its size in bytes. Every step is overflow-checked: an extent that
 * overflows returns PM_ERR_ARGUMENT, a size that does returns PM_ERR_NOMEM, both naming
 * the function, before the buffer is asked for. */
static LLVMValueRef scratch_bytes(pm_llvm *g, const pm_poly_storage *st, pm_llvm_buf *b)
{
    int n = st->ndims;
    const char *name = st->func->name;
    LLVMValueRef ext_ovf = LLVMConstInt(g->t_i1, 0, 0), size_ovf = ext_ovf;
    for (int d = 0; d < n; d++) {
        b->lb[d] = param_expr(g, st->lb[d]);
        LLVMValueRef ub = param_expr(g, st->ub[d]);
        LLVMValueRef span = checked(g, "ssub", ub, b->lb[d], &ext_ovf);
        /* span < 0 means empty; sdiv of a negative span would round toward zero, so
         * clamp first */
        span = smax64(g, span, pm_llvm_i64(g, -1));
        LLVMValueRef ext = checked(
            g, "sadd", LLVMBuildSDiv(g->B, smax64(g, span, pm_llvm_i64(g, 0)), pm_llvm_i64(g, st->step[d]), ""),
            pm_llvm_i64(g, 1), &ext_ovf);
        b->ext[d] = LLVMBuildSelect(g->B, LLVMBuildICmp(g->B, LLVMIntSLT, span, pm_llvm_i64(g, 0), ""),
                                    pm_llvm_i64(g, 0), ext, "ext");
    }
    LLVMValueRef count = pm_llvm_i64(g, 1);
    for (int d = n - 1; d >= 0; d--) {
        b->stride[d] = count;
        count = checked(g, "smul", count, b->ext[d], &size_ovf);
    }
    LLVMValueRef bytes = checked(g, "smul", count, pm_llvm_i64(g, (int64_t)pm_type_size(st->type)),
                                 &size_ovf);
    char why[256];
    snprintf(why, sizeof why, "%s: an extent of its domain overflows 64-bit integers at "
             "these parameter values", name);
    fail_if(g, ext_ovf, PM_ERR_ARGUMENT, why);
    snprintf(why, sizeof why, "%s: its buffer would need more than 2^63 bytes at these "
             "parameter values (out of memory)", name);
    fail_if(g, size_ovf, PM_ERR_NOMEM, why);
    return bytes;
}

/* pm_rt_buffer(rt, slot, bytes, who), then to `fail` when it returns NULL. `who` names
 * the function(s) whose memory it is: the run's out-of-memory message gives it. */
static LLVMValueRef rt_buffer(pm_llvm *g, int slot, LLVMValueRef bytes, const char *who,
                              const char *name, LLVMBasicBlockRef fail)
{
    LLVMTypeRef fnty = LLVMFunctionType(g->t_ptr, (LLVMTypeRef[]){g->t_ptr, g->t_i32, g->t_i64,
                                        g->t_ptr}, 4, 0);
    LLVMValueRef args[4] = {g->rt_arg, LLVMConstInt(g->t_i32, (unsigned)slot, 0), bytes,
                            LLVMBuildGlobalStringPtr(g->B, who, "who")};
    LLVMValueRef base = LLVMBuildCall2(g->B, fnty, pm_llvm_declare(g, "pm_rt_buffer", fnty),
                                       args, 4, name);
    LLVMBasicBlockRef ok = pm_llvm_block(g, "scratch_ok");
    LLVMBuildCondBr(g->B, LLVMBuildIsNull(g->B, base, ""), fail, ok);
    LLVMPositionBuilderAtEnd(g->B, ok);
    return base;
}

/* `who` of full buffer s: "g's buffer", or "the buffer g and h share" when later
 * functions take over its slot (one allocation, the largest of theirs). */
static void full_buffer_who(const pm_poly *poly, const pm_storage_plan *place, int s,
                            LLVMValueRef *full_bytes, char *out, size_t size)
{
    int index = place[s].index, n = 0, last = s;
    for (int t = s; t < poly->nstorage; t++)
        if (place[t].kind == PM_STORAGE_SCRATCH && place[t].index == index && full_bytes[t])
            n++, last = t;
    if (n == 1) {
        snprintf(out, size, "%s's buffer", poly->storage[s].func->name);
        return;
    }
    size_t len = (size_t)snprintf(out, size, "the buffer");
    for (int t = s, k = 0; t <= last && len < size; t++)
        if (place[t].kind == PM_STORAGE_SCRATCH && place[t].index == index && full_bytes[t])
            len += (size_t)snprintf(out + len, size - len, "%s%s", k++ == 0 ? " " :
                                    t == last ? " and " : ", ", poly->storage[t].func->name);
    if (len < size)
        snprintf(out + len, size - len, " share");
}

void pm_llvm_tile_shape(pm_llvm *g, int s, pm_llvm_buf *b)
{
    const pm_storage_plan *st = &g->place[s];
    int n = g->poly->storage[s].ndims;
    for (int d = 0; d < n; d++) {
        b->lb[d] = pm_llvm_i64(g, 0);
        b->ext[d] = pm_llvm_i64(g, st->tile_ext[d]);
    }
    int64_t count = 1;
    for (int d = n - 1; d >= 0; d--) {
        b->stride[d] = pm_llvm_i64(g, count);
        count *= st->tile_ext[d];
    }
}

LLVMValueRef pm_llvm_full_part_bytes(pm_llvm *g, int s, const pm_llvm_buf *full)
{
    const pm_poly_storage *st = &g->poly->storage[s];
    LLVMValueRef count = pm_llvm_i64(g, 1);
    if (st->ndims > 0)
        count = LLVMBuildMul(g->B, full->stride[0], full->ext[0], "");
    LLVMValueRef bytes = smax64(g, LLVMBuildMul(g->B, count, pm_llvm_i64(g, pm_type_size(st->type)), ""),
                                pm_llvm_i64(g, 64));
    return LLVMBuildAnd(g->B, LLVMBuildAdd(g->B, bytes, pm_llvm_i64(g, 63), ""),
                        pm_llvm_i64(g, -64), "full_part");
}

/* An exported member's slot (pm_storage_plan.exported): its full buffer (the function's
 * box, as a full buffer's), then one scratchpad per thread; b describes the full buffer,
 * which code outside its group reads, and the "tile" mark re-bases it to a scratchpad
 * (loops.c). */
static void setup_exported_buffer(pm_llvm *g, int s, pm_llvm_buf *b, LLVMBasicBlockRef fail)
{
    const pm_poly_storage *facts = &g->poly->storage[s];
    const pm_storage_plan *st = &g->place[s];
    LLVMValueRef ovf = LLVMConstInt(g->t_i1, 0, 0);
    /* scratch_bytes checked the full part's size below 2^63; its rounding up to 64 bytes
     * must stay there too (2^63 - 4 bytes of i32 would wrap to a negative size) */
    (void)checked(g, "sadd", scratch_bytes(g, facts, b), pm_llvm_i64(g, 63), &ovf);
    LLVMValueRef total = checked(g, "sadd", pm_llvm_full_part_bytes(g, s, b),
                                 pm_llvm_i64(g, st->tile_bytes * g->o->threads), &ovf);
    char why[256], who[512];
    snprintf(why, sizeof why, "%s: its buffer would need more than 2^63 bytes at these "
             "parameter values (out of memory)", facts->func->name);
    fail_if(g, ovf, PM_ERR_NOMEM, why);
    snprintf(who, sizeof who, "%s's buffer and tile scratchpads", facts->func->name);
    b->base = rt_buffer(g, st->index, total, who, facts->func->name, fail);
}

/* A tile scratchpad's description: one scratchpad per thread in one slot, allocated
 * here; the "tile" mark re-bases it (loops.c). */
static void setup_tile_buffer(pm_llvm *g, const pm_poly_storage *facts,
                              const pm_storage_plan *st, pm_llvm_buf *b, LLVMBasicBlockRef fail)
{
    char who[512];
    pm_llvm_tile_shape(g, (int)(facts - g->poly->storage), b);
    int threads = g->o->threads;
    snprintf(who, sizeof who, "%s's tile scratchpads for %d thread%s", facts->func->name,
             threads, threads == 1 ? "" : "s");
    b->base = rt_buffer(g, st->index, pm_llvm_i64(g, st->tile_bytes * threads), who,
                        facts->func->name, fail);
}

/* An input's or output's description, read from its pm_buffer; g->env.unit_stride
 * and-ed with whether its innermost stride is 1. */
static void setup_io_buffer(pm_llvm *g, const pm_poly_storage *st, pm_llvm_buf *b,
                            LLVMValueRef inputs, LLVMValueRef outputs)
{
    int n = st->ndims;
    LLVMValueRef arr = st->role == PM_STORAGE_INPUT ? inputs : outputs;
    b->base = buffer_field(g, arr, st->io_index, offsetof(pm_buffer, data), g->t_ptr,
                           st->func->name);
    for (int d = 0; d < n; d++) {
        b->ext[d] = buffer_field(g, arr, st->io_index,
                                 offsetof(pm_buffer, extent) + 8 * d, g->t_i64, "ext");
        b->stride[d] = buffer_field(g, arr, st->io_index,
                                    offsetof(pm_buffer, stride) + 8 * d, g->t_i64,
                                    "stride");
        b->lb[d] = param_expr(g, st->lb[d]); /* a window form's block starts inside */
    }
    if (n > 0) {
        LLVMValueRef unit = LLVMBuildICmp(g->B, LLVMIntEQ, b->stride[n - 1], pm_llvm_i64(g, 1), "");
        g->env.unit_stride = LLVMBuildAnd(g->B, g->env.unit_stride, unit, "unit");
    }
}

/* The full buffers' bases: full buffers sharing a slot (storage.c) get one allocation,
 * the largest of theirs (full_bytes[s], NULL for the others), asked for once: asking
 * again with more bytes would move the first one's memory. */
static void allocate_full_buffers(pm_llvm *g, LLVMValueRef *full_bytes, LLVMBasicBlockRef fail)
{
    const pm_poly *poly = g->poly;
    const pm_storage_plan *place = g->place;
    char who[512];
    for (int s = 0; s < poly->nstorage; s++) {
        const pm_storage_plan *st = &place[s];
        if (st->kind != PM_STORAGE_SCRATCH || !full_bytes[s])
            continue;
        LLVMValueRef bytes = full_bytes[s];
        for (int t = s + 1; t < poly->nstorage; t++)
            if (place[t].kind == PM_STORAGE_SCRATCH && place[t].index == st->index && full_bytes[t])
                bytes = smax64(g, bytes, full_bytes[t]);
        full_buffer_who(poly, place, s, full_bytes, who, sizeof who);
        LLVMValueRef base = rt_buffer(g, st->index, bytes, who, poly->storage[s].func->name, fail);
        for (int t = s; t < poly->nstorage; t++)
            if (place[t].kind == PM_STORAGE_SCRATCH && place[t].index == st->index &&
                full_bytes[t]) {
                g->env.bufs[t].base = base;
                full_bytes[t] = NULL;
            }
    }
}

/* Every storage's description in g->env.bufs (base, lower bounds, extents, strides):
 * inlined ones never addressed, tile scratchpads, inputs and outputs from their
 * pm_buffer, full buffers allocated at their sizes for these parameters. */
static void setup_buffers(pm_llvm *g, LLVMValueRef inputs, LLVMValueRef outputs,
                          LLVMBasicBlockRef fail)
{
    const pm_poly *poly = g->poly;
    g->env.unit_stride = LLVMConstInt(g->t_i1, 1, 0);
    LLVMValueRef *full_bytes = calloc((size_t)poly->nstorage + 1, sizeof *full_bytes);
    if (!full_bytes) {
        pm_error_set(g->err, PM_ERR_NOMEM, "%s: out of memory", poly->pipeline->name);
        return;
    }
    for (int s = 0; s < poly->nstorage; s++) {
        const pm_poly_storage *st = &poly->storage[s];
        pm_storage_kind kind = g->place[s].kind;
        pm_llvm_buf *b = &g->env.bufs[s];
        if (kind == PM_STORAGE_INLINED) { /* never addressed */
            b->base = LLVMConstNull(g->t_ptr);
            for (int d = 0; d < st->ndims; d++)
                b->lb[d] = b->ext[d] = b->stride[d] = pm_llvm_i64(g, 0);
        } else if (kind == PM_STORAGE_TILE && g->place[s].exported) {
            setup_exported_buffer(g, s, b, fail);
        } else if (kind == PM_STORAGE_TILE) {
            setup_tile_buffer(g, st, &g->place[s], b, fail);
        } else if (kind == PM_STORAGE_INPUT || kind == PM_STORAGE_OUTPUT) {
            setup_io_buffer(g, st, b, inputs, outputs);
        } else {
            /* never ask for 0 bytes: a clamped read of an empty producer still reads
             * index 0 */
            full_bytes[s] = smax64(g, scratch_bytes(g, st, b), pm_llvm_i64(g, 64));
        }
    }
    allocate_full_buffers(g, full_bytes, fail);
    free(full_bytes);
}

/* g's LLVM types in context C. */
static void init_types(pm_llvm *g, LLVMContextRef C)
{
    g->t_i1 = LLVMInt1TypeInContext(C);
    g->t_i8 = LLVMInt8TypeInContext(C);
    g->t_i16 = LLVMInt16TypeInContext(C);
    g->t_i32 = LLVMInt32TypeInContext(C);
    g->t_i64 = LLVMInt64TypeInContext(C);
    g->t_f32 = LLVMFloatTypeInContext(C);
    g->t_f64 = LLVMDoubleTypeInContext(C);
    g->t_ptr = LLVMPointerTypeInContext(C, 0);
    g->t_void = LLVMVoidTypeInContext(C);
}

/* The module's target triple and data layout from tm (none without one), and the
 * target's AVX-512 features from the lowering's target. */
static void init_target(pm_llvm *g, LLVMTargetMachineRef tm)
{
    if (tm) {
        char *triple = LLVMGetTargetMachineTriple(tm);
        LLVMSetTarget(g->M, triple);
        LLVMDisposeMessage(triple);
        LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
        LLVMSetModuleDataLayout(g->M, td);
        LLVMDisposeTargetData(td);
    }
    const pm_target *target = pm_lower_target(g->lower);
    g->avx512f = target->avx512f;
    g->avx512vl = target->avx512vl;
    g->avx512bw = target->avx512bw;
    g->avx512vbmi = target->avx512vbmi;
}

/* The entry function i32 entry(params, inputs, outputs, rt) as g->fn, with g->rt_arg;
 * its other arguments into arg[0..2]. */
static void entry_function(pm_llvm *g, const char *entry_name, LLVMValueRef *arg)
{
    LLVMTypeRef argt[4] = {g->t_ptr, g->t_ptr, g->t_ptr, g->t_ptr};
    LLVMTypeRef fnty = LLVMFunctionType(g->t_i32, argt, 4, 0);
    g->fn = LLVMAddFunction(g->M, entry_name, fnty);
    pm_llvm_set_fn_attrs(g, g->fn);
    for (unsigned i = 0; i < 3; i++)
        arg[i] = LLVMGetParam(g->fn, i);
    g->rt_arg = LLVMGetParam(g->fn, 3);
    LLVMSetValueName2(arg[0], "params", 6);
    LLVMSetValueName2(arg[1], "inputs", 6);
    LLVMSetValueName2(arg[2], "outputs", 7);
    LLVMSetValueName2(g->rt_arg, "rt", 2);
    /* Buffers never alias what the kernel writes except outputs, which the signature
     * check keeps apart from inputs; params and buffer descriptors are read-only. */
    unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
    for (unsigned i = 0; i < 3; i++)
        LLVMAddAttributeAtIndex(g->fn, i + 1, LLVMCreateEnumAttribute(g->C, noalias, 0));
}

/* The env's parameters, loaded from params, and its thread count from the runtime. */
static void load_params(pm_llvm *g, LLVMValueRef params)
{
    const pm_poly *poly = g->poly;
    int np = poly->pipeline->nparams;
    for (int i = 0; i < np; i++) {
        LLVMValueRef idx = pm_llvm_i64(g, i);
        LLVMValueRef p = LLVMBuildGEP2(g->B, g->t_i64, params, &idx, 1, "");
        g->env.param_raw[i] = LLVMBuildLoad2(g->B, g->t_i64, p, poly->pipeline->params[i]->name);
    }
    LLVMTypeRef thr_ty = LLVMFunctionType(g->t_i32, &g->t_ptr, 1, 0);
    g->env.threads = LLVMBuildCall2(g->B, thr_ty, pm_llvm_declare(g, "pm_rt_threads", thr_ty),
                                    &g->rt_arg, 1, "threads");
}

/* The module verified (when nothing failed before) into *out, or disposed of with *out
 * NULL on an error; the error's status. */
static pm_status finish_module(pm_llvm *g, LLVMModuleRef *out)
{
    if (g->err->status == PM_OK) {
        char *msg = NULL;
        if (LLVMVerifyModule(g->M, LLVMReturnStatusAction, &msg)) {
            pm_error_set(g->err, PM_ERR_INTERNAL, "%s: generated LLVM IR does not verify: %.900s",
                         g->poly->pipeline->name, msg ? msg : "");
        }
        LLVMDisposeMessage(msg);
    }
    if (g->err->status != PM_OK) {
        LLVMDisposeModule(g->M);
        *out = NULL;
        return g->err->status;
    }
    *out = g->M;
    return PM_OK;
}

/* The module of one entry function:
 *     i32 entry(ptr noalias params, ptr noalias inputs, ptr noalias outputs, ptr rt)
 *     entry:  load the parameters; threads = pm_rt_threads(rt); set up every buffer
 *             (setup_buffers: a failed allocation goes to fail); the code of each AST
 *             root; fence the streams; ret 0
 *     fail:   ret PM_ERR_NOMEM */
pm_status pm_llvm_build(const pm_poly *poly, const pm_ast *ast,
                        pm_lower *lower, const pm_options *o, LLVMTargetMachineRef tm,
                        LLVMContextRef C, const char *entry_name,
                        LLVMModuleRef *out, pm_error *err)
{
    pm_llvm g = {0};
    g.nmemo = -1; /* no statement yet */
    g.memo = malloc(PM_LLVM_MEMO * sizeof *g.memo);
    g.memo_slot = calloc(2 * PM_LLVM_MEMO, sizeof *g.memo_slot);
    g.memo_gen = 1;
    g.C = C;
    g.poly = poly;
    g.ast = ast;
    g.o = o;
    g.tm = tm;
    g.lower = lower;
    g.place = ast->plan->storage;
    pm_error local = {0}; /* the emitter reports through an err even without the caller's */
    g.err = err ? err : &local;
    g.vector_width = o->vector_width > 1 ? o->vector_width : 1;
    snprintf(g.entry_name, sizeof g.entry_name, "%s", entry_name);
    g.M = LLVMModuleCreateWithNameInContext(poly->pipeline->name, C);
    g.B = LLVMCreateBuilderInContext(C);
    init_types(&g, C);
    init_target(&g, tm);
    LLVMValueRef arg[3]; /* params, inputs, outputs */
    entry_function(&g, entry_name, arg);

    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(C, g.fn, "entry");
    LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(C, g.fn, "fail");
    LLVMPositionBuilderAtEnd(g.B, fail);
    LLVMBuildRet(g.B, LLVMConstInt(g.t_i32, PM_ERR_NOMEM, 0));
    LLVMPositionBuilderAtEnd(g.B, entry);

    int np = poly->pipeline->nparams;
    g.env.param_raw = calloc(np ? np : 1, sizeof *g.env.param_raw);
    g.env.bufs = calloc(poly->nstorage ? poly->nstorage : 1, sizeof *g.env.bufs);
    load_params(&g, arg[0]);
    setup_buffers(&g, arg[1], arg[2], fail);
    for (int i = 0; i < ast->n; i++)
        pm_llvm_node(&g, ast->root[i]);
    pm_llvm_fence_streams(&g);
    LLVMBuildRet(g.B, LLVMConstInt(g.t_i32, 0, 0));

    free(g.env.param_raw);
    free(g.env.bufs);
    free(g.buffer_tag);
    free(g.memo);
    free(g.memo_slot);
    LLVMDisposeBuilder(g.B);
    return finish_module(&g, out);
}
