/* poly.h — the polyhedral form of a pipeline: the facts of what to compute and read.
 *
 * Promise: pm_poly_new turns a validated pipeline into isl objects, one stage per
 * function in topological order, a statement per case and two per reduction. Every read
 * becomes an isl access map, with a proof that it stays inside its callee's box (else
 * the code clamps). It records facts only: the cases phase (cases.h) merges and splits
 * the statements, and later phases decide the rest. A pm_poly owns every isl object in
 * it; pm_poly_free frees it.
 */
#ifndef PM_CODEGEN_POLY_H
#define PM_CODEGEN_POLY_H

#include "frontend/error.h"
#include "frontend/ir.h"

#include <isl/aff.h>
#include <isl/id.h>
#include <isl/ctx.h>
#include <isl/map.h>
#include <isl/set.h>
#include <stdbool.h>

#define PM_POLY_MAX_RESIDUAL 16
/* The most points of a bin dimension (pm_poly_stmt.bin_extent). */
#define PM_POLY_BIN_MAX 64

typedef enum pm_stmt_kind {
    PM_STMT_CASE,   /* f(vars) = case value, where the case holds     */
    PM_STMT_INIT,   /* reduction: f(vars) = initial                    */
    PM_STMT_UPDATE  /* reduction: f(index) = op(f(index), value)       */
} pm_stmt_kind;

typedef struct pm_poly_access {
    const pm_expr *call;     /* the PM_EXPR_CALL node                                 */
    pm_func *callee;
    isl_map *rel;            /* statement space -> callee space; NULL if not affine    */
    bool in_bounds;          /* proven: all points read are inside the callee's box    */
} pm_poly_access;

typedef struct pm_poly_stmt {
    char name[96];           /* tuple name of the domain: f, f_c1, f_init, f_update    */
    int stage;               /* index in pm_poly.stages                                */
    pm_stmt_kind kind;
    int case_index;          /* PM_STMT_CASE: the first case                            */
    int ncases;              /* PM_STMT_CASE: cases case_index .. + ncases - 1 (see
                                merge_strided_cases in cases.c); 1 for one case          */
    bool branch_cases;       /* merged cases chosen by a branch (merge_row_cases in
                                cases.c): their conditions do not involve the innermost
                                dimension, and only the holding case is evaluated, so
                                each access record holds on its own case's points (its
                                relation's domain) rather than on the whole domain       */
    int ndims;               /* dimensions of the domain                                */
    pm_expr **vars;          /* their variables (the function's, or the reduction's)   */
    isl_set *domain;         /* over the pipeline parameters: a case's affine condition
                                intersected with the function's domain                */
    int nresidual;
    const pm_expr *residual[PM_POLY_MAX_RESIDUAL]; /* run-time conjuncts of the case:
                                its non-affine ones, tested as the code runs          */
    int naccesses;
    pm_poly_access *accesses;
    unsigned free_dims;      /* bit k: no dependence is carried at depth k (the outer
                                dimensions equal); an update: no two instances that may
                                write a common cell differ first in dimension k          */
    bool vectorizable;       /* innermost dimension free, in every case of the stage   */
    unsigned distinct_cell_dims; /* PM_STMT_UPDATE: bit k set when two instances that
                                may write a common cell always agree in dimension k (a
                                histogram's cell column): that loop may move anywhere
                                with each cell's updates in their order              */
    int piece;               /* a split case's piece number, 0 for the first and for a
                                statement left whole: piece k > 0 reads exactly what
                                piece 0 reads (the same access relations)             */
    unsigned border_dims;    /* a piece of a split case (cases.c, split_pieces): bit d set
                                when the piece spans at most 4 points along dimension d
                                for every parameter value (a border strip)              */
    unsigned write_inside_dims; /* PM_STMT_UPDATE: bit d set when the written cell's index
                                d is affine and proven inside the function's box for
                                every update (no run-time check needed there)         */
    int bin_extent;          /* PM_STMT_UPDATE: > 0 when exactly one written index is not
                                proven inside (write_inside_dims), the function's
                                interval there being constant, of unit step and of at
                                most PM_POLY_BIN_MAX points: a histogram's bin. Its
                                points; 0 otherwise                                   */
    int bin_dim;             /* that index (valid when bin_extent > 0)                */
    unsigned row_free_dims;  /* PM_STMT_UPDATE with a bin: bit k set when no written
                                index but the bin's mentions reduction dimension k (the
                                window of contributions to one row of bins)           */
    /* A stage's case statements as one (merge_parts in cases.c): the statement covers
     * their union (a box), isl sees only it, and its parts are the case statements as
     * they were, each with its own domain, accesses and proofs. At a row (fixed outer
     * coordinates) part p holds on an interval of the innermost coordinate given by
     * part_bounds[p]. The carrier's access records are one per call, each relation
     * restricted to the parts that make the call. */
    int nparts;
    struct pm_poly_stmt *parts;
    struct pm_poly_part_bounds *part_bounds;
    isl_id *row_id[PM_MAX_DIMS]; /* outer coordinate d < ndims - 1 in the bounds      */
} pm_poly_stmt;

/* A part's points at a row, read from its constraints: the innermost coordinate is at
 * least every PM_BOUND_LOWER expression and at most every PM_BOUND_UPPER one, and the
 * row has points only where every PM_BOUND_ROW_GE expression is >= 0 and every
 * PM_BOUND_ROW_EQ one is 0. Integer-valued isl affine expressions (divisions as
 * floors) over the parameters and the merged statement's row_id. */
enum { PM_BOUND_LOWER, PM_BOUND_UPPER, PM_BOUND_ROW_GE, PM_BOUND_ROW_EQ };

typedef struct pm_poly_part_bounds {
    int n;
    isl_aff **aff;
    int *kind;
} pm_poly_part_bounds;

/* Frees the expressions and empties b. */
void pm_poly_part_bounds_clear(pm_poly_part_bounds *b);
/* Frees what a statement owns (its domain, accesses, parts) and zeroes it. */
void pm_poly_stmt_clear(pm_poly_stmt *s);

/* Where a function's values live. The poly records a function's role (an input, an
 * output, or a stage the caller does not see: SCRATCH); the storage phase decides each
 * stage's place in the plan (codegen/plan.h, pm_storage_plan). */
typedef enum pm_storage_kind {
    PM_STORAGE_INPUT,   /* the caller's input buffer                                   */
    PM_STORAGE_OUTPUT,  /* the caller's output buffer                                  */
    PM_STORAGE_SCRATCH, /* a full buffer from pm_rt_buffer (slot `index`)                */
    PM_STORAGE_TILE,    /* a scratchpad per thread (slot `index`, `tile_bytes` each),
                           re-based at every tile of its group to the footprint origin  */
    PM_STORAGE_INLINED  /* no buffer: reads evaluate the definition                     */
} pm_storage_kind;

/* A function's buffer: index_d = (coord_d - lb_d) / step_d, extent_d = (ub-lb)/step + 1. */
typedef struct pm_poly_storage {
    pm_func *func;
    pm_storage_kind role;    /* INPUT, OUTPUT, or SCRATCH for a stage the caller does
                                not see                                                 */
    int io_index;            /* input / output position, else -1                        */
    pm_type type;
    int ndims;
    isl_pw_aff *lb[PM_MAX_DIMS], *ub[PM_MAX_DIMS]; /* over the parameters only          */
    int64_t step[PM_MAX_DIMS];
    isl_set *box;            /* callee space, lb <= coord <= ub (no strides)            */
    /* A stage of one dimension whose value at every v of its domain is its value at
     * clamp(v, flat_lo, flat_hi) (frontend/flat.h; camera pipe's tone curve): its
     * data-dependent reads may clamp so and look the few entries up in registers
     * (llvm/access.c's small tables). */
    bool flat;
    int64_t flat_lo, flat_hi;
} pm_poly_storage;

typedef struct pm_poly_stage {
    pm_func *func;
    int first_stmt, nstmts;  /* its statements, in execution order of kinds            */
    int storage;             /* index in pm_poly.storage                                */
    /* Its float arithmetic rounds every operation as the interpreter does: its values
     * reach a discrete result (a cast to an integer, a comparison, floor and the like,
     * an integer stage) through some reader. Elsewhere a multiply and an add may
     * contract into one fused multiply-add (one rounding instead of two, within the
     * float tolerance; pm_poly_mark_exact_stages). */
    bool float_exact;
} pm_poly_stage;

typedef struct pm_poly {
    isl_ctx *ctx;            /* borrowed                                                */
    pm_pipeline *pipeline;
    isl_space *params;       /* a parameter space with the pipeline's integer params   */
    int nstages;
    pm_poly_stage *stages;
    int nstmts;
    int stmts_cap;           /* statements allocated                                     */
    pm_poly_stmt *stmts;
    int nstorage;
    pm_poly_storage *storage; /* inputs first, then one per stage                      */
} pm_poly;

/* The facts of one statement, for the cases phase's merged ones: a stage's variable
 * domain named `name`; the statement's accesses from its expressions; its free
 * dimensions. */
__isl_give isl_set *pm_poly_var_domain(const pm_poly *poly, const pm_poly_storage *st,
                                       const char *name);
pm_status pm_poly_stmt_accesses(pm_poly *poly, pm_poly_stmt *s, const pm_expr **roots,
                                int nroots, pm_error *err);
void pm_poly_stmt_dependences(const pm_poly *poly, pm_poly_stmt *s);
/* NULL on failure with the message in err (PM_ERR_UNSUPPORTED names the function and the
 * construct). */
pm_poly *pm_poly_new(isl_ctx *ctx, pm_pipeline *p, pm_error *err);
void pm_poly_free(pm_poly *poly);

/* The storage of a function or image, or NULL. */
const pm_poly_storage *pm_poly_storage_of(const pm_poly *poly, const pm_func *f);
/* e decides something discrete from float operands (a float -> integer cast, a float
 * comparison or modulo, floor, ceil, round, trunc, atan2): its operands must round as
 * the interpreter's do (pm_poly_stage.float_exact). */
bool pm_poly_discrete_of_float(const pm_expr *e);
/* The access record of a call node in a statement, or NULL. */
const pm_poly_access *pm_poly_access_of(const pm_poly_stmt *s, const pm_expr *call);

/* Readable listing (the "domains" dump): malloc'd. */
char *pm_poly_to_string(const pm_poly *poly);

#endif
