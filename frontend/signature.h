/* signature.h — a pipeline's run-time interface, detached from its context.
 *
 * Promise: pm_signature_new copies everything needed to check run-time arguments into
 * one malloc'd object that outlives the pipeline's context. So compiled kernels check
 * their arguments without keeping the pipeline. pm_signature_check is the one place where
 * parameter values and buffers are judged, for the interpreter and for kernels alike.
 */
#ifndef PM_FRONTEND_SIGNATURE_H
#define PM_FRONTEND_SIGNATURE_H

#include "polymage.h"

#include <stdbool.h>

/* An integer expression of the parameters (bounds are quasi-affine: R/2 - 2 is common),
 * detached from the context: a small tree of constants, parameters (by signature slot)
 * and + - * floor-/ floor-% min max. */
typedef enum pm_bound_op {
    PM_BOUND_CONST, PM_BOUND_PARAM, PM_BOUND_ADD, PM_BOUND_SUB, PM_BOUND_MUL,
    PM_BOUND_DIV, PM_BOUND_MOD, PM_BOUND_MIN, PM_BOUND_MAX, PM_BOUND_NEG
} pm_bound_op;

typedef struct pm_bound {
    pm_bound_op op;
    int64_t value;             /* PM_BOUND_CONST; PM_BOUND_PARAM: slot */
    struct pm_bound *a, *b;
} pm_bound;

typedef struct pm_signature_dim {
    pm_bound *lb, *ub; /* inclusive bounds of coordinates (images: 0 and extent-1) */
    int64_t step;
} pm_signature_dim;

typedef struct pm_signature_buffer {
    char *name;
    pm_type type;
    bool is_output;
    int ndims;
    pm_signature_dim dims[PM_MAX_DIMS];
} pm_signature_buffer;

/* Every stage's domain (and a reduction's reduction domain), kept so that parameter
 * values whose derived extents overflow an int64 are rejected before anything runs. */
typedef struct pm_signature_domain {
    char *name;                /* the function                                         */
    bool is_reduction;         /* the reduction domain rather than the variable domain */
    int ndims;
    pm_signature_dim dims[PM_MAX_DIMS];
} pm_signature_domain;

typedef struct pm_signature {
    char *name;
    int nparams;
    char **param_names;
    pm_type *param_types;
    int ninputs, noutputs;
    pm_signature_buffer *buffers; /* inputs, then outputs */
    int ndomains;
    pm_signature_domain *domains; /* every stage of the pipeline */
    /* A window form (frontend/window.h): the window's dimensions (its parameters are the
     * last 2 * window_dims, lo and n per dimension), and each output's whole index range
     * in the base pipeline, which every window must lie in. 0 and NULL otherwise. */
    int window_dims;
    pm_signature_buffer *window_full; /* noutputs entries */
} pm_signature;

/* The parameter types, and every input and output buffer's element type and extents as
 * affine functions of the parameters. NULL on failure (out of memory, or a bound that is
 * not affine: validation rejects those first), with the reason in the pipeline's
 * context. Free with pm_signature_free. */
pm_signature *pm_signature_new(pm_pipeline *p);
void pm_signature_free(pm_signature *s);

/* The bound's value into *out (integer parameters read .i; floor division, and division
 * by zero gives 0), computed with frontend/checked.h: false when it overflows an int64. */
bool pm_bound_eval(const pm_bound *b, const pm_value *params, int64_t *out);
/* Number of points of a dimension at these parameter values (0 if empty); false when a
 * bound or the count overflows an int64 (pm_signature_check rejects such values first). */
bool pm_signature_dim_extent(const pm_signature_dim *d, const pm_value *params, int64_t *out);

/* Checks parameter values (integer values fit their type; every bound of every buffer and
 * stage domain, and every extent, fits an int64; no image extent is negative) and every
 * buffer (non-NULL data unless empty, type, ndims, extents, strides whose byte span fits
 * the address space, outputs whose elements do not alias each other and share no element
 * with an input or another output: frontend/alias.h). On failure returns PM_ERR_ARGUMENT
 * and writes a message naming the buffer or parameter and the expected shape into msg. */
pm_status pm_signature_check(const pm_signature *s, const pm_value *params,
                             const pm_buffer *inputs, const pm_buffer *outputs,
                             char *msg, size_t msg_size);

/* Strides in elements with 0 replaced by the dense row-major stride. */
void pm_buffer_strides(const pm_buffer *b, int64_t *stride);

#endif
