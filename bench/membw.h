/* membw.h — the machine's memory bandwidth, measured the way the bench's floor needs it.
 *
 * A STREAM-style triad a[i] = b[i] + s * c[i] over three arrays of doubles, each at least
 * 256 MiB (far beyond any last-level cache), split evenly over `threads` std::threads that
 * also first-touched their own part. Bytes counted per pass: 3 x array bytes (two reads, one
 * write; the write-allocate read is not counted, as STREAM does). The result is the best of
 * `passes` passes after one warm-up pass, in bytes per second; 0 when the memory cannot be
 * had. The triad's checksum is verified so the compiler cannot drop the loop. */
#ifndef PM_BENCH_MEMBW_H
#define PM_BENCH_MEMBW_H

#include <cstddef>

double bench_triad_bandwidth(int threads, size_t array_bytes, int passes);

#endif
