/* signature.c — a pipeline's run-time interface, detached from its context, and the one
 * place where run-time arguments are judged (interpreter and kernels alike). */
#include "frontend/signature.h"
#include "frontend/ir.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void bound_free(pm_bound *b)
{
    if (!b)
        return;
    bound_free(b->a);
    bound_free(b->b);
    free(b);
}

static pm_bound *bound_node(pm_bound_op op, int64_t value, pm_bound *a, pm_bound *b)
{
    pm_bound *n = calloc(1, sizeof *n);
    if (!n) {
        bound_free(a);
        bound_free(b);
        return NULL;
    }
    n->op = op;
    n->value = value;
    n->a = a;
    n->b = b;
    return n;
}

/* Translates an integer expression of parameters and constants; NULL (with an error in
 * the context) for anything else. */
static pm_bound *bound_from_expr(pm_pipeline *p, const char *owner, const pm_expr *e)
{
    pm_ctx *ctx = p->ctx;
    switch (e->kind) {
    case PM_EXPR_INT:
        return bound_node(PM_BOUND_CONST, e->ival, NULL, NULL);
    case PM_EXPR_PARAM:
        if (!pm_type_is_int(e->type) || p->param_slot[e->id] < 0)
            break;
        return bound_node(PM_BOUND_PARAM, p->param_slot[e->id], NULL, NULL);
    case PM_EXPR_CAST:
        if (pm_type_is_int(e->type) && pm_type_is_int(e->a->type))
            return bound_from_expr(p, owner, e->a);
        break;
    case PM_EXPR_UNARY:
        if (e->op == PM_OP_NEG) {
            pm_bound *a = bound_from_expr(p, owner, e->a);
            return a ? bound_node(PM_BOUND_NEG, 0, a, NULL) : NULL;
        }
        break;
    case PM_EXPR_BINARY: {
        pm_bound_op op;
        switch (e->op) {
        case PM_OP_ADD: op = PM_BOUND_ADD; break;
        case PM_OP_SUB: op = PM_BOUND_SUB; break;
        case PM_OP_MUL: op = PM_BOUND_MUL; break;
        case PM_OP_DIV: op = PM_BOUND_DIV; break;
        case PM_OP_MOD: op = PM_BOUND_MOD; break;
        case PM_OP_MIN: op = PM_BOUND_MIN; break;
        case PM_OP_MAX: op = PM_BOUND_MAX; break;
        default: goto unsupported;
        }
        pm_bound *a = bound_from_expr(p, owner, e->a);
        if (!a)
            return NULL;
        pm_bound *b = bound_from_expr(p, owner, e->b);
        if (!b) {
            bound_free(a);
            return NULL;
        }
        return bound_node(op, 0, a, b);
    }
    default:
        break;
    }
unsupported:
    pm_ctx_error(ctx, PM_ERR_INVALID,
                 "%s: bound %s is not an integer expression of parameters and constants",
                 owner, pm_expr_to_cstr(ctx, e));
    return NULL;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

int64_t pm_bound_eval(const pm_bound *b, const pm_value *params)
{
    switch (b->op) {
    case PM_BOUND_CONST: return b->value;
    case PM_BOUND_PARAM: return params[b->value].i;
    case PM_BOUND_NEG: return -pm_bound_eval(b->a, params);
    default: break;
    }
    int64_t x = pm_bound_eval(b->a, params), y = pm_bound_eval(b->b, params);
    switch (b->op) {
    case PM_BOUND_ADD: return x + y;
    case PM_BOUND_SUB: return x - y;
    case PM_BOUND_MUL: return x * y;
    case PM_BOUND_DIV: return floor_div(x, y);
    case PM_BOUND_MOD: return y == 0 ? 0 : x - floor_div(x, y) * y;
    case PM_BOUND_MIN: return x < y ? x : y;
    case PM_BOUND_MAX: return x > y ? x : y;
    default: return 0;
    }
}

int64_t pm_signature_dim_extent(const pm_signature_dim *d, const pm_value *params)
{
    int64_t lb = pm_bound_eval(d->lb, params), ub = pm_bound_eval(d->ub, params);
    return ub < lb ? 0 : (ub - lb) / d->step + 1;
}

void pm_signature_free(pm_signature *s)
{
    if (!s)
        return;
    free(s->name);
    for (int i = 0; i < s->nparams; i++)
        free(s->param_names[i]);
    free(s->param_names);
    free(s->param_types);
    for (int i = 0; s->buffers && i < s->ninputs + s->noutputs; i++) {
        pm_signature_buffer *b = &s->buffers[i];
        free(b->name);
        for (int d = 0; d < b->ndims; d++) {
            bound_free(b->dims[d].lb);
            bound_free(b->dims[d].ub);
        }
    }
    free(s->buffers);
    free(s);
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c)
        memcpy(c, s, n);
    return c;
}

pm_signature *pm_signature_new(pm_pipeline *p)
{
    if (!p)
        return NULL;
    pm_ctx *ctx = p->ctx;
    pm_signature *s = calloc(1, sizeof *s);
    if (!s)
        goto nomem;
    s->name = dup_str(p->name);
    s->nparams = p->nparams;
    s->param_names = calloc((size_t)p->nparams + 1, sizeof(char *));
    s->param_types = calloc((size_t)p->nparams + 1, sizeof(pm_type));
    s->ninputs = p->ninputs;
    s->noutputs = p->noutputs;
    s->buffers = calloc((size_t)(p->ninputs + p->noutputs), sizeof(pm_signature_buffer));
    if (!s->name || !s->param_names || !s->param_types || !s->buffers)
        goto nomem;
    for (int i = 0; i < p->nparams; i++) {
        s->param_names[i] = dup_str(p->params[i]->name);
        s->param_types[i] = p->params[i]->type;
        if (!s->param_names[i])
            goto nomem;
    }
    for (int i = 0; i < p->ninputs + p->noutputs; i++) {
        bool is_output = i >= p->ninputs;
        pm_func *f = is_output ? p->outputs[i - p->ninputs] : p->inputs[i];
        pm_signature_buffer *b = &s->buffers[i];
        b->name = dup_str(f->name);
        b->type = f->type;
        b->is_output = is_output;
        b->ndims = f->ndims;
        if (!b->name)
            goto nomem;
        for (int d = 0; d < f->ndims; d++) {
            pm_signature_dim *dim = &b->dims[d];
            if (is_output) {
                dim->lb = bound_from_expr(p, f->name, f->intervals[d]->lb);
                dim->ub = bound_from_expr(p, f->name, f->intervals[d]->ub);
                dim->step = f->intervals[d]->step;
            } else {
                dim->lb = bound_node(PM_BOUND_CONST, 0, NULL, NULL);
                pm_bound *extent = bound_from_expr(p, f->name, f->extents[d]);
                pm_bound *one = bound_node(PM_BOUND_CONST, 1, NULL, NULL);
                dim->ub = extent && one ? bound_node(PM_BOUND_SUB, 0, extent, one) : NULL;
                if (!dim->ub) {
                    bound_free(extent);
                    bound_free(one);
                }
                dim->step = 1;
            }
            if (!dim->lb || !dim->ub) {
                if (pm_ctx_status(ctx) == PM_OK)
                    goto nomem;
                pm_signature_free(s);
                return NULL;
            }
        }
    }
    return s;
nomem:
    pm_signature_free(s);
    pm_ctx_error(ctx, PM_ERR_NOMEM, "out of memory describing %s", p->name);
    return NULL;
}

static bool param_fits(pm_type t, pm_value v)
{
    switch (t) {
    case PM_U8: return v.i >= 0 && v.i <= UINT8_MAX;
    case PM_I8: return v.i >= INT8_MIN && v.i <= INT8_MAX;
    case PM_U16: return v.i >= 0 && v.i <= UINT16_MAX;
    case PM_I16: return v.i >= INT16_MIN && v.i <= INT16_MAX;
    case PM_U32: return v.i >= 0 && v.i <= UINT32_MAX;
    case PM_I32: return v.i >= INT32_MIN && v.i <= INT32_MAX;
    default: return true;
    }
}

static void describe_shape(char *out, size_t size, const pm_signature_buffer *b,
                           const int64_t *extents)
{
    int n = snprintf(out, size, "%s[", pm_type_name(b->type));
    for (int d = 0; d < b->ndims && n > 0 && (size_t)n < size; d++)
        n += snprintf(out + n, size - (size_t)n, "%s%" PRId64, d ? "][" : "", extents[d]);
    if (n > 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, "]");
}

/* Byte range [lo, hi) the buffer's elements span (strides may be negative). */
static void byte_span(const pm_buffer *buf, const int64_t *stride, int64_t *lo, int64_t *hi)
{
    int64_t first = 0, last = 0;
    for (int d = 0; d < buf->ndims; d++) {
        int64_t reach = (buf->extent[d] - 1) * stride[d];
        if (reach < 0)
            first += reach;
        else
            last += reach;
    }
    int64_t esize = (int64_t)pm_type_size(buf->type);
    *lo = (int64_t)(intptr_t)buf->data + first * esize;
    *hi = (int64_t)(intptr_t)buf->data + (last + 1) * esize;
}

void pm_buffer_strides(const pm_buffer *b, int64_t *stride)
{
    int64_t dense = 1;
    for (int d = b->ndims - 1; d >= 0; d--) {
        stride[d] = b->stride[d] ? b->stride[d] : dense;
        dense *= b->extent[d];
    }
}

pm_status pm_signature_check(const pm_signature *s, const pm_value *params,
                             const pm_buffer *inputs, const pm_buffer *outputs,
                             char *msg, size_t msg_size)
{
    if (s->nparams > 0 && !params) {
        snprintf(msg, msg_size, "%s: parameter values are NULL (%d expected)", s->name,
                 s->nparams);
        return PM_ERR_ARGUMENT;
    }
    for (int i = 0; i < s->nparams; i++) {
        if (!pm_type_is_float(s->param_types[i]) && !param_fits(s->param_types[i], params[i])) {
            snprintf(msg, msg_size, "%s: parameter %s = %" PRId64 " does not fit its type %s",
                     s->name, s->param_names[i], params[i].i, pm_type_name(s->param_types[i]));
            return PM_ERR_ARGUMENT;
        }
    }
    if ((s->ninputs > 0 && !inputs) || (s->noutputs > 0 && !outputs)) {
        snprintf(msg, msg_size, "%s: the %s buffer list is NULL", s->name,
                 s->ninputs > 0 && !inputs ? "input" : "output");
        return PM_ERR_ARGUMENT;
    }
    int64_t spans[2 * 64];
    int nbuf = s->ninputs + s->noutputs;
    for (int i = 0; i < nbuf; i++) {
        const pm_signature_buffer *sb = &s->buffers[i];
        const pm_buffer *b = sb->is_output ? &outputs[i - s->ninputs] : &inputs[i];
        const char *role = sb->is_output ? "output" : "input";
        int64_t want[PM_MAX_DIMS];
        for (int d = 0; d < sb->ndims; d++) {
            want[d] = pm_signature_dim_extent(&sb->dims[d], params);
            if (!sb->is_output && want[d] < 0) {
                snprintf(msg, msg_size,
                         "%s: image %s would have extent %" PRId64 " in dimension %d for these "
                         "parameter values", s->name, sb->name, want[d], d + 1);
                return PM_ERR_ARGUMENT;
            }
            if (!sb->is_output) {
                /* images: extent = ub + 1 (lb is 0); negative extents reach here as 0 */
                int64_t ub = pm_bound_eval(sb->dims[d].ub, params);
                if (ub + 1 < 0) {
                    snprintf(msg, msg_size,
                             "%s: image %s would have extent %" PRId64 " in dimension %d for "
                             "these parameter values", s->name, sb->name, ub + 1, d + 1);
                    return PM_ERR_ARGUMENT;
                }
            }
        }
        char expected[256];
        describe_shape(expected, sizeof expected, sb, want);
        if (b->type != sb->type || b->ndims != sb->ndims) {
            snprintf(msg, msg_size, "%s: %s buffer %s has type %s with %d dimension%s; expected %s",
                     s->name, role, sb->name, pm_type_name(b->type), b->ndims,
                     b->ndims == 1 ? "" : "s", expected);
            return PM_ERR_ARGUMENT;
        }
        int64_t count = 1;
        for (int d = 0; d < sb->ndims; d++) {
            if (b->extent[d] != want[d]) {
                char got[256];
                describe_shape(got, sizeof got, sb, b->extent);
                snprintf(msg, msg_size, "%s: %s buffer %s is %s; expected %s", s->name, role,
                         sb->name, got, expected);
                return PM_ERR_ARGUMENT;
            }
            count *= want[d];
        }
        if (count > 0 && !b->data) {
            snprintf(msg, msg_size, "%s: %s buffer %s has no data (expected %s)", s->name, role,
                     sb->name, expected);
            return PM_ERR_ARGUMENT;
        }
        int64_t stride[PM_MAX_DIMS];
        pm_buffer_strides(b, stride);
        if (i < 64) {
            if (count > 0)
                byte_span(b, stride, &spans[2 * i], &spans[2 * i + 1]);
            else
                spans[2 * i] = spans[2 * i + 1] = 0;
        }
    }
    /* An output that shares memory with an input or another output would make the
     * result depend on the order of evaluation. */
    for (int i = s->ninputs; i < nbuf && i < 64; i++) {
        for (int j = 0; j < i && j < 64; j++) {
            if (spans[2 * i] < spans[2 * j + 1] && spans[2 * j] < spans[2 * i + 1]) {
                snprintf(msg, msg_size, "%s: output buffer %s overlaps %s buffer %s", s->name,
                         s->buffers[i].name, s->buffers[j].is_output ? "output" : "input",
                         s->buffers[j].name);
                return PM_ERR_ARGUMENT;
            }
        }
    }
    return PM_OK;
}
