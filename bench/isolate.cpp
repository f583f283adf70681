/* isolate.cpp — fork, pipe and poll: one variant per child (see isolate.h for why). */
#include "isolate.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

double bench_now_ms() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

void *bench_shared_alloc(size_t bytes) {
    if (bytes == 0) bytes = 1;
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

void bench_shared_free(void *p, size_t bytes) {
    if (p) munmap(p, bytes ? bytes : 1);
}

void ChildChannel::line(const std::string &s) {
    std::string l = s;
    for (char &ch : l)
        if (ch == '\n' || ch == '\r') ch = ' ';
    l += '\n';
    const char *p = l.data();
    size_t left = l.size();
    while (left > 0) {
        ssize_t n = write(fd_, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return; /* the parent is gone; nothing useful left to do */
        p += n;
        left -= (size_t)n;
    }
}

void ChildChannel::phase(const std::string &name) { line("phase " + name); }
void ChildChannel::value(const std::string &key, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    line("value " + key + " " + buf);
}
void ChildChannel::run_ms(double ms) {
    char buf[64];
    snprintf(buf, sizeof buf, "run %.17g", ms);
    line(buf);
}
void ChildChannel::fail(const std::string &message) { line("fail " + message); }

static void parse_line(const std::string &l, ChildReport &r, bool &done, bool &failed) {
    if (l.compare(0, 6, "phase ") == 0) {
        r.phase = l.substr(6);
    } else if (l.compare(0, 6, "value ") == 0) {
        size_t sp = l.find(' ', 6);
        if (sp != std::string::npos) r.values[l.substr(6, sp - 6)] = atof(l.c_str() + sp + 1);
    } else if (l.compare(0, 4, "run ") == 0) {
        r.runs.push_back(atof(l.c_str() + 4));
    } else if (l.compare(0, 5, "fail ") == 0) {
        if (!failed) r.error = l.substr(5); /* keep the first failure: it is the cause */
        failed = true;
    } else if (l == "done") {
        done = true;
    }
}

ChildReport run_in_child(const std::function<void(ChildChannel &)> &body, double phase_timeout_s) {
    ChildReport r;
    int fds[2];
    if (pipe(fds) != 0) {
        r.outcome = ChildReport::FAILED;
        r.error = std::string("pipe: ") + strerror(errno);
        return r;
    }
    fflush(nullptr); /* or the child would print the parent's buffered output again */
    double start = bench_now_ms();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        r.outcome = ChildReport::FAILED;
        r.error = std::string("fork: ") + strerror(errno);
        return r;
    }
    if (pid == 0) {
        close(fds[0]);
        ChildChannel ch(fds[1]);
        try {
            body(ch);
        } catch (const std::exception &e) {
            ch.fail(e.what());
        } catch (...) {
            ch.fail("unknown exception");
        }
        ChildChannel(fds[1]).phase("end");
        const char done[] = "done\n";
        ssize_t ignored = write(fds[1], done, sizeof done - 1);
        (void)ignored;
        fflush(nullptr);
        _exit(0); /* never run the parent's atexit handlers or destructors */
    }
    close(fds[1]);

    std::string pending;
    bool done = false, failed = false, timed_out = false;
    std::string last_phase;
    double phase_start = bench_now_ms();
    for (;;) {
        if (r.phase != last_phase) {
            last_phase = r.phase;
            phase_start = bench_now_ms();
        }
        double left_ms = phase_timeout_s * 1e3 - (bench_now_ms() - phase_start);
        if (left_ms <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd pfd = {fds[0], POLLIN, 0};
        int pr = poll(&pfd, 1, left_ms > 1e9 ? 1000000000 : (int)left_ms + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) continue; /* the loop head sees the deadline */
        char buf[4096];
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* EOF: the child exited (or closed the pipe) */
        pending.append(buf, (size_t)n);
        size_t nl;
        while ((nl = pending.find('\n')) != std::string::npos) {
            parse_line(pending.substr(0, nl), r, done, failed);
            pending.erase(0, nl + 1);
        }
    }
    close(fds[0]);
    if (timed_out) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.elapsed_s = (bench_now_ms() - start) / 1e3;
    if (timed_out) {
        char msg[128];
        snprintf(msg, sizeof msg, "timeout: %s took over %.0f s", last_phase.c_str(),
                 phase_timeout_s);
        r.outcome = ChildReport::TIMEOUT;
        r.error = msg;
    } else if (failed) {
        r.outcome = ChildReport::FAILED;
    } else if (done && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        r.outcome = ChildReport::OK;
    } else {
        r.outcome = ChildReport::CRASHED;
        if (WIFSIGNALED(status))
            r.error = std::string("crashed in ") + r.phase + ": " + strsignal(WTERMSIG(status));
        else
            r.error = "crashed in " + r.phase + ": exit status " +
                      std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    return r;
}
