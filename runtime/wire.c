/* wire.c — bytes read and written by length (see wire.h). */
/* write: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "runtime/wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const unsigned char *pm_wire_take(pm_wire_reader *r, uint64_t n)
{
    if (!r->ok || n > (uint64_t)(r->end - r->p)) {
        r->ok = false;
        return NULL;
    }
    const unsigned char *at = r->p;
    r->p += n;
    return at;
}

uint64_t pm_wire_take_u64(pm_wire_reader *r)
{
    uint64_t v = 0;
    const unsigned char *at = pm_wire_take(r, sizeof v);
    if (at)
        memcpy(&v, at, sizeof v);
    return v;
}

const unsigned char *pm_wire_take_field(pm_wire_reader *r, uint64_t *n)
{
    *n = pm_wire_take_u64(r);
    return pm_wire_take(r, *n);
}

void pm_wire_put(pm_wire_writer *w, const void *data, size_t n)
{
    if (w->failed)
        return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + n)
            cap *= 2;
        unsigned char *grown = realloc(w->data, cap);
        if (!grown) {
            w->failed = true;
            return;
        }
        w->data = grown;
        w->cap = cap;
    }
    memcpy(w->data + w->len, data, n);
    w->len += n;
}

void pm_wire_put_u64(pm_wire_writer *w, uint64_t v)
{
    pm_wire_put(w, &v, sizeof v);
}

void pm_wire_put_field(pm_wire_writer *w, const void *data, size_t n)
{
    pm_wire_put_u64(w, n);
    pm_wire_put(w, data, n);
}

bool pm_wire_write_all(int fd, const void *data, size_t size)
{
    const unsigned char *p = data;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        size -= (size_t)n;
    }
    return true;
}
