/* report.cpp — text table, JSON and SVG chart of a bench run. */
#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

static std::string fmt(const char *f, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, f, v);
    return buf;
}

static double geomean(const std::vector<double> &v) {
    double s = 0;
    for (double x : v) s += std::log(x);
    return v.empty() ? 0 : std::exp(s / (double)v.size());
}

const char *const kCompileParts[] = {"isl_schedule_ms", "isl_ast_ms", "ir_build_ms",
                                     "llvm_opt_ms", "machine_code_ms", "link_ms", "other_ms",
                                     "ir_instructions_before", "ir_instructions_after",
                                     "llvm_wall_ms", "compile_parts"};
const int kNumCompileParts = (int)(sizeof kCompileParts / sizeof kCompileParts[0]);

/* Where PolyMage-JIT's compile time went, one line per row that has it. */
static void print_compile_parts(const BenchReport &r) {
    bool any = false;
    for (const BenchRow &w : r.rows) any = any || !w.compile_parts.empty() || w.jit_ms > 0;
    if (!any) return;
    printf("\nCompile time by phase (ms; IR instructions before -> after LLVM's "
           "passes; with the module in parts compiled at once, passes and machine are\n"
           "the parts' sums and llvm the wall time of both; each side's compile is its "
           "process's second, as a server's: warm-up = PolyMage-JIT's first, a 3x3 mean):\n");
    printf("%-16s %-21s %3s %10s %9s %9s %7s %9s %9s %9s %5s %6s %6s %17s %8s\n", "app",
           "variant", "thr", "compile", "isl sched", "isl ast", "ir", "passes", "machine", "llvm",
           "parts", "link", "other", "IR before->after", "warm-up");
    for (const BenchRow &w : r.rows) {
        if (w.jit_ms > 0) /* Halide: its compile_jit with the runtime warm, no schedule */
            printf("%-16s %-21s %3d %10.1f  (compile_jit alone, JIT runtime built before)\n",
                   w.app.c_str(), w.variant.c_str(), w.threads, w.jit_ms);
        if ((int)w.compile_parts.size() != kNumCompileParts) continue;
        const std::vector<double> &c = w.compile_parts;
        printf("%-16s %-21s %3d %10.1f %9.1f %9.1f %7.1f %9.1f %9.1f %9.1f %5.0f %6.1f %6.1f "
               "%8.0f->%-8.0f %8.1f\n",
               w.app.c_str(), w.variant.c_str(), w.threads, w.compile_ms, c[0], c[1], c[2], c[3],
               c[4], c[9], c[10], c[5], c[6], c[7], c[8], w.warmup_ms);
    }
}

void report_print_table(const BenchReport &r) {
    printf("\nPolyMage-JIT vs Halide 14%s\n", r.quick ? "  --quick" : "");
    if (!r.host_cpu.empty()) printf("  cpu: %s\n", r.host_cpu.c_str());
    printf("  Halide target: %s\n", r.target.c_str());
    for (auto &b : r.bandwidth)
        printf("  memory bandwidth (triad, 3 x 256 MiB arrays), %d thread%s: %.1f GB/s\n", b.first,
               b.first > 1 ? "s" : "", b.second * 1e-9);
    for (auto &s : r.sizes) printf("  %s: %s\n", s.first.c_str(), s.second.c_str());
    printf("%-16s %-21s %3s %9s %10s %10s %8s %9s %8s %9s %6s %7s  %s\n", "app", "variant", "thr",
           "sched ms", "compile ms", "median ms", "IQR ms", "min ms", "x floor", "max|diff|",
           "check", "PM x", "status");
    std::string last_app;
    for (const BenchRow &w : r.rows) {
        if (w.app != last_app && !last_app.empty()) printf("\n");
        last_app = w.app;
        std::string sched = w.sched_ms > 0 ? fmt("%.1f", w.sched_ms) : "-";
        std::string comp = w.compile_ms > 0 ? fmt("%.1f", w.compile_ms) : "-";
        std::string med = w.ran ? fmt("%.3f", w.median_ms) : "-";
        std::string iqr = w.ran ? fmt("%.3f", w.q3_ms - w.q1_ms) : "-";
        std::string mn = w.ran ? fmt("%.3f", w.min_ms) : "-";
        std::string xf = w.ran && w.floor_ms > 0 ? fmt("%.1f", w.median_ms / w.floor_ms) : "-";
        std::string diff = w.max_abs_diff >= 0 ? fmt("%.2g", w.max_abs_diff) : "-";
        std::string su = w.speedup > 0 ? fmt("%.2fx", w.speedup) : "-";
        printf("%-16s %-21s %3d %9s %10s %10s %8s %9s %8s %9s %6s %7s  %s\n", w.app.c_str(),
               w.variant.c_str(), w.threads, sched.c_str(), comp.c_str(), med.c_str(), iqr.c_str(),
               mn.c_str(), xf.c_str(), diff.c_str(), w.check.c_str(), su.c_str(),
               w.status.c_str());
    }
    printf("\nPM x = Halide median / PolyMage-JIT median at the same thread count "
           "(> 1: PolyMage-JIT is faster); x floor = median / the app's memory floor.\n");
    print_compile_parts(r);

    if (!r.summary.empty()) {
        printf("\nSummary: halide-best = the fastest Halide variant that passed its check; "
               "floor = (inputs read once + outputs written once) / triad bandwidth.\n");
        printf("%-16s %3s %9s %10s %8s %-21s %10s %8s %7s %10s %10s\n", "app", "thr", "floor ms",
               "PM ms", "x floor", "halide-best", "best ms", "x floor", "PM x", "hand ms",
               "hand/auto");
        std::map<int, std::vector<double>> ratios;
        for (const BenchSummary &s : r.summary) {
            std::string fl = s.floor_ms > 0 ? fmt("%.3f", s.floor_ms) : "-";
            std::string pm = s.pm_ms > 0 ? fmt("%.3f", s.pm_ms) : "-";
            std::string pmf = s.pm_ms > 0 && s.floor_ms > 0 ? fmt("%.1f", s.pm_ms / s.floor_ms) : "-";
            std::string best = s.best_ms > 0 ? fmt("%.3f", s.best_ms) : "-";
            std::string bf = s.best_ms > 0 && s.floor_ms > 0 ? fmt("%.1f", s.best_ms / s.floor_ms) : "-";
            std::string px = s.best_ms > 0 && s.pm_ms > 0 ? fmt("%.2fx", s.best_ms / s.pm_ms) : "-";
            std::string hand = s.hand_ms > 0 ? fmt("%.3f", s.hand_ms) : "-";
            std::string ha = s.hand_ms > 0 && s.best_auto_ms > 0
                                 ? fmt("%.2fx", s.hand_ms / s.best_auto_ms) : "-";
            if (s.best_ms > 0 && s.pm_ms > 0) ratios[s.threads].push_back(s.best_ms / s.pm_ms);
            printf("%-16s %3d %9s %10s %8s %-21s %10s %8s %7s %10s %10s\n", s.app.c_str(), s.threads,
                   fl.c_str(), pm.c_str(), pmf.c_str(),
                   s.best_variant.empty() ? "-" : s.best_variant.c_str(), best.c_str(), bf.c_str(),
                   px.c_str(), hand.c_str(), ha.c_str());
        }
        for (auto &kv : ratios)
            printf("geomean PM x vs halide-best, %d thread%s: %.2fx over %zu apps\n", kv.first,
                   kv.first > 1 ? "s" : "", geomean(kv.second), kv.second.size());
        printf("hand/auto = halide-hand median / the fastest autoscheduler variant that passed.\n");
    }
    for (const std::string &n : r.notes) printf("note: %s\n", n.c_str());
    for (const std::string &f : r.failures) printf("BENCH FAILURE: %s\n", f.c_str());
}

static std::string json_str(const std::string &s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            o += '\\';
            o += c;
        } else if ((unsigned char)c < 0x20) {
            char buf[8];
            snprintf(buf, sizeof buf, "\\u%04x", c);
            o += buf;
        } else {
            o += c;
        }
    }
    return o + "\"";
}

/* JSON has no infinity or NaN: write null for them. */
static std::string json_num(double v) {
    if (!std::isfinite(v)) return "null";
    return fmt("%.6g", v);
}

/* ', "compile_parts": {...}' for a row that has them, else "". */
static std::string compile_parts_json(const BenchRow &w) {
    if (w.jit_ms > 0) return ", \"jit_ms\": " + json_num(w.jit_ms);
    if ((int)w.compile_parts.size() != kNumCompileParts) return "";
    std::string s = ", \"warmup_compile_ms\": " + json_num(w.warmup_ms) + ", \"compile_parts\": {";
    for (int i = 0; i < kNumCompileParts; i++)
        s += std::string(i ? ", " : "") + json_str(kCompileParts[i]) + ": " +
             json_num(w.compile_parts[i]);
    return s + "}";
}


bool report_write_json(const BenchReport &r, const std::string &path) {
    FILE *f = fopen(path.c_str(), "w");
    if (!f) {
        perror(path.c_str());
        return false;
    }
    fprintf(f, "{\n  \"target\": %s,\n  \"cpu\": %s,\n  \"quick\": %s,\n  \"bandwidth_gbs\": {",
            json_str(r.target).c_str(), json_str(r.host_cpu).c_str(), r.quick ? "true" : "false");
    for (size_t i = 0; i < r.bandwidth.size(); i++)
        fprintf(f, "%s\"%d\": %s", i ? ", " : "", r.bandwidth[i].first,
                json_num(r.bandwidth[i].second * 1e-9).c_str());
    fprintf(f, "},\n  \"failures\": [");
    for (size_t i = 0; i < r.failures.size(); i++)
        fprintf(f, "%s%s", i ? ", " : "", json_str(r.failures[i]).c_str());
    fprintf(f, "],\n  \"summary\": [");
    for (size_t i = 0; i < r.summary.size(); i++) {
        const BenchSummary &s = r.summary[i];
        auto opt = [](double v) { return v > 0 ? json_num(v) : std::string("null"); };
        fprintf(f,
                "%s\n    {\"app\": %s, \"threads\": %d, \"floor_ms\": %s, \"polymage_ms\": %s, "
                "\"halide_best\": %s, \"halide_best_ms\": %s, \"halide_hand_ms\": %s, "
                "\"best_auto\": %s, \"best_auto_ms\": %s}",
                i ? "," : "", json_str(s.app).c_str(), s.threads, opt(s.floor_ms).c_str(),
                opt(s.pm_ms).c_str(), json_str(s.best_variant).c_str(), opt(s.best_ms).c_str(),
                opt(s.hand_ms).c_str(), json_str(s.best_auto_variant).c_str(),
                opt(s.best_auto_ms).c_str());
    }
    fprintf(f, "\n  ],\n  \"sizes\": {");
    for (size_t i = 0; i < r.sizes.size(); i++)
        fprintf(f, "%s%s: %s", i ? ", " : "", json_str(r.sizes[i].first).c_str(),
                json_str(r.sizes[i].second).c_str());
    fprintf(f, "},\n  \"notes\": [");
    for (size_t i = 0; i < r.notes.size(); i++)
        fprintf(f, "%s\n    %s", i ? "," : "", json_str(r.notes[i]).c_str());
    fprintf(f, "\n  ],\n  \"results\": [");
    for (size_t i = 0; i < r.rows.size(); i++) {
        const BenchRow &w = r.rows[i];
        fprintf(f,
                "%s\n    {\"app\": %s, \"variant\": %s, \"threads\": %d, \"status\": %s, "
                "\"ran\": %s, \"sched_ms\": %s, \"compile_ms\": %s, \"median_ms\": %s, "
                "\"min_ms\": %s, \"q1_ms\": %s, \"q3_ms\": %s, \"floor_ms\": %s, \"runs\": %d, "
                "\"check\": %s, \"max_abs_diff\": %s, \"pm_speedup\": %s%s}",
                i ? "," : "", json_str(w.app).c_str(), json_str(w.variant).c_str(), w.threads,
                json_str(w.status).c_str(), w.ran ? "true" : "false", json_num(w.sched_ms).c_str(),
                json_num(w.compile_ms).c_str(), w.ran ? json_num(w.median_ms).c_str() : "null",
                w.ran ? json_num(w.min_ms).c_str() : "null",
                w.ran ? json_num(w.q1_ms).c_str() : "null", w.ran ? json_num(w.q3_ms).c_str() : "null",
                w.floor_ms > 0 ? json_num(w.floor_ms).c_str() : "null", w.runs,
                json_str(w.check).c_str(),
                w.max_abs_diff >= 0 ? json_num(w.max_abs_diff).c_str() : "null",
                w.speedup > 0 ? json_num(w.speedup).c_str() : "null",
                compile_parts_json(w).c_str());
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f) == 0;
}

/* A grouped bar chart: one group per (app, threads), one bar per Halide variant, the bar
 * height the speed-up of PolyMage-JIT over it on a log2 axis around 1x (up: PolyMage-JIT
 * faster, down: slower). Variants that did not run get a grey "n/a" mark. */
bool report_write_svg(const BenchReport &r, const std::string &path) {
    std::vector<std::string> variants;
    std::vector<std::pair<std::string, int>> groups;
    std::map<std::pair<std::pair<std::string, int>, std::string>, const BenchRow *> cell;
    for (const BenchRow &w : r.rows) {
        if (!w.halide) continue;
        if (std::find(variants.begin(), variants.end(), w.variant) == variants.end())
            variants.push_back(w.variant);
        auto g = std::make_pair(w.app, w.threads);
        if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
        cell[{g, w.variant}] = &w;
    }
    const char *colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2"};
    double lo = -3, hi = 3; /* log2 range: 1/8x .. 8x, widened to fit the data */
    for (const BenchRow &w : r.rows)
        if (w.speedup > 0) {
            lo = std::min(lo, std::floor(std::log2(w.speedup)));
            hi = std::max(hi, std::ceil(std::log2(w.speedup)));
        }
    const int bar = 14, gap = 18, left = 60, top = 40, plot_h = 300;
    int gw = (int)variants.size() * bar + gap;
    int width = std::max(left + std::max(1, (int)groups.size()) * gw + 20,
                         left + (int)variants.size() * 150 + 20);
    int height = top + plot_h + 110;
    auto ypos = [&](double l2) { return top + plot_h * (hi - l2) / (hi - lo); };

    FILE *f = fopen(path.c_str(), "w");
    if (!f) {
        perror(path.c_str());
        return false;
    }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n", width, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%d\" y=\"20\" font-size=\"14\">Speed-up of PolyMage-JIT over Halide 14%s "
               "(median time ratio, log scale)</text>\n", left, r.quick ? " (--quick sizes)" : "");
    for (int e = (int)lo; e <= (int)hi; e++) {
        double y = ypos(e);
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", left,
                width - 20, y, y, e == 0 ? "black" : "#ddd");
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%gx</text>\n", left - 6, y + 4,
                std::pow(2.0, e));
    }
    for (size_t g = 0; g < groups.size(); g++) {
        int x0 = left + (int)g * gw + gap / 2;
        for (size_t v = 0; v < variants.size(); v++) {
            auto it = cell.find({groups[g], variants[v]});
            int x = x0 + (int)v * bar;
            if (it != cell.end() && it->second->speedup > 0) {
                double y1 = ypos(0), y2 = ypos(std::log2(it->second->speedup));
                fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\">"
                           "<title>%s, %s, %d threads: %.2fx</title></rect>\n",
                        x, std::min(y1, y2), bar - 2, std::max(1.0, std::fabs(y2 - y1)),
                        colors[v % 6], groups[g].first.c_str(), variants[v].c_str(),
                        groups[g].second, it->second->speedup);
            } else if (it != cell.end()) {
                fprintf(f, "<text x=\"%d\" y=\"%.1f\" fill=\"#999\" font-size=\"8\" "
                           "transform=\"rotate(-90 %d %.1f)\">n/a</text>\n",
                        x + 9, ypos(0) - 4, x + 9, ypos(0) - 4);
            }
        }
        int cx = x0 + (int)variants.size() * bar / 2;
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" transform=\"rotate(-40 %d %d)\">"
                   "%s %dT</text>\n", cx, top + plot_h + 14, cx, top + plot_h + 14,
                groups[g].first.c_str(), groups[g].second);
    }
    for (size_t v = 0; v < variants.size(); v++) {
        int x = left + (int)v * 150, y = height - 14;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                   "<text x=\"%d\" y=\"%d\">%s</text>\n", x, y - 9, colors[v % 6], x + 14, y,
                variants[v].c_str());
    }
    fprintf(f, "</svg>\n");
    return fclose(f) == 0;
}
