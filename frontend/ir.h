/* ir.h — the pipeline IR behind the public builder API.
 *
 * Promise: plain C structs, all allocated in and owned by a pm_ctx (freed together by
 * pm_ctx_free; nothing here has its own free). Expressions are immutable trees (DAGs:
 * subtrees may be shared). Every object carries its context so misuse across contexts
 * is detected. Readers (validation, interpreter, codegen) never modify the IR, except
 * pm_pipeline's analysis fields, filled once by pm_pipeline_new.
 */
#ifndef PM_FRONTEND_IR_H
#define PM_FRONTEND_IR_H

#include "polymage.h"

#include <stdarg.h>
#include <stdbool.h>

typedef enum pm_expr_kind {
    PM_EXPR_INT,     /* integer constant: ival; weak if is_weak                         */
    PM_EXPR_FLOAT,   /* float constant: fval; weak if is_weak                           */
    PM_EXPR_VAR,     /* a variable: name, id                                             */
    PM_EXPR_PARAM,   /* a parameter: name, id (index in ctx's parameter list)            */
    PM_EXPR_UNARY,   /* op (pm_unop) on a                                                */
    PM_EXPR_BINARY,  /* op (pm_binop) on a, b (already converted to a common type)       */
    PM_EXPR_CAST,    /* a converted to type                                              */
    PM_EXPR_SELECT,  /* a ? b : c; a is PM_BOOL                                          */
    PM_EXPR_MATH,    /* op (pm_math_fn, or PM_MATH_POW / PM_MATH_ATAN2) on a [, b]       */
    PM_EXPR_CALL     /* callee(args[0..nargs-1]); args are integer typed                 */
} pm_expr_kind;

typedef enum pm_unop { PM_OP_NEG, PM_OP_NOT, PM_OP_ABS } pm_unop;

typedef enum pm_binop {
    PM_OP_ADD, PM_OP_SUB, PM_OP_MUL,
    PM_OP_DIV,  /* floor division for integers, IEEE for floats */
    PM_OP_MOD,  /* floor modulo for integers, x - y*floor(x/y) for floats */
    PM_OP_CDIV, PM_OP_CMOD, /* truncating (C) division / remainder for integers */
    PM_OP_MIN, PM_OP_MAX, PM_OP_ABSD,
    PM_OP_BAND, PM_OP_BOR, PM_OP_BXOR, PM_OP_SHL, PM_OP_SHR,
    /* comparisons: operands of a common type, result PM_BOOL */
    PM_OP_LT, PM_OP_LE, PM_OP_EQ, PM_OP_NE, PM_OP_GE, PM_OP_GT,
    /* logical: PM_BOOL operands and result */
    PM_OP_AND, PM_OP_OR
} pm_binop;

/* Two-argument math functions, numbered after pm_math_fn. */
enum { PM_MATH_POW = 100, PM_MATH_ATAN2 = 101 };

struct pm_expr {
    pm_ctx *ctx;
    pm_expr_kind kind;
    pm_type type;       /* result type; PM_BOOL for conditions                           */
    bool is_weak;       /* literal whose type adapts to the other operand                */
    int op;             /* pm_unop, pm_binop or pm_math_fn, by kind                      */
    int64_t ival;       /* PM_EXPR_INT                                                   */
    double fval;        /* PM_EXPR_FLOAT                                                 */
    const char *name;   /* PM_EXPR_VAR, PM_EXPR_PARAM                                    */
    int id;             /* PM_EXPR_VAR: unique in ctx; PM_EXPR_PARAM: index in ctx params */
    pm_expr *a, *b, *c; /* operands                                                      */
    pm_func *callee;    /* PM_EXPR_CALL                                                  */
    int nargs;
    pm_expr **args;
};

struct pm_interval {
    pm_ctx *ctx;
    pm_expr *lb, *ub;   /* integer expressions of parameters and constants               */
    int64_t step;       /* >= 1                                                          */
};

struct pm_case {
    pm_ctx *ctx;
    pm_expr *cond;      /* PM_BOOL, or NULL for "everywhere"                             */
    pm_expr *value;     /* already cast to the function's type                           */
};

typedef enum pm_func_kind { PM_FUNC_IMAGE, PM_FUNC_FUNCTION, PM_FUNC_REDUCTION } pm_func_kind;

struct pm_func {
    pm_ctx *ctx;
    pm_func_kind kind;
    const char *name;
    pm_type type;
    int id;                 /* unique in ctx, creation order                             */
    int ndims;
    /* PM_FUNC_IMAGE: extents (dimension d covers 0 .. extents[d]-1)                      */
    pm_expr **extents;
    /* PM_FUNC_FUNCTION and PM_FUNC_REDUCTION: variable domain                            */
    pm_expr **vars;         /* PM_EXPR_VAR each                                          */
    pm_interval **intervals;
    /* PM_FUNC_FUNCTION                                                                   */
    bool defined;
    int ncases;
    pm_case **cases;
    /* PM_FUNC_REDUCTION                                                                  */
    int nrdims;
    pm_expr **rvars;
    pm_interval **rintervals;
    pm_reduce_op reduce_op;
    pm_expr *initial;       /* cast to type                                              */
    pm_expr **rindex;       /* nrindex == ndims index expressions, after definition      */
    pm_expr *rvalue;        /* cast to type                                              */
};

struct pm_pipeline {
    pm_ctx *ctx;
    const char *name;
    int nparams;
    pm_expr **params;       /* PM_EXPR_PARAM, in signature order                         */
    int ninputs;
    pm_func **inputs;       /* PM_FUNC_IMAGE, in signature order                         */
    int noutputs;
    pm_func **outputs;      /* live-outs, in signature order                             */
    /* Filled by pm_pipeline_new: every function (not image) the outputs reach, in a
     * topological order (producers before consumers; ties by creation order).           */
    int nstages;
    pm_func **stages;
    /* param_slot[id] = position of ctx parameter `id` in params, or -1.                  */
    int *param_slot;
    /* The canonical form (frontend/canon.h), made by its first use, then kept.            */
    struct pm_canon *canon;
    /* A window form (frontend/window.h): its window, base pipeline and halo; NULL for a
     * whole-image pipeline. window_form: this pipeline's window form once made.          */
    struct pm_window *window;
    struct pm_pipeline *window_form;
};

/* ---- context internals (frontend/context.c) ---------------------------------------- */

/* Zeroed memory owned by ctx, freed with it. Returns NULL and records PM_ERR_NOMEM. */
void *pm_ctx_alloc(pm_ctx *ctx, size_t size);
/* A copy of s owned by ctx. */
char *pm_ctx_strdup(pm_ctx *ctx, const char *s);
/* Records an error if none is recorded yet (the first error wins): inside a call
 * (pm_ctx_call_begin) the call's, else the builders' sticky one. Returns status. */
pm_status pm_ctx_error(pm_ctx *ctx, pm_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
pm_status pm_ctx_verror(pm_ctx *ctx, pm_status status, const char *fmt, va_list ap);
/* Replaces the reported error (for calls whose own status is the answer); a builder's
 * sticky error stays for the next pm_pipeline_new. */
pm_status pm_ctx_set_error(pm_ctx *ctx, pm_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The error recorded for the work in progress (PM_OK when none): inside a call the
 * call's, else the builders' sticky one, never a finished call's. Code that got NULL
 * checks it to tell "an earlier error" from "misuse to report now". */
pm_status pm_ctx_recorded(const pm_ctx *ctx);
/* Brackets a public call whose error is about that call alone (pm_pipeline_new,
 * pm_interpret, pm_pipeline_buffer_shape): begin forgets an older call's message (a
 * builder's error stays reported); errors recorded inside never become sticky. */
void pm_ctx_call_begin(pm_ctx *ctx);
void pm_ctx_call_end(pm_ctx *ctx);
/* Registers a parameter; returns its id or -1 (out of memory). */
int pm_ctx_add_param(pm_ctx *ctx, pm_expr *param);
int pm_ctx_next_var_id(pm_ctx *ctx);
int pm_ctx_next_func_id(pm_ctx *ctx);
/* Number of images, functions and reductions made in ctx (ids are 0 .. n-1). */
int pm_ctx_nfuncs(const pm_ctx *ctx);
/* Number of parameters created in ctx, and the i-th (PM_EXPR_PARAM). */
int pm_ctx_nparams(const pm_ctx *ctx);
pm_expr *pm_ctx_param(const pm_ctx *ctx, int id);

/* ---- typing helpers (frontend/types.c) ----------------------------------------------- */

bool pm_type_is_float(pm_type t);
bool pm_type_is_int(pm_type t);        /* integer storage types (not bool)             */
bool pm_type_is_signed(pm_type t);     /* signed integers and floats                   */
int pm_type_bits(pm_type t);           /* 1 for bool                                   */
bool pm_type_valid(int t);             /* a member of pm_type                           */
/* Result type of a binary arithmetic operation per the rules in polymage.h. */
pm_type pm_type_promote(const pm_expr *a, const pm_expr *b);

/* e converted to type: a cast node, or a folded literal (frontend/expr.c). */
pm_expr *pm_expr_convert(pm_expr *e, pm_type type);
/* "+", "<=", "min", ... for a pm_binop. */
const char *pm_binop_name(int op);
/* The pm_binop a reduction folds its values with (PM_REDUCE_SUM: PM_OP_ADD, ...). */
int pm_reduce_binop(pm_reduce_op op);

/* ---- printing (frontend/print.c) ------------------------------------------------------ */

/* Appends a readable form of e ("Ix(x - 1, y)") to a growing string. */
typedef struct pm_str {
    char *data;
    size_t len, cap;
} pm_str;
void pm_str_append(pm_str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pm_str_free(pm_str *s);
void pm_expr_print(pm_str *s, const pm_expr *e);
/* Appends a function's declaration and definition. */
void pm_func_print(pm_str *s, const pm_func *f);
/* A ctx-owned string of e, for messages. */
const char *pm_expr_to_cstr(pm_ctx *ctx, const pm_expr *e);

/* ---- walking ------------------------------------------------------------------------ */

/* Calls visit(e, user) on e and every subexpression, pre-order; calls are visited with
 * their arguments. Stops early when visit returns false. Returns false if stopped. */
bool pm_expr_walk(const pm_expr *e, bool (*visit)(const pm_expr *e, void *user), void *user);

/* Every expression directly defining f: case conditions and values, reduction indices,
 * value and initial. Writes up to max pointers, returns the count. */
int pm_func_exprs(const pm_func *f, const pm_expr **out, int max);

#endif /* PM_FRONTEND_IR_H */
