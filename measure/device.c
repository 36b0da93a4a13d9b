/*
 * device.c - the thin wrappers over a backend's function table: argument
 * checks common to every backend, then the backend's slot. Every wrapper
 * accepts err == NULL. Opening and listing devices is registry.c's.
 */
#include "measure/backend.h"
#include "measure/backend_impl.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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
        return et_errorf(err, ET_ERR_INPUT,
                         "cannot allocate a buffer of 0 bytes");
    return d->ops->buffer_alloc(d->ctx, bytes, out, err);
}

et_status et_buffer_write(et_device *d, et_buffer *b, size_t off,
                          const void *src, size_t n, et_error *err)
{
    et_error scratch;
    PREPARE_ERR(err, scratch);
    if (!b || (!src && n))
        return et_errorf(err, ET_ERR_INPUT, "buffer write: NULL pointer");
    return d->ops->buffer_write(d->ctx, b, off, src, n, err);
}

et_status et_buffer_read(et_device *d, et_buffer *b, size_t off, void *dst,
                         size_t n, et_error *err)
{
    et_error scratch;
    PREPARE_ERR(err, scratch);
    if (!b || (!dst && n))
        return et_errorf(err, ET_ERR_INPUT, "buffer read: NULL pointer");
    return d->ops->buffer_read(d->ctx, b, off, dst, n, err);
}

et_status et_buffer_fill(et_device *d, et_buffer *b, size_t off,
                         const void *pattern, size_t psize, size_t n,
                         et_error *err)
{
    et_error scratch;
    PREPARE_ERR(err, scratch);
    if (!b || !pattern)
        return et_errorf(err, ET_ERR_INPUT, "buffer fill: NULL pointer");
    if ((psize != 1 && psize != 2 && psize != 4 && psize != 8 &&
         psize != 16) ||
        off % psize || n % psize)
        return et_errorf(err, ET_ERR_INPUT,
                         "buffer fill: a %zu-byte pattern over %zu bytes at "
                         "offset %zu (the pattern must be 1, 2, 4, 8 or 16 "
                         "bytes and divide both)",
                         psize, n, off);
    if (n == 0)
        return ET_OK;
    if (d->ops->buffer_fill)
        return d->ops->buffer_fill(d->ctx, b, off, pattern, psize, n, err);
    /* from the host, one chunk at a time */
    size_t chunk = n < ((size_t)1 << 20) ? n : ((size_t)1 << 20);
    unsigned char *h = malloc(chunk);
    if (!h)
        return et_errorf(err, ET_ERR_NOMEM, "buffer fill: out of memory");
    for (size_t i = 0; i < chunk; i += psize)
        memcpy(h + i, pattern, psize);
    et_status st = ET_OK;
    for (size_t done = 0; done < n && st == ET_OK; done += chunk) {
        size_t m = n - done < chunk ? n - done : chunk;
        st = d->ops->buffer_write(d->ctx, b, off + done, h, m, err);
    }
    free(h);
    return st;
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
        return et_errorf(err, ET_ERR_INPUT,
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
        return et_errorf(err, ET_ERR_LAUNCH,
                         "launch: missing program, geometry or arguments");
    if (nargs > ET_MAX_KERNEL_ARGS)
        return et_errorf(err, ET_ERR_LAUNCH,
                         "launch: %d arguments, at most %d supported",
                         nargs, ET_MAX_KERNEL_ARGS);
    if (geom->ndim < 1 || geom->ndim > 3)
        return et_errorf(err, ET_ERR_LAUNCH,
                         "launch: %d dimensions, expected 1 to 3",
                         geom->ndim);
    for (int i = 0; i < geom->ndim; i++) {
        if (geom->global[i] < 1 ||
            (geom->has_local && geom->local[i] < 1))
            return et_errorf(
                err, ET_ERR_LAUNCH,
                "launch: dimension %d has global %lld, local %lld; both "
                "must be >= 1",
                i, (long long)geom->global[i],
                (long long)(geom->has_local ? geom->local[i] : 1));
    }
    for (int i = 0; i < nargs; i++)
        if (!args[i])
            return et_errorf(err, ET_ERR_LAUNCH,
                             "launch: argument %d is a NULL buffer", i);
    if (seconds)
        *seconds = 0.0;
    return d->ops->launch(d->ctx, p, geom, args, offsets, nargs, seconds,
                          err);
}
