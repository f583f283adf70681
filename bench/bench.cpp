/* bench.cpp — pm_bench: PolyMage-JIT against Halide 14 on the PolyMage benchmark apps.
 *
 * For each app: build the PolyMage sample, allocate and fill its buffers once, then run
 * every variant (PolyMage-JIT, the Halide hand schedule, and Halide's three
 * autoschedulers) on that same input memory, each in its own child process (isolate.h),
 * each writing its own output, which is checked against a reference:
 *   --quick: the reference interpreter (pm_interpret);
 *   paper sizes: the PolyMage-JIT output (the interpreter would take too long), or, if
 *   the JIT failed, the Halide hand-scheduled output (said so in the notes).
 * Timings: compile (and autoschedule) once per variant and thread count, warm-up runs (at
 * least 3 and 20 ms), then --runs timed runs; the table shows median and min. With
 * --rounds R the runs are split over R rounds, each a fresh child per variant in turn, and
 * pooled: a host whose speed drifts (a shared VM) then slows every variant alike instead
 * of whichever ran in the slow minute; a row's compile times are those of its round with
 * the median compile (the lower median for an even count), and every round's output is
 * checked. Each side's timed compile is its
 * process's second, as in a server: Halide's JIT runtime and PolyMage-JIT's LLVM are
 * warmed by a trivial pipeline first (warm_polymage, halide_child).
 *
 *   pm_bench [--quick] [--apps a,b] [--threads 1,2] [--variants polymage,hand,...]
 *            [--runs N] [--rounds R] [--size RxC] [--timeout SEC] [--json PATH] [--svg PATH]
 *            [--halide-only]
 *
 * --halide-only is the self test of the Halide side alone: the doc's buffer shapes and
 * synthetic data, the hand schedule as reference for the autoschedulers, and spot checks
 * of output values against direct formulas.
 */
#include <Halide.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "halide/halide_app.h"
#include "runtime/host_target.h"
#include "isolate.h"
#include "membw.h"
#include "polymage.h"
#include "report.h"
#include "samples.h"

namespace {

const char *const kAppOrder[] = {"unsharp_mask", "bilateral_grid", "harris", "camera_pipe",
                                 "pyramid_blend", "interpolate", "local_laplacian"};

/* Who a variant is: decides how it runs and what its failure means. */
enum VariantKind {
    PM_JIT,      /* a PolyMage-JIT configuration: failing it fails the bench */
    HALIDE_HAND, /* our Halide schedule: failing it fails the bench */
    HALIDE_AUTO, /* a Halide autoscheduler: its failures are reported statuses */
};

struct Variant {
    const char *flag;      /* --variants name */
    const char *name;      /* row name */
    VariantKind kind;
    const char *autosched; /* HALIDE_AUTO: Halide's name of the autoscheduler */
    const char *plugin;    /* HALIDE_AUTO: its plugin library */
    void (*options)(pm_compile_options *); /* PM_JIT: changes to the default options */
};

void unfused_options(pm_compile_options *o) { o->fusion = 0; }
/* LLVM's default<O3> instead of the tuned pipeline: what the tuned one must not lose to. */
void o3_options(pm_compile_options *o) { o->opt_level = 3; }

/* One line per variant. The first PM_JIT row ("polymage") is the one PM x compares with
 * and the reference at paper sizes. */
const Variant kVariants[] = {
    {"polymage", "polymage-jit", PM_JIT, nullptr, nullptr, nullptr},
    {"unfused", "polymage-jit-unfused", PM_JIT, nullptr, nullptr, unfused_options},
    {"o3", "polymage-jit-o3", PM_JIT, nullptr, nullptr, o3_options},
    {"hand", "halide-hand", HALIDE_HAND, nullptr, nullptr, nullptr},
    {"mullapudi", "halide-mullapudi2016", HALIDE_AUTO, "Mullapudi2016", PM_BENCH_MULLAPUDI2016, nullptr},
    {"adams", "halide-adams2019", HALIDE_AUTO, "Adams2019", PM_BENCH_ADAMS2019, nullptr},
    {"li", "halide-li2018", HALIDE_AUTO, "Li2018", PM_BENCH_LI2018, nullptr},
};

std::string all_variant_flags() {
    std::string s;
    for (const Variant &v : kVariants) s += std::string(s.empty() ? "" : ",") + v.flag;
    return s;
}

struct Options {
    bool quick = false;
    bool halide_only = false;
    std::vector<std::string> apps;
    std::vector<int> threads = {1, 2};
    std::vector<std::string> variants; /* empty = all of kVariants */
    int runs = 10;
    int rounds = 1;               /* --rounds: the runs split over this many rounds */
    int64_t rows = 0, cols = 0;   /* --size; 0 = the app's */
    double timeout_s = 0;         /* per phase; 0 = 60 s with --quick, else 600 s */
    bool verbose = false;         /* keep the children's stdout/stderr (Halide's chatter) */
    std::string json = PM_BENCH_SOURCE_DIR "/results.json";
    std::string svg = PM_BENCH_SOURCE_DIR "/results.svg";
};

std::vector<std::string> split_list(const char *s) {
    std::vector<std::string> out;
    std::string cur;
    for (const char *p = s;; p++) {
        if (*p == ',' || *p == 0) {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
            if (*p == 0) break;
        } else {
            cur += *p;
        }
    }
    return out;
}

void usage() {
    fprintf(stderr,
            "usage: pm_bench [--quick] [--apps a,b] [--threads 1,2] "
            "[--variants %s]\n"
            "                [--runs N (>= 1, default 10)] [--rounds R (1..N, default 1)] "
            "[--size RxC] [--timeout SEC] "
            "[--json PATH] [--svg PATH] [--halide-only] [--verbose]\n",
            all_variant_flags().c_str());
}

bool parse_options(int argc, char **argv, Options *o) {
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--quick") {
            o->quick = true;
        } else if (a == "--verbose") {
            o->verbose = true;
        } else if (a == "--halide-only") {
            o->halide_only = true;
        } else if (a == "-h" || a == "--help") {
            usage();
            exit(0);
        } else if (!v) {
            fprintf(stderr, "pm_bench: %s needs a value\n", a.c_str());
            return false;
        } else if (a == "--apps") {
            o->apps = split_list(v), i++;
        } else if (a == "--threads") {
            o->threads.clear();
            for (const std::string &t : split_list(v)) {
                int n = atoi(t.c_str());
                if (n < 1 || n > 1024) {
                    fprintf(stderr, "pm_bench: bad thread count '%s'\n", t.c_str());
                    return false;
                }
                o->threads.push_back(n);
            }
            i++;
        } else if (a == "--variants") {
            o->variants = split_list(v), i++;
            for (const std::string &s : o->variants) {
                bool known = false;
                for (const Variant &k : kVariants) known |= s == k.flag;
                if (!known) {
                    fprintf(stderr, "pm_bench: unknown variant '%s'\n", s.c_str());
                    return false;
                }
            }
        } else if (a == "--runs") {
            o->runs = atoi(v), i++;
            if (o->runs < 1) {
                fprintf(stderr, "pm_bench: --runs must be >= 1\n");
                return false;
            }
        } else if (a == "--rounds") {
            o->rounds = atoi(v), i++;
            if (o->rounds < 1) {
                fprintf(stderr, "pm_bench: --rounds must be >= 1\n");
                return false;
            }
        } else if (a == "--size") {
            long long r = 0, c = 0;
            if (sscanf(v, "%lldx%lld", &r, &c) != 2 || r < 8 || c < 8) {
                fprintf(stderr, "pm_bench: --size wants RxC with R, C >= 8\n");
                return false;
            }
            o->rows = r, o->cols = c, i++;
        } else if (a == "--timeout") {
            o->timeout_s = atof(v), i++;
            if (!(o->timeout_s > 0)) {
                fprintf(stderr, "pm_bench: --timeout must be > 0\n");
                return false;
            }
        } else if (a == "--json") {
            o->json = v, i++;
        } else if (a == "--svg") {
            o->svg = v, i++;
        } else {
            fprintf(stderr, "pm_bench: unknown option %s\n", a.c_str());
            usage();
            return false;
        }
    }
    if (o->rounds > o->runs) {
        fprintf(stderr, "pm_bench: --rounds must not exceed --runs\n");
        return false;
    }
    if (o->timeout_s == 0) o->timeout_s = o->quick ? 60 : 600;
    if (o->apps.empty()) o->apps.assign(std::begin(kAppOrder), std::end(kAppOrder));
    if (o->variants.empty())
        for (const Variant &v : kVariants) o->variants.push_back(v.flag);
    return true;
}

/* ---------------------------------------------------------------------------------- */
/* Buffers                                                                             */
/* ---------------------------------------------------------------------------------- */

size_t buffer_bytes(const pm_buffer &b) {
    size_t n = pm_type_size(b.type);
    for (int d = 0; d < b.ndims; d++) n *= (size_t)b.extent[d];
    return n;
}

/* A set of dense buffers in memory shared with the children. */
struct SharedBuffers {
    std::vector<pm_buffer> bufs;
    ~SharedBuffers() {
        for (pm_buffer &b : bufs) bench_shared_free(b.data, buffer_bytes(b));
    }
    bool alloc(const std::vector<std::vector<int64_t>> &shapes, const std::vector<pm_type> &types) {
        for (size_t i = 0; i < shapes.size(); i++) {
            pm_buffer b;
            memset(&b, 0, sizeof b);
            b.type = types[i];
            b.ndims = (int)shapes[i].size();
            for (int d = 0; d < b.ndims; d++) b.extent[d] = shapes[i][d];
            b.data = bench_shared_alloc(buffer_bytes(b));
            if (!b.data) return false;
            bufs.push_back(b);
        }
        return true;
    }
    void zero() {
        for (pm_buffer &b : bufs) memset(b.data, 0, buffer_bytes(b));
    }
    void copy_from(const SharedBuffers &o) {
        for (size_t i = 0; i < bufs.size(); i++) memcpy(bufs[i].data, o.bufs[i].data, buffer_bytes(bufs[i]));
    }
};

template <typename T>
double max_diff_typed(const void *a, const void *b, size_t n) {
    const T *x = (const T *)a, *y = (const T *)b;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = std::fabs((double)x[i] - (double)y[i]);
        if (std::isnan(d)) {
            if (std::isnan((double)x[i]) && std::isnan((double)y[i])) continue;
            return INFINITY; /* NaN on one side only: certainly wrong */
        }
        worst = std::max(worst, d);
    }
    return worst;
}

double max_abs_diff(const pm_buffer &a, const pm_buffer &b) {
    size_t n = buffer_bytes(a) / pm_type_size(a.type);
    switch (a.type) {
    case PM_U8: return max_diff_typed<uint8_t>(a.data, b.data, n);
    case PM_I8: return max_diff_typed<int8_t>(a.data, b.data, n);
    case PM_U16: return max_diff_typed<uint16_t>(a.data, b.data, n);
    case PM_I16: return max_diff_typed<int16_t>(a.data, b.data, n);
    case PM_U32: return max_diff_typed<uint32_t>(a.data, b.data, n);
    case PM_I32: return max_diff_typed<int32_t>(a.data, b.data, n);
    case PM_I64: return max_diff_typed<int64_t>(a.data, b.data, n);
    case PM_F32: return max_diff_typed<float>(a.data, b.data, n);
    case PM_F64: return max_diff_typed<double>(a.data, b.data, n);
    default: return INFINITY;
    }
}

bool is_float(pm_type t) { return t == PM_F32 || t == PM_F64; }

/* The allowed difference from the reference. Floats: the app's own tolerance (what it
 * allows the JIT against the interpreter; Halide reorders float sums the same way).
 * Integers: exact, except local laplacian, whose doc states +-1 LSB between correct
 * implementations (float intermediates truncated to u16). */
double tolerance_for(const std::string &app, pm_type t, double app_tol) {
    if (is_float(t)) return app_tol > 0 ? app_tol : 1e-4;
    if (app == "local_laplacian") return 1;
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* The children                                                                        */
/* ---------------------------------------------------------------------------------- */

/* Input pictures start on a cache line, as an image library's or Halide's own buffers
 * do (malloc's 16-byte alignment split every 64-byte vector load across two lines). */
template <typename T>
struct CacheLineAllocator {
    using value_type = T;
    CacheLineAllocator() = default;
    template <typename U>
    CacheLineAllocator(const CacheLineAllocator<U> &) {}
    T *allocate(size_t n) {
        size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
        void *p = aligned_alloc(64, bytes ? bytes : 64);
        if (!p) throw std::bad_alloc();
        return static_cast<T *>(p);
    }
    void deallocate(T *p, size_t) { free(p); }
    template <typename U>
    bool operator==(const CacheLineAllocator<U> &) const { return true; }
    template <typename U>
    bool operator!=(const CacheLineAllocator<U> &) const { return false; }
};

struct AppData {
    std::string name;
    const pm_sample_app *sample = nullptr;  /* NULL in --halide-only */
    const HalideAppEntry *halide = nullptr;
    HalideAppArgs args;                     /* params and shapes */
    std::vector<pm_type> out_types;
    std::vector<pm_buffer> inputs;          /* parent memory, copied on write by children */
    std::vector<std::vector<uint8_t, CacheLineAllocator<uint8_t>>> input_store;
    double tolerance = 1e-4;
};

/* Adams2019 prints its search progress and Halide its warnings; errors come back through
 * the channel anyway, so by default a child's stdout and stderr go to /dev/null. */
void quiet_child() {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
}

void time_runs(ChildChannel &ch, int runs, const std::function<bool()> &run_once) {
    ch.phase("run");
    /* Warm-up: page faults, thread pool start, caches; at least 3 runs and 20 ms. A
     * thread pool's new worker can start on its creator's core, and two spinning threads
     * on one core then wait a scheduler tick (4 ms) for each other until the load
     * balancer parts them: with one warm-up run, a fused Harris kernel of 0.09 ms at the
     * quick size took 8.0 ms in 4 of 6 first timed runs at 2 threads (strace: its two
     * threads' futex wakes 4 ms apart). */
    double w0 = bench_now_ms();
    for (int w = 0; w < 3 || (bench_now_ms() - w0 < 20 && w < 100); w++)
        if (!run_once()) return;
    for (int i = 0; i < runs; i++) {
        double t0 = bench_now_ms();
        if (!run_once()) return;
        ch.run_ms(bench_now_ms() - t0);
    }
}

/* The first compile of a process pays LLVM's one-time costs (its passes' and code
 * generator's first use, page faults in libLLVM): on Harris about 12 ms of 56. A server
 * pays them once, and Halide's timed compile_jit comes after its warm-up (halide_child),
 * so PolyMage-JIT's comes after a warm-up too: a 3x3 mean over a 64 x 64 image, compiled
 * on the same jit (another pipeline: nothing of it is cached for the app). Its time is
 * reported as warmup_compile_ms. */
static double warm_polymage(pm_jit *jit, int threads) {
    double t0 = bench_now_ms();
    pm_ctx *ctx = pm_ctx_new();
    if (!ctx) return -1;
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_expr *params[2] = {R, C};
    pm_func *in = pm_image_new(ctx, "in", PM_F32, 2, params);
    static const double ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const int dims[2] = {0, 1}, sizes[2] = {3, 3};
    pm_func *out = pm_stencil_func(in, "out", PM_F32, 1.0 / 9, 2, dims, sizes, ones);
    pm_pipeline *p = NULL;
    double ms = -1;
    if (pm_pipeline_new(ctx, "pm_bench_warm", 2, params, 1, &in, 1, &out, &p) == PM_OK) {
        pm_value vals[2] = {PM_I(64), PM_I(64)};
        pm_compile_options co = pm_compile_options_default();
        co.threads = threads;
        pm_error e;
        memset(&e, 0, sizeof e);
        if (pm_kernel *k = pm_jit_compile(jit, p, vals, &co, &e)) {
            ms = bench_now_ms() - t0;
            pm_kernel_free(k);
        }
    }
    pm_ctx_free(ctx);
    return ms;
}

void polymage_child(ChildChannel &ch, const AppData &d, const Variant &v, int threads, int runs,
                    pm_buffer *outs) {
    ch.phase("build");
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = ctx ? d.sample->build(ctx) : nullptr;
    if (!p) {
        ch.fail(std::string("build: ") + (ctx ? pm_ctx_errmsg(ctx) : "out of memory"));
        return;
    }
    pm_error e;
    memset(&e, 0, sizeof e);
    pm_jit_options jo = pm_jit_options_default();
    jo.threads = threads;
    pm_jit *jit = pm_jit_new(&jo, &e);
    if (!jit) {
        ch.fail(std::string("pm_jit_new: ") + e.message);
        return;
    }
    pm_compile_options co = pm_compile_options_default();
    co.threads = threads;
    if (v.options) v.options(&co);
    ch.phase("compile");
    ch.value("warmup_compile_ms", warm_polymage(jit, threads));
    double t0 = bench_now_ms();
    /* The run sizes are the estimates: both sides are tuned for the size they run. */
    pm_kernel *k = pm_jit_compile(jit, p, d.args.params.data(), &co, &e);
    if (!k) {
        ch.fail(std::string("pm_jit_compile: ") + pm_status_name(e.status) + ": " + e.message);
        return;
    }
    ch.value("compile_ms", bench_now_ms() - t0);
    pm_compile_stats st;
    if (pm_kernel_compile_stats(k, &st, sizeof st) == PM_OK) {
        const double parts[] = {st.isl_schedule_ms, st.isl_ast_ms, st.ir_build_ms,
                                st.llvm_opt_ms, st.machine_code_ms, st.link_ms, st.other_ms,
                                (double)st.ir_instructions_before, (double)st.ir_instructions_after,
                                st.llvm_wall_ms, (double)st.compile_parts};
        static_assert(sizeof parts / sizeof parts[0] == 11, "kCompileParts has 11 names");
        for (int i = 0; i < kNumCompileParts; i++) ch.value(kCompileParts[i], parts[i]);
    }
    time_runs(ch, runs, [&]() {
        pm_status s = pm_kernel_run(k, d.args.params.data(), d.inputs.data(), outs, &e);
        if (s != PM_OK) ch.fail(std::string("pm_kernel_run: ") + pm_status_name(s) + ": " + e.message);
        return s == PM_OK;
    });
    /* No cleanup: the child exits right after and the OS frees everything faster. */
}

void interpreter_child(ChildChannel &ch, const AppData &d, pm_buffer *outs) {
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = ctx ? d.sample->build(ctx) : nullptr;
    if (!p) {
        ch.fail(std::string("build: ") + (ctx ? pm_ctx_errmsg(ctx) : "out of memory"));
        return;
    }
    ch.phase("interpret");
    double t0 = bench_now_ms();
    pm_status s = pm_interpret(p, d.args.params.data(), d.inputs.data(), outs);
    if (s != PM_OK) {
        ch.fail(std::string("pm_interpret: ") + pm_status_name(s) + ": " + pm_ctx_errmsg(ctx));
        return;
    }
    ch.value("interpret_ms", bench_now_ms() - t0);
}

/* Halide's target for this host: built from /proc/cpuinfo's flags by host_target.h's rule
 * (a feature only when every instruction set it lets LLVM use is there), never from
 * Halide's own detection, which decides Sapphire Rapids from AVX-512 BF16 + VNNI and so
 * let LLVM emit AVX512-FP16 on a Zen 5. Without a flags line: the x86-64 baseline. */
struct HostTarget {
    std::string flags;
    std::string target;
    bool have_flags = false;
};

const HostTarget &host_target() {
    static HostTarget h = [] {
        HostTarget t;
        static char flags[16384];
        char target[512];
        t.have_flags = pm_host_read_flags(flags, sizeof flags);
        if (!t.have_flags) flags[0] = '\0';
        pm_host_halide_target(flags, target, sizeof target);
        t.flags = flags;
        t.target = target;
        return t;
    }();
    return h;
}

Halide::Target bench_halide_target() { return Halide::Target(host_target().target); }

/* The check run before every bench (so in `make bench-quick` and CI): every x86 feature
 * the Halide target carries, with everything it implies, is granted by the host's flags.
 * Also notes what Halide's own host detection would have added. False with *why set. */
bool check_target_on_host(const Halide::Target &t, BenchReport *rep, std::string *why) {
    const HostTarget &h = host_target();
    if (!h.have_flags) {
        rep->notes.push_back("no flags line in /proc/cpuinfo: Halide runs on the x86-64 baseline");
        return true;
    }
    std::vector<std::string> tokens;
    std::string cur;
    for (char c : t.to_string() + "-") {
        if (c == '-') {
            if (!cur.empty()) tokens.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    char buf[160];
    bool ok = true;
    for (const std::string &tok : tokens)
        for (int i = 0; i < pm_host_halide_feature_count(); i++)
            if (tok == pm_host_halide_feature_name(i)) {
                const char *r = pm_host_halide_feature_refusal(h.flags.c_str(), tok.c_str(), buf, sizeof buf);
                if (r) {
                    *why += "target feature " + tok + " is not on this host (" + r + "); ";
                    ok = false;
                }
            }
    Halide::Target halide_host = Halide::get_host_target();
    std::string dropped;
    for (int i = 0; i < pm_host_halide_feature_count(); i++) {
        const char *name = pm_host_halide_feature_name(i);
        Halide::Target one("x86-64-linux-" + std::string(name));
        bool in_halide = false, in_ours = false;
        for (int f = 0; f < (int)Halide::Target::FeatureEnd; f++) {
            Halide::Target::Feature feat = (Halide::Target::Feature)f;
            if (!one.has_feature(feat)) continue;
            in_halide = halide_host.has_feature(feat);
            in_ours = t.has_feature(feat);
        }
        if (in_halide && !in_ours) {
            const char *r = pm_host_halide_feature_refusal(h.flags.c_str(), name, buf, sizeof buf);
            dropped += std::string(dropped.empty() ? "" : ", ") + name + " (" + (r ? r : "?") + ")";
        }
    }
    if (!dropped.empty())
        rep->notes.push_back("Halide's own host detection also had: " + dropped +
                             "; dropped, the CPU's flags lack an instruction set they imply");
    return ok;
}

void halide_child(ChildChannel &ch, const AppData &d, const Variant &v, int threads, int runs,
                  pm_buffer *outs) {
    /* Read once when Halide's JIT runtime starts its thread pool: this child's first
     * parallel run. Also bounds Adams2019's own search threads. */
    setenv("HL_NUM_THREADS", std::to_string(threads).c_str(), 1);
    ch.phase("build");
    HalideAppInstance inst;
    std::string err;
    if (!d.halide->build(d.args, &inst, &err)) {
        ch.fail(err);
        return;
    }
    halide_set_estimates(inst, d.args);
    Halide::Target target = bench_halide_target();
    int vec = target.natural_vector_size<float>();
    /* PM_BENCH_HALIDE_PROFILE=1 (with --verbose): Halide's per-Func profile of the runs,
     * printed when the child shuts the JIT runtime down. */
    bool profile = getenv("PM_BENCH_HALIDE_PROFILE") != nullptr;
    if (profile) target = target.with_feature(Halide::Target::Profile);
    Halide::Pipeline p(inst.outputs);

    ch.phase(v.autosched ? "autoschedule" : "schedule");
    double t0 = bench_now_ms();
    if (v.kind == HALIDE_HAND) {
        inst.schedule_hand(target, vec);
    } else {
        Halide::load_plugin(v.plugin);
        /* parallelism = the threads it will run with; cache size and balance are
         * Halide's generic values (only Mullapudi2016 reads them). */
        Halide::MachineParams mp(threads, 16 * 1024 * 1024, 40);
        Halide::AutoSchedulerResults res = p.auto_schedule(v.autosched, target, mp);
        /* PM_BENCH_PRINT_SCHEDULE=1 (with --verbose): the autoscheduler's choice as C++
         * schedule source, on stderr, to study when writing a hand schedule. */
        if (getenv("PM_BENCH_PRINT_SCHEDULE"))
            fprintf(stderr, "// %s, %s, %d thread(s)\n%s\n", d.name.c_str(), v.name, threads,
                    res.schedule_source.c_str());
    }
    ch.value("sched_ms", bench_now_ms() - t0);
    /* PM_BENCH_HALIDE_STMT=dir writes each Halide variant's lowered statement there
     * (<app>-<variant>.stmt): where every Func is computed and stored, what vectorized. */
    if (const char *dir = getenv("PM_BENCH_HALIDE_STMT")) {
        std::vector<Halide::Argument> args(inst.inputs.begin(), inst.inputs.end());
        p.compile_to_lowered_stmt(std::string(dir) + "/" + d.name + "-" + v.name + ".stmt", args,
                                  Halide::Text, target);
    }
    ch.phase("compile");
    /* Halide builds its JIT runtime on the first compile of a process; a server pays
     * that once. Warm it with a trivial pipeline so jit_ms is the app's own compile. */
    {
        Halide::Func warm("pm_bench_warm");
        Halide::Var x;
        warm(x) = x;
        warm.realize({8}, target);
    }
    double t1 = bench_now_ms();
    p.compile_jit(target);
    double now = bench_now_ms();
    ch.value("jit_ms", now - t1);
    ch.value("compile_ms", now - t0);

    for (size_t i = 0; i < inst.inputs.size(); i++) inst.inputs[i].set(halide_wrap(d.inputs[i]));
    std::vector<Halide::Buffer<>> obufs;
    for (size_t i = 0; i < inst.outputs.size(); i++) {
        Halide::Buffer<> b = halide_wrap(outs[i]);
        if (i < inst.out_regions.size())
            for (size_t k = 0; k < inst.out_regions[i].size(); k++)
                b.crop((int)k, (int)inst.out_regions[i][k].min, (int)inst.out_regions[i][k].extent);
        obufs.push_back(b);
    }
    Halide::Realization real(obufs);
    time_runs(ch, runs, [&]() {
        p.realize(real, target);
        return true;
    });
    if (profile) Halide::Internal::JITSharedRuntime::release_all();
}

/* ---------------------------------------------------------------------------------- */
/* Per app                                                                             */
/* ---------------------------------------------------------------------------------- */

/* Prepares params, shapes and input data from the PolyMage sample (or, in --halide-only,
 * from the Halide app's stand-alone description). False with a note when skipped. */
bool prepare_app(const Options &o, const std::string &name, AppData *d, BenchReport *rep) {
    d->name = name;
    d->halide = halide_app_find(name);
    int64_t rows, cols;
    if (o.halide_only) {
        if (!d->halide) {
            rep->notes.push_back(name + ": no Halide version; skipped");
            return false;
        }
        rows = o.rows ? o.rows : o.quick ? d->halide->quick_rows : 0;
        cols = o.cols ? o.cols : o.quick ? d->halide->quick_cols : 0;
        if (!rows) {
            const pm_sample_app *s = pm_sample_find(name.c_str());
            /* Paper sizes from the doc (apps.md) when the sample is not there. */
            static const std::map<std::string, std::pair<int64_t, int64_t>> paper = {
                {"unsharp_mask", {2048, 2048}}, {"bilateral_grid", {2560, 1536}},
                {"harris", {6400, 6400}},       {"camera_pipe", {1920, 2528}},
                {"pyramid_blend", {2048, 2048}}, {"interpolate", {2560, 1536}},
                {"local_laplacian", {2560, 1536}}};
            rows = s ? s->paper_rows : paper.at(name).first;
            cols = s ? s->paper_cols : paper.at(name).second;
        }
        d->halide->standalone(rows, cols, &d->args);
        /* The Halide build knows its buffer types; ask it through a throwaway build. */
        HalideAppInstance inst;
        std::string err;
        if (!d->halide->build(d->args, &inst, &err)) {
            rep->notes.push_back(name + ": " + err);
            return false;
        }
        auto pm_type_of = [](const Halide::Type &t) {
            if (t.is_float()) return t.bits() == 64 ? PM_F64 : PM_F32;
            if (t.bits() == 8) return t.is_int() ? PM_I8 : PM_U8;
            if (t.bits() == 16) return t.is_int() ? PM_I16 : PM_U16;
            return t.is_int() ? PM_I32 : PM_U32;
        };
        for (const Halide::Func &f : inst.outputs) d->out_types.push_back(pm_type_of(f.output_types()[0]));
        for (size_t i = 0; i < d->args.in_shapes.size(); i++) {
            pm_type t = pm_type_of(inst.inputs[i].type());
            std::vector<int64_t> &shape = d->args.in_shapes[i];
            pm_buffer b = pm_buffer_dense(nullptr, t, (int)shape.size(), shape.data());
            d->input_store.emplace_back(buffer_bytes(b), 0);
            b.data = d->input_store.back().data();
            /* Raw camera data is 10-bit, local laplacian's 16-bit, the rest in [0, 1]. */
            double hi = t == PM_I16 ? 1023 : t == PM_U16 ? 65535 : 1.0;
            halide_fill_test_data(b, 0, hi, (uint32_t)(i + 1));
            d->inputs.push_back(b);
        }
        d->tolerance = 1e-4;
    } else {
        d->sample = pm_sample_find(name.c_str());
        if (!d->sample) {
            rep->notes.push_back(name + ": not in the samples registry yet; skipped");
            return false;
        }
        rows = o.rows ? o.rows : o.quick ? d->sample->quick_rows : d->sample->paper_rows;
        cols = o.cols ? o.cols : o.quick ? d->sample->quick_cols : d->sample->paper_cols;
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = ctx ? d->sample->build(ctx) : nullptr;
        if (!p) {
            rep->notes.push_back(name + ": the sample does not build: " +
                                 (ctx ? pm_ctx_errmsg(ctx) : "out of memory"));
            pm_ctx_free(ctx);
            return false;
        }
        d->args.params.resize(pm_pipeline_nparams(p));
        d->sample->params(rows, cols, d->args.params.data());
        bool ok = true;
        for (int io = 0; io < 2 && ok; io++) {
            int n = io ? pm_pipeline_noutputs(p) : pm_pipeline_ninputs(p);
            for (int i = 0; i < n && ok; i++) {
                int nd = 0;
                int64_t ext[PM_MAX_DIMS];
                pm_status s = pm_pipeline_buffer_shape(p, io, i, d->args.params.data(), &nd, ext);
                if (s != PM_OK) {
                    rep->notes.push_back(name + ": buffer shape: " + pm_ctx_errmsg(ctx));
                    ok = false;
                    break;
                }
                std::vector<int64_t> shape(ext, ext + nd);
                pm_func *f = io ? pm_pipeline_output(p, i) : pm_pipeline_input(p, i);
                if (io) {
                    d->args.out_shapes.push_back(shape);
                    d->out_types.push_back(pm_func_type(f));
                } else {
                    d->args.in_shapes.push_back(shape);
                    pm_buffer b = pm_buffer_dense(nullptr, pm_func_type(f), nd, ext);
                    d->input_store.emplace_back(buffer_bytes(b), 0);
                    b.data = d->input_store.back().data();
                    d->inputs.push_back(b);
                }
            }
        }
        if (ok)
            for (size_t i = 0; i < d->inputs.size(); i++)
                d->sample->fill_input((int)i, &d->inputs[i], d->args.params.data());
        pm_ctx_free(ctx);
        if (!ok) return false;
        d->tolerance = d->sample->tolerance;
    }
    rep->sizes.push_back({name, std::to_string(rows) + "x" + std::to_string(cols)});
    return true;
}

std::string short_error(const ChildReport &r) {
    std::string e = r.error;
    if (r.outcome == ChildReport::FAILED) e = "error: " + e;
    return e;
}

/* The q-quantile (0..1) of the runs, linear between order statistics (q = 0.5 is the
 * median; 0.25 and 0.75 give the interquartile range). */
double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    double pos = q * (double)(v.size() - 1);
    size_t lo = (size_t)pos;
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (pos - (double)lo) * (v[hi] - v[lo]);
}

/* Bytes a pipeline cannot avoid moving: every input read once, every output written once. */
double app_bytes(const AppData &d) {
    double bytes = 0;
    for (const pm_buffer &b : d.inputs) bytes += (double)buffer_bytes(b);
    for (size_t i = 0; i < d.args.out_shapes.size(); i++) {
        double n = (double)pm_type_size(d.out_types[i]);
        for (int64_t e : d.args.out_shapes[i]) n *= (double)e;
        bytes += n;
    }
    return bytes;
}

/* Per app and thread count: PolyMage-JIT, halide-hand, the fastest autoscheduler and the
 * fastest Halide variant (halide-best), counting only rows that passed their check. */
void summarize(const std::string &app, int threads, BenchReport *rep) {
    BenchSummary s;
    s.app = app;
    s.threads = threads;
    for (const BenchRow &w : rep->rows) {
        if (w.app != app || w.threads != threads) continue;
        s.floor_ms = w.floor_ms;
        bool passed = w.ran && (w.check == "ok" || w.check == "ref");
        if (!passed) continue;
        if (w.variant == kVariants[0].name) s.pm_ms = w.median_ms;
        if (!w.halide) continue;
        if (s.best_ms == 0 || w.median_ms < s.best_ms) s.best_ms = w.median_ms, s.best_variant = w.variant;
        if (w.variant == "halide-hand") {
            s.hand_ms = w.median_ms;
        } else if (s.best_auto_ms == 0 || w.median_ms < s.best_auto_ms) {
            s.best_auto_ms = w.median_ms;
            s.best_auto_variant = w.variant;
        }
    }
    rep->summary.push_back(s);
}

void bench_app(const Options &o, AppData &d, BenchReport *rep) {
    SharedBuffers ref, work;
    std::vector<std::vector<int64_t>> &os = d.args.out_shapes;
    if (!ref.alloc(os, d.out_types) || !work.alloc(os, d.out_types)) {
        rep->notes.push_back(d.name + ": out of memory for the output buffers; skipped");
        return;
    }
    bool have_ref = false;
    std::string ref_name;
    if (o.quick && !o.halide_only) {
        ChildReport r = run_in_child(
            [&](ChildChannel &ch) {
                if (!o.verbose) quiet_child();
                interpreter_child(ch, d, ref.bufs.data());
            },
            o.timeout_s);
        if (r.outcome == ChildReport::OK) {
            have_ref = true;
            ref_name = "interpreter";
            char msg[128];
            snprintf(msg, sizeof msg, "%s: reference = interpreter (%.0f ms)", d.name.c_str(),
                     r.values["interpret_ms"]);
            rep->notes.push_back(msg);
        } else {
            rep->notes.push_back(d.name + ": interpreter failed (" + short_error(r) +
                                 "); the first successful variant is the reference");
        }
    }

    double bytes = app_bytes(d);
    if (o.rounds > 1)
        rep->notes.push_back(d.name + ": " + std::to_string(o.runs) + " runs in " +
                             std::to_string(o.rounds) + " rounds, pooled");
    for (int t : o.threads) {
        double pm_median = 0;
        double bw = 0;
        for (auto &b : rep->bandwidth)
            if (b.first == t) bw = b.second;
        /* One slot per selected variant: its median-compile report, its pooled runs, and
         * its check over every round. */
        struct Slot {
            const Variant *v;
            BenchRow row;
            ChildReport shown;                /* the failure, or the median compile */
            std::vector<ChildReport> reports; /* one per round that succeeded */
            std::vector<double> runs;
            bool failed = false;
            bool bad = false;
            double worst = 0;
        };
        std::vector<Slot> slots;
        for (const Variant &v : kVariants) {
            if (std::find(o.variants.begin(), o.variants.end(), v.flag) == o.variants.end()) continue;
            if (v.kind == PM_JIT && o.halide_only) continue;
            Slot s;
            s.v = &v;
            s.row.app = d.name;
            s.row.variant = v.name;
            s.row.threads = t;
            s.row.halide = v.kind != PM_JIT;
            s.row.must_pass = v.kind != HALIDE_AUTO;
            s.row.floor_ms = bw > 0 ? bytes / bw * 1e3 : 0;
            slots.push_back(s);
        }
        for (int round = 0; round < o.rounds; round++) {
            int runs = o.runs / o.rounds + (round < o.runs % o.rounds ? 1 : 0);
            for (Slot &s : slots) {
                if (s.failed) continue;
                const Variant &v = *s.v;
                bool is_pm = v.kind == PM_JIT;
                if (o.rounds > 1)
                    fprintf(stderr, "[pm_bench] %s / %s / %d thread%s, round %d of %d ...\n",
                            d.name.c_str(), v.name, t, t > 1 ? "s" : "", round + 1, o.rounds);
                else
                    fprintf(stderr, "[pm_bench] %s / %s / %d thread%s ...\n", d.name.c_str(),
                            v.name, t, t > 1 ? "s" : "");
                work.zero();
                ChildReport r = run_in_child(
                    [&](ChildChannel &ch) {
                        if (!o.verbose) quiet_child();
                        if (is_pm)
                            polymage_child(ch, d, v, t, runs, work.bufs.data());
                        else
                            halide_child(ch, d, v, t, runs, work.bufs.data());
                    },
                    o.timeout_s);
                if (r.outcome != ChildReport::OK || (int)r.runs.size() < runs) {
                    s.failed = true;
                    s.shown = r;
                    s.reports.clear();
                    if (r.outcome == ChildReport::OK) s.shown.outcome = ChildReport::FAILED;
                    s.row.status = r.outcome == ChildReport::OK ? "error: runs missing"
                                                                : short_error(r);
                    continue;
                }
                s.reports.push_back(r);
                s.runs.insert(s.runs.end(), r.runs.begin(), r.runs.end());
                if (!have_ref) {
                    ref.copy_from(work);
                    have_ref = true;
                    ref_name = v.name;
                    s.row.check = "ref";
                    rep->notes.push_back(d.name + ": reference = " + ref_name + " output (" +
                                         std::to_string(t) + " thread" + (t > 1 ? "s" : "") + ")");
                    continue;
                }
                for (size_t i = 0; i < work.bufs.size(); i++) {
                    double diff = max_abs_diff(work.bufs[i], ref.bufs[i]);
                    s.worst = std::max(s.worst, diff);
                    s.bad |= !(diff <= tolerance_for(d.name, d.out_types[i], d.tolerance));
                }
            }
        }
        for (Slot &s : slots) {
            BenchRow &row = s.row;
            if (!s.failed) { /* the round whose compile was the median (the lower one) */
                std::vector<std::pair<double, size_t>> by_compile;
                for (size_t i = 0; i < s.reports.size(); i++)
                    by_compile.push_back({s.reports[i].values["compile_ms"], i});
                std::sort(by_compile.begin(), by_compile.end());
                s.shown = s.reports[by_compile[(by_compile.size() - 1) / 2].second];
            }
            ChildReport &r = s.shown;
            row.sched_ms = r.values.count("sched_ms") ? r.values["sched_ms"] : 0;
            row.compile_ms = r.values.count("compile_ms") ? r.values["compile_ms"] : 0;
            row.jit_ms = r.values.count("jit_ms") ? r.values["jit_ms"] : 0;
            row.warmup_ms =
                r.values.count("warmup_compile_ms") ? r.values["warmup_compile_ms"] : 0;
            if (r.values.count(kCompileParts[0]))
                for (int i = 0; i < kNumCompileParts; i++)
                    row.compile_parts.push_back(r.values.count(kCompileParts[i])
                                                    ? r.values[kCompileParts[i]] : 0);
            if (s.failed) {
                row.check = "-";
                /* Ours and the hand schedule must work; autoschedulers may fail. */
                if (row.must_pass) {
                    rep->failures.push_back(d.name + " / " + s.v->name + " / " +
                                            std::to_string(t) + " thr: " + row.status);
                    row.status = "BENCH FAILURE: " + row.status;
                }
                rep->rows.push_back(row);
                continue;
            }
            row.ran = true;
            row.runs = (int)s.runs.size();
            row.median_ms = quantile(s.runs, 0.5);
            row.q1_ms = quantile(s.runs, 0.25);
            row.q3_ms = quantile(s.runs, 0.75);
            row.min_ms = *std::min_element(s.runs.begin(), s.runs.end());
            if (row.check == "ref" && !s.bad) { /* later rounds checked against its first */
                row.max_abs_diff = 0;
                row.status = "ok";
            } else {
                row.max_abs_diff = s.worst;
                row.check = s.bad ? "FAIL" : "ok";
                row.status = s.bad ? "FAIL" : "ok";
                /* Every variant that produced output must be right, autoschedulers too. */
                if (s.bad)
                    rep->failures.push_back(d.name + " / " + s.v->name + " / " +
                                            std::to_string(t) + " thr: output differs from " +
                                            ref_name + " by " + std::to_string(s.worst));
            }
            if (s.v == &kVariants[0]) pm_median = row.median_ms;
            if (row.halide && pm_median > 0) row.speedup = row.median_ms / pm_median;
            rep->rows.push_back(row);
        }
        summarize(d.name, t, rep);
    }

    /* --halide-only: the spot checks run on the reference (hand schedule) output. */
    if (o.halide_only && have_ref && d.halide->spot_check) {
        double e = d.halide->spot_check(d.args, d.inputs, ref.bufs);
        char msg[160];
        if (e < 0)
            snprintf(msg, sizeof msg, "%s: no spot check", d.name.c_str());
        else
            snprintf(msg, sizeof msg, "%s: spot check of %s vs direct formulas: max |diff| %.3g %s",
                     d.name.c_str(), ref_name.c_str(), e,
                     e <= std::max(1e-4, d.tolerance) ? "ok" : "FAIL");
        rep->notes.push_back(msg);
    }
}

/* The "model name" of /proc/cpuinfo, for the header only: nothing is decided from it. */
std::string cpu_model_name() {
    std::string name;
    if (FILE *f = fopen("/proc/cpuinfo", "r")) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10)) {
                const char *c = strchr(line, ':');
                name = c ? c + 1 : "";
                break;
            }
        fclose(f);
    }
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
    char lscpu[160];
    snprintf(lscpu, sizeof lscpu, "%s, %ld online cpus", name.c_str(), sysconf(_SC_NPROCESSORS_ONLN));
    return lscpu;
}

} // namespace

int main(int argc, char **argv) {
    Options o;
    if (!parse_options(argc, argv, &o)) return 2;
    BenchReport rep;
    rep.quick = o.quick;
    rep.host_cpu = cpu_model_name();
    Halide::Target target = bench_halide_target();
    rep.target = target.to_string();
    std::string why;
    if (!check_target_on_host(target, &rep, &why)) {
        fprintf(stderr, "pm_bench: Halide target %s does not fit this CPU: %s\n", rep.target.c_str(),
                why.c_str());
        return 1;
    }
    /* The bandwidth behind each app's floor, once per thread count, before any child. */
    for (int t : o.threads) {
        fprintf(stderr, "[pm_bench] memory bandwidth, %d thread%s ...\n", t, t > 1 ? "s" : "");
        rep.bandwidth.push_back({t, bench_triad_bandwidth(t, (size_t)256 << 20, 5)});
    }

    for (const std::string &name : o.apps) {
        AppData d;
        if (!halide_app_find(name)) {
            rep.notes.push_back(name + ": unknown app");
            continue;
        }
        if (!prepare_app(o, name, &d, &rep)) continue;
        bench_app(o, d, &rep);
    }

    report_print_table(rep);
    bool ok = report_write_json(rep, o.json);
    ok &= report_write_svg(rep, o.svg);
    if (ok) printf("wrote %s and %s\n", o.json.c_str(), o.svg.c_str());
    /* A wrong answer anywhere, or a failure of ours or of the hand schedule, fails the run;
     * autoschedulers that fail or time out are reported statuses. */
    if (!rep.failures.empty()) return 1;
    return ok ? 0 : 1;
}
