/* wire.c — bytes read and written by length (see wire.h). */
/* write: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "runtime/wire.h"

#include <errno.h>
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
