/* disk_cache.c — kernels as files (see disk_cache.h).
 *
 * File layout (host byte order: the key's environment names the host, so a file from
 * another architecture is a key mismatch before its numbers matter):
 *   "PMKCACHE"  u32 format version  u32 0
 *   u64 key length, key bytes
 *   u64 entry length, entry bytes   i64 nslots
 *   u64 number of objects (1..PM_DISK_MAX_PARTS: the parts of a kernel compiled split,
 *       runtime/split_compile.h), then for each: u64 object length, object bytes
 *   32 bytes: BLAKE2b-256 of every byte above
 * Version 3 replaced version 2's FNV-1a checksum by BLAKE2b and names files by BLAKE2b
 * of the key; older files are never looked at (other names) and age out of the folder.
 *
 * Every file operation works relative to a descriptor of the folder (openat and
 * friends), opened and checked afresh for each read or write: nobody can swap the
 * folder between the check and the use.
 */
/* openat, fstatat, renameat, fdopendir, realpath: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* realpath's PATH_MAX-free form, S_ISVTX */

#include "runtime/disk_cache.h"

#include "frontend/error.h"
#include "runtime/wire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char magic[8] = {'P', 'M', 'K', 'C', 'A', 'C', 'H', 'E'};
enum { FORMAT_VERSION = 3, DIGEST_BYTES = 32, NAME_HASH_BYTES = 16 };
static const char suffix[] = ".pmk";
static const char temp_infix[] = ".pmk.tmp.";

/* ---- the folder ------------------------------------------------------------------------ */

/* The trust rule for a folder's own status: this user's or root's, and nobody else may
 * write it (with `sticky_ok`, others may when the sticky bit keeps them from renaming
 * or removing what is not theirs: /tmp as a parent). NULL when trusted, else why not. */
static const char *folder_distrust(const struct stat *st, bool sticky_ok)
{
    if (!S_ISDIR(st->st_mode))
        return "is not a folder";
    if (st->st_uid != geteuid() && st->st_uid != 0)
        return "is owned by another user";
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(sticky_ok && (st->st_mode & S_ISVTX)))
        return "is writable by group or others";
    return NULL;
}

/* mkdir -p with mode 0700 for what is missing. */
static int make_folders(const char *dir)
{
    char *path = strdup(dir);
    if (!path)
        return ENOMEM;
    int error = 0;
    for (char *at = path + 1; error == 0; at++) {
        bool end = *at == '\0';
        if (*at != '/' && !end)
            continue;
        *at = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            error = errno;
        if (end)
            break;
        *at = '/';
    }
    free(path);
    return error;
}

/* The error of a refused folder; st (or NULL) is the status of the folder at fault. */
static pm_status refuse(pm_error *err, const char *who, const char *what, const char *dir,
                        const char *reason, const struct stat *st)
{
    if (st)
        return pm_error_set(err, PM_ERR_ARGUMENT,
                            "%s: %s \"%s\" is not used: %s (owner uid %u, mode %04o; a cache "
                            "folder must belong to this user (uid %u) or root, and no folder "
                            "on its path may be writable by others)",
                            who, what, dir, reason, (unsigned)st->st_uid,
                            (unsigned)(st->st_mode & 07777), (unsigned)geteuid());
    return pm_error_set(err, PM_ERR_ARGUMENT, "%s: %s \"%s\" is not used: %s", who, what, dir,
                        reason);
}

/* Every folder above `resolved` (a canonical path), from its parent up to "/". */
static pm_status check_parents(const char *resolved, const char *who, const char *what,
                               const char *dir, pm_error *err)
{
    char *path = strdup(resolved);
    if (!path)
        return pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", who);
    pm_status s = PM_OK;
    char *slash;
    while (s == PM_OK && (slash = strrchr(path, '/')) != NULL) {
        if (slash == path)
            slash[1] = '\0'; /* the root */
        else
            *slash = '\0';
        struct stat st;
        bool found = stat(path, &st) == 0;
        const char *why = found ? folder_distrust(&st, true) : strerror(errno);
        if (why) {
            char reason[PATH_MAX + 128];
            snprintf(reason, sizeof reason, "the folder above it, %s, %s", path, why);
            s = refuse(err, who, what, dir, reason, found ? &st : NULL);
        }
        if (slash == path)
            break;
    }
    free(path);
    return s;
}

pm_status pm_disk_folder_check(const char *dir, const char *who, const char *what,
                               char **resolved, pm_error *err)
{
    *resolved = NULL;
    int made = make_folders(dir);
    if (made == ENOMEM)
        return pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", who);
    char *path = realpath(dir, NULL);
    char reason[256];
    if (!path) {
        snprintf(reason, sizeof reason, "%s%s", made ? "it cannot be made: " : "",
                 strerror(made ? made : errno));
        return refuse(err, who, what, dir, reason, NULL);
    }
    struct stat st;
    bool found = stat(path, &st) == 0;
    const char *why = found ? folder_distrust(&st, false) : strerror(errno);
    snprintf(reason, sizeof reason, "it %s", why ? why : "");
    pm_status s = why ? refuse(err, who, what, dir, reason, found ? &st : NULL)
                      : check_parents(path, who, what, dir, err);
    if (s != PM_OK) {
        free(path);
        return s;
    }
    *resolved = path;
    return PM_OK;
}

/* A descriptor of the folder, checked again (it may have changed since it was set);
 * -1 when it is gone or no longer trusted. */
static int open_folder(const char *dir, uid_t *owner)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || folder_distrust(&st, false) != NULL)) {
        close(fd);
        fd = -1;
    }
    if (fd >= 0)
        *owner = st.st_uid;
    return fd;
}

/* A kernel file we may read: regular, owned like the folder, written only by its owner,
 * not empty and not too large. */
static bool file_trusted(const struct stat *st, uid_t owner)
{
    return S_ISREG(st->st_mode) && st->st_uid == owner &&
           !(st->st_mode & (S_IWGRP | S_IWOTH)) && st->st_size <= PM_DISK_MAX_FILE;
}

/* <32 hex digits of BLAKE2b-128 of the key>.pmk */
static void file_name(const char *key, size_t key_len, char name[64])
{
    unsigned char h[NAME_HASH_BYTES];
    crypto_generichash(h, sizeof h, (const unsigned char *)key, key_len, NULL, 0);
    for (int i = 0; i < NAME_HASH_BYTES; i++)
        snprintf(name + 2 * i, 3, "%02x", h[i]);
    snprintf(name + 2 * NAME_HASH_BYTES, 64 - 2 * NAME_HASH_BYTES, "%s", suffix);
}

/* ---- the encoding ---------------------------------------------------------------------- */

/* The parsed fields of an encoding, pointing into it. */
typedef struct decoded {
    const unsigned char *magic, *key, *entry, *objects[PM_DISK_MAX_PARTS], *digest;
    uint64_t version, key_len, entry_len, nslots, nparts, lens[PM_DISK_MAX_PARTS];
    size_t digested;
} decoded;

static bool parse(const unsigned char *data, size_t size, decoded *d)
{
    pm_wire_reader r = pm_wire_reader_new(data, size);
    d->magic = pm_wire_take(&r, sizeof magic);
    d->version = pm_wire_take_u64(&r);
    d->key_len = pm_wire_take_u64(&r);
    d->key = pm_wire_take(&r, d->key_len);
    d->entry_len = pm_wire_take_u64(&r);
    d->entry = pm_wire_take(&r, d->entry_len);
    d->nslots = pm_wire_take_u64(&r);
    d->nparts = pm_wire_take_u64(&r);
    bool parts_ok = r.ok && d->nparts >= 1 && d->nparts <= PM_DISK_MAX_PARTS;
    for (uint64_t i = 0; parts_ok && i < d->nparts; i++) {
        d->lens[i] = pm_wire_take_u64(&r);
        d->objects[i] = pm_wire_take(&r, d->lens[i]);
        parts_ok = r.ok && d->lens[i] > 0;
    }
    d->digested = r.ok ? (size_t)(r.p - data) : 0;
    d->digest = pm_wire_take(&r, DIGEST_BYTES);
    return parts_ok && r.ok && r.p == r.end;
}

bool pm_disk_decode(const unsigned char *data, size_t size, const char *key, size_t key_len,
                    pm_disk_kernel *out)
{
    memset(out, 0, sizeof *out);
    decoded d;
    unsigned char digest[DIGEST_BYTES];
    if (!parse(data, size, &d) || memcmp(d.magic, magic, sizeof magic) != 0 ||
        d.version != FORMAT_VERSION || d.key_len != key_len ||
        memcmp(d.key, key, key_len) != 0 || d.entry_len == 0 ||
        d.entry_len >= sizeof out->entry || memchr(d.entry, '\0', d.entry_len) != NULL ||
        d.nslots > INT32_MAX)
        return false;
    crypto_generichash(digest, sizeof digest, data, d.digested, NULL, 0);
    if (sodium_memcmp(digest, d.digest, sizeof digest) != 0)
        return false;
    size_t total = 0;
    for (uint64_t i = 0; i < d.nparts; i++)
        total += d.lens[i]; /* within size: no overflow */
    if (!(out->object = malloc(total)))
        return false;
    memcpy(out->entry, d.entry, d.entry_len);
    out->entry[d.entry_len] = '\0';
    out->nslots = (int32_t)d.nslots;
    for (uint64_t i = 0; i < d.nparts; i++) {
        memcpy((char *)out->object + out->object_size, d.objects[i], d.lens[i]);
        out->object_size += d.lens[i];
        out->part_sizes[i] = d.lens[i];
    }
    out->nparts = (int)d.nparts;
    return true;
}

typedef struct writer {
    unsigned char *p;
} writer;

static void put(writer *w, const void *data, size_t n)
{
    memcpy(w->p, data, n);
    w->p += n;
}

static void put_u64(writer *w, uint64_t v)
{
    put(w, &v, sizeof v);
}

unsigned char *pm_disk_encode(const char *key, size_t key_len, const pm_disk_kernel *k,
                              size_t *size)
{
    size_t elen = strnlen(k->entry, sizeof k->entry);
    size_t n = sizeof magic + 8 * 5 + key_len + elen + 8 * (size_t)k->nparts + DIGEST_BYTES;
    if (k->nparts < 1 || k->nparts > PM_DISK_MAX_PARTS || k->object_size > SIZE_MAX - n)
        return NULL;
    n += k->object_size;
    unsigned char *data = malloc(n);
    if (!data)
        return NULL;
    writer w = {data};
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
    crypto_generichash(w.p, DIGEST_BYTES, data, (size_t)(w.p - data), NULL, 0);
    *size = n;
    return data;
}

/* ---- reading --------------------------------------------------------------------------- */

/* The whole file `name` in folder dfd, if it is one to trust; *result says why not. */
static unsigned char *read_trusted(int dfd, const char *name, uid_t owner, size_t *size,
                                   pm_disk_result *result)
{
    struct stat before, st;
    if (fstatat(dfd, name, &before, AT_SYMLINK_NOFOLLOW) != 0) {
        *result = errno == ENOENT ? PM_DISK_MISS : PM_DISK_UNTRUSTED;
        return NULL;
    }
    *result = PM_DISK_UNTRUSTED;
    if (!file_trusted(&before, owner))
        return NULL;
    /* Checked again on the open file: it may have been replaced in between. */
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    unsigned char *data = NULL;
    if (fstat(fd, &st) == 0 && file_trusted(&st, owner) && st.st_ino == before.st_ino &&
        st.st_dev == before.st_dev) {
        *result = PM_DISK_REJECTED;
        *size = (size_t)st.st_size;
        data = malloc(*size ? *size : 1);
        size_t got = 0;
        for (ssize_t r = 1; data && got < *size && r > 0; got += r > 0 ? (size_t)r : 0)
            r = read(fd, data + got, *size - got);
        if (data && got != *size) {
            free(data);
            data = NULL;
        }
    }
    close(fd);
    return data;
}

pm_disk_result pm_disk_read(const char *dir, const char *key, size_t key_len,
                            pm_disk_kernel *out)
{
    memset(out, 0, sizeof *out);
    uid_t owner;
    int dfd = dir ? open_folder(dir, &owner) : -1;
    if (dfd < 0)
        return PM_DISK_MISS;
    char name[64];
    file_name(key, key_len, name);
    size_t size = 0;
    pm_disk_result result;
    unsigned char *data = read_trusted(dfd, name, owner, &size, &result);
    if (data && pm_disk_decode(data, size, key, key_len, out)) {
        result = PM_DISK_HIT;
        /* A hit is a use: the folder's bound removes the least recently used first. */
        struct timespec now[2] = {{.tv_nsec = UTIME_NOW}, {.tv_nsec = UTIME_NOW}};
        utimensat(dfd, name, now, AT_SYMLINK_NOFOLLOW);
    }
    free(data);
    close(dfd);
    return result;
}

/* ---- writing --------------------------------------------------------------------------- */

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

/* The folder's kernel files (regular ones), into a growing array; removes temporary
 * files older than ten minutes (writers that crashed). */
static file_info *list_kernel_files(int dfd, size_t *count, int64_t *total)
{
    int walk_fd = dup(dfd);
    DIR *d = walk_fd >= 0 ? fdopendir(walk_fd) : NULL;
    if (!d) {
        if (walk_fd >= 0)
            close(walk_fd);
        return NULL;
    }
    file_info *files = NULL;
    size_t n = 0, cap = 0;
    time_t now = time(NULL);
    struct dirent *de;
    struct stat st;
    while ((de = readdir(d)) != NULL) {
        bool temp = strstr(de->d_name, temp_infix) != NULL;
        if ((!is_kernel_file(de->d_name) && !temp) || strlen(de->d_name) >= sizeof files->name ||
            fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (temp) {
            if (now - st.st_mtime > 600)
                unlinkat(dfd, de->d_name, 0);
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
        memcpy(files[n].name, de->d_name, strlen(de->d_name) + 1); /* fits: checked above */
        files[n].size = (int64_t)st.st_size;
        files[n].mtime = st.st_mtim;
        *total += files[n].size;
        n++;
    }
    closedir(d);
    *count = n;
    return files;
}

/* Keeps the folder's kernel files within max_bytes (oldest out first). Best effort. */
static void bound_folder(int dfd, int64_t max_bytes)
{
    size_t n = 0;
    int64_t total = 0;
    file_info *files = list_kernel_files(dfd, &n, &total);
    if (total > max_bytes && n > 0) {
        qsort(files, n, sizeof *files, older_first);
        for (size_t i = 0; i < n && total > max_bytes; i++)
            if (unlinkat(dfd, files[i].name, 0) == 0 || errno == ENOENT) /* another process */
                total -= files[i].size;
    }
    free(files);
}

bool pm_disk_write(const char *dir, const char *key, size_t key_len, const pm_disk_kernel *k,
                   int64_t max_bytes)
{
    uid_t owner;
    int dfd = dir && k->object ? open_folder(dir, &owner) : -1;
    if (dfd < 0)
        return false;
    size_t size = 0;
    unsigned char *data = pm_disk_encode(key, key_len, k, &size);
    char name[64], temp[128];
    file_name(key, key_len, name);
    /* Unique among writers: 64 random bits. */
    unsigned char r[8];
    randombytes_buf(r, sizeof r);
    snprintf(temp, sizeof temp, "%.*s%s%02x%02x%02x%02x%02x%02x%02x%02x",
             (int)(strlen(name) - (sizeof suffix - 1)), name, temp_infix, r[0], r[1], r[2], r[3],
             r[4], r[5], r[6], r[7]);
    /* Readable by others sharing the folder; writable by its owner only (the rule). */
    int fd = data ? openat(dfd, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)
                  : -1;
    bool ok = fd >= 0 && pm_wire_write_all(fd, data, size) && fsync(fd) == 0;
    ok = (fd < 0 || close(fd) == 0) && ok;
    ok = ok && renameat(dfd, temp, dfd, name) == 0;
    if (fd >= 0 && !ok)
        unlinkat(dfd, temp, 0);
    if (ok)
        bound_folder(dfd, max_bytes);
    free(data);
    close(dfd);
    return ok;
}
