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
    double median_ms = 0, min_ms = 0;
    int runs = 0;
    std::string check;     /* "ok", "FAIL", "ref" (is the reference), "-" (none) */
    double max_abs_diff = -1;
    double speedup = 0;    /* Halide rows: this median / PolyMage-JIT median; 0 = n/a */
};

struct BenchReport {
    std::string target;    /* Halide's host target string */
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
