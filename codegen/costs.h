/* costs.h — the target cost table: every tuned number the optimizer and the lowering use.
 *
 * Promise: the tile model (tile.c), the storage choices (storage.c) and the lowering
 * (lower.c) read their tuned numbers from pm_costs and from nowhere else. costs.c gives
 * each value with the measurement that set it. Unless it says otherwise, that is
 * bench/pm_sweep at paper sizes, in one process, with runs interleaved.
 */
#ifndef PM_CODEGEN_COSTS_H
#define PM_CODEGEN_COSTS_H

#include <stdint.h>

typedef struct pm_cost_table {
    /* ---- the tile model, in vector steps of one expression node ---- */
    double row_cost;          /* starting a row of a stage inside a tile                */
    double stage_call_cost;   /* calling a stage's function once per tile               */
    double stream_row_cost;   /* a row segment streamed from or to memory               */
    double memory_byte_cost;  /* a byte of a full buffer written or read (the grouping)  */
    double strip_budget;      /* strips of whole rows may use this many scratch budgets */
    double strip_l2;          /* ... but strips within this many budgets come first     */
    int block_rows;           /* rows per block of a strip run in row blocks            */
    int block_max_rows;       /* the tallest strip run in row blocks                    */
    /* ---- storage ---- */
    int prefetch_bytes;       /* how far ahead along a row a prefetched read fetches    */
    double prefetch_min_bytes; /* bytes per unit of work for a group's reads to prefetch */
    double prefetch_min_bytes_small_l2; /* the same where a core's L2 is at most      */
    int64_t prefetch_small_l2;  /* ... this many bytes                                   */
    /* ---- the lowering: loops ---- */
    int short_loop_min;       /* a constant loop shorter than this stays scalar         */
    int one_body_min_reads;   /* one vector body for loop and tail from this many reads */
    int private_spare_registers; /* vector registers a privatized block leaves free    */
    int guided_share;         /* a parallel loop's block: what is left / (share * threads) */
    /* ---- the lowering: reads ---- */
    int row_max_stride;       /* a strided read as row loads and shuffles up to this    */
    int level_max;            /* a level read selects among at most this many rows      */
    int small_table_permutes; /* a flat table read by permutes of up to this many pieces */
} pm_cost_table;

extern const pm_cost_table pm_costs;

#endif
