/* report.h — the results of a bench run and their three renderings: a text table on
 * stdout, JSON (for scripts and the docs) and an SVG bar chart of the speed-ups. */
#ifndef PM_BENCH_REPORT_H
#define PM_BENCH_REPORT_H

#include <string>
#include <vector>

struct BenchRow {
    std::string app;
    std::string variant;   /* polymage-jit, halide-hand, halide-mullapudi2016, ... */
    int threads = 0;
    std::string status;    /* "ok", "FAIL", or the failure ("timeout: ...", "error: ...") */
    bool ran = false;      /* compiled and timed */
    double sched_ms = 0;   /* autoschedule (Halide) or 0 */
    double compile_ms = 0; /* everything before the first run, schedule included */
    double jit_ms = 0;     /* Halide: compile_jit alone, its JIT runtime built already */
    double warmup_ms = 0;  /* PolyMage-JIT: the untimed warm-up compile before compile_ms */
    double median_ms = 0, min_ms = 0;
    double q1_ms = 0, q3_ms = 0; /* first and third quartiles: IQR = q3 - q1 */
    int runs = 0;
    double floor_ms = 0;   /* the app's memory floor at this thread count; 0 = unknown */
    bool halide = false;   /* a Halide variant (candidate for halide-best) */
    bool must_pass = false;/* halide-hand and PolyMage-JIT variants: not ok = bench failure */
    std::string check;     /* "ok", "FAIL", "ref" (is the reference), "-" (none) */
    double max_abs_diff = -1;
    double speedup = 0;    /* Halide rows: this median / PolyMage-JIT median; 0 = n/a */
    /* PolyMage-JIT rows: where compile_ms went (pm_compile_stats, in the order of
     * kCompileParts in report.cpp); empty for Halide rows */
    std::vector<double> compile_parts;
};
/* The pm_compile_stats fields pm_bench reports, by name (ms, then IR sizes). */
extern const char *const kCompileParts[];
extern const int kNumCompileParts;

/* Per app and thread count: PolyMage-JIT against the fastest Halide variant that passed. */
struct BenchSummary {
    std::string app;
    int threads = 0;
    double floor_ms = 0;
    double pm_ms = 0;            /* polymage-jit median; 0 = did not run */
    std::string best_variant;    /* "" = no Halide variant passed */
    double best_ms = 0;
    double hand_ms = 0;          /* halide-hand median; 0 = did not pass */
    std::string best_auto_variant;
    double best_auto_ms = 0;     /* fastest autoscheduler that passed; 0 = none */
};

struct BenchReport {
    std::string target;    /* Halide's target string (host_target.h's rule) */
    std::string host_cpu;  /* model name from /proc/cpuinfo, for the reader only */
    std::vector<std::pair<int, double>> bandwidth; /* threads -> triad bytes/s */
    std::vector<BenchSummary> summary;
    std::vector<std::string> failures; /* bench failures: non-zero exit */
    bool quick = false;
    std::vector<std::string> notes;  /* skipped apps, reference choices, ... */
    std::vector<std::pair<std::string, std::string>> sizes; /* app -> "RxC" */
    std::vector<BenchRow> rows;
};

void report_print_table(const BenchReport &r);
/* Both return false (with a message on stderr) when the file cannot be written. */
bool report_write_json(const BenchReport &r, const std::string &path);
bool report_write_svg(const BenchReport &r, const std::string &path);

#endif
