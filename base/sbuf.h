/*
 * sbuf.h - owns et_sbuf, the one string buffer for text built piece by
 * piece (generated kernel source, expressions, messages).
 *
 * Two kinds:
 *   - fixed: over a caller's array (et_sbuf_fixed). An append that does
 *     not fit is cut at the end of the array, the text stays
 *     NUL-terminated, and `truncated` is set; no append ever writes past
 *     the array, however many follow.
 *   - growing: on the heap (et_sbuf_init or a zero et_sbuf); it doubles as
 *     needed. When an allocation fails, `truncated` is set and later
 *     appends do nothing. The caller takes the text with et_sbuf_take (then
 *     frees it with free()) or drops it with et_sbuf_free.
 *
 * `len` is the length of the text held, `p` the text (NULL in a growing
 * buffer nothing was appended to).
 */
#ifndef ET_BASE_SBUF_H
#define ET_BASE_SBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct et_sbuf {
    char *p;
    size_t len;
    size_t cap;
    bool fixed;     /* p is the caller's array of cap bytes */
    bool truncated; /* an append was cut (fixed) or an allocation failed */
} et_sbuf;

/* An empty growing buffer (the same as a zero-initialized et_sbuf). */
void et_sbuf_init(et_sbuf *b);

/* An empty fixed buffer over buf[cap]; buf[0] is set to '\0' (cap > 0). */
void et_sbuf_fixed(et_sbuf *b, char *buf, size_t cap);

/* Appends printf-formatted text. */
void et_sbuf_printf(et_sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void et_sbuf_vprintf(et_sbuf *b, const char *fmt, va_list ap);

/* Appends s as it is. */
void et_sbuf_puts(et_sbuf *b, const char *s);

/* Growing buffer: returns its text, which the caller frees with free(), and
 * leaves the buffer empty; NULL (and the text freed) when it was truncated
 * or nothing was appended. */
char *et_sbuf_take(et_sbuf *b);

/* Growing buffer: frees the text. Fixed buffer: empties it. */
void et_sbuf_free(et_sbuf *b);

#endif
