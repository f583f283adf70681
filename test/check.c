#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int check_passed, check_failed;

/* Tests call CHECK from several threads (the concurrency and soak tests): count
 * atomically, so the counts are exact and ThreadSanitizer has nothing to say. */
static void count(int *counter)
{
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

bool check_report(bool ok, const char *file, int line, const char *what)
{
    if (ok) {
        count(&check_passed);
    } else {
        count(&check_failed);
        fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what);
    }
    return ok;
}

bool check_contains(const char *haystack, const char *needle, const char *file, int line)
{
    bool ok = haystack && needle && strstr(haystack, needle) != NULL;
    if (!ok) {
        fprintf(stderr, "%s:%d: FAILED: message \"%s\" does not contain \"%s\"\n", file, line,
                haystack ? haystack : "(null)", needle ? needle : "(null)");
        count(&check_failed);
    } else {
        count(&check_passed);
    }
    return ok;
}

int check_finish(const char *suite)
{
    printf("%s: %d passed, %d failed\n", suite, check_passed, check_failed);
    return check_failed == 0 ? 0 : 1;
}

int64_t check_buffer_count(const pm_buffer *b)
{
    int64_t n = 1;
    for (int d = 0; d < b->ndims; d++)
        n *= b->extent[d];
    return n;
}

pm_buffer check_buffer_new(pm_type type, int ndims, const int64_t *extents)
{
    pm_buffer b = pm_buffer_dense(NULL, type, ndims, extents);
    size_t bytes = (size_t)check_buffer_count(&b) * pm_type_size(type);
    size_t rounded = (bytes + 63) / 64 * 64;
    b.data = aligned_alloc(64, rounded ? rounded : 64);
    memset(b.data, 0, rounded ? rounded : 64);
    return b;
}

void check_buffer_free(pm_buffer *b)
{
    free(b->data);
    b->data = NULL;
}

static uint32_t next_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

void check_fill(pm_buffer *b, unsigned seed, bool small_ints)
{
    uint32_t state = seed * 2654435761u + 1;
    int64_t n = check_buffer_count(b);
    for (int64_t i = 0; i < n; i++) {
        uint32_t r = next_random(&state);
        uint32_t r2 = next_random(&state);
        uint32_t bits = small_ints ? (r & 255) : (r ^ (r2 << 24));
        switch (b->type) {
        case PM_U8: ((uint8_t *)b->data)[i] = (uint8_t)bits; break;
        case PM_I8: ((int8_t *)b->data)[i] = (int8_t)bits; break;
        case PM_U16: ((uint16_t *)b->data)[i] = (uint16_t)bits; break;
        case PM_I16: ((int16_t *)b->data)[i] = (int16_t)bits; break;
        case PM_U32: ((uint32_t *)b->data)[i] = bits; break;
        case PM_I32: ((int32_t *)b->data)[i] = (int32_t)bits; break;
        case PM_I64: ((int64_t *)b->data)[i] = (int64_t)bits - (small_ints ? 0 : (1 << 23)); break;
        case PM_F32: ((float *)b->data)[i] = (float)(r & 0xffffff) / 16777216.0f; break;
        case PM_F64: ((double *)b->data)[i] = (double)(r & 0xffffff) / 16777216.0; break;
        default: break;
        }
    }
}

int64_t check_int_element(const pm_buffer *b, int64_t i)
{
    switch (b->type) {
    case PM_U8: return ((const uint8_t *)b->data)[i];
    case PM_I8: return ((const int8_t *)b->data)[i];
    case PM_U16: return ((const uint16_t *)b->data)[i];
    case PM_I16: return ((const int16_t *)b->data)[i];
    case PM_U32: return ((const uint32_t *)b->data)[i];
    case PM_I32: return ((const int32_t *)b->data)[i];
    case PM_I64: return ((const int64_t *)b->data)[i];
    default: return 0;
    }
}

static double element(const pm_buffer *b, int64_t i)
{
    switch (b->type) {
    case PM_F32: return ((const float *)b->data)[i];
    case PM_F64: return ((const double *)b->data)[i];
    case PM_BOOL: return NAN;
    default: return (double)check_int_element(b, i);
    }
}

double check_buffer_maxdiff(const pm_buffer *a, const pm_buffer *b)
{
    if (a->type != b->type || a->ndims != b->ndims)
        return INFINITY;
    for (int d = 0; d < a->ndims; d++)
        if (a->extent[d] != b->extent[d])
            return INFINITY;
    double worst = 0;
    int64_t n = check_buffer_count(a);
    for (int64_t i = 0; i < n; i++) {
        double x = element(a, i), y = element(b, i);
        double diff = (isnan(x) || isnan(y)) ? (isnan(x) && isnan(y) ? 0 : INFINITY) : fabs(x - y);
        if (diff > worst)
            worst = diff;
    }
    return worst;
}

pm_pipeline *check_blur_pipeline(pm_ctx *ctx)
{
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_F32, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 1), pm_addi(R, -2), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_func *blur = pm_func_new(ctx, "blur", PM_F32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_func_define_expr(blur, pm_mulf(pm_add(pm_add(pm_call(I, pm_addi(x, -1), y), pm_call(I, x, y)),
                                             pm_call(I, pm_addi(x, 1), y)),
                                      1.0 / 3.0));
    pm_pipeline *p = NULL;
    pm_status s = pm_pipeline_new(ctx, "blur", 2, pm_exprs(R, C), 1, (pm_func *const[]){I}, 1,
                                  (pm_func *const[]){blur}, &p);
    if (!CHECK_STATUS(s, PM_OK))
        fprintf(stderr, "  blur: %s\n", pm_ctx_errmsg(ctx));
    return p;
}

void check_blur_case_new(check_blur_case *c, pm_pipeline *p, int64_t rows, int64_t cols,
                         unsigned seed)
{
    c->params[0] = PM_I(rows);
    c->params[1] = PM_I(cols);
    c->in = check_buffer_new(PM_F32, 2, (int64_t[]){rows, cols});
    check_fill(&c->in, seed, false);
    c->want = check_buffer_new(PM_F32, 2, (int64_t[]){rows - 2, cols});
    c->got = check_buffer_new(PM_F32, 2, (int64_t[]){rows - 2, cols});
    CHECK_STATUS(pm_interpret(p, c->params, &c->in, &c->want), PM_OK);
}

void check_blur_case_free(check_blur_case *c)
{
    check_buffer_free(&c->in);
    check_buffer_free(&c->want);
    check_buffer_free(&c->got);
}
