/* host_target.c — Halide 14 x86 features from the CPU's own flags, and the per-core L2
 * (see host_target.h). */
#include "runtime/host_target.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- LLVM feature names against /proc/cpuinfo flags ---------------------------------- */

typedef struct {
    const char *llvm;     /* LLVM's subtarget feature name */
    const char *cpuinfo;  /* the Linux flag that reports it */
    bool explicit_only;   /* emitted only for its own intrinsics: not required by the rule */
} llvm_flag;

static const llvm_flag kLlvmFlags[] = {
    /* Base x86-64 and the SSE family. */
    {"64bit", "lm", false},
    {"cmov", "cmov", false},
    {"cx8", "cx8", false},
    {"cx16", "cx16", false},
    {"mmx", "mmx", false},
    {"fxsr", "fxsr", false},
    {"sahf", "lahf_lm", false},
    {"sse", "sse", false},
    {"sse2", "sse2", false},
    {"sse3", "pni", false},
    {"ssse3", "ssse3", false},
    {"sse4.1", "sse4_1", false},
    {"sse4.2", "sse4_2", false},
    {"crc32", "sse4_2", false},
    {"sse4a", "sse4a", false},
    {"popcnt", "popcnt", false},
    /* AVX, FMA, bit manipulation. */
    {"avx", "avx", false},
    {"avx2", "avx2", false},
    {"fma", "fma", false},
    {"fma4", "fma4", false},
    {"xop", "xop", false},
    {"tbm", "tbm", false},
    {"f16c", "f16c", false},
    {"bmi", "bmi1", false},
    {"bmi2", "bmi2", false},
    {"lzcnt", "abm", false},
    {"movbe", "movbe", false},
    {"adx", "adx", false},
    {"prfchw", "3dnowprefetch", false},
    /* Crypto and carry-less multiply (vector forms included). */
    {"aes", "aes", false},
    {"pclmul", "pclmulqdq", false},
    {"sha", "sha_ni", false},
    {"sha512", "sha512", false},
    {"sm3", "sm3", false},
    {"sm4", "sm4", false},
    {"vaes", "vaes", false},
    {"vpclmulqdq", "vpclmulqdq", false},
    {"gfni", "gfni", false},
    /* AVX-512 and its relatives. "evex512" is LLVM's switch for 512-bit registers. */
    {"avx512f", "avx512f", false},
    {"evex512", "avx512f", false},
    {"avx512cd", "avx512cd", false},
    {"avx512bw", "avx512bw", false},
    {"avx512dq", "avx512dq", false},
    {"avx512vl", "avx512vl", false},
    {"avx512ifma", "avx512ifma", false},
    {"avx512vbmi", "avx512vbmi", false},
    {"avx512vbmi2", "avx512_vbmi2", false},
    {"avx512vnni", "avx512_vnni", false},
    {"avx512bitalg", "avx512_bitalg", false},
    {"avx512vpopcntdq", "avx512_vpopcntdq", false},
    {"avx512bf16", "avx512_bf16", false},
    {"avx512fp16", "avx512_fp16", false},
    {"avx512vp2intersect", "avx512_vp2intersect", false},
    {"avx512pf", "avx512pf", false},
    {"avx512er", "avx512er", false},
    /* Linux has no flag of its own for PREFETCHWT1; only Xeon Phi (avx512pf) has it. */
    {"prefetchwt1", "avx512pf", false},
    {"avxvnni", "avx_vnni", false},
    {"avxifma", "avx_ifma", false},
    {"avxvnniint8", "avx_vnni_int8", false},
    {"avxvnniint16", "avx_vnni_int16", false},
    {"avxneconvert", "avx_ne_convert", false},
    {"amx-tile", "amx_tile", false},
    {"amx-int8", "amx_int8", false},
    {"amx-bf16", "amx_bf16", false},
    {"amx-fp16", "amx_fp16", false},
    {"amx-complex", "amx_complex", false},
    /* Cache and state instructions that CPUs of this decade all report. */
    {"clflushopt", "clflushopt", false},
    {"clwb", "clwb", false},
    {"clzero", "clzero", false},
    /* Explicit only: system, security and synchronization instructions that LLVM emits
     * only for their own intrinsics (never for arithmetic, loads or stores), several of
     * them privileged or enabled per process by the OS, and often hidden by hypervisors. */
    {"fsgsbase", "fsgsbase", true},
    /* the XSAVE family saves register state for the OS (XSAVES only in the kernel): a
     * Zen 5 VM of 2026-11-27 had no xsaves in its flags, which cost Halide's target
     * avx512_skylake and everything after it while this was counted an isa feature */
    {"xsave", "xsave", true},
    {"xsaveopt", "xsaveopt", true},
    {"xsavec", "xsavec", true},
    {"xsaves", "xsaves", true},
    /* random numbers: cpuid reports them where a hypervisor hides them from cpuinfo (a
     * Zen 5 VM: rdseed) */
    {"rdrnd", "rdrand", true},
    {"rdseed", "rdseed", true},
    {"invpcid", "invpcid", true},
    {"pku", "pku", true},
    {"sgx", "sgx", true},
    {"shstk", "user_shstk", true},
    {"uintr", "uintr", true},
    {"ptwrite", "ptwrite", true},
    {"waitpkg", "waitpkg", true},
    {"cldemote", "cldemote", true},
    {"movdiri", "movdiri", true},
    {"movdir64b", "movdir64b", true},
    {"enqcmd", "enqcmd", true},
    {"serialize", "serialize", true},
    {"tsxldtrk", "tsxldtrk", true},
    {"rtm", "rtm", true},
    {"pconfig", "pconfig", true},
    {"wbnoinvd", "wbnoinvd", true},
    {"rdpid", "rdpid", true},
    {"rdpru", "rdpru", true},
    {"mwaitx", "mwaitx", true},
    {"lwp", "lwp", true},
    {"hreset", "hreset", true},
    {"kl", "keylocker", true},
    {"widekl", "keylocker", true},
    {"cmpccxadd", "cmpccxadd", true},
    {"raoint", "rao_int", true},
    {"prefetchi", "prefetchi", true},
    {"usermsr", "user_msr", true},
};

bool pm_host_llvm_feature(const char *llvm_name, const char **flag, bool *explicit_only)
{
    for (size_t i = 0; i < sizeof kLlvmFlags / sizeof kLlvmFlags[0]; i++)
        if (!strcmp(kLlvmFlags[i].llvm, llvm_name)) {
            if (flag)
                *flag = kLlvmFlags[i].cpuinfo;
            if (explicit_only)
                *explicit_only = kLlvmFlags[i].explicit_only;
            return true;
        }
    return false;
}

int pm_host_llvm_features_filter(char *features, const char *flags)
{
    int off = 0;
    for (char *p = features; *p;) {
        size_t n = strcspn(p, ",");
        const char *flag = NULL;
        bool explicit_only = false;
        char name[64];
        if (n > 1 && n - 1 < sizeof name && p[0] == '+') {
            memcpy(name, p + 1, n - 1);
            name[n - 1] = '\0';
            if (pm_host_llvm_feature(name, &flag, &explicit_only) && !explicit_only &&
                !pm_host_has_flag(flags, flag)) {
                p[0] = '-';
                off++;
            }
        }
        p += n;
        if (*p == ',')
            p++;
    }
    return off;
}

/* ---- Halide 14's x86 features -------------------------------------------------------- */

/* The LLVM 14 CPU models Halide 14 selects (CodeGen_X86::mcpu), as LLVM feature lists:
 * what `clang-14 -march=<model>` enables. Each is written on top of the one it extends. */
#define MODEL_K8 "64bit cmov cx8 mmx fxsr sse sse2 "
#define MODEL_PENRYN MODEL_K8 "sse3 ssse3 sse4.1 cx16 sahf "
#define MODEL_COREI7_AVX MODEL_PENRYN "sse4.2 crc32 popcnt avx pclmul xsave xsaveopt "
#define MODEL_HASWELL MODEL_COREI7_AVX "avx2 bmi bmi2 f16c fma lzcnt movbe rdrnd fsgsbase invpcid "
#define MODEL_SKX_COMMON \
    MODEL_HASWELL "adx aes avx512f avx512cd avx512bw avx512dq avx512vl clflushopt prfchw rdseed " \
                  "xsavec xsaves pku "
#define MODEL_SKYLAKE_AVX512 MODEL_SKX_COMMON "clwb "
#define MODEL_CANNONLAKE MODEL_SKX_COMMON "avx512ifma avx512vbmi sha sgx "
#define MODEL_SAPPHIRERAPIDS                                                                  \
    MODEL_CANNONLAKE "clwb avx512bf16 avx512bitalg avx512fp16 avx512vbmi2 avx512vnni "         \
                     "avx512vp2intersect avx512vpopcntdq avxvnni amx-tile amx-int8 amx-bf16 " \
                     "gfni vaes vpclmulqdq cldemote enqcmd movdir64b movdiri pconfig ptwrite " \
                     "rdpid serialize shstk tsxldtrk waitpkg wbnoinvd "
#define MODEL_KNL MODEL_HASWELL "adx aes avx512f avx512cd avx512er avx512pf prefetchwt1 prfchw rdseed "

typedef struct {
    const char *name;     /* in a Halide target string */
    int implies;          /* index of the Halide feature it needs first, -1 for none */
    const char *llvm;     /* model features + the attributes Halide adds (mattrs) */
} halide_feature;

/* In implication order: a feature's `implies` always comes before it. */
static const halide_feature kHalide[] = {
    {"sse41", -1, MODEL_PENRYN},
    {"avx", 0, MODEL_COREI7_AVX},
    {"avx2", 1, MODEL_HASWELL},
    /* fma, fma4 and f16c keep the model of the other features; in LLVM each implies avx. */
    {"fma", 1, MODEL_COREI7_AVX "fma"},
    {"fma4", 1, MODEL_COREI7_AVX "fma4 sse4a"},
    {"f16c", 1, MODEL_COREI7_AVX "f16c"},
    /* avx512 alone keeps haswell and adds +avx512f,+avx512cd. */
    {"avx512", 2, MODEL_HASWELL "avx512f avx512cd"},
    {"avx512_knl", 6, MODEL_KNL},
    {"avx512_skylake", 6, MODEL_SKYLAKE_AVX512},
    {"avx512_cannonlake", 8, MODEL_CANNONLAKE},
    /* mattrs adds +amx-int8,+amx-bf16 (already in the model). */
    {"avx512_sapphirerapids", 9, MODEL_SAPPHIRERAPIDS},
};
enum { kHalideCount = (int)(sizeof kHalide / sizeof kHalide[0]) };

int pm_host_halide_feature_count(void) { return kHalideCount; }

const char *pm_host_halide_feature_name(int i)
{
    return i >= 0 && i < kHalideCount ? kHalide[i].name : NULL;
}

bool pm_host_has_flag(const char *flags, const char *flag)
{
    size_t n = strlen(flag);
    if (!flags || n == 0)
        return false;
    for (const char *p = flags; (p = strstr(p, flag)) != NULL; p++) {
        bool starts = p == flags || p[-1] == ' ' || p[-1] == '\t';
        bool ends = p[n] == '\0' || p[n] == ' ' || p[n] == '\t' || p[n] == '\n';
        if (starts && ends)
            return true;
    }
    return false;
}

static int halide_index(const char *name)
{
    for (int i = 0; i < kHalideCount; i++)
        if (!strcmp(kHalide[i].name, name))
            return i;
    return -1;
}

/* Checks one feature's own LLVM list (not its implications); NULL when all present. */
static const char *own_refusal(const char *flags, const halide_feature *f, char *buf,
                               size_t size)
{
    const char *p = f->llvm;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)n, p);
        p += n;
        const char *flag = NULL;
        bool explicit_only = false;
        if (!pm_host_llvm_feature(word, &flag, &explicit_only)) {
            snprintf(buf, size, "LLVM feature %s has no known cpuinfo flag", word);
            return buf;
        }
        if (!explicit_only && !pm_host_has_flag(flags, flag)) {
            snprintf(buf, size, "needs %s", flag);
            return buf;
        }
    }
    return NULL;
}

const char *pm_host_halide_feature_refusal(const char *flags, const char *name, char *buf,
                                           size_t size)
{
    int i = halide_index(name);
    if (i < 0) {
        snprintf(buf, size, "not an x86 feature this rule knows");
        return buf;
    }
    for (int j = kHalide[i].implies; j >= 0; j = kHalide[j].implies)
        if (own_refusal(flags, &kHalide[j], buf, size)) {
            snprintf(buf, size, "needs Halide feature %s", kHalide[j].name);
            return buf;
        }
    return own_refusal(flags, &kHalide[i], buf, size);
}

int pm_host_halide_target(const char *flags, char *buf, size_t size)
{
    int granted = 0;
    size_t len = (size_t)snprintf(buf, size, "x86-64-linux");
    for (int i = 0; i < kHalideCount; i++) {
        char why[128];
        if (pm_host_halide_feature_refusal(flags, kHalide[i].name, why, sizeof why))
            continue;
        granted++;
        if (len < size)
            len += (size_t)snprintf(buf + len, size - len, "-%s", kHalide[i].name);
    }
    return granted;
}

/* Instruction sets that need no state of the OS's (no register file it must save):
 * cpuid's word is final for them. A hypervisor's kernel may list fewer than cpuid reports
 * (a Zen 5 VM of 2026-11-27 had no abm and no sse4a in its flags while cpuid reported both
 * and lzcnt ran as LZCNT), and Halide's avx2 implies LZCNT. AVX and beyond need the OS to
 * save their registers: only the kernel's flags count for them. */
typedef struct {
    const char *flag;
    unsigned leaf, subleaf, reg, bit; /* reg: 1 = ebx, 2 = ecx, 3 = edx */
} cpuid_flag;

static const cpuid_flag kUserModeFlags[] = {
    {"abm", 0x80000001u, 0, 2, 5},   {"sse4a", 0x80000001u, 0, 2, 6},
    {"popcnt", 1, 0, 2, 23},         {"movbe", 1, 0, 2, 22},
    {"bmi1", 7, 0, 1, 3},            {"bmi2", 7, 0, 1, 8},
};

static void add_cpuid_flags(char *buf, size_t size)
{
#if defined(__x86_64__) || defined(__i386__)
    for (size_t i = 0; i < sizeof kUserModeFlags / sizeof kUserModeFlags[0]; i++) {
        const cpuid_flag *f = &kUserModeFlags[i];
        unsigned r[4] = {0, 0, 0, 0};
        if (!__get_cpuid_count(f->leaf, f->subleaf, &r[0], &r[1], &r[2], &r[3]))
            continue;
        if (!((r[f->reg] >> f->bit) & 1u) || pm_host_has_flag(buf, f->flag))
            continue;
        size_t len = strlen(buf), n = strlen(f->flag);
        if (len + 1 + n + 1 > size)
            return;
        buf[len] = ' ';
        memcpy(buf + len + 1, f->flag, n + 1);
    }
#else
    (void)buf;
    (void)size;
#endif
}

bool pm_host_read_flags(char *buf, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[16384];
    bool found = false;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        const char *colon = strchr(line, ':');
        if (!colon)
            continue;
        colon++;
        while (*colon == ' ' || *colon == '\t')
            colon++;
        size_t n = strcspn(colon, "\n");
        if (n + 1 <= size) {
            memcpy(buf, colon, n);
            buf[n] = '\0';
            found = true;
        }
        break;
    }
    fclose(f);
    if (found)
        add_cpuid_flags(buf, size);
    return found;
}

/* ---- the per-core L2 ------------------------------------------------------------------ */

/* sysfs's cache of level 2 for cpu0 ("1024K"), 0 when it has none. */
static int64_t sysfs_l2_bytes(void)
{
    for (int i = 0; i < 8; i++) {
        char path[96], buf[32];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int level = 0;
        if (fscanf(f, "%d", &level) != 1)
            level = 0;
        fclose(f);
        if (level != 2)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        if (!f)
            break;
        long kib = 0;
        if (fgets(buf, sizeof buf, f))
            kib = strtol(buf, NULL, 10);
        fclose(f);
        if (kib > 0 && kib <= (1L << 30))
            return (int64_t)kib * 1024;
    }
    return 0;
}

int64_t pm_host_cpuid_l2_bytes(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000006u &&
        __get_cpuid(0x80000006u, &a, &b, &c, &d))
        return (int64_t)(c >> 16) * 1024;
#endif
    return 0;
}

int64_t pm_host_l2_bytes(void)
{
    int64_t bytes = sysfs_l2_bytes();
    return bytes > 0 ? bytes : pm_host_cpuid_l2_bytes();
}
