/* canon.h — a pipeline's canonical form: the text its kernel cache key is made from, and
 * the reader that rebuilds a pipeline from that text (docs/canonical-text.md).
 *
 * Promise: pm_pipeline_canon writes every definition a pipeline's kernels depend on, as
 * text that refers to objects only by their position in it. Two pipelines built by the
 * same sequence of builder calls, in any two contexts, get byte-equal texts; pipelines
 * whose definitions differ get different texts. The reader, pm_pipeline_from_text
 * (polymage.h, canon_read.c), accepts a text only if the pipeline it rebuilds has that
 * same canonical text. It trusts nothing in the text, and its limits bound the work a
 * text can cause.
 */
#ifndef PM_FRONTEND_CANON_H
#define PM_FRONTEND_CANON_H

#include "polymage.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The format written by this library, the only one its reader accepts. */
#define PM_CANON_VERSION 2

/* The reader rebuilds a pipeline through the builders and pm_pipeline_new. Every
 * rejection is PM_ERR_ARGUMENT (PM_ERR_NOMEM when memory runs out), with a message naming
 * the line and the cause. Its limits (docs/canonical-text.md) keep the work a text can
 * cause bounded: the rest of the library recurses over expressions and walks a shared
 * subexpression once per use. */
#define PM_CANON_MAX_DEPTH 1024        /* expression nesting (the apps: at most 17)      */
#define PM_CANON_MAX_TREE (1 << 20)    /* nodes of all definitions written out as trees  */
#define PM_CANON_MAX_FUNCS 1024        /* images, functions and reductions               */
#define PM_CANON_MAX_PARAMS 1024
#define PM_CANON_MAX_CASES 512         /* pm_pipeline_new reads 1024 expressions a stage */

/* The text holds the name, the parameters in signature order with their types, the
 * inputs, the outputs, and every stage in the pipeline's stage order with its domain,
 * cases and reduction parts. Every expression node is written with its kind, type,
 * weakness, operator and constants, the constants bit-exact. It holds no pointer, no
 * address-derived value and no context-wide id.
 * Kinds, types and operators are written by name (one table, canon.c), never by their
 * enum numbers, so the format does not change when an enum does. The first line names
 * the format's version, PM_CANON_VERSION.
 * Shared subexpressions are written once and referred to, so the sharing is part of the
 * form, and the text stays linear in the size of the DAG. User names are written with
 * their length, so no name can imitate the layout. */
typedef struct pm_canon {
    const char *text;   /* owned by the pipeline's context; NUL-terminated              */
    size_t len;         /* strlen(text)                                                 */
    uint64_t hash;      /* 64-bit FNV-1a of the text (lookups compare the text itself)  */
    int nparams;
    const bool *sized;  /* nparams entries: parameter `slot` appears in an image extent or
                           a domain bound (its estimates steer the optimizer)         */
} pm_canon;

/* The pipeline's canonical form, computed on the first call and cached on the pipeline
 * (in its context); later calls return the same object.
 * NULL when out of memory (the reason recorded in the context). Not thread-safe: like
 * every use of a context, one thread at a time. */
const pm_canon *pm_pipeline_canon(pm_pipeline *p);

/* The name table shared by the writer and the reader: which enum a name belongs to. */
typedef enum pm_canon_field {
    PM_CANON_KIND,   /* pm_expr_kind: int, float, var, param, unary, ... call          */
    PM_CANON_TYPE,   /* pm_type: bool, u8, ... f64                                      */
    PM_CANON_UNOP,   /* pm_unop: neg, not, abs                                          */
    PM_CANON_BINOP,  /* pm_binop: add, sub, ... or                                      */
    PM_CANON_MATH,   /* pm_math_fn, PM_MATH_POW, PM_MATH_ATAN2: exp, ... pow, atan2      */
    PM_CANON_REDUCE, /* pm_reduce_op: sum, product, min, max, and, or                   */
    PM_CANON_FUNC    /* pm_func_kind: image, function, reduction                        */
} pm_canon_field;

/* The name of value in field, or NULL when it has none. */
const char *pm_canon_name(pm_canon_field field, int value);
/* The value named name[0..len) in field; false when no such name. */
bool pm_canon_value(pm_canon_field field, const char *name, size_t len, int *value);
/* The field of an expression kind's operator (PM_CANON_UNOP, _BINOP or _MATH), or -1
 * for the kinds without one. */
int pm_canon_op_field(int kind);

/* FNV-1a, 64 bits, continuing from h (start with PM_HASH_SEED). */
#define PM_HASH_SEED UINT64_C(0xcbf29ce484222325)
uint64_t pm_hash_bytes(uint64_t h, const void *data, size_t len);

#endif
