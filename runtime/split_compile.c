/* split_compile.c — see split_compile.h. */
/* clock_gettime, pthread attributes: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "runtime/split_compile.h"

#include "frontend/error.h"

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- the partition ------------------------------------------------------------------- */

typedef struct fn_info {
    LLVMValueRef f;
    char *name;       /* malloc'd; the name every part knows the function by             */
    int64_t cost;     /* compile_cost                                                    */
    int parent;       /* union-find over direct calls                                   */
    int part;
} fn_info;

typedef struct fn_index {
    LLVMValueRef f;
    int i;
} fn_index;

static int cmp_index(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const fn_index *)a)->f, y = (uintptr_t)((const fn_index *)b)->f;
    return (x > y) - (x < y);
}

/* The defined function's index, or -1 (a declaration, or not a function). */
static int find_fn(const fn_index *idx, int n, LLVMValueRef f)
{
    fn_index key = {.f = f};
    const fn_index *hit = bsearch(&key, idx, (size_t)n, sizeof key, cmp_index);
    return hit ? hit->i : -1;
}

static int root(fn_info *fns, int i)
{
    while (fns[i].parent != i)
        i = fns[i].parent = fns[fns[i].parent].parent;
    return i;
}

static LLVMValueRef function_of(LLVMValueRef inst)
{
    LLVMBasicBlockRef b = LLVMGetInstructionParent(inst);
    return b ? LLVMGetBasicBlockParent(b) : NULL;
}

typedef struct group_load {
    int root;
    int64_t load;
} group_load;

static int cmp_load_desc(const void *a, const void *b)
{
    const group_load *x = a, *y = b;
    if (x->load != y->load)
        return (x->load < y->load) - (x->load > y->load);
    return (x->root > y->root) - (x->root < y->root); /* deterministic ties */
}

/* ---- one part, in one thread ----------------------------------------------------------- */

typedef struct part_job {
    pm_engine *engine;
    int opt_level;
    int index;
    const char *bitcode;     /* the whole module's bitcode (shared, read-only)          */
    size_t bitcode_size;
    const fn_info *fns;
    int nfns;
    LLVMModuleRef module;    /* part 0: the caller's module; others parse their own     */
    LLVMMemoryBufferRef object;
    double split_ms, opt_ms, machine_code_ms;
    int64_t instructions, functions;
    bool started;            /* a thread runs it (else the caller did)                   */
    pthread_t thread;
    pm_status status;
    pm_error err;
} part_job;

/* Every function of another part becomes a declaration (or goes, when nothing here
 * refers to it). A new declaration takes over the uses, then the definition is deleted
 * whole (LLVM drops its body's references itself). */
static pm_status strip_to_part(LLVMModuleRef m, part_job *job)
{
    for (int i = 0; i < job->nfns; i++) {
        if (job->fns[i].part == job->index)
            continue;
        LLVMValueRef f = LLVMGetNamedFunction(m, job->fns[i].name);
        if (!f || LLVMIsDeclaration(f))
            return pm_error_set(&job->err, PM_ERR_INTERNAL,
                                "jit: kernel part %d: function %s missing from the bitcode",
                                job->index, job->fns[i].name);
        if (!LLVMGetFirstUse(f)) {
            LLVMDeleteFunction(f);
            continue;
        }
        LLVMTypeRef ty = LLVMGlobalGetValueType(f);
        LLVMVisibility vis = LLVMGetVisibility(f);
        LLVMSetValueName2(f, "", 0);
        LLVMValueRef decl = LLVMAddFunction(m, job->fns[i].name, ty);
        LLVMSetLinkage(decl, LLVMExternalLinkage);
        LLVMSetVisibility(decl, vis);
        LLVMReplaceAllUsesWith(f, decl);
        LLVMDeleteFunction(f);
    }
    /* Declarations only deleted functions used. */
    for (int i = 0; i < job->nfns; i++) {
        if (job->fns[i].part == job->index)
            continue;
        LLVMValueRef f = LLVMGetNamedFunction(m, job->fns[i].name);
        if (f && LLVMIsDeclaration(f) && !LLVMGetFirstUse(f))
            LLVMDeleteFunction(f);
    }
    return PM_OK;
}

static int64_t count_instructions(LLVMModuleRef m, int64_t *functions)
{
    return pm_engine_count_instructions(m, functions);
}

static void *compile_part(void *arg)
{
    part_job *job = arg;
    double t0 = now_ms();
    LLVMContextRef ctx = NULL;
    LLVMMemoryBufferRef buf = NULL;
    LLVMModuleRef m = job->module;
    LLVMTargetMachineRef tm = NULL, emit_tm = NULL;
    pm_status s = PM_OK;
    if (!m) {
        ctx = LLVMContextCreate();
        buf = LLVMCreateMemoryBufferWithMemoryRange(job->bitcode, job->bitcode_size,
                                                    "kernel part", 0);
        if (LLVMParseBitcodeInContext2(ctx, buf, &m)) {
            m = NULL;
            s = pm_error_set(&job->err, PM_ERR_INTERNAL,
                             "jit: kernel part %d: cannot read the module's bitcode", job->index);
        }
    }
    if (s == PM_OK)
        s = strip_to_part(m, job);
    job->split_ms = now_ms() - t0;
    if (s == PM_OK) {
        /* Target machines are not thread-safe: one per part. As in the serial path, the
         * passes run with the kernel's level and the machine code is made at the
         * engine's (the JIT's own target machine compiles added modules). */
        tm = pm_engine_target_machine_new(job->engine, job->opt_level, &job->err);
        int emit_level = pm_engine_opt_level(job->engine);
        emit_tm = !tm || emit_level == job->opt_level
                      ? tm
                      : pm_engine_target_machine_new(job->engine, emit_level, &job->err);
        if (!tm || !emit_tm)
            s = job->err.status;
    }
    if (s == PM_OK) {
        t0 = now_ms();
        s = pm_engine_optimize(m, tm, job->opt_level, &job->err);
        job->opt_ms = now_ms() - t0;
    }
    if (s == PM_OK) {
        job->instructions = count_instructions(m, &job->functions);
        t0 = now_ms();
        char *msg = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(emit_tm, m, LLVMObjectFile, &msg, &job->object)) {
            job->object = NULL;
            s = pm_error_set(&job->err, PM_ERR_INTERNAL, "jit: kernel part %d: emitting code: %s",
                             job->index, msg ? msg : "");
        }
        LLVMDisposeMessage(msg);
        job->machine_code_ms = now_ms() - t0;
    }
    if (emit_tm && emit_tm != tm)
        LLVMDisposeTargetMachine(emit_tm);
    if (tm)
        LLVMDisposeTargetMachine(tm);
    if (ctx) { /* the part's own module and context */
        if (m)
            LLVMDisposeModule(m);
        LLVMContextDispose(ctx);
    }
    if (buf)
        LLVMDisposeMemoryBuffer(buf);
    job->status = s;
    return NULL;
}

/* ---- the call ------------------------------------------------------------------------ */

/* Whether the split handles the module: its globals are constants (copied per part) and
 * its functions have names (parts find them by name). */
static bool splittable(LLVMModuleRef m)
{
    for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
        if (!LLVMIsDeclaration(g) && !LLVMIsGlobalConstant(g))
            return false;
    if (LLVMGetFirstGlobalAlias(m) || LLVMGetFirstGlobalIFunc(m))
        return false;
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        size_t len = 0;
        if (!LLVMIsDeclaration(f) && (LLVMGetValueName2(f, &len), len == 0))
            return false;
    }
    return true;
}

/* A function another part refers to: external, hidden, and named after the kernel. */
static pm_status export_fn(fn_info *fi, const char *entry, pm_error *err)
{
    size_t n = strlen(entry) + 1 + strlen(fi->name) + 1;
    char *name = malloc(n);
    if (!name)
        return pm_error_set(err, PM_ERR_NOMEM, "jit: out of memory splitting %s", entry);
    snprintf(name, n, "%s.%s", entry, fi->name);
    LLVMSetValueName2(fi->f, name, strlen(name));
    LLVMSetLinkage(fi->f, LLVMExternalLinkage);
    LLVMSetVisibility(fi->f, LLVMHiddenVisibility);
    free(fi->name);
    fi->name = name;
    return PM_OK;
}

/* ---- the cost of compiling a function ------------------------------------------------ */

/* The IR builder repeats itself (a gather's index arithmetic and splats once per read,
 * bilateral grid's 16 trilinear corners), and the passes' first CSE removes the repeats
 * at little cost: what a function costs to compile follows its distinct instructions,
 * not all of them. A vector instruction costs more than a scalar one (legalizing,
 * selecting and allocating <16 x T> values). Measured per function, compiled alone
 * (bilateral grid, pyramid blending, both variants): 14-20 us per unit of distinct
 * scalar + 2.5 x distinct vector instructions, against 6-20 us per instruction as
 * built; bilateral grid's fused trilinear interpolation is 3123 instructions as built
 * and 1214 distinct, its histogram 989 and 769, and with the counts as built the part
 * holding the histogram took 66 ms against the interpolation's 36. Compiled part after
 * part on one core (3-5 rounds, the slower part's median): bilateral grid fused 65.5 ->
 * 56.6 ms, pyramid blending 240 -> 236 and 219 -> 209 (fused, unfused), interpolate fused
 * 262 -> 256, the other apps within their spread. */
typedef struct value_numbers {
    size_t mask;         /* capacity - 1, a power of two                                 */
    LLVMValueRef *value; /* instruction -> its number                                    */
    uint64_t *number;
    uint64_t *seen;      /* the numbers met so far (0: empty)                            */
} value_numbers;

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xBF58476D1CE4E5B9ull;
}

/* The slot of instruction v in the value table (empty or v's). */
static size_t vn_slot(const value_numbers *t, LLVMValueRef v)
{
    size_t i = (size_t)(((uintptr_t)v * 0x9E3779B97F4A7C15ull) >> 17) & t->mask;
    while (t->value[i] && t->value[i] != v)
        i = (i + 1) & t->mask;
    return i;
}

/* A number for an operand: an instruction's number (numbered earlier in block order;
 * a phi's later operands count as themselves), else the value itself (constants are
 * uniqued, arguments and globals are one value each). */
static uint64_t operand_number(const value_numbers *t, LLVMValueRef o)
{
    if (o && LLVMIsAInstruction(o)) {
        size_t i = vn_slot(t, o);
        if (t->value[i])
            return t->number[i];
    }
    return (uint64_t)(uintptr_t)o;
}

/* Instructions that compute a value from their operands alone; the others are distinct
 * by themselves. */
static bool is_pure(LLVMOpcode op)
{
    switch (op) {
    case LLVMLoad: case LLVMStore: case LLVMCall: case LLVMPHI: case LLVMAlloca:
    case LLVMBr: case LLVMRet: case LLVMSwitch: case LLVMIndirectBr: case LLVMUnreachable:
    case LLVMAtomicRMW: case LLVMAtomicCmpXchg: case LLVMFence: case LLVMFreeze:
    case LLVMInvoke: case LLVMVAArg:
        return false;
    default:
        return true;
    }
}

/* distinct scalar + 2.5 x distinct vector instructions of f (n instructions), in
 * halves; n when out of memory. */
static int64_t compile_cost(LLVMValueRef f, int64_t n)
{
    size_t cap = 64;
    while (cap < (size_t)n * 2 + 2)
        cap *= 2;
    value_numbers t = {cap - 1, calloc(cap, sizeof *t.value), calloc(cap, sizeof *t.number),
                       calloc(cap, sizeof *t.seen)};
    bool ok = t.value && t.number && t.seen;
    int64_t cost = ok ? 0 : 2 * n;
    for (LLVMBasicBlockRef b = ok ? LLVMGetFirstBasicBlock(f) : NULL; b;
         b = LLVMGetNextBasicBlock(b))
        for (LLVMValueRef in = LLVMGetFirstInstruction(b); in; in = LLVMGetNextInstruction(in)) {
            LLVMOpcode op = LLVMGetInstructionOpcode(in);
            uint64_t h;
            if (!is_pure(op)) {
                h = mix(1, (uint64_t)(uintptr_t)in);
            } else {
                h = mix((uint64_t)op, (uint64_t)(uintptr_t)LLVMTypeOf(in));
                if (op == LLVMICmp)
                    h = mix(h, (uint64_t)LLVMGetICmpPredicate(in));
                else if (op == LLVMFCmp)
                    h = mix(h, (uint64_t)LLVMGetFCmpPredicate(in));
                for (int k = 0, no = LLVMGetNumOperands(in); k < no; k++)
                    h = mix(h, operand_number(&t, LLVMGetOperand(in, k)));
            }
            h |= 1; /* 0 marks an empty slot */
            size_t i = vn_slot(&t, in);
            t.value[i] = in;
            t.number[i] = h;
            size_t j = (size_t)(h >> 17) & t.mask;
            while (t.seen[j] && t.seen[j] != h)
                j = (j + 1) & t.mask;
            if (!t.seen[j]) {
                t.seen[j] = h;
                cost += LLVMGetTypeKind(LLVMTypeOf(in)) == LLVMVectorTypeKind ? 5 : 2;
            }
        }
    free(t.value);
    free(t.number);
    free(t.seen);
    return cost;
}

/* A cold entry (optnone, fast instruction selection: pm_engine_compiles_cold) costs this
 * fraction of what compile_cost says. Fitted to local Laplacian's two parts at paper size
 * (the entry 4220 of 47395 units): with the entry at full cost part 0 took 235 ms and part
 * 1 262 ms (less its 17-23 ms of reading the bitcode) for about equal estimates, which puts
 * the entry's real share near a sixth. */
enum { PM_SPLIT_COLD_SHARE = 6 };

/* Assigns fns[].part; returns the number of parts (< 2: do not split). */
static int partition(fn_info *fns, int n, int entry_fn, int max_parts)
{
    group_load *groups = calloc((size_t)n, sizeof *groups);
    int64_t *load = calloc((size_t)n, sizeof *load);
    int *part_of_root = malloc((size_t)n * sizeof *part_of_root);
    if (!groups || !load || !part_of_root) {
        free(groups);
        free(load);
        free(part_of_root);
        return 0;
    }
    for (int i = 0; i < n; i++)
        load[root(fns, i)] += fns[i].cost;
    int entry_root = root(fns, entry_fn), ng = 0;
    for (int i = 0; i < n; i++)
        if (fns[i].parent == i && i != entry_root)
            groups[ng++] = (group_load){i, load[i]};
    int parts = ng + 1 < max_parts ? ng + 1 : max_parts;
    if (parts > PM_SPLIT_MAX_PARTS)
        parts = PM_SPLIT_MAX_PARTS;
    if (parts >= 2) {
        qsort(groups, (size_t)ng, sizeof *groups, cmp_load_desc);
        /* Parts after the first start loaded: each reads the whole module's bitcode and
         * strips it to its own functions before its passes, which part 0 (the caller's
         * module) does not. Measured on local Laplacian (2 parts, 68k IR instructions):
         * 31 ms against part 0's 2.5, each part's passes and machine code ~490 ms for
         * half the cost, so about 1/32 of the whole cost; the parts' slowest fell from
         * 529 to ~510 ms. */
        int64_t total = 0, part_load[PM_SPLIT_MAX_PARTS] = {0};
        for (int i = 0; i < n; i++)
            total += fns[i].cost;
        for (int p = 1; p < parts; p++)
            part_load[p] = total / 32;
        part_load[0] = load[entry_root];
        part_of_root[entry_root] = 0;
        for (int g = 0; g < ng; g++) {
            int best = 0;
            for (int p = 1; p < parts; p++)
                if (part_load[p] < part_load[best])
                    best = p;
            part_load[best] += groups[g].load;
            part_of_root[groups[g].root] = best;
        }
        for (int i = 0; i < n; i++)
            fns[i].part = part_of_root[root(fns, i)];
    }
    free(groups);
    free(load);
    free(part_of_root);
    return parts;
}

/* The module's defined functions into fns (their names copied, their compile costs) and
 * idx (sorted for find_fn), apart from the split's policy; *entry_fn is entry_f's index. */
static pm_status collect_functions(LLVMModuleRef module, LLVMValueRef entry_f, int opt_level,
                                   fn_info *fns, fn_index *idx, int n, int *entry_fn,
                                   const char *entry, pm_error *err)
{
    int i = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(module); f; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f))
            continue;
        size_t len = 0;
        const char *name = LLVMGetValueName2(f, &len);
        fns[i] = (fn_info){.f = f, .name = strndup(name, len), .parent = i};
        if (!fns[i].name)
            return pm_error_set(err, PM_ERR_NOMEM, "jit: out of memory splitting %s", entry);
        int64_t count = 0;
        for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
            for (LLVMValueRef in = LLVMGetFirstInstruction(b); in; in = LLVMGetNextInstruction(in))
                count++;
        fns[i].cost = compile_cost(f, count);
        if (f == entry_f && pm_engine_compiles_cold(f, opt_level))
            fns[i].cost /= PM_SPLIT_COLD_SHARE;
        if (f == entry_f)
            *entry_fn = i;
        idx[i] = (fn_index){f, i};
        i++;
    }
    qsort(idx, (size_t)n, sizeof *idx, cmp_index);
    return PM_OK;
}

/* Joins each caller's group with its inlinable callees', apart because it is the rule
 * that keeps the inliner's decisions those of the one module. */
static void group_callers(fn_info *fns, const fn_index *idx, int n)
{
    /* A caller and the defined functions it calls directly stay together, unless the
     * callee is noinline (the outlined stage bodies, codegen/llvm/parallel.c): the
     * inliner then decides as in the one module. A noinline callee may go elsewhere: a
     * parallel loop's body calls one per stage of its group, and keeping them with it
     * made parts of a whole group (camera pipe: 90% of the code in one part). */
    unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
    for (int a = 0; a < n; a++)
        for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fns[a].f); b; b = LLVMGetNextBasicBlock(b))
            for (LLVMValueRef in = LLVMGetFirstInstruction(b); in; in = LLVMGetNextInstruction(in)) {
                if (!LLVMIsACallInst(in) && !LLVMIsAInvokeInst(in))
                    continue;
                int c = find_fn(idx, n, LLVMGetCalledValue(in));
                if (c >= 0 &&
                    !LLVMGetEnumAttributeAtIndex(fns[c].f, LLVMAttributeFunctionIndex, noinline)) {
                    int ra = root(fns, a), rc = root(fns, c);
                    if (ra != rc)
                        fns[rc].parent = ra;
                }
            }
}

/* Exports the functions referred to from another part (or from a constant:
 * conservatively), apart because linkage is what lets the parts link to each other. */
static pm_status export_cross_part(fn_info *fns, const fn_index *idx, int n, int entry_fn,
                                   const char *entry, pm_error *err)
{
    pm_status s = PM_OK;
    for (int a = 0; a < n && s == PM_OK; a++) {
        bool cross = false;
        for (LLVMUseRef u = LLVMGetFirstUse(fns[a].f); u && !cross; u = LLVMGetNextUse(u)) {
            LLVMValueRef user = LLVMGetUser(u);
            int at = LLVMIsAInstruction(user) ? find_fn(idx, n, function_of(user)) : -1;
            cross = at < 0 || fns[at].part != fns[a].part;
        }
        if (cross && a != entry_fn)
            s = export_fn(&fns[a], entry, err);
    }
    return s;
}

/* Compiles every part: part 0 in this thread, the others each in a thread of its own
 * (or in this one when no thread can be had); apart as the split's only concurrency. */
static void run_parts(pm_engine *e, LLVMModuleRef module, LLVMMemoryBufferRef bitcode,
                      fn_info *fns, int n, int opt_level, part_job *jobs, int parts)
{
    pthread_attr_t attr;
    bool attr_ok = pthread_attr_init(&attr) == 0;
    if (attr_ok) /* LLVM's code generator recurses; as much stack as a main thread */
        pthread_attr_setstacksize(&attr, 8u << 20);
    for (int p = 0; p < parts; p++) {
        jobs[p] = (part_job){.engine = e, .opt_level = opt_level, .index = p,
                             .bitcode = LLVMGetBufferStart(bitcode),
                             .bitcode_size = LLVMGetBufferSize(bitcode), .fns = fns,
                             .nfns = n, .module = p == 0 ? module : NULL};
        pm_error_clear(&jobs[p].err);
        if (p > 0)
            jobs[p].started =
                pthread_create(&jobs[p].thread, attr_ok ? &attr : NULL, compile_part, &jobs[p]) == 0;
    }
    if (attr_ok)
        pthread_attr_destroy(&attr);
    compile_part(&jobs[0]);
    for (int p = 1; p < parts; p++) {
        if (jobs[p].started)
            pthread_join(jobs[p].thread, NULL);
        else /* no thread to be had: this one compiles the part */
            compile_part(&jobs[p]);
    }
}

/* The parts' statistics summed and their objects copied back to back into out, apart
 * so that the parts' buffers are freed in one place; the first part's failure if any. */
static pm_status gather_parts(part_job *jobs, int parts, const char *entry, pm_split_result *out,
                              pm_error *err)
{
    pm_status s = PM_OK;
    size_t bytes = 0;
    for (int p = 0; p < parts; p++) {
        if (jobs[p].status != PM_OK && s == PM_OK)
            s = pm_error_set(err, jobs[p].status, "%s: %s", entry, jobs[p].err.message);
        out->split_ms += jobs[p].split_ms;
        out->opt_ms += jobs[p].opt_ms;
        out->machine_code_ms += jobs[p].machine_code_ms;
        out->instructions_after += jobs[p].instructions;
        out->functions += jobs[p].functions;
        bytes += jobs[p].object ? LLVMGetBufferSize(jobs[p].object) : 0;
    }
    if (s == PM_OK && !(out->objects = malloc(bytes ? bytes : 1)))
        s = pm_error_set(err, PM_ERR_NOMEM, "jit: out of memory for %s's objects", entry);
    if (s == PM_OK) {
        size_t at = 0;
        for (int p = 0; p < parts; p++) {
            out->sizes[p] = LLVMGetBufferSize(jobs[p].object);
            memcpy((char *)out->objects + at, LLVMGetBufferStart(jobs[p].object), out->sizes[p]);
            at += out->sizes[p];
        }
        out->parts = parts;
    }
    for (int p = 0; p < parts; p++)
        if (jobs[p].object)
            LLVMDisposeMemoryBuffer(jobs[p].object);
    return s;
}

pm_status pm_split_compile(pm_engine *e, LLVMModuleRef module, const char *entry,
                           int opt_level, int max_parts, pm_split_result *out, pm_error *err)
{
    memset(out, 0, sizeof *out);
    double t_start = now_ms();
    if (max_parts < 2 || !splittable(module))
        return PM_OK;
    LLVMValueRef entry_f = LLVMGetNamedFunction(module, entry);
    if (!entry_f || LLVMIsDeclaration(entry_f))
        return PM_OK; /* the serial path reports it */

    int n = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(module); f; f = LLVMGetNextFunction(f))
        n += !LLVMIsDeclaration(f);
    fn_info *fns = calloc((size_t)n, sizeof *fns);
    fn_index *idx = calloc((size_t)n, sizeof *idx);
    part_job *jobs = NULL;
    LLVMMemoryBufferRef bitcode = NULL;
    int entry_fn = -1, parts = 0;
    pm_status s = !fns || !idx ? pm_error_set(err, PM_ERR_NOMEM,
                                              "jit: out of memory splitting %s", entry)
                               : collect_functions(module, entry_f, opt_level, fns, idx, n,
                                                   &entry_fn, entry, err);
    if (s == PM_OK) {
        group_callers(fns, idx, n);
        parts = partition(fns, n, entry_fn, max_parts);
    }
    if (s == PM_OK && parts >= 2)
        s = export_cross_part(fns, idx, n, entry_fn, entry, err);
    if (s == PM_OK && parts >= 2) {
        bitcode = LLVMWriteBitcodeToMemoryBuffer(module);
        jobs = calloc((size_t)parts, sizeof *jobs);
        if (!bitcode || !jobs)
            s = pm_error_set(err, PM_ERR_NOMEM, "jit: out of memory splitting %s", entry);
    }
    if (s == PM_OK && parts >= 2) {
        out->split_ms = now_ms() - t_start;
        run_parts(e, module, bitcode, fns, n, opt_level, jobs, parts);
        s = gather_parts(jobs, parts, entry, out, err);
    }
    if (bitcode)
        LLVMDisposeMemoryBuffer(bitcode);
    free(jobs);
    for (int a = 0; fns && a < n; a++)
        free(fns[a].name);
    free(fns);
    free(idx);
    out->wall_ms = now_ms() - t_start;
    if (s != PM_OK) {
        free(out->objects);
        out->objects = NULL;
        out->parts = 0;
    }
    return s;
}
