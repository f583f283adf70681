/* test_jit_features.c — PolyMage-JIT's own target machine (runtime/jit_engine.c) enables no
 * instruction set the host's /proc/cpuinfo flags lack.
 *
 * The JIT trusts LLVMGetHostCPUFeatures (cpuid); the kernel's flags are what the OS
 * actually lets programs use. Every "+feature" of the target machine the JIT compiles with
 * is looked up in bench/host_target.c's table of LLVM names against cpuinfo flags:
 *   - an instruction set LLVM may select for ordinary code must be in the flags;
 *   - an explicit-only one (system and synchronization instructions LLVM emits only for
 *     their own intrinsics, e.g. shstk, which cpuid reports while Linux has not enabled
 *     user shadow stacks) is listed but not required;
 *   - a name the table does not know fails, so a new LLVM feature gets classified rather
 *     than waved through.
 * Also: the CPU name is not what decides: every table feature the host lacks is switched
 * off explicitly ("-feature") so the CPU model cannot switch it on. */
#include "check.h"

#include "runtime/host_target.h"
#include "runtime/jit_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<llvm-c/TargetMachine.h>)
#define HAVE_LLVM_HEADERS 1
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#endif
#endif

/* Calls fn(name, enabled) for every "+name" / "-name" of an LLVM feature string. */
static void each_feature(const char *features, void (*fn)(const char *, bool, void *), void *arg)
{
    const char *p = features;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n > 1 && (p[0] == '+' || p[0] == '-')) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(n - 1), p + 1);
            fn(name, p[0] == '+', arg);
        }
        p += n;
        if (*p == ',')
            p++;
    }
}

typedef struct {
    const char *flags;
    const char *features;
    int enabled, checked, explicit_missing;
} walk;

static void check_one(const char *name, bool enabled, void *arg)
{
    walk *w = arg;
    if (!enabled)
        return;
    w->enabled++;
    const char *flag = NULL;
    bool explicit_only = false;
    if (!pm_host_llvm_feature(name, &flag, &explicit_only)) {
        CHECK(!"the JIT enables an LLVM feature bench/host_target.c does not classify");
        fprintf(stderr, "  +%s: add it to kLlvmFlags with its cpuinfo flag\n", name);
        return;
    }
    bool present = pm_host_has_flag(w->flags, flag);
    if (explicit_only) {
        if (!present) {
            w->explicit_missing++;
            printf("test_jit_features: +%s is on (cpuid) but cpuinfo has no %s; LLVM emits it "
                   "only for its intrinsics, which PolyMage-JIT never calls\n",
                   name, flag);
        }
        return;
    }
    w->checked++;
    if (!CHECK(present))
        fprintf(stderr, "  the JIT's target machine enables +%s, the host's flags lack %s\n",
                name, flag);
}

/* True when `item` ("+avx", "-avx512fp16") is one of the comma-separated items. */
static bool has_item(const char *features, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = features; (p = strstr(p, item)) != NULL; p++)
        if ((p == features || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return true;
    return false;
}

/* Every isa feature of the table that the host lacks is off in the feature string, so
 * the CPU model (whatever its name) cannot switch it on. */
static void check_absent_are_off(const walk *w)
{
    static const char *isa[] = {"avx512fp16", "avxvnni", "avx512vp2intersect", "amx-tile",
                                "amx-int8", "amx-bf16", "avx512bf16", "avx512vnni",
                                "avx512vbmi", "avx512ifma", "avx512f", "avx2", "avx", "fma",
                                "fma4", "f16c", "xop", "sse4a", "gfni", "vaes"};
    for (size_t i = 0; i < sizeof isa / sizeof isa[0]; i++) {
        const char *flag = NULL;
        bool explicit_only = false;
        if (!CHECK(pm_host_llvm_feature(isa[i], &flag, &explicit_only)))
            continue;
        if (pm_host_has_flag(w->flags, flag))
            continue;
        char off[64], on[64];
        snprintf(off, sizeof off, "-%s", isa[i]);
        snprintf(on, sizeof on, "+%s", isa[i]);
        CHECK(!has_item(w->features, on));
        if (!CHECK(has_item(w->features, off)))
            fprintf(stderr, "  host lacks %s but the JIT does not switch %s off\n", flag, isa[i]);
    }
}

int main(void)
{
#ifndef HAVE_LLVM_HEADERS
    printf("test_jit_features: LLVM headers not on the test include path; skipped\n");
    return check_finish("test_jit_features");
#else
    char flags[16384];
    if (!pm_host_read_flags(flags, sizeof flags)) {
        printf("test_jit_features: no flags line in /proc/cpuinfo (not Linux x86); skipped\n");
        return check_finish("test_jit_features");
    }
    pm_error err = {0};
    pm_engine *e = pm_engine_new(3, &err);
    if (!CHECK(e != NULL)) {
        fprintf(stderr, "pm_engine_new: %s\n", err.message);
        return check_finish("test_jit_features");
    }
    LLVMTargetMachineRef tm = pm_engine_target_machine_new(e, 3, &err);
    if (!CHECK(tm != NULL)) {
        pm_engine_free(e);
        return check_finish("test_jit_features");
    }
    /* The target machine's own strings, not the engine's copy: this is what compiles. */
    char *features = LLVMGetTargetMachineFeatureString(tm);
    char *cpu = LLVMGetTargetMachineCPU(tm);
    CHECK(!strcmp(features, pm_engine_cpu_features(e)));
    walk w = {flags, features, 0, 0, 0};
    each_feature(features, check_one, &w);
    check_absent_are_off(&w);
    CHECK(w.enabled > 0);
    CHECK(w.checked > 0);
    printf("test_jit_features: CPU %s, %d features on, %d instruction sets checked against "
           "/proc/cpuinfo, %d explicit-only ones cpuinfo does not list\n",
           cpu, w.enabled, w.checked, w.explicit_missing);
    /* The vector width the JIT picks follows the features, not the name. */
    int width = pm_engine_vector_width(e);
    CHECK(width == (pm_host_has_flag(flags, "avx512f") ? 16 : pm_host_has_flag(flags, "avx") ? 8 : 4));
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    LLVMDisposeTargetMachine(tm);
    pm_engine_free(e);
    return check_finish("test_jit_features");
#endif
}
