/* costs.c — the values of the target cost table (costs.h), each with its measurement. */
#include "codegen/costs.h"

const pm_cost_table pm_costs = {
    .row_cost = 8.0,
    .stage_call_cost = 50.0,
    /* Short row segments leave the hardware prefetcher little to run ahead on. Harris at
     * 6400 x 6400, 2 threads: 64 x 512 tiles (chosen with this cost) took 0.93x the time
     * of the 128 x 256 chosen without; no other app's tiles change. */
    .stream_row_cost = 32.0,
    /* The grouping's price of memory traffic (group_dp.c): a byte of a buffer between
     * groups, written once and read once per reading group. The DP's groupings against
     * greedy's (pm_sweep, paper sizes, 11 interleaved rounds, 2 [1] threads, Zen host),
     * at 0.2 / 1 / 3: bilateral grid 1.00 / 0.99 / 1.05 [1.01 / 0.98 / 1.00], interpolate
     * 0.97 / 0.97 / 0.98 [0.97 / 0.95 / 0.94], local Laplacian 0.97 / 0.99 / 0.99
     * [1.00 / 1.00 / 1.00], pyramid blending 0.97 / 0.97 / 0.97 [0.97 / 0.96 / 1.01].
     * (A byte from DRAM at 27 GB/s per core is about 0.2 vector steps of one node; the
     * larger price also stands for what the model leaves out of an unfused stage.) */
    .memory_byte_cost = 1.0,
    /* The budget is half an L2, so strips may fill four L2s: whole rows stream in order,
     * and what misses the L2 comes from the L3 cheaply, while short rows pay per row.
     * Pyramid blending's 16 x 2048 strips (2.4 MB) took 0.79-0.81x the time of 32 x 128
     * tiles; interpolate 0.96-1.01x, camera pipe 0.98-0.99x, local Laplacian 1.01x; at
     * eight L2s camera pipe's strips took 1.06x. */
    .strip_budget = 8.0,
    /* Strips within one L2 come first. Camera pipe on a 2 MB-L2 Intel host: 32 x 2528
     * strips (1.8 MB) took 0.83x the time of 128 x 2528 (7.2 MB) at 2 threads, 0.94x at 1.
     * A cap on the budget instead sent pyramid blending to tiles 1.27x slower. */
    .strip_l2 = 2.0,
    /* Harris's strips of 32 whole rows in blocks of 8 took 0.83x the time of its 64 x 512
     * tiles (blocks of 4: 0.83x, 16: 0.85x; no blocks: 0.91x, rows read back from L3). */
    .block_rows = 8,
    /* Taller strips in blocks gained nothing in Harris; unsharp mask's 64-row strips took
     * 1.03x the time of 16-row strips without blocks (128 rows: 1.05x; 32: 1.00x). */
    .block_max_rows = 32,
    /* Unsharp mask at 2048 x 2048, 2 threads: 256 bytes ahead 0.91x the time without
     * prefetches, 1024 0.86x, 2048 0.84x, 4096 0.85x, 8192 0.90x. */
    .prefetch_bytes = 2048,
    /* A group doing more work per byte does not wait on memory. Unsharp mask reads 0.062
     * and ran 0.80-0.84x the time with prefetches; Harris reads 0.038 and ran 1.03-1.10x
     * slower on an Intel host with 2 MiB of L2 per core; the other apps' groups were
     * within noise or faster. */
    .prefetch_min_bytes = 0.05,
    /* With 1 MiB of L2 per core (an AMD EPYC host), Harris (0.038) ran 0.86x the time at
     * 1 thread and 0.88x at 2 with prefetches, camera pipe (0.041) 0.96x and 0.98x; the
     * next group down, one of local Laplacian's (0.016), was within noise. The L2's size
     * is the host fact at hand that parts the two hosts (measured on two, not more). */
    .prefetch_min_bytes_small_l2 = 0.03,
    .prefetch_small_l2 = 1 << 20,
    /* Below 4 points no vector runs, yet its bodies would be built and compiled. From 4 to
     * W-1, two overlapping vectors: bilateral grid's 11 bins went from 12.6 to 11.7 ms. */
    .short_loop_min = 4,
    /* One body saves a copy (unsharp mask's IR 1201 -> 929 instructions, Harris 4560 ->
     * 3160), but the select on every address slows memory-bound bodies: pyramid
     * blending's 5-read down-sampling ran 14% slower; Harris's 18 reads ran as fast. */
    .one_body_min_reads = 10,
    /* Beside the accumulators, the bins' compare constants and a few values of the point.
     * Bilateral grid's two channels of 15 bins in one pass spilled every window step and
     * ran 1.03-1.05x slower than in two passes. */
    .private_spare_registers = 4,
    /* Guided self-scheduling: tiles differ in cost and a shared core can lag. Equal static
     * blocks took 0.81-0.86x the time of fixed blocks of n / (8 * threads) on bilateral
     * grid, 0.95-0.97x on local Laplacian and interpolate; guided blocks beat both. */
    .guided_share = 2,
    /* k contiguous loads and k - 1 two-table permutes run in about half a W-lane gather's
     * time (Zen 5, stride 8, 16 floats in L1); bilateral grid's histogram spent 40% of its
     * samples on that gather. Beyond 8 the loads outnumber half the lanes. */
    .row_max_stride = 8,
    /* Six level gathers were half of local Laplacian's outGPyramid_L0 samples; E row
     * reads and E - 1 blends from a scratchpad in cache cost less. */
    .level_max = 8,
    /* 16 lanes of 32-bit entries (Zen 5): 2 to 12 permutes took 0.85-1.08 ms where
     * gathers took 1.83-1.89; at 16 the tables no longer fit the registers (2.63 ms). */
    .small_table_permutes = 12,
};
