/* signature.c — a pipeline's run-time interface, detached from its context, and the one
 * place where run-time arguments are judged (interpreter and kernels alike). */
#include "frontend/signature.h"
#include "frontend/window.h"
#include "frontend/alias.h"
#include "frontend/checked.h"
#include "frontend/ir.h"

#include <inttypes.h>
#include <stdarg.h>
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

/* Checked evaluation: false when any intermediate value overflows an int64. */
bool pm_bound_eval(const pm_bound *b, const pm_value *params, int64_t *out)
{
    int64_t x, y;
    switch (b->op) {
    case PM_BOUND_CONST: *out = b->value; return true;
    case PM_BOUND_PARAM: *out = params[b->value].i; return true;
    case PM_BOUND_NEG: return pm_bound_eval(b->a, params, &x) && pm_ck_neg(x, out);
    default: break;
    }
    if (!pm_bound_eval(b->a, params, &x) || !pm_bound_eval(b->b, params, &y))
        return false;
    switch (b->op) {
    case PM_BOUND_ADD: return pm_ck_add(x, y, out);
    case PM_BOUND_SUB: return pm_ck_sub(x, y, out);
    case PM_BOUND_MUL: return pm_ck_mul(x, y, out);
    case PM_BOUND_DIV: return pm_ck_floordiv(x, y, out);
    case PM_BOUND_MOD: return pm_ck_floormod(x, y, out);
    case PM_BOUND_MIN: *out = x < y ? x : y; return true;
    case PM_BOUND_MAX: *out = x > y ? x : y; return true;
    default: *out = 0; return true;
    }
}

bool pm_signature_dim_extent(const pm_signature_dim *d, const pm_value *params, int64_t *out)
{
    int64_t lb, ub;
    return pm_bound_eval(d->lb, params, &lb) && pm_bound_eval(d->ub, params, &ub) &&
           pm_ck_extent(lb, ub, d->step, out);
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
    for (int i = 0; s->window_full && i < s->noutputs; i++) {
        pm_signature_buffer *b = &s->window_full[i];
        for (int d = 0; d < b->ndims; d++) {
            bound_free(b->dims[d].lb);
            bound_free(b->dims[d].ub);
        }
    }
    free(s->window_full);
    for (int i = 0; s->domains && i < s->ndomains; i++) {
        pm_signature_domain *dm = &s->domains[i];
        free(dm->name);
        for (int d = 0; d < dm->ndims; d++) {
            bound_free(dm->dims[d].lb);
            bound_free(dm->dims[d].ub);
        }
    }
    free(s->domains);
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

/* How building a part of a signature ended: SIG_NOMEM still has to report running out of
 * memory, SIG_FAILED has its error recorded already (a bound that is no integer
 * expression of parameters and constants). */
typedef enum { SIG_OK, SIG_NOMEM, SIG_FAILED } sig_step;

/* Judges a dimension once both bounds are translated: a missing one is out of memory
 * unless the translation recorded why. */
static sig_step dim_step(pm_ctx *ctx, const pm_signature_dim *dim)
{
    if (dim->lb && dim->ub)
        return SIG_OK;
    return pm_ctx_recorded(ctx) == PM_OK ? SIG_NOMEM : SIG_FAILED;
}

/* The name, the counts and the parameters, copied so that the signature outlives the
 * context; allocates the buffer table signature_buffers fills. */
static sig_step signature_header(pm_signature *s, const pm_pipeline *p)
{
    s->name = dup_str(p->name);
    s->nparams = p->nparams;
    s->param_names = calloc((size_t)p->nparams + 1, sizeof(char *));
    s->param_types = calloc((size_t)p->nparams + 1, sizeof(pm_type));
    s->ninputs = p->ninputs;
    s->noutputs = p->noutputs;
    s->buffers = calloc((size_t)(p->ninputs + p->noutputs), sizeof(pm_signature_buffer));
    if (!s->name || !s->param_names || !s->param_types || !s->buffers)
        return SIG_NOMEM;
    for (int i = 0; i < p->nparams; i++) {
        s->param_names[i] = dup_str(p->params[i]->name);
        s->param_types[i] = p->params[i]->type;
        if (!s->param_names[i])
            return SIG_NOMEM;
    }
    return SIG_OK;
}

/* Dimension d of buffer i (inputs first): apart from its own rule for a window, an output
 * spans its domain's interval and an input image 0 .. extent - 1. */
static void buffer_dim(pm_pipeline *p, int i, int d, pm_signature_dim *dim)
{
    bool is_output = i >= p->ninputs;
    pm_func *f = is_output ? p->outputs[i - p->ninputs] : p->inputs[i];
    const pm_window *win = p->window;
    if (win) { /* the window's part of an output, the block of an input */
        int at = (is_output ? i - p->ninputs : i) * PM_MAX_DIMS + d;
        dim->lb = bound_from_expr(p, f->name, is_output ? win->out_lb[at] : win->in_lb[at]);
        dim->ub = bound_from_expr(p, f->name, is_output ? win->out_ub[at] : win->in_ub[at]);
        dim->step = 1;
    } else if (is_output) {
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
}

/* Every input and output buffer: name, type and the bounds of each dimension. */
static sig_step signature_buffers(pm_signature *s, pm_pipeline *p)
{
    for (int i = 0; i < p->ninputs + p->noutputs; i++) {
        bool is_output = i >= p->ninputs;
        pm_func *f = is_output ? p->outputs[i - p->ninputs] : p->inputs[i];
        pm_signature_buffer *b = &s->buffers[i];
        b->name = dup_str(f->name);
        b->type = f->type;
        b->is_output = is_output;
        b->ndims = f->ndims;
        if (!b->name)
            return SIG_NOMEM;
        for (int d = 0; d < f->ndims; d++) {
            buffer_dim(p, i, d, &b->dims[d]);
            sig_step st = dim_step(p->ctx, &b->dims[d]);
            if (st != SIG_OK)
                return st;
        }
    }
    return SIG_OK;
}

/* With a window, each output's whole image too: a window must lie inside it. */
static sig_step signature_window(pm_signature *s, pm_pipeline *p)
{
    s->window_dims = p->window->ndims;
    s->window_full = calloc((size_t)p->noutputs + 1, sizeof *s->window_full);
    if (!s->window_full)
        return SIG_NOMEM;
    for (int o = 0; o < p->noutputs; o++) {
        const pm_func *f = p->outputs[o];
        pm_signature_buffer *b = &s->window_full[o];
        b->ndims = f->ndims;
        for (int d = 0; d < f->ndims; d++) {
            b->dims[d].lb = bound_from_expr(p, f->name, f->intervals[d]->lb);
            b->dims[d].ub = bound_from_expr(p, f->name, f->intervals[d]->ub);
            b->dims[d].step = 1;
            sig_step st = dim_step(p->ctx, &b->dims[d]);
            if (st != SIG_OK)
                return st;
        }
    }
    return SIG_OK;
}

/* Every stage's variable domain, and a reduction's reduction domain. */
static sig_step signature_domains(pm_signature *s, pm_pipeline *p)
{
    s->domains = calloc((size_t)(2 * p->nstages + 1), sizeof *s->domains);
    if (!s->domains)
        return SIG_NOMEM;
    for (int i = 0; i < p->nstages; i++) {
        const pm_func *f = p->stages[i];
        for (int r = 0; r < 2; r++) {
            int n = r ? f->nrdims : f->ndims;
            pm_interval *const *ivs = r ? f->rintervals : f->intervals;
            if (r && (f->kind != PM_FUNC_REDUCTION || n == 0))
                continue;
            pm_signature_domain *dm = &s->domains[s->ndomains++];
            dm->name = dup_str(f->name);
            dm->is_reduction = r;
            dm->ndims = n;
            if (!dm->name)
                return SIG_NOMEM;
            for (int d = 0; d < n; d++) {
                dm->dims[d].lb = bound_from_expr(p, f->name, ivs[d]->lb);
                dm->dims[d].ub = bound_from_expr(p, f->name, ivs[d]->ub);
                dm->dims[d].step = ivs[d]->step;
                sig_step st = dim_step(p->ctx, &dm->dims[d]);
                if (st != SIG_OK)
                    return st;
            }
        }
    }
    return SIG_OK;
}

pm_signature *pm_signature_new(pm_pipeline *p)
{
    if (!p)
        return NULL;
    pm_signature *s = calloc(1, sizeof *s);
    sig_step st = s ? signature_header(s, p) : SIG_NOMEM;
    if (st == SIG_OK)
        st = signature_buffers(s, p);
    if (st == SIG_OK && p->window)
        st = signature_window(s, p);
    if (st == SIG_OK)
        st = signature_domains(s, p);
    if (st == SIG_OK)
        return s;
    pm_signature_free(s);
    if (st == SIG_NOMEM)
        pm_ctx_error(p->ctx, PM_ERR_NOMEM, "out of memory describing %s", p->name);
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

/* ---- messages --------------------------------------------------------------------- */

/* Appends text to a fixed buffer, truncating. */
typedef struct text {
    char *buf;
    size_t size, len;
} text;

static void text_add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(text *t, const char *fmt, ...)
{
    if (t->len + 1 >= t->size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->size - t->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len = t->len + (size_t)n < t->size ? t->len + (size_t)n : t->size - 1;
}

static void bound_print(text *t, const pm_signature *s, const pm_bound *b)
{
    static const char *ops[] = {[PM_BOUND_ADD] = " + ", [PM_BOUND_SUB] = " - ",
                                [PM_BOUND_MUL] = " * ", [PM_BOUND_DIV] = " / ",
                                [PM_BOUND_MOD] = " % "};
    switch (b->op) {
    case PM_BOUND_CONST: text_add(t, "%" PRId64, b->value); return;
    case PM_BOUND_PARAM: text_add(t, "%s", s->param_names[b->value]); return;
    case PM_BOUND_NEG: text_add(t, "-("); bound_print(t, s, b->a); text_add(t, ")"); return;
    case PM_BOUND_MIN: case PM_BOUND_MAX:
        text_add(t, b->op == PM_BOUND_MIN ? "min(" : "max(");
        bound_print(t, s, b->a);
        text_add(t, ", ");
        bound_print(t, s, b->b);
        text_add(t, ")");
        return;
    default:
        text_add(t, "(");
        bound_print(t, s, b->a);
        text_add(t, "%s", ops[b->op]);
        bound_print(t, s, b->b);
        text_add(t, ")");
        return;
    }
}

static void params_used(const pm_bound *b, bool *used)
{
    if (!b)
        return;
    if (b->op == PM_BOUND_PARAM)
        used[b->value] = true;
    params_used(b->a, used);
    params_used(b->b, used);
}

/* "s: parameter values R = 4294967296, C = 1 make the extent of <owner>'s dimension d
 * ([lb, ub] step k) overflow 64-bit integers" */
static pm_status extent_overflow(const pm_signature *s, const pm_value *params,
                                 const char *owner, int d, const pm_signature_dim *dim,
                                 char *msg, size_t msg_size)
{
    text t = {msg, msg_size, 0};
    bool used[256] = {false};
    params_used(dim->lb, used);
    params_used(dim->ub, used);
    int nused = 0;
    for (int i = 0; i < s->nparams && i < 256; i++)
        nused += used[i];
    text_add(&t, "%s: parameter value%s ", s->name, nused == 1 ? "" : "s");
    bool first = true;
    for (int i = 0; i < s->nparams && i < 256; i++) {
        if (!used[i])
            continue;
        text_add(&t, "%s%s = %" PRId64, first ? "" : ", ", s->param_names[i], params[i].i);
        first = false;
    }
    text_add(&t, " make the extent of %s in dimension %d ([", owner, d);
    bound_print(&t, s, dim->lb);
    text_add(&t, ", ");
    bound_print(&t, s, dim->ub);
    text_add(&t, "]");
    if (dim->step != 1)
        text_add(&t, " step %" PRId64, dim->step);
    text_add(&t, ") overflow 64-bit integers");
    return PM_ERR_ARGUMENT;
}

void pm_buffer_strides(const pm_buffer *b, int64_t *stride)
{
    /* Dense strides only matter when the buffer is not empty, and then the signature
     * check has bounded the element count; wrap-around (never UB) otherwise. */
    uint64_t dense = 1;
    for (int d = b->ndims - 1; d >= 0; d--) {
        stride[d] = b->stride[d] ? b->stride[d] : (int64_t)dense;
        dense *= (uint64_t)b->extent[d];
    }
}

static const pm_buffer *buffer_at(const pm_signature *s, const pm_buffer *inputs,
                                  const pm_buffer *outputs, int i)
{
    return s->buffers[i].is_output ? &outputs[i - s->ninputs] : &inputs[i];
}

static const char *role_of(const pm_signature_buffer *sb)
{
    return sb->is_output ? "output" : "input";
}

/* The extents buffer i must have at these parameter values, into want; an image whose
 * extent would be negative, or a bound that overflows, is an error. */
static pm_status expected_extents(const pm_signature *s, const pm_value *params,
                                  const pm_signature_buffer *sb, int64_t *want, char *msg,
                                  size_t msg_size)
{
    for (int d = 0; d < sb->ndims; d++) {
        int64_t ub;
        if (!pm_signature_dim_extent(&sb->dims[d], params, &want[d]) ||
            !pm_bound_eval(sb->dims[d].ub, params, &ub))
            return extent_overflow(s, params, sb->name, d, &sb->dims[d], msg, msg_size);
        /* images: extent = ub + 1 (lb is 0), and it must not be negative */
        if (!sb->is_output && ub < -1) {
            snprintf(msg, msg_size,
                     "%s: image %s would have extent %" PRId64 " in dimension %d for these "
                     "parameter values", s->name, sb->name, ub + 1, d);
            return PM_ERR_ARGUMENT;
        }
    }
    return PM_OK;
}

/* A buffer whose extent differs in dimension d: the message names the rule users trip on
 * there, an interval's inclusive upper bound (an output, indexed from its domain's lower
 * bound) or an image's extents. */
static pm_status extent_mismatch(const pm_signature *s, const pm_value *params,
                                 const pm_signature_buffer *sb, const pm_buffer *b, int d,
                                 const int64_t *want, const char *expected, char *msg,
                                 size_t msg_size)
{
    char got[256];
    describe_shape(got, sizeof got, sb, b->extent);
    text t = {msg, msg_size, 0};
    text_add(&t, "%s: %s buffer %s is %s; expected %s", s->name, role_of(sb), sb->name, got,
             expected);
    int64_t lb = 0, ub = 0;
    pm_bound_eval(sb->dims[d].lb, params, &lb);
    pm_bound_eval(sb->dims[d].ub, params, &ub);
    if (sb->is_output)
        text_add(&t, " (dimension %d of %s is the interval [%" PRId64 ", %" PRId64 "]%s "
                 "at these parameter values: %" PRId64 " point%s, as an interval's upper "
                 "bound is inclusive; the buffer's index 0 is the lower bound %" PRId64
                 ")", d, sb->name, lb, ub, sb->dims[d].step > 1 ? " (stepped)" : "",
                 want[d], want[d] == 1 ? "" : "s", lb);
    else
        text_add(&t, " (dimension %d of image %s has extent %" PRId64 " at these "
                 "parameter values, covering 0 .. %" PRId64 ": an image takes its "
                 "extents, the number of points, not an inclusive upper bound)", d,
                 sb->name, want[d], ub);
    return PM_ERR_ARGUMENT;
}

/* A non-empty buffer's strides: its byte span fits the address space, and no two
 * elements of an output share an address. */
static pm_status check_strides(const pm_signature *s, const pm_signature_buffer *sb,
                               const pm_buffer *b, const char *expected, char *msg,
                               size_t msg_size)
{
    int64_t stride[PM_MAX_DIMS], lo, hi;
    pm_buffer_strides(b, stride);
    if (!pm_alias_span(b, stride, &lo, &hi)) {
        text t = {msg, msg_size, 0};
        text_add(&t, "%s: %s buffer %s: its strides {", s->name, role_of(sb), sb->name);
        for (int d = 0; d < b->ndims; d++)
            text_add(&t, "%s%" PRId64, d ? ", " : "", stride[d]);
        text_add(&t, "} over %s reach beyond the address space", expected);
        return PM_ERR_ARGUMENT;
    }
    if (sb->is_output) {
        pm_alias a = pm_alias_self(b, stride);
        if (a != PM_ALIAS_NO) {
            text t = {msg, msg_size, 0};
            text_add(&t, "%s: output buffer %s: its strides {", s->name, sb->name);
            for (int d = 0; d < b->ndims; d++)
                text_add(&t, "%s%" PRId64, d ? ", " : "", stride[d]);
            text_add(&t, "} %s two of its elements at the same address",
                     a == PM_ALIAS_YES ? "put" : "may put");
            return PM_ERR_ARGUMENT;
        }
    }
    return PM_OK;
}

/* One buffer: type, ndims, extents, data, and a byte span that fits. */
static pm_status check_buffer(const pm_signature *s, const pm_value *params, int i,
                              const pm_buffer *b, char *msg, size_t msg_size)
{
    const pm_signature_buffer *sb = &s->buffers[i];
    const char *role = role_of(sb);
    int64_t want[PM_MAX_DIMS];
    pm_status st = expected_extents(s, params, sb, want, msg, msg_size);
    if (st != PM_OK)
        return st;
    char expected[256];
    describe_shape(expected, sizeof expected, sb, want);
    if (b->type != sb->type || b->ndims != sb->ndims) {
        snprintf(msg, msg_size, "%s: %s buffer %s has type %s with %d dimension%s; expected %s",
                 s->name, role, sb->name, pm_type_name(b->type), b->ndims,
                 b->ndims == 1 ? "" : "s", expected);
        return PM_ERR_ARGUMENT;
    }
    for (int d = 0; d < sb->ndims; d++)
        if (b->extent[d] != want[d])
            return extent_mismatch(s, params, sb, b, d, want, expected, msg, msg_size);
    int64_t count, bytes;
    if (!pm_ck_count(sb->ndims, want, &count) ||
        !pm_ck_mul(count, (int64_t)pm_type_size(sb->type), &bytes)) {
        snprintf(msg, msg_size, "%s: %s buffer %s (%s) would hold more than 2^63 bytes",
                 s->name, role, sb->name, expected);
        return PM_ERR_ARGUMENT;
    }
    if (count > 0 && !b->data) {
        snprintf(msg, msg_size, "%s: %s buffer %s has no data (expected %s)", s->name, role,
                 sb->name, expected);
        return PM_ERR_ARGUMENT;
    }
    if (count == 0)
        return PM_OK;
    return check_strides(s, sb, b, expected, msg, msg_size);
}

static int64_t buffer_count(const pm_buffer *b)
{
    int64_t count;
    return pm_ck_count(b->ndims, b->extent, &count) ? count : 0;
}

/* The parameter values: present, and each fits its type. */
static pm_status check_params(const pm_signature *s, const pm_value *params, char *msg,
                              size_t msg_size)
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
    return PM_OK;
}

/* Every stage's domain: bounds and extents must fit an int64 (the interpreter and the
 * compiled code compute with them). */
static pm_status check_domains(const pm_signature *s, const pm_value *params, char *msg,
                               size_t msg_size)
{
    for (int i = 0; i < s->ndomains; i++) {
        const pm_signature_domain *dm = &s->domains[i];
        for (int d = 0; d < dm->ndims; d++) {
            int64_t extent;
            if (!pm_signature_dim_extent(&dm->dims[d], params, &extent)) {
                char owner[300];
                snprintf(owner, sizeof owner, "%s%s", dm->name,
                         dm->is_reduction ? "'s reduction domain" : "");
                return extent_overflow(s, params, owner, d, &dm->dims[d], msg, msg_size);
            }
        }
    }
    return PM_OK;
}

/* A window lies inside every output of the whole image. */
static pm_status check_window(const pm_signature *s, const pm_value *params, char *msg,
                              size_t msg_size)
{
    for (int d = 0; d < s->window_dims; d++) {
        int at = s->nparams - 2 * s->window_dims + 2 * d;
        int64_t lo = params[at].i, n = params[at + 1].i;
        for (int o = 0; o < s->noutputs; o++) {
            int64_t extent;
            if (!pm_signature_dim_extent(&s->window_full[o].dims[d], params, &extent))
                return extent_overflow(s, params, s->buffers[s->ninputs + o].name, d,
                                       &s->window_full[o].dims[d], msg, msg_size);
            if (lo < 0 || n < 1 || n > extent || lo > extent - n) {
                snprintf(msg, msg_size, "%s: the window at offset %" PRId64 " of %" PRId64
                         " points along dimension %d is not inside output %s (%" PRId64
                         " points)", s->name, lo, n, d, s->buffers[s->ninputs + o].name,
                         extent);
                return PM_ERR_ARGUMENT;
            }
        }
    }
    return PM_OK;
}

/* An output that shares memory with an input or another output would make the result
 * depend on the order of evaluation. Disjoint byte ranges answer at once. */
static pm_status check_overlaps(const pm_signature *s, const pm_buffer *inputs,
                                const pm_buffer *outputs, char *msg, size_t msg_size)
{
    int nbuf = s->ninputs + s->noutputs;
    for (int i = s->ninputs; i < nbuf; i++) {
        const pm_buffer *bi = buffer_at(s, inputs, outputs, i);
        if (buffer_count(bi) == 0)
            continue;
        int64_t si[PM_MAX_DIMS];
        pm_buffer_strides(bi, si);
        for (int j = 0; j < i; j++) {
            const pm_buffer *bj = buffer_at(s, inputs, outputs, j);
            if (buffer_count(bj) == 0)
                continue;
            int64_t sj[PM_MAX_DIMS];
            pm_buffer_strides(bj, sj);
            pm_alias a = pm_alias_overlap(bi, si, bj, sj);
            if (a != PM_ALIAS_NO) {
                snprintf(msg, msg_size, "%s: output buffer %s %s %s buffer %s", s->name,
                         s->buffers[i].name,
                         a == PM_ALIAS_YES ? "overlaps" : "may overlap (too many strides to decide)",
                         role_of(&s->buffers[j]), s->buffers[j].name);
                return PM_ERR_ARGUMENT;
            }
        }
    }
    return PM_OK;
}

pm_status pm_signature_check(const pm_signature *s, const pm_value *params,
                             const pm_buffer *inputs, const pm_buffer *outputs,
                             char *msg, size_t msg_size)
{
    pm_status st = check_params(s, params, msg, msg_size);
    if (st == PM_OK)
        st = check_domains(s, params, msg, msg_size);
    if (st == PM_OK)
        st = check_window(s, params, msg, msg_size);
    if (st != PM_OK)
        return st;
    if ((s->ninputs > 0 && !inputs) || (s->noutputs > 0 && !outputs)) {
        snprintf(msg, msg_size, "%s: the %s buffer list is NULL", s->name,
                 s->ninputs > 0 && !inputs ? "input" : "output");
        return PM_ERR_ARGUMENT;
    }
    for (int i = 0; i < s->ninputs + s->noutputs; i++) {
        st = check_buffer(s, params, i, buffer_at(s, inputs, outputs, i), msg, msg_size);
        if (st != PM_OK)
            return st;
    }
    return check_overlaps(s, inputs, outputs, msg, msg_size);
}
