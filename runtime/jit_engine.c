/* jit_engine.c — see jit_engine.h. */
/* clock_gettime, getpid: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "runtime/jit_engine.h"

#include "frontend/error.h"
#include "runtime/host_target.h"
#include "runtime/rt.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Support.h>
#include <llvm-c/Error.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/OrcEE.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* libgomp's ABI (no public header declares the GOMP_* entry points). Only their
 * addresses are taken here; the prototypes just have to name functions. */
extern void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads,
                          unsigned flags);
extern void GOMP_barrier(void);
extern void GOMP_critical_start(void);
extern void GOMP_critical_end(void);
extern bool GOMP_loop_static_start(long, long, long, long, long *, long *);
extern bool GOMP_loop_static_next(long *, long *);
extern bool GOMP_loop_dynamic_start(long, long, long, long, long *, long *);
extern bool GOMP_loop_dynamic_next(long *, long *);
extern bool GOMP_loop_guided_start(long, long, long, long, long *, long *);
extern bool GOMP_loop_guided_next(long *, long *);
extern bool GOMP_loop_nonmonotonic_dynamic_start(long, long, long, long, long *, long *);
extern bool GOMP_loop_nonmonotonic_dynamic_next(long *, long *);
extern void GOMP_loop_end(void);
extern void GOMP_loop_end_nowait(void);
extern int omp_get_thread_num(void);
extern int omp_get_num_threads(void);
extern int omp_get_max_threads(void);

struct pm_engine {
    LLVMOrcLLJITRef jit;
    /* LLJIT built through the C API compiles with one TargetMachine (no compile
     * threads), which is not safe to use from two threads: lookups, which compile
     * lazily, take this lock. Adding and removing code need not. */
    pthread_mutex_t compile_lock;
    LLVMOrcJITDylibRef main_jd; /* owned by jit                                        */
    char *triple, *cpu, *features; /* LLVMDisposeMessage'd                              */
    LLVMTargetRef target;
    int opt_level;
    int vector_width;
    unsigned next_id;           /* for unique names; atomic                             */
    /* Random per engine, in every entry name: objects from the on-disk cache, compiled
     * by other processes, must not define a name this engine also makes. */
    uint64_t name_token;
};

struct pm_engine_code {
    LLVMOrcResourceTrackerRef tracker;
};

/* ---- LLVM errors into pm_error ------------------------------------------------------- */

/* Consumes e. */
static pm_status llvm_error(pm_error *err, LLVMErrorRef e, const char *what)
{
    char *msg = LLVMGetErrorMessage(e);
    pm_status s = pm_error_set(err, PM_ERR_INTERNAL, "jit: %s: %s", what, msg);
    LLVMDisposeErrorMessage(msg);
    return s;
}

/* ORC reports materialization failures (a missing symbol, ...) to the session's error
 * reporter, and the lookup itself only says "Failed to materialize". Compiles run in
 * the looking-up thread (in-place dispatch, under compile_lock), so the reporter keeps
 * the story per thread for pm_engine_lookup to add to its message. */
static _Thread_local char session_error[512];

/* The size of the object files the JIT linked in this thread, for the kernel cache's
 * code budget: the object transform layer sees every object before linking, in the
 * looking-up thread (in-place dispatch, like the error reporter above). */
static _Thread_local size_t linked_object_bytes;
/* When a lookup asks for a copy of the object (for the on-disk cache): the copy, and
 * how many objects passed (a copy is only meaningful when exactly one did). */
static _Thread_local bool capture_object;
static _Thread_local void *captured_object;
static _Thread_local size_t captured_objects;
/* When the object reached the transform layer: machine code ends, linking begins. */
static _Thread_local struct timespec object_ready;

static LLVMErrorRef count_object(void *ctx, LLVMMemoryBufferRef *object)
{
    (void)ctx;
    timespec_get(&object_ready, TIME_UTC);
    size_t n = LLVMGetBufferSize(*object);
    linked_object_bytes += n;
    if (capture_object && captured_objects++ == 0 && (captured_object = malloc(n ? n : 1)))
        memcpy(captured_object, LLVMGetBufferStart(*object), n);
    return NULL; /* LLVMErrorSuccess: the object is linked unchanged */
}

/* PM_PERF=1: link JIT code with RTDyld and tell perf about every function (jitdump
 * files for `perf record -k 1` + `perf inject --jit`), so profiles name the kernel's
 * functions. Off by default: the normal path links with LLVM's default linker. */
static LLVMOrcObjectLayerRef perf_object_layer(void *ctx, LLVMOrcExecutionSessionRef es,
                                               const char *triple)
{
    (void)ctx;
    (void)triple;
    LLVMOrcObjectLayerRef layer =
        LLVMOrcCreateRTDyldObjectLinkingLayerWithSectionMemoryManager(es);
    LLVMJITEventListenerRef perf = LLVMCreatePerfJITEventListener();
    if (perf) /* NULL when LLVM was built without perf support */
        LLVMOrcRTDyldObjectLinkingLayerRegisterJITEventListener(layer, perf);
    return layer;
}

static void report_session_error(void *ctx, LLVMErrorRef e)
{
    char *msg = LLVMGetErrorMessage(e);
    if (session_error[0] == '\0')
        snprintf(session_error, sizeof session_error, "%s", msg);
    LLVMDisposeErrorMessage(msg);
}

/* ---- one-time target initialization ------------------------------------------------ */

static pthread_once_t native_once = PTHREAD_ONCE_INIT;
static bool native_ok;

static void native_init(void)
{
    /* These return nonzero on failure (LLVMBool "true" = error). */
    native_ok = !LLVMInitializeNativeTarget() && !LLVMInitializeNativeAsmPrinter() &&
                !LLVMInitializeNativeAsmParser();
    /* Loop strength reduction runs in pm_engine_optimize, on the functions it pays for,
     * not in the machine-code step: there it was 44% of that step's time on pyramid
     * blending's module (llc -time-passes) and the vector loops' addresses (row origins,
     * access.c) need none of it. The post-RA list scheduler was 20% of the machine-code
     * step on Harris's module; the kernels ran as fast without it on all seven apps (the
     * cores reorder; the machine scheduler before allocation stays). LLVM's options are
     * the process's: another LLVM 19 user in this process sees these too (docs/jit.md). */
    const char *argv[] = {"polymage", "-disable-lsr", "-post-RA-scheduler=false"};
    LLVMParseCommandLineOptions(3, argv, NULL);
}

/* PM_OPT_TUNED (-1) or 0..3; anything else is brought into that range. */
static int clamp_level(int opt_level)
{
    return opt_level < PM_OPT_TUNED ? PM_OPT_TUNED : opt_level > 3 ? 3 : opt_level;
}

/* The machine-code level: the tuned pipeline keeps LLVM's most thorough instruction
 * selection and register allocation (levels 1..3 cost the same there; 0, FastISel and
 * the fast register allocator, made kernels 1.2-1.3x slower). */
static LLVMCodeGenOptLevel codegen_level(int opt_level)
{
    switch (clamp_level(opt_level)) {
    case 0: return LLVMCodeGenLevelNone;
    case 1: return LLVMCodeGenLevelLess;
    case 2: return LLVMCodeGenLevelDefault;
    default: return LLVMCodeGenLevelAggressive;
    }
}

/* The IR passes of a level. The IR comes vectorized already, so the tuned pipeline is
 * LLVM's default<O1> cut down to the function passes that made a difference: CFG
 * simplification, SROA, early CSE over memory SSA (bilateral grid's trilinear
 * interpolation loads each corner once: 11.3 against 14.4 ms without it), two rounds of
 * InstCombine, LICM around loop rotation, loop deletion, aggressive dead-code
 * elimination. O1's module passes (IPSCCP, the inliner:
 * nothing here is inlinable; the stage bodies are noinline), its loop idiom, load
 * elimination, SCCP, bit-tracking DCE, vector combining and its five further InstCombine
 * rounds changed no kernel's speed: on all seven apps (pm_sweep, 2 threads, 10 rounds)
 * the kernels ran as fast as O1's and O3's, within the interquartile ranges, and the
 * passes took 45-55% less time than O1's (unsharp mask 16 -> 7 ms, local Laplacian 616
 * -> 282, summed over the parts). O1 itself had replaced O3 for the same reason: O3's
 * loop unswitching and vectorizers only multiplied the boundary code. Induction-variable
 * simplification went too (2026-11-29): its users' rewrites asked scalar evolution about
 * every address, 14% of local Laplacian's compile (perf), and changed no kernel's speed
 * (pm_sweep, 2 threads, 11 rounds, all seven apps 0.97-1.00x): the loops' counters are
 * already 64-bit and their addresses one row origin plus the counter. */
#define PM_INSTCOMBINE "instcombine<max-iterations=1;no-use-loop-info;no-verify-fixpoint>"
static const char tuned_pipeline[] =
    "function(simplifycfg,sroa,early-cse<memssa>," PM_INSTCOMBINE ",simplifycfg,"
    "loop-mssa(licm<no-allowspeculation>,loop-rotate,licm<allowspeculation>)," PM_INSTCOMBINE
    ",loop(loop-deletion),adce,simplifycfg)";
#undef PM_INSTCOMBINE

static void pipeline_text(int opt_level, char *buf, size_t size)
{
    int level = clamp_level(opt_level);
    if (level == PM_OPT_TUNED)
        snprintf(buf, size, "%s", tuned_pipeline);
    else
        snprintf(buf, size, "default<O%d>", level);
}

static bool has_feature(const char *features, const char *name)
{
    /* The string is "+sse2,-avx512vl,..."; match "+name" followed by ',' or the end. */
    size_t n = strlen(name);
    for (const char *p = features; (p = strstr(p, name)) != NULL; p += n) {
        bool starts = p > features && p[-1] == '+';
        bool ends = p[n] == ',' || p[n] == '\0';
        if (starts && ends)
            return true;
    }
    return false;
}

LLVMTargetMachineRef pm_engine_target_machine_new(const pm_engine *e, int opt_level,
                                                  pm_error *err)
{
    /* PIC and the JIT code model: the code lands anywhere in the address space, far
     * from libgomp and libm, so calls go through stubs the JIT linker makes. */
    LLVMTargetMachineRef tm =
        LLVMCreateTargetMachine(e->target, e->triple, e->cpu, e->features,
                                codegen_level(opt_level), LLVMRelocPIC,
                                LLVMCodeModelJITDefault);
    if (!tm)
        pm_error_set(err, PM_ERR_INTERNAL, "jit: cannot create a target machine for %s (%s)",
                     e->triple, e->cpu);
    return tm;
}

/* ---- symbols the JIT code may call --------------------------------------------------- */

typedef struct bound_symbol {
    const char *name;
    void (*address)(void);
} bound_symbol;

#define BIND(f) {#f, (void (*)(void))(f)}

static const bound_symbol bound_symbols[] = {
    BIND(pm_rt_buffer), BIND(pm_rt_threads), BIND(pm_rt_fail),
    BIND(GOMP_parallel), BIND(GOMP_barrier), BIND(GOMP_critical_start),
    BIND(GOMP_critical_end), BIND(GOMP_loop_static_start), BIND(GOMP_loop_static_next),
    BIND(GOMP_loop_dynamic_start), BIND(GOMP_loop_dynamic_next),
    BIND(GOMP_loop_guided_start), BIND(GOMP_loop_guided_next),
    BIND(GOMP_loop_nonmonotonic_dynamic_start), BIND(GOMP_loop_nonmonotonic_dynamic_next),
    BIND(GOMP_loop_end), BIND(GOMP_loop_end_nowait),
    BIND(omp_get_thread_num), BIND(omp_get_num_threads), BIND(omp_get_max_threads),
    /* What LLVM lowers math intrinsics and pm_math calls to. */
    BIND(expf), BIND(exp), BIND(exp2f), BIND(exp2), BIND(logf), BIND(log), BIND(log2f),
    BIND(log2), BIND(log10f), BIND(log10), BIND(powf), BIND(pow), BIND(sqrtf), BIND(sqrt),
    BIND(sinf), BIND(sin), BIND(cosf), BIND(cos), BIND(tanf), BIND(tan), BIND(atanf),
    BIND(atan), BIND(atan2f), BIND(atan2), BIND(tanhf), BIND(tanh), BIND(floorf),
    BIND(floor), BIND(ceilf), BIND(ceil), BIND(roundf), BIND(round), BIND(truncf),
    BIND(trunc), BIND(rintf), BIND(rint), BIND(nearbyintf), BIND(nearbyint), BIND(fmodf),
    BIND(fmod), BIND(fabsf), BIND(fabs), BIND(fminf), BIND(fmin), BIND(fmaxf), BIND(fmax),
    BIND(memcpy), BIND(memmove), BIND(memset),
};

#undef BIND

static pm_status bind_symbols(pm_engine *e, pm_error *err)
{
    enum { N = sizeof bound_symbols / sizeof bound_symbols[0] };
    LLVMOrcCSymbolMapPair pairs[N];
    for (int i = 0; i < N; i++) {
        pairs[i].Name = LLVMOrcLLJITMangleAndIntern(e->jit, bound_symbols[i].name);
        pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)bound_symbols[i].address;
        pairs[i].Sym.Flags.GenericFlags =
            LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
        pairs[i].Sym.Flags.TargetFlags = 0;
    }
    /* Takes the names' references; on success the JITDylib owns the unit. */
    LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, N);
    LLVMErrorRef e2 = LLVMOrcJITDylibDefine(e->main_jd, mu);
    if (e2) {
        LLVMOrcDisposeMaterializationUnit(mu);
        return llvm_error(err, e2, "defining runtime symbols");
    }

    /* Everything else (other libc or libm functions LLVM may emit) from the process. */
    LLVMOrcDefinitionGeneratorRef gen = NULL;
    e2 = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(e->jit), NULL, NULL);
    if (e2)
        return llvm_error(err, e2, "creating the process symbol generator");
    LLVMOrcJITDylibAddGenerator(e->main_jd, gen);
    return PM_OK;
}

/* ---- engine ------------------------------------------------------------------------- */

/* 64 random bits from the kernel, or (without /dev/urandom) a mix of the time, the
 * process id and the engine's address. */
static uint64_t random_token(const pm_engine *e)
{
    uint64_t t = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&t, sizeof t, 1, f) != 1)
            t = 0;
        fclose(f);
    }
    if (t == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        t = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^
            ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)e;
        t *= UINT64_C(0x9e3779b97f4a7c15);
    }
    return t;
}

pm_engine *pm_engine_new(int opt_level, pm_error *err)
{
    pthread_once(&native_once, native_init);
    if (!native_ok) {
        pm_error_set(err, PM_ERR_INTERNAL, "jit: LLVM has no native target for this host");
        return NULL;
    }
    pm_engine *e = calloc(1, sizeof *e);
    if (!e) {
        pm_error_set(err, PM_ERR_NOMEM, "jit: out of memory");
        return NULL;
    }
    if (pthread_mutex_init(&e->compile_lock, NULL) != 0) {
        free(e);
        pm_error_set(err, PM_ERR_INTERNAL, "jit: cannot make a mutex");
        return NULL;
    }
    e->opt_level = clamp_level(opt_level);
    e->name_token = random_token(e);
    e->triple = LLVMGetDefaultTargetTriple();
    e->cpu = LLVMGetHostCPUName();
    e->features = LLVMGetHostCPUFeatures();
    /* cpuid as LLVM reads it, less what the kernel's flags do not list (host_target.h) */
    char flags[8192];
    if (e->features && pm_host_read_flags(flags, sizeof flags))
        pm_host_llvm_features_filter(e->features, flags);
    e->vector_width = has_feature(e->features, "avx512f") ? 16
                      : has_feature(e->features, "avx")   ? 8
                                                          : 4;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(e->triple, &e->target, &msg)) {
        pm_error_set(err, PM_ERR_INTERNAL, "jit: no target for %s: %s", e->triple, msg);
        LLVMDisposeMessage(msg);
        pm_engine_free(e);
        return NULL;
    }

    /* The JIT's own target machine (consumed by the builder): host CPU and features,
     * not JITTargetMachineBuilder::detectHost, so the features are exactly ours. */
    LLVMTargetMachineRef tm = pm_engine_target_machine_new(e, e->opt_level, err);
    if (!tm) {
        pm_engine_free(e);
        return NULL;
    }
    LLVMOrcJITTargetMachineBuilderRef jtmb =
        LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm);
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb);
    const char *perf = getenv("PM_PERF");
    if (perf && *perf && strcmp(perf, "0") != 0)
        LLVMOrcLLJITBuilderSetObjectLinkingLayerCreator(builder, perf_object_layer, NULL);
    LLVMErrorRef e2 = LLVMOrcCreateLLJIT(&e->jit, builder); /* takes builder */
    if (e2) {
        e->jit = NULL;
        llvm_error(err, e2, "creating LLJIT");
        pm_engine_free(e);
        return NULL;
    }
    e->main_jd = LLVMOrcLLJITGetMainJITDylib(e->jit);
    LLVMOrcObjectTransformLayerSetTransform(LLVMOrcLLJITGetObjTransformLayer(e->jit),
                                            count_object, NULL);
    LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(e->jit),
                                            report_session_error, NULL);
    if (bind_symbols(e, err) != PM_OK) {
        pm_engine_free(e);
        return NULL;
    }
    return e;
}

void pm_engine_free(pm_engine *e)
{
    if (!e)
        return;
    if (e->jit) {
        LLVMErrorRef e2 = LLVMOrcDisposeLLJIT(e->jit);
        if (e2) /* nothing to report it to: the JIT is gone either way */
            LLVMConsumeError(e2);
    }
    LLVMDisposeMessage(e->triple);
    LLVMDisposeMessage(e->cpu);
    LLVMDisposeMessage(e->features);
    pthread_mutex_destroy(&e->compile_lock);
    free(e);
}

const char *pm_engine_triple(const pm_engine *e) { return e->triple; }
const char *pm_engine_cpu_name(const pm_engine *e) { return e->cpu; }
const char *pm_engine_cpu_features(const pm_engine *e) { return e->features; }
int pm_engine_vector_width(const pm_engine *e) { return e->vector_width; }
int pm_engine_opt_level(const pm_engine *e) { return e->opt_level; }

void pm_engine_unique_name(pm_engine *e, const char *base, char *buf, size_t size)
{
    unsigned id = __atomic_fetch_add(&e->next_id, 1, __ATOMIC_RELAXED);
    /* The base is cut, never the unique tail. */
    snprintf(buf, size, "%.120s_k%u_%016llx", base, id, (unsigned long long)e->name_token);
}

/* ---- module preparation, optimization, asm ----------------------------------------- */

static bool is_named(LLVMValueRef v, const char *name)
{
    size_t len = 0;
    const char *s = LLVMGetValueName2(v, &len);
    return len == strlen(name) && memcmp(s, name, len) == 0;
}

pm_status pm_engine_prepare_module(LLVMModuleRef module, LLVMTargetMachineRef tm,
                                   const char *entry, const char *new_name, pm_error *err)
{
    if (tm && LLVMGetTarget(module)[0] == '\0') {
        char *triple = LLVMGetTargetMachineTriple(tm);
        LLVMSetTarget(module, triple);
        LLVMDisposeMessage(triple);
    }
    if (tm && LLVMGetDataLayoutStr(module)[0] == '\0') {
        LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
        LLVMSetModuleDataLayout(module, layout);
        LLVMDisposeTargetData(layout);
    }

    LLVMValueRef entry_fn = LLVMGetNamedFunction(module, entry);
    if (!entry_fn || LLVMIsDeclaration(entry_fn))
        return pm_error_set(err, PM_ERR_INTERNAL, "jit: the module does not define its entry %s",
                            entry);
    /* Kernels share one JITDylib: only the (renamed, unique) entry may be visible, or
     * two kernels of one pipeline would both define its outlined bodies. Internal
     * linkage also lets the optimizer drop or specialize them. */
    for (LLVMValueRef f = LLVMGetFirstFunction(module); f; f = LLVMGetNextFunction(f))
        if (!LLVMIsDeclaration(f) && f != entry_fn)
            LLVMSetLinkage(f, LLVMInternalLinkage);
    for (LLVMValueRef g = LLVMGetFirstGlobal(module); g; g = LLVMGetNextGlobal(g))
        if (!LLVMIsDeclaration(g))
            LLVMSetLinkage(g, LLVMInternalLinkage);
    if (new_name && !is_named(entry_fn, new_name))
        LLVMSetValueName2(entry_fn, new_name, strlen(new_name));
    LLVMSetLinkage(entry_fn, LLVMExternalLinkage);
    /* No second verification: codegen verified the module as it finished it
     * (codegen/llvm/module.c), and linkage, names and the target's strings keep a valid
     * module valid. Verifying again cost 15 ms of local Laplacian's compile (68k IR
     * instructions), on no thread but the caller's. */
    return PM_OK;
}

static bool has_vector_code(LLVMValueRef f)
{
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
            if (LLVMGetTypeKind(LLVMTypeOf(i)) == LLVMVectorTypeKind)
                return true;
    return false;
}

/* Loop strength reduction (machine code runs without it: native_init): at levels 1..3 on
 * every function, as LLVM's machine-code step would; in the tuned pipeline only on
 * functions without vector code, whose scalar loops step through buffers of run-time
 * strides (bilateral grid's histogram: 7% slower without it), while the vector loops'
 * addresses are already one origin plus the induction variable (access.c). The others
 * are marked optnone for the pass (LLVM skips optional passes there), then unmarked. */
static LLVMErrorRef strength_reduce(LLVMModuleRef module, LLVMTargetMachineRef tm,
                                    int opt_level, LLVMPassBuilderOptionsRef opts)
{
    if (clamp_level(opt_level) == 0)
        return NULL;
    LLVMContextRef C = LLVMGetModuleContext(module);
    unsigned optnone = LLVMGetEnumAttributeKindForName("optnone", 7);
    unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
    enum { MAX_SKIP = 4096 };
    LLVMValueRef *skip = NULL;
    bool *had_noinline = NULL;
    int nskip = 0, nscalar = 0;
    if (clamp_level(opt_level) == PM_OPT_TUNED) {
        skip = malloc(MAX_SKIP * sizeof *skip);
        had_noinline = malloc(MAX_SKIP * sizeof *had_noinline);
        if (!skip || !had_noinline) { /* no reduction at all: correct, only slower */
            free(skip);
            free(had_noinline);
            return NULL;
        }
        for (LLVMValueRef f = LLVMGetFirstFunction(module); f; f = LLVMGetNextFunction(f)) {
            if (LLVMIsDeclaration(f))
                continue;
            if (!has_vector_code(f)) {
                nscalar++;
                continue;
            }
            if (nskip == MAX_SKIP ||
                LLVMGetEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, optnone)) {
                nskip = -1; /* cannot tell them apart afterwards: reduce everything */
                break;
            }
            had_noinline[nskip] =
                LLVMGetEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, noinline) != NULL;
            skip[nskip++] = f;
        }
        if (nskip < 0) {
            nskip = 0;
            nscalar = 1;
        }
        for (int i = 0; i < nskip; i++) {
            LLVMAddAttributeAtIndex(skip[i], LLVMAttributeFunctionIndex,
                                    LLVMCreateEnumAttribute(C, optnone, 0));
            if (!had_noinline[i])
                LLVMAddAttributeAtIndex(skip[i], LLVMAttributeFunctionIndex,
                                        LLVMCreateEnumAttribute(C, noinline, 0));
        }
    }
    LLVMErrorRef e = skip && nscalar == 0
                         ? NULL
                         : LLVMRunPasses(module, "function(loop(loop-reduce))", tm, opts);
    for (int i = 0; i < nskip; i++) {
        LLVMRemoveEnumAttributeAtIndex(skip[i], LLVMAttributeFunctionIndex, optnone);
        if (!had_noinline[i])
            LLVMRemoveEnumAttributeAtIndex(skip[i], LLVMAttributeFunctionIndex, noinline);
    }
    free(skip);
    free(had_noinline);
    return e;
}

/* Whether f's control flow has a cycle (a loop): a depth-first walk over the blocks'
 * successors that meets a block still on its path. True when out of memory (the caller
 * then treats f as hot). */
static bool has_cycle(LLVMValueRef f)
{
    unsigned n = LLVMCountBasicBlocks(f);
    LLVMBasicBlockRef *blocks = malloc((n ? n : 1) * sizeof *blocks);
    unsigned char *state = calloc(n ? n : 1, 1); /* 0 unseen, 1 on the path, 2 done */
    struct frame { unsigned b, next; } *stack = malloc((n ? n : 1) * sizeof *stack);
    bool cycle = !blocks || !state || !stack;
    if (!cycle)
        LLVMGetBasicBlocks(f, blocks);
    /* blocks by index: LLVM's own order, searched linearly (entries have ~100 blocks) */
    int depth = cycle || n == 0 ? -1 : 0;
    if (depth == 0) {
        stack[0] = (struct frame){0, 0};
        state[0] = 1;
    }
    while (depth >= 0 && !cycle) {
        struct frame *fr = &stack[depth];
        LLVMValueRef term = LLVMGetBasicBlockTerminator(blocks[fr->b]);
        unsigned nsucc = term ? LLVMGetNumSuccessors(term) : 0;
        if (fr->next == nsucc) {
            state[fr->b] = 2;
            depth--;
            continue;
        }
        LLVMBasicBlockRef succ = LLVMGetSuccessor(term, fr->next++);
        unsigned k = 0;
        while (k < n && blocks[k] != succ)
            k++;
        if (k == n || state[k] == 2)
            continue;
        if (state[k] == 1)
            cycle = true;
        else {
            state[k] = 1;
            stack[++depth] = (struct frame){k, 0};
        }
    }
    free(blocks);
    free(state);
    free(stack);
    return cycle;
}

/* In the tuned pipeline the kernel's entry is compiled as LLVM compiles optnone code
 * (no IR passes, fast instruction selection) when it has no loop: it then only checks
 * sizes, takes scratch buffers and starts the parallel loops, once per call, and its
 * straight-line code was local Laplacian's largest function for the machine-code step
 * after the seven output-pyramid tiles (2408 IR instructions, ~40 ms of passes and
 * machine code). The entry is the module's one external function of default visibility:
 * pm_engine_prepare_module gives the others internal linkage, the split (split_compile.c)
 * hidden visibility. A loop in it (a stage run serially in the entry) keeps it optimized. */
bool pm_engine_compiles_cold(LLVMValueRef f, int opt_level)
{
    return clamp_level(opt_level) == PM_OPT_TUNED && !LLVMIsDeclaration(f) &&
           LLVMGetLinkage(f) == LLVMExternalLinkage &&
           LLVMGetVisibility(f) == LLVMDefaultVisibility && !has_cycle(f);
}

static void entry_as_cold(LLVMModuleRef module)
{
    LLVMContextRef C = LLVMGetModuleContext(module);
    unsigned optnone = LLVMGetEnumAttributeKindForName("optnone", 7);
    unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
    for (LLVMValueRef f = LLVMGetFirstFunction(module); f; f = LLVMGetNextFunction(f)) {
        if (!pm_engine_compiles_cold(f, PM_OPT_TUNED))
            continue;
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(C, optnone, 0));
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(C, noinline, 0));
    }
}

pm_status pm_engine_optimize(LLVMModuleRef module, LLVMTargetMachineRef tm, int opt_level,
                             pm_error *err)
{
    if (clamp_level(opt_level) == PM_OPT_TUNED)
        entry_as_cold(module);
    char passes[sizeof tuned_pipeline];
    pipeline_text(opt_level, passes, sizeof passes);
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    /* The IR is explicitly vectorized already; LLVM's unroller only multiplies the tile
     * bodies (a channel loop of 3 around a row's vector loop) and costs compile time. */
    LLVMPassBuilderOptionsSetLoopUnrolling(opts, 0);
    LLVMErrorRef e2 = LLVMRunPasses(module, passes, tm, opts);
    if (!e2)
        e2 = strength_reduce(module, tm, opt_level, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (e2)
        return llvm_error(err, e2, "optimizing");
    return PM_OK;
}

char *pm_engine_emit_asm(LLVMModuleRef module, LLVMTargetMachineRef tm, pm_error *err)
{
    /* Code generation rewrites the IR it compiles (CodeGenPrepare, ...): work on a
     * clone so the module the JIT gets is the one the "llvm" dump shows. */
    LLVMModuleRef clone = LLVMCloneModule(module);
    char *msg = NULL;
    LLVMMemoryBufferRef buf = NULL;
    char *text = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, clone, LLVMAssemblyFile, &msg, &buf)) {
        pm_error_set(err, PM_ERR_INTERNAL, "jit: emitting assembly: %s", msg ? msg : "");
    } else {
        size_t n = LLVMGetBufferSize(buf);
        text = malloc(n + 1);
        if (text) {
            memcpy(text, LLVMGetBufferStart(buf), n);
            text[n] = '\0';
        } else {
            pm_error_set(err, PM_ERR_NOMEM, "jit: out of memory for the assembly text");
        }
        LLVMDisposeMemoryBuffer(buf);
    }
    LLVMDisposeMessage(msg);
    LLVMDisposeModule(clone);
    return text;
}

/* ---- adding code, looking it up, removing it --------------------------------------- */

pm_status pm_engine_add_module(pm_engine *e, LLVMModuleRef module,
                               LLVMOrcThreadSafeContextRef tsctx, pm_engine_code **code,
                               pm_error *err)
{
    *code = NULL;
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(module, tsctx);
    pm_engine_code *c = calloc(1, sizeof *c);
    if (!c) {
        LLVMOrcDisposeThreadSafeModule(tsm);
        return pm_error_set(err, PM_ERR_NOMEM, "jit: out of memory");
    }
    c->tracker = LLVMOrcJITDylibCreateResourceTracker(e->main_jd);
    LLVMErrorRef e2 = LLVMOrcLLJITAddLLVMIRModuleWithRT(e->jit, c->tracker, tsm);
    if (e2) { /* the module was taken (and freed) all the same */
        LLVMOrcReleaseResourceTracker(c->tracker);
        free(c);
        return llvm_error(err, e2, "adding a module");
    }
    *code = c;
    return PM_OK;
}

pm_status pm_engine_add_object(pm_engine *e, const void *object, size_t size, const char *name,
                               pm_engine_code **code, pm_error *err)
{
    return pm_engine_add_objects(e, 1, object, &size, name, code, err);
}

pm_status pm_engine_add_objects(pm_engine *e, int n, const void *objects,
                                const size_t *sizes, const char *name, pm_engine_code **code,
                                pm_error *err)
{
    *code = NULL;
    pm_engine_code *c = calloc(1, sizeof *c);
    if (!c)
        return pm_error_set(err, PM_ERR_NOMEM, "jit: out of memory");
    /* One tracker for all of them: the kernel's code goes as one. */
    c->tracker = LLVMOrcJITDylibCreateResourceTracker(e->main_jd);
    const char *at = objects;
    for (int i = 0; i < n; i++) {
        char part[200];
        snprintf(part, sizeof part, "%.160s part %d", name, i);
        LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(at, sizes[i], part);
        LLVMErrorRef e2 = buf ? LLVMOrcLLJITAddObjectFileWithRT(e->jit, c->tracker, buf) /* takes buf */
                              : NULL;
        if (!buf || e2) { /* the parts added before go with the tracker */
            pm_engine_code_free(c);
            if (!buf)
                return pm_error_set(err, PM_ERR_NOMEM, "jit: out of memory");
            return llvm_error(err, e2, "adding an object");
        }
        at += sizes[i];
    }
    *code = c;
    return PM_OK;
}

pm_status pm_engine_add_ir(pm_engine *e, const char *ir_text, const char *name,
                           pm_engine_code **code, pm_error *err)
{
    *code = NULL;
    LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContext();
    LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsctx);
    LLVMMemoryBufferRef buf =
        LLVMCreateMemoryBufferWithMemoryRangeCopy(ir_text, strlen(ir_text), name);
    LLVMModuleRef module = NULL;
    char *msg = NULL;
    /* LLVM 19's LLVMParseIRInContext takes the buffer, success or not. */
    if (LLVMParseIRInContext(ctx, buf, &module, &msg)) {
        pm_error_set(err, PM_ERR_INTERNAL, "jit: %s: cannot parse IR: %s", name,
                     msg ? msg : "");
        LLVMDisposeMessage(msg);
        LLVMOrcDisposeThreadSafeContext(tsctx);
        return PM_ERR_INTERNAL;
    }
    if (LLVMGetTarget(module)[0] == '\0')
        LLVMSetTarget(module, e->triple);
    if (LLVMGetDataLayoutStr(module)[0] == '\0')
        LLVMSetDataLayout(module, LLVMOrcLLJITGetDataLayoutStr(e->jit));
    pm_status s = pm_engine_add_module(e, module, tsctx, code, err);
    LLVMOrcDisposeThreadSafeContext(tsctx); /* the module keeps its share */
    return s;
}

pm_status pm_engine_lookup(pm_engine *e, const char *name, void **address, pm_error *err)
{
    size_t bytes;
    return pm_engine_lookup_sized(e, name, address, &bytes, NULL, NULL, err);
}

static double ms_between(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

pm_status pm_engine_lookup_sized(pm_engine *e, const char *name, void **address,
                                 size_t *object_bytes, void **object_copy, double split_ms[2],
                                 pm_error *err)
{
    *address = NULL;
    if (object_copy)
        *object_copy = NULL;
    LLVMOrcExecutorAddress addr = 0;
    pthread_mutex_lock(&e->compile_lock);
    session_error[0] = '\0';
    linked_object_bytes = 0;
    capture_object = object_copy != NULL;
    captured_object = NULL;
    captured_objects = 0;
    struct timespec start, end;
    timespec_get(&start, TIME_UTC);
    object_ready = start;
    LLVMErrorRef e2 = LLVMOrcLLJITLookup(e->jit, &addr, name);
    timespec_get(&end, TIME_UTC);
    if (split_ms) { /* no object compiled (it was linked already): all of it linking */
        split_ms[0] = ms_between(&start, &object_ready);
        split_ms[1] = ms_between(&object_ready, &end);
    }
    *object_bytes = linked_object_bytes;
    if (object_copy && captured_objects == 1)
        *object_copy = captured_object;
    else
        free(captured_object);
    capture_object = false;
    captured_object = NULL;
    pthread_mutex_unlock(&e->compile_lock);
    if (e2) {
        char what[700];
        if (session_error[0])
            snprintf(what, sizeof what, "looking up %s (%s)", name, session_error);
        else
            snprintf(what, sizeof what, "looking up %s", name);
        return llvm_error(err, e2, what);
    }
    *address = (void *)(uintptr_t)addr;
    return PM_OK;
}

int64_t pm_engine_count_instructions(LLVMModuleRef module, int64_t *functions)
{
    int64_t n = 0, nf = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(module); f; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f))
            continue;
        nf++;
        for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
            for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
                n++;
    }
    if (functions)
        *functions = nf;
    return n;
}

void pm_engine_code_free(pm_engine_code *code)
{
    if (!code)
        return;
    LLVMErrorRef e2 = LLVMOrcResourceTrackerRemove(code->tracker);
    if (e2) /* removal only fails if the session is broken; the memory is lost then */
        LLVMConsumeError(e2);
    LLVMOrcReleaseResourceTracker(code->tracker);
    free(code);
}
