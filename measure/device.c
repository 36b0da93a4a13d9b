/*
 * device.c - the backend-independent half of the device layer: device
 * specs, opening and listing devices, and the thin wrappers over a
 * backend's function table. Every wrapper accepts err == NULL.
 */
#include "measure/backend.h"
#include "measure/device_impl.h"

#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <strings.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared helpers ---------------------------------------------------- */

et_status et_error_set(et_error *err, et_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return status;
}

void et_error_append(et_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    size_t used = strnlen(err->msg, sizeof err->msg);
    if (used + 1 >= sizeof err->msg)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + used, sizeof err->msg - used, fmt, ap);
    va_end(ap);
}

void et_notes_add(char *notes, size_t cap, const char *fmt, ...)
{
    if (!notes || cap == 0)
        return;
    size_t used = strnlen(notes, cap);
    if (used + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(notes + used, cap - used, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    used = strnlen(notes, cap);
    if (used + 1 < cap) {
        notes[used] = '\n';
        notes[used + 1] = '\0';
    }
}

bool et_str_icontains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return true;
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return false;
}

bool et_range_ok(size_t bytes, size_t off, size_t n)
{
    return off <= bytes && n <= bytes - off;
}

void et_log_first_error(const char *log, char *out, size_t cap)
{
    if (cap == 0)
        return;
    out[0] = '\0';
    if (!log)
        return;
    const char *first_nonempty = NULL, *hit = NULL;
    for (const char *line = log; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *p = line;
        while (p < line + len && isspace((unsigned char)*p))
            p++;
        if (p < line + len && !first_nonempty)
            first_nonempty = line;
        for (const char *q = line; q + 5 <= line + len; q++) {
            if (strncasecmp(q, "error", 5) == 0) {
                hit = line;
                break;
            }
        }
        if (hit)
            break;
        line = end ? end + 1 : line + len;
    }
    const char *pick = hit ? hit : first_nonempty;
    if (!pick)
        return;
    size_t len = strcspn(pick, "\n");
    while (len > 0 && isspace((unsigned char)pick[len - 1]))
        len--;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, pick, len);
    out[len] = '\0';
}

/* ---- device specs ------------------------------------------------------ */

/* Parses a whole string of decimal digits into *out (0..INT_MAX). */
static bool parse_index(const char *s, size_t len, int *out)
{
    if (len == 0)
        return false;
    long long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
        if (v > INT_MAX)
            return false;
    }
    *out = (int)v;
    return true;
}

static et_status spec_error(et_error *err, const char *spec, const char *why)
{
    return et_error_set(err, ET_ERR_INPUT,
                        "malformed device spec '%s': %s (expected opencl:N, "
                        "opencl:P:D, opencl:NAME or cuda:N)",
                        spec, why);
}

et_status et_device_spec_parse(const char *spec, et_device_spec *out,
                               et_error *err)
{
    memset(out, 0, sizeof *out);
    out->backend = ET_BACKEND_OPENCL;
    out->kind = ET_SPEC_DEFAULT;
    if (!spec || !*spec)
        return ET_OK;

    const char *colon = strchr(spec, ':');
    size_t blen = colon ? (size_t)(colon - spec) : strlen(spec);
    if (blen == 6 && strncmp(spec, "opencl", 6) == 0)
        out->backend = ET_BACKEND_OPENCL;
    else if (blen == 4 && strncmp(spec, "cuda", 4) == 0)
        out->backend = ET_BACKEND_CUDA;
    else
        return spec_error(err, spec, "unknown backend");
    if (!colon)
        return ET_OK;

    const char *sel = colon + 1;
    if (!*sel)
        return spec_error(err, spec, "nothing after ':'");
    bool numeric = isdigit((unsigned char)sel[0]) || sel[0] == '-' ||
                   sel[0] == '+';

    if (out->backend == ET_BACKEND_CUDA) {
        if (!parse_index(sel, strlen(sel), &out->index))
            return spec_error(err, spec,
                              "a CUDA device is chosen by its index >= 0");
        out->kind = ET_SPEC_INDEX;
        return ET_OK;
    }

    if (numeric) {
        const char *c2 = strchr(sel, ':');
        if (!c2) {
            if (!parse_index(sel, strlen(sel), &out->index))
                return spec_error(err, spec,
                                  "a device index is an integer >= 0");
            out->kind = ET_SPEC_INDEX;
            return ET_OK;
        }
        if (!parse_index(sel, (size_t)(c2 - sel), &out->platform) ||
            !parse_index(c2 + 1, strlen(c2 + 1), &out->device))
            return spec_error(err, spec,
                              "platform and device are integers >= 0");
        out->kind = ET_SPEC_PLATFORM_DEVICE;
        return ET_OK;
    }

    size_t nlen = strlen(sel);
    size_t lead = strspn(sel, " \t");
    if (lead == nlen)
        return spec_error(err, spec, "empty device name");
    if (nlen >= sizeof out->name)
        return spec_error(err, spec, "device name too long");
    memcpy(out->name, sel, nlen + 1);
    out->kind = ET_SPEC_NAME;
    return ET_OK;
}

/* ---- open, close, list ------------------------------------------------- */

/*
 * PoCL keeps compiled kernels in $POCL_CACHE_DIR, by default under
 * ~/.cache/pocl, which grows without bound. Unless the user chose a
 * directory, eintune points PoCL at a private one of its own,
 * $XDG_CACHE_HOME/eintune/pocl (0700), and empties it when it has grown
 * past ET_POCL_CACHE_MAX bytes. Done before the first OpenCL call of the
 * process, while no driver thread runs (setenv is not thread-safe).
 */
#define ET_POCL_CACHE_MAX ((int64_t)1 << 30)

static int64_t g_cache_bytes;

static int cache_sum(const char *path, const struct stat *sb, int flag,
                     struct FTW *ftw)
{
    (void)path;
    (void)ftw;
    if (flag == FTW_F)
        g_cache_bytes += (int64_t)sb->st_size;
    return 0;
}

static int cache_remove(const char *path, const struct stat *sb, int flag,
                        struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    if (ftw->level > 0)
        remove(path);
    return 0;
}

static void pocl_cache_setup(void)
{
    static int done;
    if (done || getenv("POCL_CACHE_DIR"))
        return;
    done = 1;
    char dir[4096];
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        snprintf(dir, sizeof dir, "%s/eintune", xdg);
    else if (home && home[0] == '/')
        snprintf(dir, sizeof dir, "%s/.cache/eintune", home);
    else
        return;
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        mkdir(parent, 0700);
    }
    mkdir(dir, 0700);
    size_t n = strlen(dir);
    if (n + 7 >= sizeof dir)
        return;
    memcpy(dir + n, "/pocl", 6);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return;
    g_cache_bytes = 0;
    nftw(dir, cache_sum, 16, FTW_PHYS);
    if (g_cache_bytes > ET_POCL_CACHE_MAX)
        nftw(dir, cache_remove, 16, FTW_PHYS | FTW_DEPTH);
    setenv("POCL_CACHE_DIR", dir, 0);
}

et_status et_device_open(const char *spec, et_device **out, et_error *err)
{
    et_error scratch;
    if (!err)
        err = &scratch;
    err->msg[0] = '\0';
    *out = NULL;

    et_device_spec parsed;
    et_status st = et_device_spec_parse(spec, &parsed, err);
    if (st != ET_OK)
        return st;
    pocl_cache_setup();

    et_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return et_error_set(err, ET_ERR_NOMEM, "out of memory");
    switch (parsed.backend) {
    case ET_BACKEND_OPENCL: st = et_opencl_open(&parsed, dev, err); break;
    case ET_BACKEND_CUDA: st = et_cuda_open(&parsed, dev, err); break;
    default:
        st = et_error_set(err, ET_ERR_INTERNAL, "unknown backend %d",
                          (int)parsed.backend);
        break;
    }
    if (st != ET_OK) {
        free(dev);
        return st;
    }
    *out = dev;
    return ET_OK;
}

void et_device_close(et_device *dev)
{
    if (!dev)
        return;
    if (dev->ops && dev->ops->close)
        dev->ops->close(dev->ctx);
    free(dev);
}

et_status et_device_list(et_device_info *out, int cap, int *n, char *notes,
                         size_t notes_cap)
{
    *n = 0;
    if (notes && notes_cap)
        notes[0] = '\0';
    if (cap < 0 || (cap > 0 && !out))
        return ET_ERR_INPUT;
    pocl_cache_setup();
    et_opencl_list(out, cap, n, notes, notes_cap);
    et_cuda_list(out, cap, n, notes, notes_cap);
    return ET_OK;
}

/* ---- wrappers ---------------------------------------------------------- */

#define PREPARE_ERR(err, scratch)                                           \
    do {                                                                    \
        if (!(err))                                                         \
            (err) = &(scratch);                                             \
        (err)->msg[0] = '\0';                                               \
    } while (0)

et_status et_buffer_alloc(et_device *d, size_t bytes, et_buffer **out,
                          et_error *err)
{
    et_error scratch;
    PREPARE_ERR(err, scratch);
    *out = NULL;
    if (bytes == 0)
        return et_error_set(err, ET_ERR_INPUT,
                            "cannot allocate a buffer of 0 bytes");
    return d->ops->buffer_alloc(d->ctx, bytes, out, err);
}

et_status et_buffer_write(et_device *d, et_buffer *b, size_t off,
                          const void *src, size_t n, et_error *err)
{
    et_error scratch;
    PREPARE_ERR(err, scratch);
    if (!b || (!src && n))
        return et_error_set(err, ET_ERR_INPUT, "buffer write: NULL pointer");
    return d->ops->buffer_write(d->ctx, b, off, src, n, err);
}

et_status et_buffer_read(et_device *d, et_buffer *b, size_t off, void *dst,
                         size_t n, et_error *err)
{
    et_error scratch;
    PREPARE_ERR(err, scratch);
    if (!b || (!dst && n))
        return et_error_set(err, ET_ERR_INPUT, "buffer read: NULL pointer");
    return d->ops->buffer_read(d->ctx, b, off, dst, n, err);
}

void et_buffer_free(et_device *d, et_buffer *b)
{
    if (d && b)
        d->ops->buffer_free(d->ctx, b);
}

et_status et_program_build(et_device *d, const char *source,
                           const char *name, et_program **out, et_error *err)
{
    et_error scratch;
    PREPARE_ERR(err, scratch);
    *out = NULL;
    if (!source || !name || !*name)
        return et_error_set(err, ET_ERR_INPUT,
                            "program build: missing source or kernel name");
    return d->ops->program_build(d->ctx, source, name, out, err);
}

void et_program_free(et_device *d, et_program *p)
{
    if (d && p)
        d->ops->program_free(d->ctx, p);
}

et_status et_launch_kernel(et_device *d, et_program *p,
                           const et_launch *geom, et_buffer *const *args,
                           const size_t *offsets, int nargs, double *seconds,
                           et_error *err)
{
    et_error scratch;
    PREPARE_ERR(err, scratch);
    if (!p || !geom || nargs < 0 || (nargs > 0 && !args))
        return et_error_set(err, ET_ERR_LAUNCH,
                            "launch: missing program, geometry or arguments");
    if (nargs > ET_MAX_KERNEL_ARGS)
        return et_error_set(err, ET_ERR_LAUNCH,
                            "launch: %d arguments, at most %d supported",
                            nargs, ET_MAX_KERNEL_ARGS);
    if (geom->ndim < 1 || geom->ndim > 3)
        return et_error_set(err, ET_ERR_LAUNCH,
                            "launch: %d dimensions, expected 1 to 3",
                            geom->ndim);
    for (int i = 0; i < geom->ndim; i++) {
        if (geom->global[i] < 1 ||
            (geom->has_local && geom->local[i] < 1))
            return et_error_set(
                err, ET_ERR_LAUNCH,
                "launch: dimension %d has global %lld, local %lld; both "
                "must be >= 1",
                i, (long long)geom->global[i],
                (long long)(geom->has_local ? geom->local[i] : 1));
    }
    for (int i = 0; i < nargs; i++)
        if (!args[i])
            return et_error_set(err, ET_ERR_LAUNCH,
                                "launch: argument %d is a NULL buffer", i);
    if (seconds)
        *seconds = 0.0;
    return d->ops->launch(d->ctx, p, geom, args, offsets, nargs, seconds,
                          err);
}
