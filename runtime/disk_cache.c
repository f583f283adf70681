/* disk_cache.c — kernels as files (see disk_cache.h).
 *
 * File layout (host byte order: the key's environment names the host, so a file from
 * another architecture is a key mismatch before its numbers matter):
 *   "PMKCACHE"  u32 format version  u32 0
 *   u64 key length, key bytes
 *   u64 entry length, entry bytes   i64 nslots
 *   u64 number of objects (1..PM_DISK_MAX_PARTS: the parts of a kernel compiled split,
 *       runtime/split_compile.h), then for each: u64 object length, object bytes
 *   u64 FNV-1a of every byte above
 * Version 2 added the object count (version 1 files held exactly one object and are
 * rejected, then rewritten by the compile that follows).
 */
/* fdopen, mkstemp, rename, nftw-free directory walking: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "runtime/disk_cache.h"

#include "frontend/canon.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char magic[8] = {'P', 'M', 'K', 'C', 'A', 'C', 'H', 'E'};
enum { FORMAT_VERSION = 2 };
static const char suffix[] = ".pmk";

/* dir/<16 hex digits of the key's hash>.pmk */
static bool file_path(const char *dir, const char *key, size_t key_len, char *buf, size_t size)
{
    uint64_t h = pm_hash_bytes(PM_HASH_SEED, key, key_len);
    int n = snprintf(buf, size, "%s/%016llx%s", dir, (unsigned long long)h, suffix);
    return n > 0 && (size_t)n < size;
}

void pm_disk_prepare(const char *dir)
{
    if (dir && *dir && mkdir(dir, 0755) != 0 && errno != EEXIST) {
        /* unusable: every read misses and every write fails, quietly */
    }
}

/* ---- reading --------------------------------------------------------------------------- */

typedef struct reader {
    const unsigned char *p, *end;
    bool ok;
} reader;

static const unsigned char *take(reader *r, uint64_t n)
{
    if (!r->ok || n > (uint64_t)(r->end - r->p)) {
        r->ok = false;
        return NULL;
    }
    const unsigned char *at = r->p;
    r->p += n;
    return at;
}

static uint64_t take_u64(reader *r)
{
    uint64_t v = 0;
    const unsigned char *at = take(r, sizeof v);
    if (at)
        memcpy(&v, at, sizeof v);
    return v;
}

/* The whole file into memory; NULL when missing, unreadable or too large. */
static unsigned char *read_file(const char *path, size_t *size, bool *exists)
{
    *exists = false;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    *exists = true;
    unsigned char *data = NULL;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && st.st_size > 0 && st.st_size <= PM_DISK_MAX_FILE) {
        data = malloc((size_t)st.st_size);
        if (data && fread(data, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
            free(data);
            data = NULL;
        }
        *size = (size_t)st.st_size;
    }
    fclose(f);
    return data;
}

pm_disk_result pm_disk_read(const char *dir, const char *key, size_t key_len,
                            pm_disk_kernel *out)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    if (!dir || !file_path(dir, key, key_len, path, sizeof path))
        return PM_DISK_MISS;
    size_t size = 0;
    bool exists;
    unsigned char *data = read_file(path, &size, &exists);
    if (!data)
        return exists ? PM_DISK_REJECTED : PM_DISK_MISS;

    reader r = {data, data + size, true};
    const unsigned char *m = take(&r, sizeof magic);
    uint64_t version = take_u64(&r);
    uint64_t klen = take_u64(&r);
    const unsigned char *k = take(&r, klen);
    uint64_t elen = take_u64(&r);
    const unsigned char *entry = take(&r, elen);
    uint64_t nslots = take_u64(&r);
    uint64_t nparts = take_u64(&r);
    const unsigned char *objects[PM_DISK_MAX_PARTS];
    uint64_t lens[PM_DISK_MAX_PARTS], olen = 0;
    bool parts_ok = r.ok && nparts >= 1 && nparts <= PM_DISK_MAX_PARTS;
    for (uint64_t i = 0; parts_ok && i < nparts; i++) {
        lens[i] = take_u64(&r);
        objects[i] = take(&r, lens[i]);
        parts_ok = r.ok && lens[i] > 0;
        olen += lens[i];
    }
    size_t checked = r.ok ? (size_t)(r.p - data) : 0;
    uint64_t sum = take_u64(&r);
    bool valid = r.ok && r.p == r.end && memcmp(m, magic, sizeof magic) == 0 &&
                 version == FORMAT_VERSION && klen == key_len && memcmp(k, key, key_len) == 0 &&
                 elen > 0 && elen < sizeof out->entry && memchr(entry, '\0', elen) == NULL &&
                 nslots <= INT32_MAX && parts_ok &&
                 sum == pm_hash_bytes(PM_HASH_SEED, data, checked);
    if (valid && (out->object = malloc(olen)) != NULL) {
        memcpy(out->entry, entry, elen);
        out->entry[elen] = '\0';
        out->nslots = (int32_t)nslots;
        out->object_size = 0;
        for (uint64_t i = 0; i < nparts; i++) {
            memcpy((char *)out->object + out->object_size, objects[i], lens[i]);
            out->object_size += lens[i];
            out->part_sizes[i] = lens[i];
        }
        out->nparts = (int)nparts;
        /* A hit is a use: the folder's bound removes the least recently used first. */
        struct timespec now[2] = {{.tv_nsec = UTIME_NOW}, {.tv_nsec = UTIME_NOW}};
        utimensat(AT_FDCWD, path, now, 0);
    }
    free(data);
    return out->object ? PM_DISK_HIT : PM_DISK_REJECTED;
}

/* ---- writing --------------------------------------------------------------------------- */

typedef struct writer {
    FILE *f;
    uint64_t sum;
    bool ok;
} writer;

static void put(writer *w, const void *data, size_t n)
{
    if (!w->ok)
        return;
    w->sum = pm_hash_bytes(w->sum, data, n);
    w->ok = fwrite(data, 1, n, w->f) == n;
}

static void put_u64(writer *w, uint64_t v)
{
    put(w, &v, sizeof v);
}

typedef struct file_info {
    char name[64];
    int64_t size;
    struct timespec mtime;
} file_info;

static int older_first(const void *a, const void *b)
{
    const file_info *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

static bool is_kernel_file(const char *name)
{
    size_t n = strlen(name), s = sizeof suffix - 1;
    return n > s && strcmp(name + n - s, suffix) == 0;
}

/* Keeps the folder's kernel files within max_bytes (oldest out first); removes
 * temporary files older than ten minutes (writers that crashed). Best effort. */
static void bound_folder(const char *dir, int64_t max_bytes)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    file_info *files = NULL;
    size_t n = 0, cap = 0;
    int64_t total = 0;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char path[4096];
        bool temp = strstr(de->d_name, ".pmk.tmp.") != NULL;
        if ((!is_kernel_file(de->d_name) && !temp) || strlen(de->d_name) >= sizeof files->name ||
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path)
            continue;
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        if (temp) {
            if (now - st.st_mtime > 600)
                unlink(path);
            continue;
        }
        if (n == cap) {
            size_t grown_cap = cap ? 2 * cap : 64;
            file_info *grown = realloc(files, grown_cap * sizeof *grown);
            if (!grown)
                break;
            files = grown;
            cap = grown_cap;
        }
        snprintf(files[n].name, sizeof files[n].name, "%s", de->d_name);
        files[n].size = (int64_t)st.st_size;
        files[n].mtime = st.st_mtim;
        total += files[n].size;
        n++;
    }
    closedir(d);
    if (total > max_bytes && n > 0) {
        qsort(files, n, sizeof *files, older_first);
        for (size_t i = 0; i < n && total > max_bytes; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
            if (unlink(path) == 0 || errno == ENOENT) /* another process may be first */
                total -= files[i].size;
        }
    }
    free(files);
}

bool pm_disk_write(const char *dir, const char *key, size_t key_len, const pm_disk_kernel *k,
                   int64_t max_bytes)
{
    char path[4096], temp[4200];
    if (!dir || !k->object || k->nparts < 1 || k->nparts > PM_DISK_MAX_PARTS ||
        !file_path(dir, key, key_len, path, sizeof path))
        return false;
    /* Unique among writers: mkstemp picks the last six characters. */
    if (snprintf(temp, sizeof temp, "%s.tmp.XXXXXX", path) >= (int)sizeof temp)
        return false;
    int fd = mkstemp(temp);
    if (fd < 0)
        return false;
    writer w = {fdopen(fd, "wb"), PM_HASH_SEED, true};
    if (!w.f) {
        close(fd);
        unlink(temp);
        return false;
    }
    size_t elen = strlen(k->entry);
    put(&w, magic, sizeof magic);
    put_u64(&w, FORMAT_VERSION);
    put_u64(&w, key_len);
    put(&w, key, key_len);
    put_u64(&w, elen);
    put(&w, k->entry, elen);
    put_u64(&w, (uint64_t)k->nslots);
    put_u64(&w, (uint64_t)k->nparts);
    const char *at = k->object;
    for (int i = 0; i < k->nparts; i++) {
        put_u64(&w, k->part_sizes[i]);
        put(&w, at, k->part_sizes[i]);
        at += k->part_sizes[i];
    }
    uint64_t sum = w.sum;
    put_u64(&w, sum);
    bool ok = w.ok && fflush(w.f) == 0 && fsync(fileno(w.f)) == 0;
    ok = fclose(w.f) == 0 && ok;
    /* mkstemp makes the file 0600; others sharing the folder may read it. */
    ok = ok && chmod(temp, 0644) == 0 && rename(temp, path) == 0;
    if (!ok)
        unlink(temp);
    else
        bound_folder(dir, max_bytes);
    return ok;
}
