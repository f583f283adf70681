/* halide_app.cpp — the registry of the Halide apps and the helpers they share. */
#include "halide/halide_app.h"

#include <cmath>
#include <cstdio>

extern const HalideAppEntry halide_app_unsharp_mask;
extern const HalideAppEntry halide_app_bilateral_grid;
extern const HalideAppEntry halide_app_harris;
extern const HalideAppEntry halide_app_camera_pipe;
extern const HalideAppEntry halide_app_pyramid_blend;
extern const HalideAppEntry halide_app_interpolate;
extern const HalideAppEntry halide_app_local_laplacian;

const std::vector<HalideAppEntry> &halide_apps() {
    static const std::vector<HalideAppEntry> apps = {
        halide_app_unsharp_mask, halide_app_bilateral_grid, halide_app_harris,
        halide_app_camera_pipe,  halide_app_pyramid_blend,  halide_app_interpolate,
        halide_app_local_laplacian,
    };
    return apps;
}

const HalideAppEntry *halide_app_find(const std::string &name) {
    for (const HalideAppEntry &e : halide_apps())
        if (name == e.name) return &e;
    return nullptr;
}

static halide_type_t halide_type_of(pm_type t) {
    switch (t) {
    case PM_U8: return halide_type_t(halide_type_uint, 8);
    case PM_I8: return halide_type_t(halide_type_int, 8);
    case PM_U16: return halide_type_t(halide_type_uint, 16);
    case PM_I16: return halide_type_t(halide_type_int, 16);
    case PM_U32: return halide_type_t(halide_type_uint, 32);
    case PM_I32: return halide_type_t(halide_type_int, 32);
    case PM_I64: return halide_type_t(halide_type_int, 64);
    case PM_F32: return halide_type_t(halide_type_float, 32);
    case PM_F64: return halide_type_t(halide_type_float, 64);
    default: return halide_type_t(halide_type_uint, 1);
    }
}

Halide::Buffer<> halide_wrap(const pm_buffer &b) {
    std::vector<halide_dimension_t> dims(b.ndims);
    /* Dense row-major strides when the buffer gives none (stride 0 = dense). */
    int64_t dense = 1;
    for (int d = b.ndims - 1; d >= 0; d--) {
        int64_t stride = b.stride[d] ? b.stride[d] : dense;
        dense *= b.extent[d];
        halide_dimension_t &hd = dims[b.ndims - 1 - d];
        hd.min = 0;
        hd.extent = (int32_t)b.extent[d];
        hd.stride = (int32_t)stride;
        hd.flags = 0;
    }
    return Halide::Buffer<>(Halide::Type(halide_type_of(b.type)), b.data, b.ndims, dims.data());
}

bool halide_check_shapes(const char *app, const HalideAppArgs &args, int nin, int nout,
                         const std::vector<int> &in_dims, const std::vector<int> &out_dims,
                         std::string *err) {
    char msg[256];
    if ((int)args.in_shapes.size() != nin || (int)args.out_shapes.size() != nout) {
        snprintf(msg, sizeof msg, "%s (Halide): expected %d inputs and %d outputs, got %d and %d",
                 app, nin, nout, (int)args.in_shapes.size(), (int)args.out_shapes.size());
        *err = msg;
        return false;
    }
    for (int i = 0; i < nin; i++)
        if ((int)args.in_shapes[i].size() != in_dims[i]) {
            snprintf(msg, sizeof msg, "%s (Halide): input %d has %d dims, expected %d", app, i,
                     (int)args.in_shapes[i].size(), in_dims[i]);
            *err = msg;
            return false;
        }
    for (int i = 0; i < nout; i++)
        if ((int)args.out_shapes[i].size() != out_dims[i]) {
            snprintf(msg, sizeof msg, "%s (Halide): output %d has %d dims, expected %d", app, i,
                     (int)args.out_shapes[i].size(), out_dims[i]);
            *err = msg;
            return false;
        }
    return true;
}

void halide_set_estimates(HalideAppInstance &inst, const HalideAppArgs &args) {
    for (size_t i = 0; i < inst.inputs.size(); i++) {
        const std::vector<int64_t> &s = args.in_shapes[i];
        Halide::Region r;
        for (int d = (int)s.size() - 1; d >= 0; d--)
            r.push_back(Halide::Range(0, (int)s[d]));
        inst.inputs[i].set_estimates(r);
    }
    for (size_t i = 0; i < inst.outputs.size(); i++) {
        Halide::Region r;
        const std::vector<int64_t> &s = args.out_shapes[i];
        if (i < inst.out_regions.size() && !inst.out_regions[i].empty()) {
            for (const HalideSpan &sp : inst.out_regions[i])
                r.push_back(Halide::Range((int)sp.min, (int)sp.extent));
        } else {
            for (int d = (int)s.size() - 1; d >= 0; d--)
                r.push_back(Halide::Range(0, (int)s[d]));
        }
        inst.outputs[i].set_estimates(r);
    }
}

double pm_buffer_get(const pm_buffer &b, const std::vector<int64_t> &idx) {
    int64_t off = 0, dense = 1;
    for (int d = b.ndims - 1; d >= 0; d--) {
        int64_t stride = b.stride[d] ? b.stride[d] : dense;
        dense *= b.extent[d];
        off += idx[d] * stride;
    }
    switch (b.type) {
    case PM_U8: return ((const uint8_t *)b.data)[off];
    case PM_I8: return ((const int8_t *)b.data)[off];
    case PM_U16: return ((const uint16_t *)b.data)[off];
    case PM_I16: return ((const int16_t *)b.data)[off];
    case PM_U32: return ((const uint32_t *)b.data)[off];
    case PM_I32: return ((const int32_t *)b.data)[off];
    case PM_I64: return (double)((const int64_t *)b.data)[off];
    case PM_F32: return ((const float *)b.data)[off];
    case PM_F64: return ((const double *)b.data)[off];
    default: return 0;
    }
}

/* A small integer hash (the "lowbias32" mixer shape): enough to make noise that no
 * schedule can accidentally get right by symmetry. */
static uint32_t mix32(uint32_t v) {
    v ^= v >> 16;
    v *= 0x7feb352dU;
    v ^= v >> 15;
    v *= 0x846ca68bU;
    v ^= v >> 16;
    return v;
}

void halide_fill_test_data(pm_buffer &b, double lo, double hi, uint32_t seed) {
    int64_t n = 1;
    for (int d = 0; d < b.ndims; d++) n *= b.extent[d];
    int64_t cols = b.extent[b.ndims - 1];
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i / cols, c = i % cols;
        /* Smooth waves plus 20% noise: stencils see both edges and flat areas. */
        double smooth = 0.5 + 0.4 * std::sin(0.05 * (double)r + 0.3 * std::cos(0.031 * (double)c)) *
                                  std::cos(0.043 * (double)c);
        double noise = (mix32((uint32_t)i * 2654435761U + seed) & 0xffff) / 65535.0;
        double v = lo + (hi - lo) * (0.8 * smooth + 0.2 * noise);
        switch (b.type) {
        case PM_U8: ((uint8_t *)b.data)[i] = (uint8_t)v; break;
        case PM_I16: ((int16_t *)b.data)[i] = (int16_t)v; break;
        case PM_U16: ((uint16_t *)b.data)[i] = (uint16_t)v; break;
        case PM_I32: ((int32_t *)b.data)[i] = (int32_t)v; break;
        case PM_F32: ((float *)b.data)[i] = (float)v; break;
        case PM_F64: ((double *)b.data)[i] = v; break;
        default: break;
        }
    }
}
