/*
 * sbuf.c - owns et_sbuf's appends (see sbuf.h): clamped in a fixed buffer,
 * doubling in a growing one.
 */
#include "base/sbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void et_sbuf_init(et_sbuf *b)
{
    memset(b, 0, sizeof *b);
}

void et_sbuf_fixed(et_sbuf *b, char *buf, size_t cap)
{
    memset(b, 0, sizeof *b);
    b->p = buf;
    b->cap = cap;
    b->fixed = true;
    if (cap)
        buf[0] = '\0';
}

/* Growing buffer: room for `need` more bytes and a NUL. */
static bool reserve(et_sbuf *b, size_t need)
{
    if (b->len + need + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + need + 1)
        cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) {
        b->truncated = true;
        return false;
    }
    b->p = q;
    b->cap = cap;
    return true;
}

void et_sbuf_vprintf(et_sbuf *b, const char *fmt, va_list ap)
{
    if (b->fixed) {
        if (b->cap == 0 || b->len + 1 >= b->cap) {
            if (vsnprintf(NULL, 0, fmt, ap) != 0)
                b->truncated = true;
            return;
        }
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->p + b->len, room, fmt, ap);
        if (n < 0) {
            b->p[b->len] = '\0';
            b->truncated = true;
        } else if ((size_t)n >= room) {
            b->len = b->cap - 1;
            b->truncated = true;
        } else {
            b->len += (size_t)n;
        }
        return;
    }
    if (b->truncated)
        return;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        b->truncated = true;
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void et_sbuf_printf(et_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    et_sbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

void et_sbuf_puts(et_sbuf *b, const char *s)
{
    et_sbuf_printf(b, "%s", s);
}

char *et_sbuf_take(et_sbuf *b)
{
    if (b->fixed)
        return NULL;
    char *p = b->p;
    bool bad = b->truncated || !p;
    et_sbuf_init(b);
    if (bad) {
        free(p);
        return NULL;
    }
    return p;
}

void et_sbuf_free(et_sbuf *b)
{
    if (b->fixed) {
        b->len = 0;
        b->truncated = false;
        if (b->cap)
            b->p[0] = '\0';
        return;
    }
    free(b->p);
    et_sbuf_init(b);
}
