/* halide_lines.h — the three filters of samples/examples in idiomatic Halide 14, kept so
 * that docs/jit.md's Halide line counts can be rechecked (scripts/count_builder_lines.sh
 * counts from the ImageParam to the output's definition, the line before `return`), and
 * checked by pm_halide_lines (check.cpp) to compute exactly what the examples do.
 * Halide's x is the column, y the row, c the channel: the same memory as the examples'
 * [rows][cols] and [3][rows][cols] buffers. Written as Halide's own tutorials write it (a
 * boundary condition, one definition per stage, no schedule), at most 100 columns. */
#ifndef PM_HALIDE_LINES_H
#define PM_HALIDE_LINES_H

#include <Halide.h>

#include <vector>

struct HalideLines {
    Halide::ImageParam in;
    Halide::Func out;
    std::vector<Halide::Func> root; /* reductions, computed whole before the output */
};

HalideLines halide_blur_rgb();
HalideLines halide_sobel();
HalideLines halide_hist_eq();

#endif
