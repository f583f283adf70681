/* interpolate.cpp — placeholder until the Halide version is written. */
#include "halide/halide_app.h"

static bool build_stub(const HalideAppArgs &, HalideAppInstance *, std::string *err) {
    *err = "interpolate (Halide): not written yet";
    return false;
}
static void standalone_stub(int64_t, int64_t, HalideAppArgs *) {}

extern const HalideAppEntry halide_app_interpolate = {"interpolate", build_stub, standalone_stub, nullptr, 256, 256};
