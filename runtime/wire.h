/* wire.h — bytes read and written by length, for the disk cache's files and the compile
 * helper's messages (runtime/disk_cache.c, runtime/isolate.c, runtime/isolate_helper.c).
 *
 * Promise: a pm_wire_reader never reads past its end: a take that does not fit returns
 * NULL (0 for a number), clears `ok`, and every later take fails too, so a parser checks
 * `ok` once at the end. A pm_wire_writer that runs out of memory sets `failed` and writes
 * nothing more, so a writer checks `failed` once at the end. pm_wire_write_all writes every
 * byte or says it could not.
 */
#ifndef PM_RUNTIME_WIRE_H
#define PM_RUNTIME_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pm_wire_reader {
    const unsigned char *p, *end;
    bool ok;
} pm_wire_reader;

static inline pm_wire_reader pm_wire_reader_new(const unsigned char *data, size_t size)
{
    return (pm_wire_reader){data, data + size, true};
}

/* The next n bytes (pointing into the data), or NULL. */
const unsigned char *pm_wire_take(pm_wire_reader *r, uint64_t n);
/* The next 8 bytes as a host-order u64, or 0. */
uint64_t pm_wire_take_u64(pm_wire_reader *r);
/* A u64 length, then that many bytes: the bytes, *n the length (NULL when short). */
const unsigned char *pm_wire_take_field(pm_wire_reader *r, uint64_t *n);

/* A growing byte string, empty when zeroed; the caller frees data. */
typedef struct pm_wire_writer {
    unsigned char *data;
    size_t len, cap;
    bool failed;
} pm_wire_writer;

/* Appends n bytes. */
void pm_wire_put(pm_wire_writer *w, const void *data, size_t n);
/* Appends v as 8 host-order bytes. */
void pm_wire_put_u64(pm_wire_writer *w, uint64_t v);
/* Appends n as a u64 length, then the n bytes: what pm_wire_take_field reads. */
void pm_wire_put_field(pm_wire_writer *w, const void *data, size_t n);

/* Every byte to fd (retrying interrupted and short writes); false on an error. */
bool pm_wire_write_all(int fd, const void *data, size_t size);

#endif
