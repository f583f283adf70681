/* isolate.h — run one benchmark variant in a forked child process.
 *
 * Why a child: an autoscheduler cannot be interrupted from inside (Adams2019's beam search
 * on a big pipeline can run for many minutes), a Halide internal error may abort, and a
 * young JIT may crash. In a child each of these becomes a row of the table ("timeout in
 * autoschedule", "crashed: Segmentation fault") instead of the end of the run. It also
 * gives each variant a fresh Halide runtime, so HL_NUM_THREADS set in the child decides
 * the size of Halide's thread pool for that measurement (the JIT runtime reads it once,
 * and libHalide does not export halide_set_num_threads), and a fresh OpenMP pool.
 *
 * Outputs the parent must see (computed images) go into memory the caller maps shared
 * (bench_shared_alloc) before the fork; everything else comes back as text lines on a pipe.
 */
#ifndef PM_BENCH_ISOLATE_H
#define PM_BENCH_ISOLATE_H

#include <functional>
#include <map>
#include <string>
#include <vector>

/* The child's end: reports progress and results to the parent. */
class ChildChannel {
public:
    explicit ChildChannel(int fd) : fd_(fd) {}
    /* Starts a new phase ("autoschedule", "compile", "run"); each phase has its own
     * time budget, so a long autoschedule does not eat the budget of the runs. */
    void phase(const std::string &name);
    void value(const std::string &key, double v);
    void run_ms(double ms);
    void fail(const std::string &message);

private:
    void line(const std::string &s);
    int fd_;
};

struct ChildReport {
    enum Outcome { OK, FAILED, TIMEOUT, CRASHED } outcome = CRASHED;
    std::string error;  /* FAILED: the child's message; TIMEOUT / CRASHED: what happened */
    std::string phase;  /* the last phase the child started */
    std::map<std::string, double> values;
    std::vector<double> runs;
    double elapsed_s = 0;
};

/* Runs body(channel) in a child. A phase that lasts longer than phase_timeout_s kills the
 * child (SIGKILL) and reports TIMEOUT naming the phase. Exceptions thrown by body are
 * reported as FAILED with their what(). */
ChildReport run_in_child(const std::function<void(ChildChannel &)> &body, double phase_timeout_s);

/* Zeroed memory shared with children (MAP_SHARED | MAP_ANONYMOUS); NULL on failure. */
void *bench_shared_alloc(size_t bytes);
void bench_shared_free(void *p, size_t bytes);

/* Monotonic clock in milliseconds. */
double bench_now_ms();

#endif
