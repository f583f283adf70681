/* llvm/merge.c — outlined bodies equal but for integer constants become one function.
 *
 * Promise: pm_llvm_merge_similar leaves a module that computes what it was given, with
 * fewer functions to optimize and to compile to machine code. A pyramid's levels run the
 * same stage code at other scales: their outlined bodies (<entry>_part<k>_<stage>,
 * llvm/parallel.c) differ only in constants such as a scratchpad's extents and strides
 * or a loop's bounds. Each class of such bodies becomes one function that takes the
 * constants in which its members differ ("holes") from a second argument, an array of
 * i64 per former member, constant, passed by each call:
 *     call void @f3(ptr %data)   ->   call void @f1.x4(ptr %data, ptr @f3.holes)
 * The new function is the first member's blocks, moved, with each hole loaded once in its
 * entry block (and splatted there, for a vector operand).
 *
 * Two functions are equal when they have the same blocks with the same instructions in
 * the same order, each with the same opcode, type, flags (nsw, nuw, exact, nneg, disjoint,
 * fast-math), predicate, alignment, volatility, element types, indices and shuffle mask,
 * the same metadata (TBAA tags up to a one-to-one renaming: every buffer has a tag of its
 * own under one root, module.c), and operands that correspond position for position (the
 * same argument, the instruction or block at the same place, or the same constant). A
 * constant may differ only where a run-time value serves as well: an integer wider than
 * i1, or a splat of one, as an operand of integer arithmetic, shifts and compares, a
 * select's value, a phi's incoming value, a stored value or a flat getelementptr index.
 * A divisor may differ when every member's is a power of two (the division becomes shifts
 * and masks, merge_divisor). Calls, shuffles, element indices and allocas keep theirs (an
 * intrinsic's immediate arguments must be constants).
 *
 * A second round merges the parallel loops' bodies (<entry>_par<k>_<stage>), which call
 * the merged stage bodies: they may differ also in the holes arrays they pass (pointers)
 * and in any divisor (a tile count, computed once per share of tiles). GOMP_parallel
 * hands such a body one argument, its data block, so the caller stores the holes array
 * in a slot past the block's end (the block grown by one) and the body loads it from there.
 * Only functions reached in one of these two ways are merged. The cost: a hole is a
 * register, not a constant LLVM could fold into an address.
 */
#include "codegen/llvm/llvm.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a map from pointers to pointers ---------------------------------------------------- */

typedef struct ptr_map {
    size_t mask;         /* capacity - 1, a power of two                                     */
    const void **key;
    const void **val;
} ptr_map;

static bool map_init(ptr_map *m, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n + 2)
        cap *= 2;
    m->mask = cap - 1;
    m->key = calloc(cap, sizeof *m->key);
    m->val = calloc(cap, sizeof *m->val);
    return m->key && m->val;
}

static void map_free(ptr_map *m)
{
    free(m->key);
    free(m->val);
    m->key = m->val = NULL;
}

static size_t map_slot(const ptr_map *m, const void *k)
{
    size_t i = (size_t)(((uintptr_t)k * 0x9E3779B97F4A7C15ull) >> 20) & m->mask;
    while (m->key[i] && m->key[i] != k)
        i = (i + 1) & m->mask;
    return i;
}

static void map_put(ptr_map *m, const void *k, const void *v)
{
    size_t i = map_slot(m, k);
    m->key[i] = k;
    m->val[i] = v;
}

static const void *map_get(const ptr_map *m, const void *k)
{
    size_t i = map_slot(m, k);
    return m->key[i] ? m->val[i] : NULL;
}

/* ---- the shapes of constants ------------------------------------------------------------ */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xBF58476D1CE4E5B9ull;
}

static bool hole_width(LLVMTypeRef t)
{
    if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind)
        return false;
    unsigned w = LLVMGetIntTypeWidth(t);
    return w == 8 || w == 16 || w == 32 || w == 64;
}

/* Whether c is an integer constant of a hole's width, or a splat of one; its value
 * (sign-extended) into *v. */
static bool int_or_splat(LLVMValueRef c, int64_t *v)
{
    LLVMTypeRef t = LLVMTypeOf(c);
    if (LLVMIsAConstantInt(c) && hole_width(t)) {
        *v = LLVMConstIntGetSExtValue(c);
        return true;
    }
    if (LLVMGetTypeKind(t) != LLVMVectorTypeKind || !hole_width(LLVMGetElementType(t)))
        return false;
    if (LLVMIsAConstantAggregateZero(c)) {
        *v = 0;
        return true;
    }
    if (!LLVMIsAConstantDataVector(c) && !LLVMIsAConstantVector(c))
        return false;
    unsigned n = LLVMGetVectorSize(t);
    if (n > 64) /* AVX-512's widest: <64 x i8> (merge_divisor's constants) */
        return false;
    for (unsigned i = 0; i < n; i++) {
        LLVMValueRef e = LLVMGetAggregateElement(c, i);
        if (!e || !LLVMIsAConstantInt(e))
            return false;
        int64_t x = LLVMConstIntGetSExtValue(e);
        if (i > 0 && x != *v)
            return false;
        *v = x;
    }
    return n > 0;
}

/* Whether operand k of instruction in (opcode op) may be a run-time value (the file's
 * header lists them). */
static bool hole_position(LLVMValueRef in, LLVMOpcode op, int k)
{
    switch (op) {
    case LLVMAdd: case LLVMSub: case LLVMMul: case LLVMAnd: case LLVMOr: case LLVMXor:
    case LLVMICmp: case LLVMPHI:
        return true;
    case LLVMShl: case LLVMLShr: case LLVMAShr:
        return true;
    case LLVMSDiv: case LLVMUDiv: case LLVMSRem: case LLVMURem:
        return k == 0;
    case LLVMSelect:
        return k > 0;
    case LLVMStore:
        return k == 0;
    case LLVMGetElementPtr:
        return k > 0 && LLVMGetTypeKind(LLVMGetGEPSourceElementType(in)) != LLVMStructTypeKind;
    default:
        return false;
    }
}

/* A divisor may differ when every member's is a power of two: the division becomes
 * shifts and masks by a run-time amount (merge_divisor), as cheap as the constant's. */
static bool divisor_position(LLVMOpcode op, int k)
{
    return k == 1 && (op == LLVMSDiv || op == LLVMUDiv || op == LLVMSRem || op == LLVMURem);
}

static int64_t log2_of(int64_t v)
{
    int64_t k = 0;
    while (v > 1) {
        v >>= 1;
        k++;
    }
    return k;
}

/* v is 2^k with 0 <= k < the width of t (or of its elements) - 1. */
static bool power_of_two(int64_t v, LLVMTypeRef t)
{
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind)
        t = LLVMGetElementType(t);
    unsigned w = LLVMGetIntTypeWidth(t);
    return v > 0 && (v & (v - 1)) == 0 && log2_of(v) < (int64_t)w - 1;
}

/* A pointer may differ where it is an argument of a call of a function defined here (not
 * an intrinsic) and both are constant globals: a merged stage body's holes (merge_class),
 * passed by a parallel loop's body that calls it. */
static bool pointer_position(LLVMValueRef in, LLVMOpcode op, int k, LLVMValueRef a,
                             LLVMValueRef b)
{
    if (op != LLVMCall || k >= (int)LLVMGetNumArgOperands(in))
        return false;
    LLVMValueRef callee = LLVMGetCalledValue(in);
    return callee && LLVMIsAFunction(callee) && !LLVMIsDeclaration(callee) &&
           LLVMIsAGlobalVariable(a) && LLVMIsAGlobalVariable(b) && LLVMIsGlobalConstant(a) &&
           LLVMIsGlobalConstant(b);
}

/* The i64 constant a site's hole holds for operand o: the integer (of a splat: its
 * element), a divisor's log2, or a pointer's bits. */
static LLVMValueRef site_value(LLVMValueRef o, bool divisor, LLVMTypeRef i64)
{
    int64_t v = 0;
    if (LLVMGetTypeKind(LLVMTypeOf(o)) == LLVMPointerTypeKind)
        return LLVMConstPtrToInt(o, i64);
    int_or_splat(o, &v);
    return LLVMConstInt(i64, (unsigned long long)(divisor ? log2_of(v) : v), 1);
}

/* ---- which functions may merge ---------------------------------------------------------- */

/* f is a defined internal void(ptr) function called directly and only so. */
/* How a candidate is reached: called directly (a stage body), or handed to
 * GOMP_parallel with its data block (a parallel loop's body, llvm/parallel.c). */
enum { NOT_CANDIDATE, CALLED, BY_GOMP };

/* The data block of a GOMP_parallel(fn, data, threads, flags) call: an alloca of
 * [N x i64] (its N in *slots), else NULL. */
static LLVMValueRef gomp_data(LLVMValueRef call, int *slots)
{
    LLVMValueRef callee = LLVMGetCalledValue(call);
    size_t len = 0;
    const char *name = callee && LLVMIsAFunction(callee) ? LLVMGetValueName2(callee, &len) : "";
    if (len != 13 || strncmp(name, "GOMP_parallel", 13) != 0 || LLVMGetNumArgOperands(call) != 4)
        return NULL;
    LLVMValueRef data = LLVMGetArgOperand(call, 1);
    LLVMTypeRef t = data && LLVMIsAAllocaInst(data) ? LLVMGetAllocatedType(data) : NULL;
    if (!t || LLVMGetTypeKind(t) != LLVMArrayTypeKind ||
        LLVMGetElementType(t) != LLVMInt64TypeInContext(LLVMGetTypeContext(t)))
        return NULL;
    *slots = (int)LLVMGetArrayLength2(t);
    return data;
}

/* f's kind: a defined internal void(ptr) function whose every use is a direct call of
 * it, or every use GOMP_parallel's function argument with a data block. */
static int candidate(LLVMValueRef f, LLVMTypeRef part_type)
{
    if (LLVMIsDeclaration(f) || LLVMGetLinkage(f) != LLVMInternalLinkage ||
        LLVMGlobalGetValueType(f) != part_type || !LLVMGetFirstUse(f))
        return NOT_CANDIDATE;
    bool called = true, by_gomp = true;
    for (LLVMUseRef u = LLVMGetFirstUse(f); u; u = LLVMGetNextUse(u)) {
        LLVMValueRef user = LLVMGetUser(u);
        int slots;
        bool call = LLVMIsACallInst(user) != NULL;
        called = called && call && LLVMGetCalledValue(user) == f &&
                 LLVMGetArgOperand(user, 0) != f;
        by_gomp = by_gomp && call && gomp_data(user, &slots) &&
                  LLVMGetArgOperand(user, 0) == f && LLVMGetArgOperand(user, 2) != f &&
                  LLVMGetArgOperand(user, 3) != f;
    }
    return called ? CALLED : by_gomp ? BY_GOMP : NOT_CANDIDATE;
}

/* Opcodes whose every property the comparison reads. */
static bool known_opcode(LLVMOpcode op)
{
    switch (op) {
    case LLVMRet: case LLVMBr: case LLVMUnreachable:
    case LLVMFNeg:
    case LLVMAdd: case LLVMFAdd: case LLVMSub: case LLVMFSub: case LLVMMul: case LLVMFMul:
    case LLVMUDiv: case LLVMSDiv: case LLVMFDiv: case LLVMURem: case LLVMSRem: case LLVMFRem:
    case LLVMShl: case LLVMLShr: case LLVMAShr: case LLVMAnd: case LLVMOr: case LLVMXor:
    case LLVMAlloca: case LLVMLoad: case LLVMStore: case LLVMGetElementPtr:
    case LLVMTrunc: case LLVMZExt: case LLVMSExt: case LLVMFPToUI: case LLVMFPToSI:
    case LLVMUIToFP: case LLVMSIToFP: case LLVMFPTrunc: case LLVMFPExt: case LLVMPtrToInt:
    case LLVMIntToPtr: case LLVMBitCast:
    case LLVMICmp: case LLVMFCmp: case LLVMPHI: case LLVMCall: case LLVMSelect:
    case LLVMExtractElement: case LLVMInsertElement: case LLVMShuffleVector:
    case LLVMExtractValue: case LLVMInsertValue: case LLVMFreeze:
    case LLVMAtomicCmpXchg: case LLVMFence:
        return true;
    default:
        return false;
    }
}

/* A hash of f's shape: equal functions (in this file's sense) hash alike. */
static uint64_t shape_hash(LLVMValueRef f)
{
    uint64_t h = 1;
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b)) {
        h = mix(h, 0xB10C);
        for (LLVMValueRef in = LLVMGetFirstInstruction(b); in; in = LLVMGetNextInstruction(in)) {
            h = mix(h, (uint64_t)LLVMGetInstructionOpcode(in));
            h = mix(h, (uint64_t)(uintptr_t)LLVMTypeOf(in));
            int n = LLVMGetNumOperands(in);
            h = mix(h, (uint64_t)n);
            for (int k = 0; k < n; k++) {
                LLVMValueRef o = LLVMGetOperand(in, k);
                int64_t v;
                if (!o || LLVMIsAInstruction(o) || LLVMIsAArgument(o) || LLVMValueIsBasicBlock(o))
                    h = mix(h, 7);
                else if (int_or_splat(o, &v) || LLVMIsAGlobalVariable(o))
                    h = mix(h, (uint64_t)(uintptr_t)LLVMTypeOf(o));
                else
                    h = mix(h, (uint64_t)(uintptr_t)o);
            }
        }
    }
    return h;
}

/* ---- the comparison --------------------------------------------------------------------- */

/* Where a member's constant differs from the first member's: operand k of instruction
 * `at` of the first member (its value there: the member's). */
typedef struct site {
    LLVMValueRef at;
    int k;
    bool divisor;  /* a power of two dividing: value is its log2 (merge_divisor)          */
    LLVMValueRef value; /* an i64 constant: the integer, the log2, or the pointer's bits  */
} site;

typedef struct sites {
    site *s;
    int n, cap;
} sites;

static bool sites_add(sites *l, LLVMValueRef at, int k, bool divisor, LLVMValueRef value)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        site *s = realloc(l->s, (size_t)cap * sizeof *s);
        if (!s)
            return false;
        l->s = s;
        l->cap = cap;
    }
    l->s[l->n++] = (site){at, k, divisor, value};
    return true;
}

static int count_instructions(LLVMValueRef f)
{
    int n = 0;
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
        for (LLVMValueRef in = LLVMGetFirstInstruction(b); in; in = LLVMGetNextInstruction(in))
            n++;
    return n;
}

/* Maps each block and instruction of g to f's at the same place (as values) in m;
 * false when their numbers of blocks or instructions differ. */
static bool map_places(LLVMValueRef f, LLVMValueRef g, ptr_map *m)
{
    LLVMBasicBlockRef a = LLVMGetFirstBasicBlock(f), b = LLVMGetFirstBasicBlock(g);
    for (; a && b; a = LLVMGetNextBasicBlock(a), b = LLVMGetNextBasicBlock(b)) {
        map_put(m, LLVMBasicBlockAsValue(b), LLVMBasicBlockAsValue(a));
        LLVMValueRef x = LLVMGetFirstInstruction(a), y = LLVMGetFirstInstruction(b);
        for (; x && y; x = LLVMGetNextInstruction(x), y = LLVMGetNextInstruction(y))
            map_put(m, y, x);
        if (x || y)
            return false;
    }
    return !a && !b;
}

/* The TBAA tags of the two functions as a one-to-one renaming. */
typedef struct tag_maps {
    ptr_map fwd, back;
    unsigned tbaa;
} tag_maps;

static bool same_metadata(LLVMValueRef x, LLVMValueRef y, tag_maps *tm)
{
    size_t nx = 0, ny = 0;
    LLVMValueMetadataEntry *ex = LLVMInstructionGetAllMetadataOtherThanDebugLoc(x, &nx);
    LLVMValueMetadataEntry *ey = LLVMInstructionGetAllMetadataOtherThanDebugLoc(y, &ny);
    bool same = nx == ny;
    for (unsigned i = 0; same && i < nx; i++) {
        unsigned kind = LLVMValueMetadataEntriesGetKind(ex, i);
        LLVMMetadataRef mx = LLVMValueMetadataEntriesGetMetadata(ex, i);
        LLVMMetadataRef my = LLVMValueMetadataEntriesGetMetadata(ey, i);
        same = kind == LLVMValueMetadataEntriesGetKind(ey, i);
        if (!same || mx == my)
            continue;
        if (kind != tm->tbaa) {
            same = false;
            continue;
        }
        const void *to = map_get(&tm->fwd, my), *from = map_get(&tm->back, mx);
        same = (!to && !from) || (to == mx && from == my);
        if (same && !to) {
            map_put(&tm->fwd, my, mx);
            map_put(&tm->back, mx, my);
        }
    }
    if (ex)
        LLVMDisposeValueMetadataEntries(ex);
    if (ey)
        LLVMDisposeValueMetadataEntries(ey);
    return same;
}

/* Whether x and y carry the same flags: nsw and nuw, exact, nneg, disjoint, fast-math. */
static bool same_flags(LLVMValueRef x, LLVMValueRef y, LLVMOpcode op)
{
    switch (op) {
    case LLVMAdd: case LLVMSub: case LLVMMul: case LLVMShl:
        if (LLVMGetNSW(x) != LLVMGetNSW(y) || LLVMGetNUW(x) != LLVMGetNUW(y))
            return false;
        break;
    case LLVMSDiv: case LLVMUDiv: case LLVMLShr: case LLVMAShr:
        if (LLVMGetExact(x) != LLVMGetExact(y))
            return false;
        break;
    case LLVMZExt: case LLVMUIToFP:
        if (LLVMGetNNeg(x) != LLVMGetNNeg(y))
            return false;
        break;
    case LLVMOr:
        if (LLVMGetIsDisjoint(x) != LLVMGetIsDisjoint(y))
            return false;
        break;
    default:
        break;
    }
    return !LLVMCanValueUseFastMathFlags(x) || LLVMGetFastMathFlags(x) == LLVMGetFastMathFlags(y);
}

/* Whether instructions x (of f) and y (of g) have the same properties other than their
 * operands. */
static bool same_properties(LLVMValueRef x, LLVMValueRef y, LLVMOpcode op, const ptr_map *places)
{
    if (LLVMTypeOf(x) != LLVMTypeOf(y) || LLVMGetNumOperands(x) != LLVMGetNumOperands(y) ||
        !same_flags(x, y, op))
        return false;
    switch (op) {
    case LLVMICmp:
        return LLVMGetICmpPredicate(x) == LLVMGetICmpPredicate(y);
    case LLVMFCmp:
        return LLVMGetFCmpPredicate(x) == LLVMGetFCmpPredicate(y);
    case LLVMLoad: case LLVMStore:
        return LLVMGetAlignment(x) == LLVMGetAlignment(y) &&
               LLVMGetVolatile(x) == LLVMGetVolatile(y) &&
               LLVMGetOrdering(x) == LLVMGetOrdering(y) &&
               LLVMIsAtomicSingleThread(x) == LLVMIsAtomicSingleThread(y);
    case LLVMAlloca:
        return LLVMGetAlignment(x) == LLVMGetAlignment(y) &&
               LLVMGetAllocatedType(x) == LLVMGetAllocatedType(y);
    case LLVMFence:
        return LLVMGetOrdering(x) == LLVMGetOrdering(y) &&
               LLVMIsAtomicSingleThread(x) == LLVMIsAtomicSingleThread(y);
    case LLVMAtomicCmpXchg:
        return LLVMGetCmpXchgSuccessOrdering(x) == LLVMGetCmpXchgSuccessOrdering(y) &&
               LLVMGetCmpXchgFailureOrdering(x) == LLVMGetCmpXchgFailureOrdering(y) &&
               LLVMGetWeak(x) == LLVMGetWeak(y) && LLVMGetVolatile(x) == LLVMGetVolatile(y) &&
               LLVMIsAtomicSingleThread(x) == LLVMIsAtomicSingleThread(y);
    case LLVMGetElementPtr:
        return LLVMIsInBounds(x) == LLVMIsInBounds(y) &&
               LLVMGetGEPSourceElementType(x) == LLVMGetGEPSourceElementType(y);
    case LLVMCall:
        return LLVMGetCalledFunctionType(x) == LLVMGetCalledFunctionType(y) &&
               LLVMIsTailCall(x) == LLVMIsTailCall(y);
    case LLVMShuffleVector: {
        unsigned n = LLVMGetNumMaskElements(x);
        if (n != LLVMGetNumMaskElements(y))
            return false;
        for (unsigned i = 0; i < n; i++)
            if (LLVMGetMaskValue(x, i) != LLVMGetMaskValue(y, i))
                return false;
        return true;
    }
    case LLVMExtractValue: case LLVMInsertValue: {
        unsigned n = LLVMGetNumIndices(x);
        return n == LLVMGetNumIndices(y) &&
               memcmp(LLVMGetIndices(x), LLVMGetIndices(y), n * sizeof(unsigned)) == 0;
    }
    case LLVMPHI: {
        unsigned n = LLVMCountIncoming(x);
        if (n != LLVMCountIncoming(y))
            return false;
        for (unsigned i = 0; i < n; i++)
            if (map_get(places, LLVMBasicBlockAsValue(LLVMGetIncomingBlock(y, i))) !=
                LLVMBasicBlockAsValue(LLVMGetIncomingBlock(x, i)))
                return false;
        return true;
    }
    default:
        return true;
    }
}

/* Whether g equals f (the file's header), the constants of g that differ from f's
 * appended to diff; with any_divisor, divisors that are not powers of two may differ too
 * (as run-time divisions). Out of memory counts as unequal. */
static bool equal_but_constants(LLVMValueRef f, LLVMValueRef g, unsigned tbaa, bool any_divisor,
                                sites *diff)
{
    ptr_map places = {0};
    tag_maps tm = {.tbaa = tbaa};
    int n = count_instructions(f);
    bool same = map_init(&places, (size_t)n + 64) && map_init(&tm.fwd, 64) &&
                map_init(&tm.back, 64) && map_places(f, g, &places);
    int first_diff = diff->n;
    LLVMValueRef pf = LLVMGetParam(f, 0), pg = LLVMGetParam(g, 0);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(LLVMGetTypeContext(LLVMTypeOf(f)));
    for (LLVMBasicBlockRef a = LLVMGetFirstBasicBlock(f), b = LLVMGetFirstBasicBlock(g);
         same && a; a = LLVMGetNextBasicBlock(a), b = LLVMGetNextBasicBlock(b))
        for (LLVMValueRef x = LLVMGetFirstInstruction(a), y = LLVMGetFirstInstruction(b);
             same && x; x = LLVMGetNextInstruction(x), y = LLVMGetNextInstruction(y)) {
            LLVMOpcode op = LLVMGetInstructionOpcode(x);
            same = op == LLVMGetInstructionOpcode(y) && known_opcode(op) &&
                   same_properties(x, y, op, &places) && same_metadata(x, y, &tm);
            for (int k = 0, no = same ? LLVMGetNumOperands(x) : 0; same && k < no; k++) {
                LLVMValueRef ox = LLVMGetOperand(x, k), oy = LLVMGetOperand(y, k);
                int64_t vx, vy;
                if (ox == oy)
                    same = !(ox && (LLVMIsAInstruction(ox) || LLVMValueIsBasicBlock(ox) ||
                                    LLVMIsAArgument(ox))); /* not f's own: cannot be g's */
                else if (!ox || !oy)
                    same = false;
                else if (LLVMIsAInstruction(oy) || LLVMValueIsBasicBlock(oy))
                    same = map_get(&places, oy) == ox;
                else if (LLVMIsAArgument(oy))
                    same = oy == pg && ox == pf;
                else if (pointer_position(x, op, k, ox, oy))
                    same = sites_add(diff, x, k, false, site_value(oy, false, i64));
                else if (LLVMTypeOf(ox) != LLVMTypeOf(oy) || !int_or_splat(ox, &vx) ||
                         !int_or_splat(oy, &vy))
                    same = false;
                else if (hole_position(x, op, k))
                    same = sites_add(diff, x, k, false, site_value(oy, false, i64));
                else if (!divisor_position(op, k))
                    same = false;
                else if (any_divisor) /* a parallel loop's: once per share or tile */
                    same = vx != 0 && vy != 0 &&
                           sites_add(diff, x, k, false, site_value(oy, false, i64));
                else
                    same = power_of_two(vx, LLVMTypeOf(ox)) && power_of_two(vy, LLVMTypeOf(oy)) &&
                           sites_add(diff, x, k, true, site_value(oy, true, i64));
            }
        }
    if (!same)
        diff->n = first_diff;
    map_free(&places);
    map_free(&tm.fwd);
    map_free(&tm.back);
    return same;
}

/* ---- merging a class -------------------------------------------------------------------- */

/* A class of equal functions: members[0] is the first, member m's constants that
 * differ from it in diff[begin[m] .. end[m]). */
typedef struct klass {
    LLVMValueRef *members;
    int *begin, *end;
    int n, cap;
} klass;

/* A hole: the scalar type of its sites and its value per member. */
typedef struct hole {
    LLVMTypeRef type;
    LLVMValueRef *value; /* [members]: i64 constants (site_value)                          */
    LLVMValueRef scalar; /* its load in the merged function                                */
} hole;

static void copy_attributes(LLVMValueRef from, LLVMValueRef to, LLVMAttributeIndex idx)
{
    unsigned n = LLVMGetAttributeCountAtIndex(from, idx);
    if (n == 0)
        return;
    LLVMAttributeRef *a = malloc(n * sizeof *a);
    if (!a)
        return; /* attributes are hints here: target-cpu, nounwind, noinline */
    LLVMGetAttributesAtIndex(from, idx, a);
    for (unsigned i = 0; i < n; i++)
        LLVMAddAttributeAtIndex(to, idx, a[i]);
    free(a);
}

/* Site i's hole index by its values across the members, adding holes as needed;
 * -1 when out of memory. */
static int hole_of(hole **holes, int *nholes, int *cap, LLVMTypeRef type,
                   const LLVMValueRef *values, int members)
{
    for (int h = 0; h < *nholes; h++)
        if ((*holes)[h].type == type &&
            memcmp((*holes)[h].value, values, (size_t)members * sizeof *values) == 0)
            return h;
    if (*nholes == *cap) {
        int c = *cap ? 2 * *cap : 16;
        hole *nh = realloc(*holes, (size_t)c * sizeof *nh);
        if (!nh)
            return -1;
        *holes = nh;
        *cap = c;
    }
    LLVMValueRef *v = malloc((size_t)members * sizeof *v);
    if (!v)
        return -1;
    memcpy(v, values, (size_t)members * sizeof *v);
    (*holes)[*nholes] = (hole){type, v, NULL};
    return (*nholes)++;
}

/* The splat of scalar s as vector type vt, built once per hole and type in the entry
 * (where the builder is). */
static LLVMValueRef splat(LLVMBuilderRef B, LLVMValueRef s, LLVMTypeRef vt)
{
    LLVMContextRef C = LLVMGetTypeContext(vt);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(C);
    LLVMValueRef one = LLVMBuildInsertElement(B, LLVMGetUndef(vt), s, LLVMConstInt(i32, 0, 0), "");
    LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(i32, LLVMGetVectorSize(vt)));
    return LLVMBuildShuffleVector(B, one, LLVMGetUndef(vt), zeros, "hole.splat");
}

/* The class's sites, in the first member's order, with every member's value; the
 * members' diff lists are in that order too (equal_but_constants walks it), so one cursor
 * per member finds them. With any_divisor a divisor's site holds the divisor itself, as
 * equal_but_constants recorded it. Returns the number of sites, -1 when out of memory. */
static int class_sites(const klass *c, const sites *diff, bool any_divisor, site **out,
                       LLVMValueRef **values)
{
    int n = c->n, ns = 0, cap = 0;
    site *s = NULL;
    LLVMValueRef *v = NULL;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(LLVMGetTypeContext(LLVMTypeOf(c->members[0])));
    int *cur = malloc((size_t)n * sizeof *cur);
    if (!cur)
        return -1;
    for (int m = 1; m < n; m++)
        cur[m] = c->begin[m];
    bool ok = true;
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(c->members[0]); ok && b;
         b = LLVMGetNextBasicBlock(b))
        for (LLVMValueRef x = LLVMGetFirstInstruction(b); ok && x; x = LLVMGetNextInstruction(x))
            for (int k = 0, no = LLVMGetNumOperands(x); ok && k < no; k++) {
                bool any = false;
                for (int m = 1; m < n; m++)
                    any |= cur[m] < c->end[m] && diff->s[cur[m]].at == x &&
                           diff->s[cur[m]].k == k;
                if (!any)
                    continue;
                if (ns == cap) {
                    cap = cap ? 2 * cap : 64;
                    site *s2 = realloc(s, (size_t)cap * sizeof *s2);
                    s = s2 ? s2 : s;
                    LLVMValueRef *v2 = s2 ? realloc(v, (size_t)cap * (size_t)n * sizeof *v2) : NULL;
                    v = v2 ? v2 : v;
                    ok = s2 && v2;
                    if (!ok)
                        break;
                }
                bool divisor = !any_divisor && divisor_position(LLVMGetInstructionOpcode(x), k);
                LLVMValueRef v0 = site_value(LLVMGetOperand(x, (unsigned)k), divisor, i64);
                s[ns] = (site){x, k, divisor, v0};
                LLVMValueRef *row = &v[(size_t)ns * (size_t)n];
                row[0] = v0;
                for (int m = 1; m < n; m++) {
                    bool here = cur[m] < c->end[m] && diff->s[cur[m]].at == x &&
                                diff->s[cur[m]].k == k;
                    row[m] = here ? diff->s[cur[m]++].value : v0;
                }
                ns++;
            }
    free(cur);
    if (!ok) {
        free(s);
        free(v);
        return -1;
    }
    *out = s;
    *values = v;
    return ns;
}

/* The scalar type of a site's operand (the element type of a splat). */
static LLVMTypeRef scalar_type(const site *s)
{
    LLVMTypeRef t = LLVMTypeOf(LLVMGetOperand(s->at, (unsigned)s->k));
    return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
}

/* Every call of `from` becomes a call of `to` with from's data argument and `extra`
 * (none when NULL). */
static void redirect_calls(LLVMBuilderRef B, LLVMValueRef from, LLVMValueRef to,
                           LLVMValueRef extra)
{
    for (LLVMUseRef u; (u = LLVMGetFirstUse(from));) { /* candidate(): only calls use it */
        LLVMValueRef call = LLVMGetUser(u);
        LLVMPositionBuilderBefore(B, call);
        LLVMValueRef args[2] = {LLVMGetArgOperand(call, 0), extra};
        LLVMBuildCall2(B, LLVMGlobalGetValueType(to), to, args, extra ? 2 : 1, "");
        LLVMInstructionEraseFromParent(call);
    }
}

typedef struct merged_stats {
    int classes, removed, holes;
} merged_stats;

/* The holes of a class (deduplicated by type and values) and each site's hole. */
typedef struct hole_set {
    hole *h;
    int n, cap;
    int *of_site;
} hole_set;

static void hole_set_free(hole_set *hs)
{
    for (int i = 0; i < hs->n; i++)
        free(hs->h[i].value);
    free(hs->h);
    free(hs->of_site);
}

/* The division `at` (x op 2^k, k the hole's value v, splatted for a vector) as shifts
 * and masks, in its place (an exact rewrite; mask = 2^k - 1, bias = mask for x < 0):
 *     udiv: x >> k (logical)       urem: x & mask
 *     sdiv: (x + bias) >> k        srem: x - ((x + bias) & ~mask) */
static void merge_divisor(LLVMBuilderRef B, LLVMValueRef at, LLVMValueRef v)
{
    LLVMOpcode op = LLVMGetInstructionOpcode(at);
    LLVMValueRef x = LLVMGetOperand(at, 0);
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMTypeRef et = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
    unsigned w = LLVMGetIntTypeWidth(et);
    LLVMPositionBuilderBefore(B, at);
    LLVMValueRef one = LLVMConstInt(t == et ? t : et, 1, 0), top = LLVMConstInt(et, w - 1, 0);
    if (t != et) {
        LLVMValueRef ones[64], tops[64];
        unsigned n = LLVMGetVectorSize(t);
        for (unsigned i = 0; i < n && i < 64; i++) {
            ones[i] = one;
            tops[i] = top;
        }
        one = LLVMConstVector(ones, n);
        top = LLVMConstVector(tops, n);
    }
    LLVMValueRef mask = LLVMBuildSub(B, LLVMBuildShl(B, one, v, ""), one, "");
    LLVMValueRef r;
    if (op == LLVMUDiv) {
        r = LLVMBuildLShr(B, x, v, "");
    } else if (op == LLVMURem) {
        r = LLVMBuildAnd(B, x, mask, "");
    } else {
        LLVMValueRef bias = LLVMBuildAnd(B, LLVMBuildAShr(B, x, top, ""), mask, "");
        LLVMValueRef xb = LLVMBuildAdd(B, x, bias, "");
        r = op == LLVMSDiv ? LLVMBuildAShr(B, xb, v, "")
                           : LLVMBuildSub(B, x, LLVMBuildAnd(B, xb, LLVMBuildNot(B, mask, ""), ""), "");
    }
    LLVMReplaceAllUsesWith(at, r);
    LLVMInstructionEraseFromParent(at);
}

/* Loads every hole at the top of fn's entry block (after its allocas) from the holes'
 * array: fn's second argument, or with slot >= 0 the pointer in that slot of its data
 * argument; puts the loads (splatted for vector operands) in the sites' places. */
static void fill_holes(LLVMBuilderRef B, LLVMValueRef fn, int slot, hole_set *hs, const site *s,
                       int ns)
{
    LLVMContextRef C = LLVMGetTypeContext(LLVMTypeOf(fn));
    LLVMTypeRef i64 = LLVMInt64TypeInContext(C);
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
    LLVMValueRef at = LLVMGetFirstInstruction(entry);
    while (at && LLVMGetInstructionOpcode(at) == LLVMAlloca)
        at = LLVMGetNextInstruction(at);
    LLVMPositionBuilderBefore(B, at); /* a block ends in a terminator: at is never NULL */
    LLVMValueRef arg = LLVMGetParam(fn, 1);
    if (slot >= 0) {
        LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)slot, 0);
        LLVMValueRef p = LLVMBuildGEP2(B, i64, LLVMGetParam(fn, 0), &idx, 1, "");
        arg = LLVMBuildLoad2(B, LLVMPointerTypeInContext(C, 0), p, "holes");
        LLVMSetAlignment(arg, 8);
    }
    for (int h = 0; h < hs->n; h++) {
        LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)h, 0);
        LLVMValueRef p = LLVMBuildGEP2(B, i64, arg, &idx, 1, "");
        LLVMValueRef v = LLVMBuildLoad2(B, i64, p, "hole");
        LLVMSetAlignment(v, 8);
        if (LLVMGetTypeKind(hs->h[h].type) == LLVMPointerTypeKind)
            v = LLVMBuildIntToPtr(B, v, hs->h[h].type, "");
        else if (hs->h[h].type != i64)
            v = LLVMBuildTrunc(B, v, hs->h[h].type, "");
        hs->h[h].scalar = v;
    }
    /* splats: one per hole and vector type, found among the earlier sites' */
    for (int i = 0; i < ns; i++) {
        if (s[i].divisor)
            continue;
        LLVMTypeRef t = LLVMTypeOf(LLVMGetOperand(s[i].at, (unsigned)s[i].k));
        LLVMValueRef v = hs->h[hs->of_site[i]].scalar;
        if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) {
            v = NULL;
            for (int j = 0; j < i && !v; j++)
                if (hs->of_site[j] == hs->of_site[i] && !s[j].divisor) {
                    LLVMValueRef w = LLVMGetOperand(s[j].at, (unsigned)s[j].k);
                    v = LLVMTypeOf(w) == t ? w : NULL;
                }
            if (!v)
                v = splat(B, hs->h[hs->of_site[i]].scalar, t);
        }
        LLVMSetOperand(s[i].at, (unsigned)s[i].k, v);
    }
    /* divisions last: they replace their instruction, whose other operand may be a site */
    for (int i = 0; i < ns; i++) {
        if (!s[i].divisor)
            continue;
        LLVMTypeRef t = LLVMTypeOf(s[i].at);
        LLVMValueRef v = hs->h[hs->of_site[i]].scalar;
        if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) {
            LLVMPositionBuilderBefore(B, s[i].at);
            v = splat(B, v, t);
        }
        merge_divisor(B, s[i].at, v);
    }
}

/* One constant array of the holes' values per member, into arrays[]. */
static void hole_arrays(LLVMModuleRef M, const klass *c, const hole_set *hs, LLVMValueRef *elems,
                        LLVMValueRef *arrays)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(LLVMGetModuleContext(M));
    LLVMTypeRef aty = LLVMArrayType(i64, (unsigned)hs->n);
    for (int m = 0; m < c->n; m++) {
        for (int h = 0; h < hs->n; h++)
            elems[h] = hs->h[h].value[m];
        size_t len = 0;
        const char *fname = LLVMGetValueName2(c->members[m], &len);
        char name[256];
        snprintf(name, sizeof name, "%.*s.holes", (int)(len < 200 ? len : 200), fname);
        arrays[m] = LLVMAddGlobal(M, aty, name);
        LLVMSetInitializer(arrays[m], LLVMConstArray(i64, elems, (unsigned)hs->n));
        LLVMSetGlobalConstant(arrays[m], 1);
        LLVMSetLinkage(arrays[m], LLVMPrivateLinkage);
        LLVMSetUnnamedAddress(arrays[m], LLVMGlobalUnnamedAddr);
        LLVMSetAlignment(arrays[m], 8);
    }
}

/* The merged function <f>.x<n>(ptr data, ptr holes): f's blocks moved, f's attributes. */
static LLVMValueRef merged_function(LLVMModuleRef M, LLVMValueRef f, int n)
{
    LLVMContextRef C = LLVMGetModuleContext(M);
    LLVMTypeRef params[2] = {LLVMPointerTypeInContext(C, 0), LLVMPointerTypeInContext(C, 0)};
    size_t len = 0;
    const char *fname = LLVMGetValueName2(f, &len);
    char name[256];
    snprintf(name, sizeof name, "%.*s.x%d", (int)(len < 200 ? len : 200), fname, n);
    LLVMValueRef fn = LLVMAddFunction(M, name,
                                      LLVMFunctionType(LLVMVoidTypeInContext(C), params, 2, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    copy_attributes(f, fn, LLVMAttributeFunctionIndex);
    copy_attributes(f, fn, 1);
    for (LLVMBasicBlockRef b; (b = LLVMGetFirstBasicBlock(f));) {
        LLVMRemoveBasicBlockFromParent(b);
        LLVMAppendExistingBasicBlock(fn, b);
    }
    LLVMReplaceAllUsesWith(LLVMGetParam(f, 0), LLVMGetParam(fn, 0));
    return fn;
}

/* The data slot of a parallel body's holes: the first past every member's data block
 * (the blocks are grown to hold it, redirect_gomp). */
static int holes_slot(const klass *c)
{
    int slot = 0;
    for (int m = 0; m < c->n; m++)
        for (LLVMUseRef u = LLVMGetFirstUse(c->members[m]); u; u = LLVMGetNextUse(u)) {
            int slots = 0;
            gomp_data(LLVMGetUser(u), &slots);
            slot = slots > slot ? slots : slot;
        }
    return slot;
}

/* Every GOMP_parallel(from, data, ...) becomes GOMP_parallel(to, data, ...), with the
 * holes array `holes` stored in data's slot `slot` first (data grown to hold it) when
 * slot >= 0. */
static void redirect_gomp(LLVMBuilderRef B, LLVMValueRef from, LLVMValueRef to, int slot,
                          LLVMValueRef holes)
{
    LLVMUseRef u = LLVMGetFirstUse(from);
    while (u) {
        LLVMValueRef call = LLVMGetUser(u);
        u = LLVMGetNextUse(u); /* the call's argument changes below */
        int slots = 0;
        LLVMValueRef data = gomp_data(call, &slots);
        if (slot >= 0 && slots <= slot) {
            LLVMContextRef C = LLVMGetTypeContext(LLVMTypeOf(data));
            LLVMTypeRef grown = LLVMArrayType2(LLVMInt64TypeInContext(C), (uint64_t)slot + 1);
            LLVMPositionBuilderBefore(B, data);
            LLVMValueRef bigger = LLVMBuildAlloca(B, grown, "par_data");
            LLVMSetAlignment(bigger, LLVMGetAlignment(data));
            LLVMReplaceAllUsesWith(data, bigger);
            LLVMInstructionEraseFromParent(data);
            data = bigger;
        }
        if (slot >= 0) {
            LLVMPositionBuilderBefore(B, call);
            LLVMTypeRef i64 = LLVMInt64TypeInContext(LLVMGetTypeContext(LLVMTypeOf(data)));
            LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)slot, 0);
            LLVMBuildStore(B, holes, LLVMBuildGEP2(B, i64, data, &idx, 1, ""));
        }
        LLVMSetOperand(call, 0, to);
    }
}

/* <name>.x<n>: a merged function's name says how many it stands for. */
static void rename_merged(LLVMValueRef fn, int n)
{
    size_t len = 0;
    const char *fname = LLVMGetValueName2(fn, &len);
    char name[256];
    snprintf(name, sizeof name, "%.*s.x%d", (int)(len < 200 ? len : 200), fname, n);
    LLVMSetValueName2(fn, name, strlen(name));
}

/* Merges class c (n >= 2 members) as the file's header says: functions without holes
 * (equal outright) become the first, others a merged function with its holes filled.
 * False when out of memory, before anything changed (the module is then as it was). */
static bool merge_class(LLVMModuleRef M, LLVMBuilderRef B, int kind, const klass *c,
                        const sites *diff, merged_stats *st)
{
    int n = c->n;
    site *s = NULL;
    LLVMValueRef *values = NULL;
    int ns = class_sites(c, diff, kind == BY_GOMP, &s, &values);
    if (ns < 0)
        return false;
    hole_set hs = {0};
    hs.of_site = malloc((size_t)(ns ? ns : 1) * sizeof *hs.of_site);
    bool ok = hs.of_site != NULL;
    for (int i = 0; ok && i < ns; i++) {
        hs.of_site[i] = hole_of(&hs.h, &hs.n, &hs.cap, scalar_type(&s[i]),
                                &values[(size_t)i * (size_t)n], n);
        ok = hs.of_site[i] >= 0;
    }
    LLVMValueRef *arrays = ok ? calloc((size_t)n, sizeof *arrays) : NULL;
    LLVMValueRef *elems = ok ? malloc((size_t)(hs.n ? hs.n : 1) * sizeof *elems) : NULL;
    ok = ok && arrays && elems;
    LLVMValueRef fn = c->members[0];
    if (ok && hs.n > 0)
        hole_arrays(M, c, &hs, elems, arrays);
    if (ok && kind == BY_GOMP) {
        int slot = hs.n > 0 ? holes_slot(c) : -1;
        for (int m = 0; m < n; m++)
            redirect_gomp(B, c->members[m], fn, slot, slot >= 0 ? arrays[m] : NULL);
        if (slot >= 0)
            fill_holes(B, fn, slot, &hs, s, ns);
        rename_merged(fn, n);
    } else if (ok) {
        if (hs.n > 0) {
            fn = merged_function(M, c->members[0], n);
            fill_holes(B, fn, -1, &hs, s, ns);
        }
        for (int m = 0; m < n; m++)
            if (fn != c->members[m])
                redirect_calls(B, c->members[m], fn, hs.n > 0 ? arrays[m] : NULL);
    }
    for (int m = 0; ok && m < n; m++)
        if (fn != c->members[m])
            LLVMDeleteFunction(c->members[m]);
    if (ok) {
        st->classes++;
        st->removed += n - 1;
        st->holes += hs.n;
    }
    free(arrays);
    free(elems);
    free(s);
    free(values);
    hole_set_free(&hs);
    return ok;
}

/* ---- the module ------------------------------------------------------------------------- */

typedef struct cand {
    LLVMValueRef f;
    uint64_t hash;
    int order;
} cand;

static int by_hash(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->hash != y->hash)
        return (x->hash > y->hash) - (x->hash < y->hash);
    return (x->order > y->order) - (x->order < y->order);
}

/* Adds f to class c with its differing constants diff[begin .. end). */
static bool klass_add(klass *c, LLVMValueRef f, int begin, int end)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 4;
        LLVMValueRef *mm = realloc(c->members, (size_t)cap * sizeof *mm);
        c->members = mm ? mm : c->members;
        int *bb = mm ? realloc(c->begin, (size_t)cap * sizeof *bb) : NULL;
        c->begin = bb ? bb : c->begin;
        int *ee = bb ? realloc(c->end, (size_t)cap * sizeof *ee) : NULL;
        c->end = ee ? ee : c->end;
        if (!ee)
            return false;
        c->cap = cap;
    }
    c->begin[c->n] = begin;
    c->end[c->n] = end;
    c->members[c->n++] = f;
    return true;
}

/* The classes of the candidates cs[0 .. n) (one hash) into ks[0 .. *nk), each joining
 * the first class whose first member it equals; false when out of memory. */
static bool classes_of(const cand *cs, int n, unsigned tbaa, bool any_divisor, sites *diff,
                       klass *ks, int *nk)
{
    *nk = 0;
    diff->n = 0;
    for (int a = 0; a < n; a++) {
        int k = 0;
        int mark = diff->n;
        while (k < *nk &&
               !equal_but_constants(ks[k].members[0], cs[a].f, tbaa, any_divisor, diff))
            k++;
        if (k == *nk)
            ks[(*nk)++] = (klass){0};
        if (!klass_add(&ks[k], cs[a].f, mark, diff->n))
            return false;
    }
    return true;
}

/* One round: the candidates of one kind hashed, sorted, split into classes per hash and
 * each class of two or more merged. False when out of memory. */
static bool merge_round(LLVMModuleRef M, LLVMBuilderRef B, int kind, merged_stats *st,
                        int *candidates)
{
    LLVMContextRef C = LLVMGetModuleContext(M);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(C, 0);
    LLVMTypeRef part_type = LLVMFunctionType(LLVMVoidTypeInContext(C), &ptr, 1, 0);
    unsigned tbaa = LLVMGetMDKindIDInContext(C, "tbaa", 4);
    int n = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(M); f; f = LLVMGetNextFunction(f))
        n++;
    cand *cs = malloc((size_t)(n ? n : 1) * sizeof *cs);
    klass *ks = malloc((size_t)(n ? n : 1) * sizeof *ks);
    bool ok = cs && ks;
    int nc = 0;
    for (LLVMValueRef f = ok ? LLVMGetFirstFunction(M) : NULL; f; f = LLVMGetNextFunction(f))
        if (candidate(f, part_type) == kind) {
            cs[nc] = (cand){f, shape_hash(f), nc};
            nc++;
        }
    if (ok)
        qsort(cs, (size_t)nc, sizeof *cs, by_hash);
    *candidates += nc;
    sites diff = {0};
    /* per run of equal hashes: classes of equal functions, each merged */
    for (int i = 0, j; ok && i < nc; i = j) {
        for (j = i; j < nc && cs[j].hash == cs[i].hash;)
            j++;
        int nk = 0;
        ok = classes_of(cs + i, j - i, tbaa, kind == BY_GOMP, &diff, ks, &nk);
        for (int k = 0; k < nk; k++) {
            if (ok && ks[k].n >= 2)
                ok = merge_class(M, B, kind, &ks[k], &diff, st);
            free(ks[k].members);
            free(ks[k].begin);
            free(ks[k].end);
        }
    }
    free(diff.s);
    free(ks);
    free(cs);
    return ok;
}

pm_status pm_llvm_merge_similar(LLVMModuleRef M, pm_llvm_merge_stats *out, pm_error *err)
{
    memset(out, 0, sizeof *out);
    LLVMBuilderRef B = LLVMCreateBuilderInContext(LLVMGetModuleContext(M));
    merged_stats st = {0};
    /* stage bodies first: a parallel loop's bodies that call merged bodies then differ
     * only in the holes they pass */
    bool ok = B && merge_round(M, B, CALLED, &st, &out->candidates) &&
              merge_round(M, B, BY_GOMP, &st, &out->candidates);
    if (B)
        LLVMDisposeBuilder(B);
    out->classes = st.classes;
    out->removed = st.removed;
    out->holes = st.holes;
    if (!ok)
        return pm_error_set(err, PM_ERR_NOMEM, "llvm: out of memory merging functions");
    return PM_OK;
}
