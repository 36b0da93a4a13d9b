/*
 * npy.c - NumPy .npy files (format versions 1.0, 2.0 and 3.0).
 *
 * File layout (numpy/lib/format.py):
 *
 *   magic    "\x93NUMPY"                      6 bytes
 *   version  major, minor                     1 + 1 bytes (1.0, 2.0, 3.0)
 *   hlen     header length, little endian     2 bytes (1.0), 4 bytes (2.0+)
 *   header   a Python dict literal, ASCII (1.0, 2.0) or UTF-8 (3.0),
 *            padded with spaces and ended by '\n' so that the data starts
 *            at a multiple of 64 bytes
 *   data     elements, C or Fortran order, in the byte order of 'descr'
 *
 * Header grammar accepted here (what Python's literal syntax allows for the
 * three keys NumPy writes, no more):
 *
 *   header  := ws '{' ws [ entry ( ws ',' ws entry )* ws [','] ] ws '}' ws
 *   entry   := string ws ':' ws value
 *   string  := "'" chars "'" | '"' chars '"'       (no escapes)
 *   value   := string | 'True' | 'False' | shape
 *   shape   := '(' ws ')'                          scalar
 *            | '(' ws int ws ',' ws ')'            1-D (a Python 1-tuple)
 *            | '(' ws int ( ws ',' ws int )+ ws [','] ws ')'
 *   int     := digit+ ['L' | 'l']                   ('L': Python 2 writers)
 *   ws      := ( ' ' | '\t' | '\r' | '\n' )*
 *
 * The keys must be exactly 'descr', 'fortran_order' and 'shape', each once,
 * in any order. 'descr' is one of f2 f4 f8 with byte order '<', '>', '|',
 * '=' or none. Every other file is refused with ET_ERR_INPUT and a message
 * that names the file and the problem; nothing is read outside the buffer,
 * and memory is allocated only after the file size has been checked against
 * what the header claims.
 *
 * Writing produces exactly what NumPy 1.24's np.save writes for the same
 * array (version 1.0, keys sorted, growth padding for the first axis, data
 * aligned to 64 bytes, '\n' at the end of the header), or version 2.0 when
 * the header does not fit 1.0's 16-bit length. The file appears atomically:
 * it is written under a temporary name in the same directory and renamed
 * over the target, so a failed write leaves no partial output.
 */
#include "einsum/npy.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "npy.c assumes a little-endian host");


/* Numbers the temporaries of et_npy_save so that threads writing next to
 * the same path never pick the same name (incremented atomically). */
static unsigned npy_tmp_counter;
#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
/* Longest header accepted: NumPy writes at most a few hundred bytes (32
 * dimensions of 21 digits fit in 1 KiB); this bounds what a lying header
 * can make the reader scan or, for a pipe, buffer. */
#define NPY_MAX_HEADER 65536
#define NPY_GROWTH_DIGITS 21 /* numpy.lib.format.GROWTH_AXIS_MAX_DIGITS */

static et_status npy_fail(et_diag *d, et_status st, const char *name,
                          const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static et_status npy_fail(et_diag *d, et_status st, const char *name,
                          const char *fmt, ...)
{
    if (d) {
        char what[400];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        d->line = 0;
        d->col = 0;
        d->pos = -1;
        snprintf(d->msg, sizeof d->msg, "%.100s: %s", name, what);
    }
    return st;
}

int64_t et_array_elems(const et_array *a)
{
    if (!a || a->rank < 0 || a->rank > ET_MAX_RANK)
        return -1;
    int64_t n = 1;
    for (int r = 0; r < a->rank; r++)
        if (a->dim[r] < 0 || __builtin_mul_overflow(n, a->dim[r], &n))
            return -1;
    return n;
}

void et_array_free(et_array *a)
{
    if (!a)
        return;
    free(a->data);
    a->data = NULL;
}

/* ---- header parsing ----------------------------------------------------- */

typedef struct hdr_cursor {
    const char *p, *end;
    const char *start;
} hdr_cursor;

typedef struct npy_header {
    char descr[16];
    int have_descr, have_fortran, have_shape;
    int fortran;
    int rank;
    int64_t dim[ET_MAX_RANK];
} npy_header;

static void hdr_ws(hdr_cursor *c)
{
    while (c->p < c->end &&
           (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
        c->p++;
}

static int hdr_at(const hdr_cursor *c, char ch)
{
    return c->p < c->end && *c->p == ch;
}

/* Describes the character at the cursor for messages. */
static const char *hdr_here(const hdr_cursor *c, char *buf, size_t cap)
{
    if (c->p >= c->end)
        return "the end of the header";
    unsigned char ch = (unsigned char)*c->p;
    if (ch >= 0x20 && ch < 0x7f)
        snprintf(buf, cap, "'%c' at header offset %td", ch, c->p - c->start);
    else
        snprintf(buf, cap, "byte 0x%02x at header offset %td", ch,
                 c->p - c->start);
    return buf;
}

static et_status hdr_expect(hdr_cursor *c, char ch, const char *what,
                            const char *name, et_diag *d)
{
    if (hdr_at(c, ch)) {
        c->p++;
        return ET_OK;
    }
    char b[64];
    return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: expected %s, "
                    "found %s", what, hdr_here(c, b, sizeof b));
}

static et_status hdr_string(hdr_cursor *c, char *out, size_t cap,
                            const char *name, et_diag *d)
{
    char b[64];
    if (!hdr_at(c, '\'') && !hdr_at(c, '"'))
        return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: expected a "
                        "quoted string, found %s", hdr_here(c, b, sizeof b));
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '\\' || ch < 0x20 || ch >= 0x7f)
            return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: "
                            "unsupported character in a string: %s",
                            hdr_here(c, b, sizeof b));
        if (n + 1 >= cap)
            return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: string "
                            "at header offset %td is too long",
                            c->p - n - c->start);
        out[n++] = *c->p++;
    }
    if (c->p >= c->end)
        return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: "
                        "unterminated string");
    c->p++;
    out[n] = 0;
    return ET_OK;
}

static et_status hdr_bool(hdr_cursor *c, int *v, const char *name,
                          et_diag *d)
{
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && !memcmp(c->p, "True", 4)) {
        c->p += 4;
        *v = 1;
    } else if (left >= 5 && !memcmp(c->p, "False", 5)) {
        c->p += 5;
        *v = 0;
    } else {
        char b[64];
        return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: "
                        "'fortran_order' must be True or False, found %s",
                        hdr_here(c, b, sizeof b));
    }
    return ET_OK;
}

static et_status hdr_int(hdr_cursor *c, int64_t *v, const char *name,
                         et_diag *d)
{
    char b[64];
    if (hdr_at(c, '-'))
        return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: negative "
                        "dimension in 'shape' at header offset %td",
                        c->p - c->start);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
        return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: expected a "
                        "dimension in 'shape', found %s",
                        hdr_here(c, b, sizeof b));
    int64_t x = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        if (__builtin_mul_overflow(x, 10, &x) ||
            __builtin_add_overflow(x, *c->p - '0', &x))
            return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: "
                            "dimension too large in 'shape'");
        c->p++;
    }
    if (hdr_at(c, 'L') || hdr_at(c, 'l'))
        c->p++;
    *v = x;
    return ET_OK;
}

static et_status hdr_shape(hdr_cursor *c, npy_header *h, const char *name,
                           et_diag *d)
{
    et_status st = hdr_expect(c, '(', "'(' starting the 'shape' tuple", name,
                              d);
    if (st != ET_OK)
        return st;
    hdr_ws(c);
    h->rank = 0;
    int commas = 0;
    while (!hdr_at(c, ')')) {
        if (h->rank == ET_MAX_RANK)
            return npy_fail(d, ET_ERR_INPUT, name, "'shape' has more than "
                            "%d dimensions (the most eintune handles)",
                            ET_MAX_RANK);
        st = hdr_int(c, &h->dim[h->rank], name, d);
        if (st != ET_OK)
            return st;
        h->rank++;
        hdr_ws(c);
        if (!hdr_at(c, ','))
            break;
        c->p++;
        commas++;
        hdr_ws(c);
    }
    st = hdr_expect(c, ')', "',' or ')' in the 'shape' tuple", name, d);
    if (st != ET_OK)
        return st;
    if (h->rank == 1 && commas == 0)
        return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: 'shape' "
                        "(%" PRId64 ") is not a tuple; a 1-D shape is "
                        "written (%" PRId64 ",)", h->dim[0], h->dim[0]);
    return ET_OK;
}

static et_status hdr_parse(const char *text, size_t len, npy_header *h,
                           const char *name, et_diag *d)
{
    hdr_cursor c = {text, text + len, text};
    et_status st;
    memset(h, 0, sizeof *h);
    hdr_ws(&c);
    st = hdr_expect(&c, '{', "'{' starting the header dictionary", name, d);
    if (st != ET_OK)
        return st;
    hdr_ws(&c);
    while (!hdr_at(&c, '}')) {
        char key[32];
        const char *kpos = c.p;
        st = hdr_string(&c, key, sizeof key, name, d);
        if (st != ET_OK)
            return st;
        hdr_ws(&c);
        st = hdr_expect(&c, ':', "':' after a key", name, d);
        if (st != ET_OK)
            return st;
        hdr_ws(&c);
        int *have;
        if (!strcmp(key, "descr")) {
            have = &h->have_descr;
            if (!hdr_at(&c, '\'') && !hdr_at(&c, '"'))
                return npy_fail(d, ET_ERR_INPUT, name, "unsupported dtype: "
                                "'descr' is not a simple type string "
                                "(structured arrays are not supported; "
                                "eintune reads f2, f4, f8)");
            st = hdr_string(&c, h->descr, sizeof h->descr, name, d);
        } else if (!strcmp(key, "fortran_order")) {
            have = &h->have_fortran;
            st = hdr_bool(&c, &h->fortran, name, d);
        } else if (!strcmp(key, "shape")) {
            have = &h->have_shape;
            st = hdr_shape(&c, h, name, d);
        } else {
            return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: "
                            "unexpected key '%s' at header offset %td "
                            "(expected 'descr', 'fortran_order', 'shape')",
                            key, kpos - c.start);
        }
        if (st != ET_OK)
            return st;
        if (*have)
            return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: key "
                            "'%s' appears twice", key);
        *have = 1;
        hdr_ws(&c);
        if (!hdr_at(&c, ','))
            break;
        c.p++;
        hdr_ws(&c);
    }
    st = hdr_expect(&c, '}', "',' or '}' in the header dictionary", name, d);
    if (st != ET_OK)
        return st;
    hdr_ws(&c);
    if (c.p != c.end) {
        char b[64];
        return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: unexpected "
                        "%s after the dictionary", hdr_here(&c, b, sizeof b));
    }
    if (!h->have_descr || !h->have_fortran || !h->have_shape)
        return npy_fail(d, ET_ERR_INPUT, name, "bad .npy header: missing "
                        "key '%s'", !h->have_descr     ? "descr"
                                    : !h->have_fortran ? "fortran_order"
                                                       : "shape");
    return ET_OK;
}

/* Maps a descr to a dtype and whether the data must be byte-swapped. */
static et_status descr_parse(const char *descr, et_dtype *t, int *swap,
                             const char *name, et_diag *d)
{
    const char *s = descr;
    *swap = 0;
    if (*s == '<' || *s == '|' || *s == '=')
        s++;
    else if (*s == '>') {
        *swap = 1;
        s++;
    }
    if (!strcmp(s, "f2"))
        *t = ET_F16;
    else if (!strcmp(s, "f4"))
        *t = ET_F32;
    else if (!strcmp(s, "f8"))
        *t = ET_F64;
    else
        return npy_fail(d, ET_ERR_INPUT, name, "unsupported dtype '%s' "
                        "(eintune reads float16, float32 and float64: "
                        "'<f2', '<f4', '<f8' or big-endian '>f2', '>f4', "
                        "'>f8')", descr);
    return ET_OK;
}

static void swap_bytes(void *data, int64_t n, size_t sz)
{
    unsigned char *p = data;
    for (int64_t i = 0; i < n; i++, p += sz)
        for (size_t a = 0, b = sz - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* Copies n elements of Fortran-ordered src into C-ordered dst. */
static void fortran_to_c(unsigned char *dst, const unsigned char *src,
                         int rank, const int64_t *dim, int64_t n, size_t sz)
{
    int64_t fstride[ET_MAX_RANK], ctr[ET_MAX_RANK] = {0};
    int64_t s = 1;
    for (int r = 0; r < rank; r++) {
        fstride[r] = s;
        s *= dim[r];
    }
    int64_t off = 0;
    for (int64_t i = 0; i < n; i++) {
        memcpy(dst + (size_t)i * sz, src + (size_t)off * sz, sz);
        for (int r = rank - 1; r >= 0; r--) {
            if (++ctr[r] < dim[r]) {
                off += fstride[r];
                break;
            }
            off -= (dim[r] - 1) * fstride[r];
            ctr[r] = 0;
        }
    }
}

/*
 * How many bytes an .npy stream whose first len bytes are buf can hold:
 * 1 with *total set once the header is complete and valid, 0 while more is
 * needed to tell, -1 when the bytes so far are already not an .npy file
 * (npy_parse then says why). Bounds what a pipe or device is read for.
 */
static int npy_stream_total(const unsigned char *buf, size_t len,
                            size_t *total)
{
    if (len < NPY_MAGIC_LEN + 2)
        return memcmp(buf, NPY_MAGIC,
                      len < NPY_MAGIC_LEN ? len : NPY_MAGIC_LEN) ? -1 : 0;
    if (memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN) || buf[6] < 1 || buf[6] > 3 ||
        buf[7] != 0)
        return -1;
    size_t pre = buf[6] == 1 ? 10 : 12;
    if (len < pre)
        return 0;
    size_t hlen = buf[6] == 1 ? (size_t)buf[8] | (size_t)buf[9] << 8
                              : (size_t)buf[8] | (size_t)buf[9] << 8 |
                                    (size_t)buf[10] << 16 |
                                    (size_t)buf[11] << 24;
    if (hlen > NPY_MAX_HEADER)
        return -1;
    if (len < pre + hlen)
        return 0;
    npy_header h;
    et_dtype t;
    int swap;
    if (hdr_parse((const char *)buf + pre, hlen, &h, "", NULL) != ET_OK ||
        descr_parse(h.descr, &t, &swap, "", NULL) != ET_OK)
        return -1;
    uint64_t n = et_dtype_size(t);
    for (int r = 0; r < h.rank; r++)
        if (h.dim[r] <= 0 || __builtin_mul_overflow(n, (uint64_t)h.dim[r], &n))
            return -1;
    if (n > SIZE_MAX - pre - hlen)
        return -1;
    *total = pre + hlen + (size_t)n;
    return 1;
}

/* Reads an .npy image of len bytes; `name` goes into messages. */
static et_status npy_parse(const unsigned char *buf, size_t len,
                           et_array *a, const char *name, et_diag *d)
{
    memset(a, 0, sizeof *a);
    if (len < NPY_MAGIC_LEN + 2 || memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN))
        return npy_fail(d, ET_ERR_INPUT, name, "not an .npy file (the file "
                        "does not start with \"\\x93NUMPY\")");
    int major = buf[6], minor = buf[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        return npy_fail(d, ET_ERR_INPUT, name, "unsupported .npy format "
                        "version %d.%d (eintune reads 1.0, 2.0, 3.0)", major,
                        minor);
    size_t pre = major == 1 ? 10 : 12;
    if (len < pre)
        return npy_fail(d, ET_ERR_INPUT, name, "truncated .npy file: %zu "
                        "bytes, the header length field needs %zu", len, pre);
    size_t hlen = major == 1 ? (size_t)buf[8] | (size_t)buf[9] << 8
                             : (size_t)buf[8] | (size_t)buf[9] << 8 |
                                   (size_t)buf[10] << 16 |
                                   (size_t)buf[11] << 24;
    if (hlen > NPY_MAX_HEADER)
        return npy_fail(d, ET_ERR_INPUT, name, "the header claims %zu bytes; "
                        "eintune reads headers of at most %d bytes", hlen,
                        NPY_MAX_HEADER);
    if (hlen > len - pre)
        return npy_fail(d, ET_ERR_INPUT, name, "truncated .npy file: the "
                        "header claims %zu bytes, the file has %zu after the "
                        "prefix", hlen, len - pre);

    npy_header h;
    et_status st = hdr_parse((const char *)buf + pre, hlen, &h, name, d);
    if (st != ET_OK)
        return st;
    et_dtype t = ET_F64;
    int swap;
    st = descr_parse(h.descr, &t, &swap, name, d);
    if (st != ET_OK)
        return st;

    size_t sz = et_dtype_size(t);
    int64_t n = 1;
    for (int r = 0; r < h.rank; r++) {
        if (h.dim[r] == 0)
            return npy_fail(d, ET_ERR_INPUT, name, "dimension %d of 'shape' "
                            "is 0: eintune needs every size to be at least "
                            "1", r);
        if (__builtin_mul_overflow(n, h.dim[r], &n))
            return npy_fail(d, ET_ERR_INPUT, name, "'shape' has more "
                            "elements than 64 bits can count");
    }
    int64_t bytes;
    if (__builtin_mul_overflow(n, (int64_t)sz, &bytes) ||
        (uint64_t)bytes > SIZE_MAX)
        return npy_fail(d, ET_ERR_INPUT, name, "'shape' is too large: the "
                        "data would need more than 2^63 bytes");
    size_t have = len - pre - hlen;
    if ((uint64_t)bytes != have)
        return npy_fail(d, ET_ERR_INPUT, name, "%s: the shape needs %" PRId64
                        " bytes of %s data, the file has %zu after the "
                        "header", have < (uint64_t)bytes
                                      ? "truncated data"
                                      : "data length does not match the "
                                        "shape",
                        bytes, et_dtype_name(t), have);

    a->data = malloc(bytes ? (size_t)bytes : 1);
    if (!a->data)
        return npy_fail(d, ET_ERR_NOMEM, name, "out of memory for %" PRId64
                        " bytes of data", bytes);
    const unsigned char *src = buf + pre + hlen;
    if (h.fortran && h.rank > 1)
        fortran_to_c(a->data, src, h.rank, h.dim, n, sz);
    else
        memcpy(a->data, src, (size_t)bytes);
    if (swap)
        swap_bytes(a->data, n, sz);
    a->dtype = t;
    a->rank = h.rank;
    memcpy(a->dim, h.dim, sizeof h.dim);
    return ET_OK;
}

et_status et_npy_read_mem(const void *buf, size_t len, et_array *a,
                          et_diag *d)
{
    if (!a)
        return ET_ERR_INPUT;
    if (!buf && len)
        return npy_fail(d, ET_ERR_INPUT, "<memory>", "no buffer");
    static const unsigned char empty[1];
    return npy_parse(buf ? buf : empty, len, a, "<memory>", d);
}

et_status et_npy_read(const char *path, et_array *a, et_diag *d)
{
    if (!a)
        return ET_ERR_INPUT;
    memset(a, 0, sizeof *a);
    if (!path)
        return npy_fail(d, ET_ERR_INPUT, "(null)", "no file name");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return npy_fail(d, ET_ERR_IO, path, "cannot open: %s",
                        strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return npy_fail(d, ET_ERR_IO, path, "cannot stat: %s", strerror(e));
    }
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        return npy_fail(d, ET_ERR_INPUT, path, "is a directory, not an .npy "
                        "file");
    }
    et_status st;
    if (S_ISREG(sb.st_mode)) {
        size_t len = (size_t)sb.st_size;
        if (len == 0) {
            close(fd);
            return npy_fail(d, ET_ERR_INPUT, path, "the file is empty (not "
                            "an .npy file)");
        }
        void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        int e = errno;
        close(fd);
        if (m == MAP_FAILED)
            return npy_fail(d, ET_ERR_IO, path, "cannot map: %s",
                            strerror(e));
        st = npy_parse(m, len, a, path, d);
        munmap(m, len);
        return st;
    }
    /* a pipe or device: read it to its end, but no further than the
     * header says the file holds (plus one byte, so that npy_parse sees
     * the excess), and not at all past bytes that are not an .npy file:
     * /dev/zero or an endless pipe cannot make memory grow without bound */
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        size_t total = 0;
        int known = len ? npy_stream_total(buf, len, &total) : 0;
        if (known < 0 || (known > 0 && len > total))
            break;
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            unsigned char *nb = ncap > cap ? realloc(buf, ncap) : NULL;
            if (!nb) {
                free(buf);
                close(fd);
                return npy_fail(d, ET_ERR_NOMEM, path, "out of memory");
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return npy_fail(d, ET_ERR_IO, path, "read failed: %s",
                            strerror(e));
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    st = npy_parse(buf ? buf : (const unsigned char *)"", len, a, path, d);
    free(buf);
    return st;
}

/* ---- writing ------------------------------------------------------------ */

static int write_all(int fd, const void *p, size_t n)
{
    const unsigned char *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

et_status et_npy_write(const char *path, const et_array *a, et_diag *d)
{
    const char *name = path ? path : "(null)";
    if (!path || !*path)
        return npy_fail(d, ET_ERR_INPUT, name, "no file name");
    if (!a || a->rank < 0 || a->rank > ET_MAX_RANK ||
        (unsigned)a->dtype >= ET_DTYPE_COUNT)
        return npy_fail(d, ET_ERR_INPUT, name, "cannot write: invalid array "
                        "(rank or dtype out of range)");
    for (int r = 0; r < a->rank; r++)
        if (a->dim[r] < 1)
            return npy_fail(d, ET_ERR_INPUT, name, "cannot write: dimension "
                            "%d is %" PRId64 " (must be at least 1)", r,
                            a->dim[r]);
    int64_t n = et_array_elems(a);
    size_t sz = et_dtype_size(a->dtype);
    int64_t bytes;
    if (n < 0 || __builtin_mul_overflow(n, (int64_t)sz, &bytes) ||
        (uint64_t)bytes > SIZE_MAX)
        return npy_fail(d, ET_ERR_INPUT, name, "cannot write: the array is "
                        "too large");
    if (!a->data)
        return npy_fail(d, ET_ERR_INPUT, name, "cannot write: no data");

    /* the header as numpy.lib.format writes it */
    static const char *const descr[ET_DTYPE_COUNT] = {"<f2", "<f4", "<f8"};
    char hdr[2048];
    size_t h = (size_t)snprintf(hdr, sizeof hdr, "{'descr': '%s', "
                                "'fortran_order': False, 'shape': (",
                                descr[a->dtype]);
    for (int r = 0; r < a->rank; r++)
        h += (size_t)snprintf(hdr + h, sizeof hdr - h, r ? ", %" PRId64
                              : "%" PRId64, a->dim[r]);
    h += (size_t)snprintf(hdr + h, sizeof hdr - h, "%s), }",
                          a->rank == 1 ? "," : "");
    if (a->rank > 0) {
        char first[24];
        int w = snprintf(first, sizeof first, "%" PRId64, a->dim[0]);
        for (int k = w; k < NPY_GROWTH_DIGITS; k++)
            hdr[h++] = ' ';
    }
    /* rank <= 32 dims of <= 19 digits: far below the buffer and 65535 */
    assert(h + NPY_ALIGN + 1 < sizeof hdr);
    size_t pre = 10;
    size_t pad = NPY_ALIGN - (pre + h + 1) % NPY_ALIGN;
    memset(hdr + h, ' ', pad);
    h += pad;
    hdr[h++] = '\n';
    unsigned char prefix[10];
    memcpy(prefix, NPY_MAGIC, NPY_MAGIC_LEN);
    prefix[6] = 1;
    prefix[7] = 0;
    prefix[8] = (unsigned char)(h & 0xff);
    prefix[9] = (unsigned char)(h >> 8);

    /* temporary file next to the target, then rename */
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 64);
    if (!tmp)
        return npy_fail(d, ET_ERR_NOMEM, name, "out of memory");
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        unsigned k = __atomic_fetch_add(&npy_tmp_counter, 1, __ATOMIC_RELAXED);
        snprintf(tmp, plen + 64, "%s.tmp.%ld.%u", path, (long)getpid(), k);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return npy_fail(d, ET_ERR_IO, name, "cannot create a temporary file "
                        "next to it: %s", strerror(e));
    }
    et_status st = ET_OK;
    if (write_all(fd, prefix, sizeof prefix) || write_all(fd, hdr, h) ||
        write_all(fd, a->data, (size_t)bytes) || fsync(fd) != 0) {
        int e = errno;
        st = npy_fail(d, ET_ERR_IO, name, "write failed: %s",
                      e ? strerror(e) : "short write");
    }
    if (close(fd) != 0 && st == ET_OK)
        st = npy_fail(d, ET_ERR_IO, name, "write failed: %s",
                      strerror(errno));
    if (st == ET_OK && rename(tmp, path) != 0)
        st = npy_fail(d, ET_ERR_IO, name, "cannot rename the temporary "
                      "file into place: %s", strerror(errno));
    if (st != ET_OK)
        unlink(tmp);
    free(tmp);
    return st;
}
