/* context.c — pm_ctx: the arena every builder object lives in, and its errors.
 *
 * Objects are never freed one by one: a context is a list of allocations freed together,
 * which is what lets expression trees share subtrees without reference counts.
 *
 * Two kinds of error, kept apart so that a refused call never poisons the context:
 *   - a builder's (pm_func_new, pm_call, ...) is sticky: the first one is kept and every
 *     later pm_pipeline_new returns it, until pm_ctx_clear_error;
 *   - a call's (pm_pipeline_new, pm_interpret, pm_pipeline_buffer_shape, bracketed by
 *     pm_ctx_call_begin / _end) is about that call alone: the next call replaces it.
 * pm_ctx_status / pm_ctx_errmsg report the latest of either. */
#include "frontend/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pm_alloc_block {
    struct pm_alloc_block *next;
    max_align_t payload[];
} pm_alloc_block;

struct pm_ctx {
    pm_alloc_block *blocks;
    pm_status status;          /* reported: the builders' first error or the last call's */
    char errmsg[2048];
    pm_status builder_status;  /* the builders' first error (sticky), PM_OK when none     */
    char builder_msg[2048];
    int in_call;               /* > 0 inside pm_ctx_call_begin .. _end                    */
    int nparams, params_cap;
    pm_expr **params;
    int next_var_id, next_func_id;
};

pm_ctx *pm_ctx_new(void)
{
    return calloc(1, sizeof(pm_ctx));
}

void pm_ctx_free(pm_ctx *ctx)
{
    if (!ctx)
        return;
    pm_alloc_block *b = ctx->blocks;
    while (b) {
        pm_alloc_block *next = b->next;
        free(b);
        b = next;
    }
    free(ctx->params);
    free(ctx);
}

pm_status pm_ctx_status(const pm_ctx *ctx)
{
    return ctx ? ctx->status : PM_ERR_MISUSE;
}

const char *pm_ctx_errmsg(const pm_ctx *ctx)
{
    return ctx ? ctx->errmsg : "context is NULL";
}

void pm_ctx_clear_error(pm_ctx *ctx)
{
    if (!ctx)
        return;
    ctx->status = ctx->builder_status = PM_OK;
    ctx->errmsg[0] = ctx->builder_msg[0] = '\0';
}

pm_status pm_ctx_recorded(const pm_ctx *ctx)
{
    return ctx->in_call ? ctx->status : ctx->builder_status;
}

void pm_ctx_call_begin(pm_ctx *ctx)
{
    if (ctx->in_call++ > 0)
        return;
    /* the older call's message goes; a builder's error stays reported */
    ctx->status = ctx->builder_status;
    memcpy(ctx->errmsg, ctx->builder_msg, sizeof ctx->errmsg);
}

void pm_ctx_call_end(pm_ctx *ctx)
{
    ctx->in_call--;
}

void *pm_ctx_alloc(pm_ctx *ctx, size_t size)
{
    pm_alloc_block *b = calloc(1, sizeof(pm_alloc_block) + size);
    if (!b) {
        pm_ctx_error(ctx, PM_ERR_NOMEM, "out of memory allocating %zu bytes", size);
        return NULL;
    }
    b->next = ctx->blocks;
    ctx->blocks = b;
    return b->payload;
}

char *pm_ctx_strdup(pm_ctx *ctx, const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *copy = pm_ctx_alloc(ctx, n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

pm_status pm_ctx_verror(pm_ctx *ctx, pm_status status, const char *fmt, va_list ap)
{
    if (!ctx)
        return status;
    if (ctx->in_call) { /* the call's first error */
        if (ctx->status == PM_OK) {
            ctx->status = status;
            vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
        }
        return status;
    }
    if (ctx->builder_status == PM_OK) { /* the builders' first error, reported at once */
        ctx->builder_status = ctx->status = status;
        vsnprintf(ctx->builder_msg, sizeof ctx->builder_msg, fmt, ap);
        memcpy(ctx->errmsg, ctx->builder_msg, sizeof ctx->errmsg);
    }
    return status;
}

pm_status pm_ctx_error(pm_ctx *ctx, pm_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pm_ctx_verror(ctx, status, fmt, ap);
    va_end(ap);
    return status;
}

pm_status pm_ctx_set_error(pm_ctx *ctx, pm_status status, const char *fmt, ...)
{
    if (!ctx)
        return status;
    /* a call's own answer: replaces the reported message, never the builders' error */
    ctx->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
    va_end(ap);
    return status;
}

/* Registers a new parameter so pipelines can map ctx parameter ids to signature slots. */
int pm_ctx_add_param(pm_ctx *ctx, pm_expr *param)
{
    if (ctx->nparams == ctx->params_cap) {
        int cap = ctx->params_cap ? ctx->params_cap * 2 : 16;
        pm_expr **grown = realloc(ctx->params, (size_t)cap * sizeof *grown);
        if (!grown) {
            pm_ctx_error(ctx, PM_ERR_NOMEM, "out of memory adding parameter %s", param->name);
            return -1;
        }
        ctx->params = grown;
        ctx->params_cap = cap;
    }
    ctx->params[ctx->nparams] = param;
    return ctx->nparams++;
}

int pm_ctx_nparams(const pm_ctx *ctx)
{
    return ctx->nparams;
}

pm_expr *pm_ctx_param(const pm_ctx *ctx, int id)
{
    return id >= 0 && id < ctx->nparams ? ctx->params[id] : NULL;
}

int pm_ctx_next_var_id(pm_ctx *ctx)
{
    return ctx->next_var_id++;
}

int pm_ctx_next_func_id(pm_ctx *ctx)
{
    return ctx->next_func_id++;
}

int pm_ctx_nfuncs(const pm_ctx *ctx)
{
    return ctx->next_func_id;
}

const char *pm_status_name(pm_status status)
{
    switch (status) {
    case PM_OK: return "PM_OK";
    case PM_ERR_MISUSE: return "PM_ERR_MISUSE";
    case PM_ERR_TYPE: return "PM_ERR_TYPE";
    case PM_ERR_INVALID: return "PM_ERR_INVALID";
    case PM_ERR_ARGUMENT: return "PM_ERR_ARGUMENT";
    case PM_ERR_UNSUPPORTED: return "PM_ERR_UNSUPPORTED";
    case PM_ERR_NOMEM: return "PM_ERR_NOMEM";
    case PM_ERR_INTERNAL: return "PM_ERR_INTERNAL";
    case PM_ERR_COMPILE: return "PM_ERR_COMPILE";
    }
    return "PM_ERR_UNKNOWN";
}
