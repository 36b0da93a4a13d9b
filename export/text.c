/*
 * text.c - the text a kernel's header and a dispatch table's share: the
 * source as a C string literal, embedded as <PREFIX>SOURCE before the
 * include guard's #endif (byte for byte the .cl/.cu file), and how a
 * kernel was checked (a "checked" line in the comment and
 * <PREFIX>VERIFIED).
 */
#include "export/export_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* text as a C string literal: one piece in quotes per line of text, each
 * but the last ending in a backslash (the pieces are a macro's body).
 * Escaped: quote, backslash, '?' (no trigraph can form), tab, CR, and
 * every other byte outside printable ASCII as three octal digits, so the
 * literal's bytes are text's exactly. */
void et_export_c_string(et_sbuf *b, const char *text)
{
    char piece[8];
    et_sbuf_puts(b, "\"");
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        switch (*c) {
        case '\n':
            et_sbuf_puts(b, c[1] ? "\\n\" \\\n\"" : "\\n");
            continue;
        case '"': et_sbuf_puts(b, "\\\""); continue;
        case '\\': et_sbuf_puts(b, "\\\\"); continue;
        case '?': et_sbuf_puts(b, "\\?"); continue;
        case '\t': et_sbuf_puts(b, "\\t"); continue;
        case '\r': et_sbuf_puts(b, "\\r"); continue;
        default:
            if (*c < 0x20 || *c > 0x7e)
                snprintf(piece, sizeof piece, "\\%03o", *c);
            else
                snprintf(piece, sizeof piece, "%c", *c);
            et_sbuf_puts(b, piece);
        }
    }
    et_sbuf_puts(b, "\"");
}

char *xp_header_embed(char *hdr, const char *prefix, const char *source,
                      const char *src_file)
{
    /* before the include guard's #endif, the header's last line */
    const char *end = NULL;
    for (const char *p = hdr; (p = strstr(p, "\n#endif /* ")) != NULL; p++)
        end = p + 1;
    if (!end) {
        free(hdr);
        return NULL;
    }
    et_sbuf b;
    et_sbuf_init(&b);
    et_sbuf_printf(&b, "%.*s", (int)(end - hdr), hdr);
    et_sbuf_printf(&b,
                   "/* the source, byte for byte what %s holds (export "
                   "--embed): build it\n * from this string and no file "
                   "is needed at run time, e.g.\n * const char *s = "
                   "%sSOURCE; clCreateProgramWithSource(ctx, 1, &s,\n * "
                   "NULL, &rc) or nvrtcCreateProgram(&p, s, ...). "
                   "SOURCE_BYTES: its length */\n",
                   src_file, prefix);
    et_sbuf_printf(&b, "#define %sSOURCE_BYTES %zu\n", prefix,
                   strlen(source));
    et_sbuf_printf(&b, "#define %sSOURCE \\\n", prefix);
    et_export_c_string(&b, source);
    et_sbuf_printf(&b, "\n\n%s", end);
    free(hdr);
    return et_sbuf_take(&b);
}

char *xp_header_add_check(char *hdr, const char *prefix, const char *line,
                          bool verified)
{
    et_sbuf b;
    et_sbuf_init(&b);
    const char *src = strstr(hdr, "\n * source  ");
    const char *src_end = src ? strchr(src + 1, '\n') : NULL;
    const char *guard = strstr(hdr, "\n#define ");
    const char *guard_end = guard ? strchr(guard + 1, '\n') : NULL;
    if (!src_end || !guard_end || guard_end < src_end) {
        free(hdr);
        return NULL;
    }
    et_sbuf_printf(&b, "%.*s\n * checked %s", (int)(src_end - hdr), hdr,
                   line);
    et_sbuf_printf(&b, "%.*s\n#define %sVERIFIED %d /* 1: verified on the "
                       "device before it was written */",
                   (int)(guard_end - src_end), src_end, prefix,
                   verified ? 1 : 0);
    et_sbuf_puts(&b, guard_end);
    free(hdr);
    return et_sbuf_take(&b);
}
