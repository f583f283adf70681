/* host_target.h — which x86 features a code generator may use on this CPU, decided from
 * the feature flags the CPU reports (the "flags" line of /proc/cpuinfo).
 *
 * Promise: a feature is granted only when every instruction set it lets the code
 * generator use is in the host's flags, never because of the CPU's model name.
 * pm_host_halide_target applies this rule to Halide 14's features, and
 * pm_host_llvm_features_filter to the features of PolyMage-JIT's own target machine.
 * The code is plain C11, with no Halide and no LLVM, so its unit test
 * (test/test_host_target.c) runs in `make test` on stored flag lines of other CPUs.
 * It also reads the per-core L2 the tile model budgets for (pm_host_l2_bytes), from sysfs
 * or cpuid, the host's own reports.
 */
#ifndef PM_RUNTIME_HOST_TARGET_H
#define PM_RUNTIME_HOST_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reads the first "flags" line of /proc/cpuinfo (the part after the colon) into buf, then
 * adds the user-mode instruction sets cpuid reports that the line lacks (abm, sse4a,
 * popcnt, movbe, bmi1, bmi2: no register state the OS must save, so cpuid's word is final;
 * a hypervisor's kernel may omit them, as a Zen 5 VM did with abm and sse4a). False when
 * there is no flags line (not Linux, not x86) or it does not fit. */
bool pm_host_read_flags(char *buf, size_t size);

/* True when `flag` is one of the space-separated words of `flags` (whole words only:
 * "avx512f" is not found in "avx512fp16"). */
bool pm_host_has_flag(const char *flags, const char *flag);

/* The Halide 14 x86 features this rule knows, in the order Halide implies them:
 * sse41 avx avx2 fma fma4 f16c avx512 avx512_knl avx512_skylake avx512_cannonlake
 * avx512_sapphirerapids. */
int pm_host_halide_feature_count(void);
const char *pm_host_halide_feature_name(int i);

/* Why flags and not a model name: a CPU model name stands for a list of instruction
 * sets, and CPUs that share a vendor's name for one feature do not share the list.
 * Halide 14 turns its feature avx512_sapphirerapids into LLVM's CPU model
 * "sapphirerapids", which lets LLVM emit AVX512-FP16 (vmovw) and VEX AVX-VNNI; an AMD
 * Zen 5 has AVX-512 BF16 and VNNI but not FP16: such code stops there with "Illegal
 * instruction".
 * What a Halide 14 feature lets the code generator use (src/CodeGen_X86.cpp at v14.0.0):
 * the LLVM CPU model Halide selects for it (mcpu(): penryn, corei7-avx, haswell, knl,
 * skylake-avx512, cannonlake, sapphirerapids) with every feature LLVM 14 gives that
 * model, plus the attributes Halide adds (mattrs(): +fma, +f16c, +avx512f, ...). Of
 * those, the rule requires the "isa" features of the table in host_target.c: everything
 * instruction selection may pick for ordinary arithmetic, memory and vector code. It
 * ignores the "explicit" ones (PKU, SGX, shadow stacks, WAITPKG, SERIALIZE, MOVDIRI, the
 * XSAVE family, ...), which LLVM emits only for their own intrinsics, and which
 * hypervisors commonly hide.
 * Whether the Halide feature `name` may be used on a CPU with these flags: every isa
 * feature it implies is present, and so is every Halide feature it implies (avx2 for
 * avx512_skylake, ...). Returns NULL when granted; otherwise a static description of the
 * first reason, e.g. "needs avx512_fp16" or "needs Halide feature avx2". Unknown names
 * return "not an x86 feature this rule knows". */
const char *pm_host_halide_feature_refusal(const char *flags, const char *name, char *buf,
                                           size_t size);

/* Writes the Halide target string for a 64-bit Linux x86 host with these flags, e.g.
 * "x86-64-linux-sse41-avx-avx2-fma-f16c-avx512-avx512_skylake-avx512_cannonlake".
 * Returns the number of features granted. */
int pm_host_halide_target(const char *flags, char *buf, size_t size);

/* LLVM's x86 feature names ("avx512fp16", "sse4.1", "shstk") against /proc/cpuinfo,
 * from the same table as the Halide rule.
 *   found:     false when the table does not know the name;
 *   *flag:     the cpuinfo flag that reports it ("avx512_fp16", "sse4_1", "user_shstk");
 *   *explicit_only: true for features LLVM emits only for their own intrinsics (see above).
 * Pseudo-features with no instructions of their own map to the flag that carries them
 * ("evex512" to avx512f, "64bit" to lm, "crc32" to sse4_2). */
bool pm_host_llvm_feature(const char *llvm_name, const char **flag, bool *explicit_only);

/* Rewrites "+name" to "-name" in an LLVM feature string ("+avx2,-avx512fp16,...", in
 * place) for every instruction set of the table (not the explicit-only ones) whose flag
 * `flags` (pm_host_read_flags) lacks: the flags are what the OS lets programs use, LLVM's
 * detection reads cpuid alone. Returns how many it switched off. The engine's target
 * machine uses it (runtime/jit_engine.c), and test_jit_features checks that the result
 * enables nothing the host lacks. */
int pm_host_llvm_features_filter(char *features, const char *flags);

/* The per-core L2 in bytes, 0 when unknown: sysfs's cache of level 2 for cpu0, else
 * cpuid's (leaf 0x80000006, ECX bits 31..16 in KiB, on Intel and AMD alike): some VMs
 * have no cache directory in sysfs (a Zen 5 VM of 2026-11-29). The tile model's scratch
 * budget is half of it (codegen/options.c). */
int64_t pm_host_l2_bytes(void);
/* cpuid's part of it alone (0 off x86 or without the leaf), for the test. */
int64_t pm_host_cpuid_l2_bytes(void);

#ifdef __cplusplus
}
#endif

#endif
