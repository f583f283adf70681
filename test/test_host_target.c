/* test_host_target.c — the bench's rule for Halide's x86 target (runtime/host_target.h) on
 * stored /proc/cpuinfo flag lines of CPUs this project runs on: a Halide feature is granted
 * only when every instruction set it lets LLVM use is in the flags, never from the name.
 *
 * The lines are the "flags" field as Linux prints it inside a VM (cloud hosts); the rule
 * only looks for whole words, so the order and the extra flags do not matter. */
#include "check.h"

#include "runtime/host_target.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* AMD EPYC 9655 (Zen 5, "Turin"): AVX-512 with BF16, VNNI, VP2INTERSECT and the VEX
 * AVX-VNNI, but no AVX512-FP16 and no AMX. The line as published in archspec-json pull
 * request #145 (cut there after v_vmsave_vmload), completed with the flags Linux prints
 * after it on Zen 5 (avx512vbmi ... avx512_vp2intersect). */
static const char *kZen5 =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl "
    "nonstop_tsc cpuid extd_apicid aperfmperf rapl pni pclmulqdq monitor ssse3 fma cx16 pcid "
    "sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand lahf_lm cmp_legacy svm extapic "
    "cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs skinit wdt tce topoext "
    "perfctr_core perfctr_nb bpext perfctr_llc mwaitx cpb cat_l3 cdp_l3 invpcid_single "
    "hw_pstate ssbd mba ibrs ibpb stibp vmmcall fsgsbase tsc_adjust bmi1 avx2 smep bmi2 invpcid "
    "cqm rdt_a avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni "
    "avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total "
    "cqm_mbm_local avx_vnni avx512_bf16 clzero irperf xsaveerptr rdpru wbnoinvd amd_ppin cppc "
    "arat npt lbrv svm_lock nrip_save tsc_scale vmcb_clean flushbyasid decodeassists "
    "pausefilter pfthreshold avic v_vmsave_vmload vgif x2avic v_spec_ctrl vnmi avx512vbmi umip "
    "pku ospke avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq "
    "rdpid bus_lock_detect movdiri movdir64b overflow_recov succor smca fsrm "
    "avx512_vp2intersect flush_l1d";

/* Intel Xeon Platinum 8488C (Sapphire Rapids, AWS m7i), as published in llama.cpp issue
 * #2555, with two copy errors of that post mended: "vpc lmulqdq" and the bmi2 that every
 * Intel CPU since Haswell reports. It has AVX512-FP16, AMX and AVX-VNNI, and, like every
 * Sapphire Rapids, no AVX512-VP2INTERSECT (which LLVM 14's sapphirerapids model claims). */
static const char *kSapphireRapids =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon rep_good nopl "
    "xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq monitor ssse3 fma cx16 "
    "pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand "
    "hypervisor lahf_lm abm 3dnowprefetch invpcid_single ssbd ibrs ibpb stibp ibrs_enhanced "
    "fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap "
    "avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 "
    "xsaves avx_vnni avx512_bf16 wbnoinvd ida arat avx512vbmi umip pku ospke waitpkg "
    "avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg tme avx512_vpopcntdq rdpid "
    "cldemote movdiri movdir64b md_clear serialize amx_bf16 avx512_fp16 amx_tile amx_int8 "
    "flush_l1d arch_capabilities";

/* AMD EPYC Zen 4 in a VM (this project's machine on 2026-11-23): AVX-512 with BF16, VNNI
 * and VBMI, no AVX-VNNI, no AVX512-FP16. */
static const char *kZen4 =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl "
    "xtopology nonstop_tsc cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid "
    "sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor "
    "lahf_lm cmp_legacy cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw topoext vmmcall "
    "fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap "
    "avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 "
    "xsaves avx512_bf16 clzero xsaveerptr arat avx512vbmi umip avx512_vbmi2 gfni vaes "
    "vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid fsrm";

/* A Haswell-era laptop: AVX2, FMA, F16C, no AVX-512. */
static const char *kHaswell =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc pni pclmulqdq ssse3 fma cx16 "
    "sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand lahf_lm abm fsgsbase bmi1 avx2 smep "
    "bmi2 erms invpcid xsaveopt";

static char *with_flag(const char *flags, const char *extra)
{
    size_t n = strlen(flags) + strlen(extra) + 2;
    char *s = malloc(n);
    snprintf(s, n, "%s %s", flags, extra);
    return s;
}

/* flags with every whole-word occurrence of `word` removed. */
static char *without_flag(const char *flags, const char *word)
{
    char *s = malloc(strlen(flags) + 1);
    s[0] = '\0';
    char *copy = malloc(strlen(flags) + 1);
    strcpy(copy, flags);
    for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
        if (!strcmp(tok, word))
            continue;
        if (s[0])
            strcat(s, " ");
        strcat(s, tok);
    }
    free(copy);
    return s;
}

static bool granted(const char *flags, const char *feature)
{
    char why[128];
    return pm_host_halide_feature_refusal(flags, feature, why, sizeof why) == NULL;
}

static void check_target(const char *flags, const char *want)
{
    char got[512];
    pm_host_halide_target(flags, got, sizeof got);
    if (!CHECK(!strcmp(got, want)))
        fprintf(stderr, "  target %s\n  wanted %s\n", got, want);
}

static void test_flag_words(void)
{
    CHECK(pm_host_has_flag("a avx512f b", "avx512f"));
    CHECK(pm_host_has_flag("avx512f", "avx512f"));
    CHECK(pm_host_has_flag("x avx512f", "avx512f"));
    CHECK(!pm_host_has_flag("avx512fp16 avx512f_x", "avx512f"));
    CHECK(!pm_host_has_flag("xavx2 avx2x", "avx2"));
    CHECK(!pm_host_has_flag("", "avx2"));
    CHECK(!pm_host_has_flag(NULL, "avx2"));
    CHECK(pm_host_has_flag("sse4_1\tsse4_2\n", "sse4_2"));
}

/* Every LLVM feature a Halide feature names must be in the table (a typo would refuse the
 * feature on every CPU). A CPU with every flag of the table gets all eleven. */
static void test_table_complete(void)
{
    char all[8192] = "";
    const char *names[] = {"lm", "cmov", "cx8", "cx16", "mmx", "fxsr", "lahf_lm", "sse", "sse2",
                           "pni", "ssse3", "sse4_1", "sse4_2", "sse4a", "popcnt", "avx", "avx2",
                           "fma", "fma4", "f16c", "bmi1", "bmi2", "abm", "movbe", "adx",
                           "3dnowprefetch", "aes", "pclmulqdq", "sha_ni", "vaes", "vpclmulqdq",
                           "gfni", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl",
                           "avx512ifma", "avx512vbmi", "avx512_vbmi2", "avx512_vnni",
                           "avx512_bitalg", "avx512_vpopcntdq", "avx512_bf16", "avx512_fp16",
                           "avx512_vp2intersect", "avx512pf", "avx512er", "avx_vnni",
                           "amx_tile", "amx_int8", "amx_bf16", "clflushopt", "clwb", "xsave",
                           "xsaveopt", "xsavec", "xsaves", "rdrand", "rdseed"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        strcat(all, names[i]);
        strcat(all, " ");
    }
    for (int i = 0; i < pm_host_halide_feature_count(); i++) {
        char why[128];
        const char *r = pm_host_halide_feature_refusal(all, pm_host_halide_feature_name(i), why,
                                                       sizeof why);
        if (!CHECK(r == NULL))
            fprintf(stderr, "  %s: %s\n", pm_host_halide_feature_name(i), r);
    }
    CHECK(pm_host_halide_feature_count() == 11);
    CHECK(pm_host_halide_feature_name(11) == NULL);
    char why[128];
    CHECK_CONTAINS(pm_host_halide_feature_refusal(all, "arm_dot_prod", why, sizeof why),
                   "not an x86 feature");
}

/* Zen 5: no avx512_fp16 (and no AMX), so no Sapphire Rapids, whatever else it has. The
 * refusal names the first missing instruction set. */
static void test_zen5(void)
{
    check_target(kZen5, "x86-64-linux-sse41-avx-avx2-fma-f16c-avx512-avx512_skylake-"
                        "avx512_cannonlake");
    char why[128];
    const char *r = pm_host_halide_feature_refusal(kZen5, "avx512_sapphirerapids", why,
                                                   sizeof why);
    CHECK(r != NULL);
    CHECK_CONTAINS(r, "avx512_fp16");
    CHECK(!granted(kZen5, "avx512_knl"));
    CHECK(!granted(kZen5, "fma4")); /* Zen dropped FMA4 */
    /* With FP16 added, the AMX tiles are still missing. */
    char *plus_fp16 = with_flag(kZen5, "avx512_fp16");
    r = pm_host_halide_feature_refusal(plus_fp16, "avx512_sapphirerapids", why, sizeof why);
    CHECK(r != NULL);
    CHECK_CONTAINS(r, "amx_");
    free(plus_fp16);
    /* A Zen 5 VM whose hypervisor hides rdseed and rdrand from cpuinfo (cpuid still has
     * them): they are only ever emitted for their intrinsics, so the AVX-512 models stay. */
    char *vm = with_flag(kZen5, "");
    const char *hidden[] = {"rdseed", "rdrand"};
    for (int i = 0; i < 2; i++) {
        char *p = strstr(vm, hidden[i]);
        if (CHECK(p != NULL))
            memset(p, 'x', strlen(hidden[i]));
    }
    CHECK(!pm_host_has_flag(vm, "rdseed") && !pm_host_has_flag(vm, "rdrand"));
    check_target(vm, "x86-64-linux-sse41-avx-avx2-fma-f16c-avx512-avx512_skylake-"
                     "avx512_cannonlake");
    free(vm);
    /* A Zen 5 VM whose kernel lists no xsaves (a kernel-only instruction): the XSAVE
     * family is explicit-only, so avx512_skylake and what follows stay. */
    char *no_xsaves = with_flag(kZen5, "");
    for (char *p = no_xsaves; (p = strstr(p, "xsaves")) != NULL;)
        memset(p, 'x', 6);
    CHECK(!pm_host_has_flag(no_xsaves, "xsaves"));
    check_target(no_xsaves, "x86-64-linux-sse41-avx-avx2-fma-f16c-avx512-avx512_skylake-"
                            "avx512_cannonlake");
    free(no_xsaves);
}

/* The JIT's feature string less what the flags lack: isa features switched off,
 * explicit-only ones and names the table does not know left alone. */
static void test_features_filter(void)
{
    char features[] = "+avx2,+sse4a,+lzcnt,-avx512fp16,+shstk,+avx512f,+no-such-feature";
    int off = pm_host_llvm_features_filter(features, "sse2 avx avx2 avx512f");
    CHECK(off == 2);
    if (!CHECK(!strcmp(features,
                       "+avx2,-sse4a,-lzcnt,-avx512fp16,+shstk,+avx512f,+no-such-feature")))
        fprintf(stderr, "  filtered: %s\n", features);
    char none[] = "";
    CHECK(pm_host_llvm_features_filter(none, "avx2") == 0);
    char all[] = "+avx2,+lzcnt";
    CHECK(pm_host_llvm_features_filter(all, "avx2 abm") == 0 && !strcmp(all, "+avx2,+lzcnt"));
}

/* Sapphire Rapids: everything Halide 14's feature names except the VP2INTERSECT that LLVM
 * 14's model assumes. Granting avx512_sapphirerapids there would let LLVM emit an
 * instruction the CPU lacks, so the rule stops at Cannon Lake; with the flag present (a
 * CPU that has it all) the feature is granted. */
static void test_sapphire_rapids(void)
{
    check_target(kSapphireRapids, "x86-64-linux-sse41-avx-avx2-fma-f16c-avx512-avx512_skylake-"
                                  "avx512_cannonlake");
    char why[128];
    const char *r = pm_host_halide_feature_refusal(kSapphireRapids, "avx512_sapphirerapids",
                                                   why, sizeof why);
    CHECK(r != NULL);
    CHECK_CONTAINS(r, "avx512_vp2intersect");
    char *full = with_flag(kSapphireRapids, "avx512_vp2intersect");
    check_target(full, "x86-64-linux-sse41-avx-avx2-fma-f16c-avx512-avx512_skylake-"
                       "avx512_cannonlake-avx512_sapphirerapids");
    /* Each ISA of the model matters on its own: drop one and the feature goes. */
    const char *needed[] = {"avx_vnni", "avx512_fp16", "amx_tile", "avx512_bf16", "gfni"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++) {
        char *less = without_flag(full, needed[i]);
        r = pm_host_halide_feature_refusal(less, "avx512_sapphirerapids", why, sizeof why);
        if (CHECK(r != NULL))
            CHECK_CONTAINS(r, needed[i]);
        CHECK(granted(less, "avx512_cannonlake"));
        free(less);
    }
    /* The explicit-only instructions (waitpkg, serialize, ...) are not required. */
    char *no_waitpkg = without_flag(full, "waitpkg");
    char *no_serialize = without_flag(no_waitpkg, "serialize");
    CHECK(granted(no_serialize, "avx512_sapphirerapids"));
    free(no_serialize);
    free(no_waitpkg);
    free(full);
}

static void test_zen4_and_smaller(void)
{
    check_target(kZen4, "x86-64-linux-sse41-avx-avx2-fma-f16c-avx512-avx512_skylake-"
                        "avx512_cannonlake");
    char why[128];
    const char *r = pm_host_halide_feature_refusal(kZen4, "avx512_sapphirerapids", why,
                                                   sizeof why);
    CHECK(r != NULL);
    /* A hypervisor hiding PKU (explicit only) does not cost Skylake or Cannon Lake. */
    CHECK(!pm_host_has_flag(kZen4, "pku"));
    CHECK(granted(kZen4, "avx512_skylake"));
    /* Without sha_ni no Cannon Lake; without avx512vl no Skylake (and so no Cannon Lake). */
    char *no_sha = without_flag(kZen4, "sha_ni");
    CHECK(!granted(no_sha, "avx512_cannonlake"));
    CHECK(granted(no_sha, "avx512_skylake"));
    free(no_sha);
    char *no_vl = without_flag(kZen4, "avx512vl");
    CHECK(!granted(no_vl, "avx512_skylake"));
    r = pm_host_halide_feature_refusal(no_vl, "avx512_cannonlake", why, sizeof why);
    if (CHECK(r != NULL))
        CHECK_CONTAINS(r, "avx512_skylake");
    CHECK(granted(no_vl, "avx512"));
    free(no_vl);

    check_target(kHaswell, "x86-64-linux-sse41-avx-avx2-fma-f16c");
    /* Haswell's model lets LLVM use BMI2 and LZCNT: without them no avx2. */
    char *no_bmi2 = without_flag(kHaswell, "bmi2");
    check_target(no_bmi2, "x86-64-linux-sse41-avx-fma-f16c");
    free(no_bmi2);
    /* An AVX CPU whose OS disabled the AVX state: avx not reported, nothing above SSE4.1. */
    char *no_avx = without_flag(kHaswell, "avx");
    check_target(no_avx, "x86-64-linux-sse41");
    free(no_avx);
    check_target("fpu lm cmov cx8 mmx fxsr sse sse2", "x86-64-linux");
    check_target("", "x86-64-linux");
}

static void test_llvm_names(void)
{
    const char *flag = NULL;
    bool explicit_only = true;
    CHECK(pm_host_llvm_feature("avx512fp16", &flag, &explicit_only));
    CHECK(flag && !strcmp(flag, "avx512_fp16") && !explicit_only);
    CHECK(pm_host_llvm_feature("sse4.1", &flag, &explicit_only));
    CHECK(flag && !strcmp(flag, "sse4_1"));
    CHECK(pm_host_llvm_feature("avxvnni", &flag, &explicit_only));
    CHECK(flag && !strcmp(flag, "avx_vnni"));
    CHECK(pm_host_llvm_feature("shstk", &flag, &explicit_only));
    CHECK(explicit_only);
    CHECK(!pm_host_llvm_feature("no-such-feature", &flag, &explicit_only));
}

/* The host's own line reads, and the rule grants it at least the x86-64 baseline. */
static void test_this_host(void)
{
    char flags[16384];
    if (!pm_host_read_flags(flags, sizeof flags)) {
        printf("test_host_target: no flags line in /proc/cpuinfo; host part skipped\n");
        return;
    }
    CHECK(pm_host_has_flag(flags, "sse2"));
#if defined(__x86_64__)
    /* the user-mode sets cpuid reports are in the flags even where the kernel's line
     * omits them (pm_host_read_flags) */
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(0x80000001u, &a, &b, &c, &d)) {
        CHECK(!((c >> 5) & 1u) || pm_host_has_flag(flags, "abm"));
        CHECK(!((c >> 6) & 1u) || pm_host_has_flag(flags, "sse4a"));
    }
    /* the L2: x86 CPUs report it in leaf 0x80000006 (a hypervisor may hide it: 0);
     * sysfs, where the VM has it, comes first. One of the two must give a size. */
    int64_t cpuid_l2 = pm_host_cpuid_l2_bytes(), l2 = pm_host_l2_bytes();
    printf("test_host_target: L2 %lld bytes (cpuid: %lld)\n", (long long)l2,
           (long long)cpuid_l2);
    CHECK(cpuid_l2 == 0 ||
          (cpuid_l2 >= 64 * 1024 && cpuid_l2 <= 64 * 1024 * 1024 && cpuid_l2 % 1024 == 0));
    CHECK(l2 >= 64 * 1024 && l2 <= 64 * 1024 * 1024);
#endif
    char target[512];
    int n = pm_host_halide_target(flags, target, sizeof target);
    printf("test_host_target: this host's Halide target: %s (%d features)\n", target, n);
    CHECK(!strncmp(target, "x86-64-linux", 12));
}

int main(void)
{
    test_flag_words();
    test_table_complete();
    test_zen5();
    test_features_filter();
    test_sapphire_rapids();
    test_zen4_and_smaller();
    test_llvm_names();
    test_this_host();
    return check_finish("test_host_target");
}
