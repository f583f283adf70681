/* halide_app.h — the seven PolyMage benchmark apps written in Halide 14, for pm_bench.
 *
 * Each app is the algorithm of docs/apps.md (same stage math, constants,
 * types and boundaries) over the same memory as the PolyMage sample: the inputs and
 * outputs are the sample's row-major buffers, whose first index is outermost. Halide's
 * first dimension is the innermost one, so every Halide Func here is written f(y, x) or
 * f(y, x, c): Halide dimension 0 is the doc's y (columns), dimension 1 its x (rows).
 *
 * An app builds a fresh instance per variant (hand schedule or one autoscheduler), so
 * schedules never leak from one variant into another.
 */
#ifndef PM_BENCH_HALIDE_APP_H
#define PM_BENCH_HALIDE_APP_H

#include <Halide.h>

#include <functional>
#include <string>
#include <vector>

#include "polymage.h"

/* One interval of a Halide dimension: [min, min + extent). */
struct HalideSpan {
    int64_t min, extent;
};

/* What an app gets to build itself: the run's parameter values (in the PolyMage
 * pipeline's order) and the shapes of the buffers, in PolyMage order (outermost first). */
struct HalideAppArgs {
    std::vector<pm_value> params;
    std::vector<std::vector<int64_t>> in_shapes;
    std::vector<std::vector<int64_t>> out_shapes;
};

/* A built app. inputs/outputs are in the pipeline's order. out_regions[i] is the part of
 * output buffer i the pipeline computes, in Halide dimension order (empty = all of it):
 * Harris leaves a 2-pixel frame of its output untouched, like PolyMage. */
struct HalideAppInstance {
    std::vector<Halide::ImageParam> inputs;
    std::vector<Halide::Func> outputs;
    std::vector<std::vector<HalideSpan>> out_regions;
    /* Applies our hand-written CPU schedule; vec = f32 lanes of the target. */
    std::function<void(const Halide::Target &, int vec)> schedule_hand;
};

/* Builds an instance or returns false with *err set (never throws for bad shapes). */
typedef bool (*HalideBuildFn)(const HalideAppArgs &args, HalideAppInstance *out,
                              std::string *err);

/* A stand-alone description for the --halide-only self test (before the PolyMage
 * samples exist): the shapes and parameters the doc gives for a rows x cols picture,
 * deterministic test data, and an optional spot check of output values against direct
 * formulas (returns the max abs error over the points it checks, or -1 if none). */
struct HalideAppEntry {
    const char *name;
    HalideBuildFn build;
    void (*standalone)(int64_t rows, int64_t cols, HalideAppArgs *args);
    double (*spot_check)(const HalideAppArgs &args, const std::vector<pm_buffer> &in,
                         const std::vector<pm_buffer> &out);
    int64_t quick_rows, quick_cols;
};

/* All seven, in the paper's order. */
const std::vector<HalideAppEntry> &halide_apps();
const HalideAppEntry *halide_app_find(const std::string &name);

/* Helpers shared by the apps (halide_app.cpp). */

/* A Halide buffer over a PolyMage buffer's memory (not copied), dimensions reversed. */
Halide::Buffer<> halide_wrap(const pm_buffer &b);
/* Shape check: n dims, and returns false with a message naming the app otherwise. */
bool halide_check_shapes(const char *app, const HalideAppArgs &args, int nin, int nout,
                         const std::vector<int> &in_dims, const std::vector<int> &out_dims,
                         std::string *err);
/* Sets estimates on every input (its whole buffer) and output (its region). */
void halide_set_estimates(HalideAppInstance &inst, const HalideAppArgs &args);
/* Element (i0, i1, ...) of a dense PolyMage buffer as double (spot checks). */
double pm_buffer_get(const pm_buffer &b, const std::vector<int64_t> &idx);
/* Fills a buffer with deterministic smooth-plus-noise data in [lo, hi]. */
void halide_fill_test_data(pm_buffer &b, double lo, double hi, uint32_t seed);

#endif
