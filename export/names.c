/*
 * names.c - the names of exported kernels and tables: the rules a name
 * passes (a C identifier of at most 100 characters, not reserved, not a
 * keyword or type of C or OpenCL C, not used by the kernel's code), the
 * default names (a table's from its einsum; the dtypes both end with) and
 * the headers' macro prefix.
 */
#include "export/export_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Words a kernel cannot be called: C's keywords, OpenCL C's qualifiers
 * and types. (Names the kernel's own code uses are caught by
 * et_export_name_used_once on the rendered source.) */
static const char *const reserved_words[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do",
    "double", "else", "enum", "extern", "float", "for", "goto", "if",
    "inline", "int", "long", "register", "restrict", "return", "short",
    "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
    "unsigned", "void", "volatile", "while", "bool", "true", "false",
    "kernel", "global", "local", "constant", "private", "read_only",
    "write_only", "read_write", "uniform", "pipe", "half", "uchar",
    "ushort", "uint", "ulong", "size_t", "ptrdiff_t", "intptr_t",
    "uintptr_t", "main", "NULL",
};

/* A keyword, a type or a vector type (float4, uint16, ...)? ET_OK when
 * not. */
static et_status check_words(const char *name, et_export_error *xe)
{
    for (size_t w = 0; w < sizeof reserved_words / sizeof *reserved_words;
         w++)
        if (strcmp(name, reserved_words[w]) == 0)
            return xp_fail(xe, ET_ERR_INPUT, ET_EXPORT_ABOUT_OPTION,
                           "name '%s' is a keyword or type of C or OpenCL "
                           "C",
                           name);
    static const char *const scalars[] = {"char", "uchar", "short", "ushort",
                                          "int", "uint", "long", "ulong",
                                          "float", "double", "half"};
    for (size_t t = 0; t < sizeof scalars / sizeof *scalars; t++) {
        size_t l = strlen(scalars[t]);
        const char *w = name + l;
        if (strncmp(name, scalars[t], l) == 0 &&
            (!strcmp(w, "2") || !strcmp(w, "3") || !strcmp(w, "4") ||
             !strcmp(w, "8") || !strcmp(w, "16")))
            return xp_fail(xe, ET_ERR_INPUT, ET_EXPORT_ABOUT_OPTION,
                           "name '%s' is an OpenCL C vector type", name);
    }
    return ET_OK;
}

et_status et_export_name_check(const char *name, et_export_error *xe)
{
    if (!name[0])
        return xp_fail(xe, ET_ERR_INPUT, ET_EXPORT_ABOUT_OPTION,
                       "the kernel's name is empty");
    size_t n = strlen(name);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!(isalpha(c) || c == '_' || (i > 0 && isdigit(c))) || c > 127) {
            et_status st = xp_fail(
                xe, ET_ERR_INPUT, ET_EXPORT_ABOUT_OPTION,
                "name '%.100s%s' is not a C identifier: '%c' at %zu "
                "(letters, digits and '_', not starting with a digit)",
                name, n > 100 ? "..." : "", isprint(c) ? c : '?', i + 1);
            xe->pos = (int)i;
            return st;
        }
    }
    if (n > 100)
        return xp_fail(xe, ET_ERR_INPUT, ET_EXPORT_ABOUT_OPTION,
                       "name '%.100s...' is longer than 100 characters",
                       name);
    if (name[0] == '_' && (name[1] == '_' || isupper((unsigned char)name[1])))
        return xp_fail(xe, ET_ERR_INPUT, ET_EXPORT_ABOUT_OPTION,
                       "name '%s' is reserved to the compiler (it starts "
                       "with '__' or '_' and a capital)",
                       name);
    return check_words(name, xe);
}

/* Does name appear in source as a whole identifier exactly once (as the
 * kernel's name)? Otherwise it would clash with something the kernel's
 * code uses (a built-in, an argument, a variable). */
int et_export_name_used_once(const char *source, const char *name)
{
    size_t n = strlen(name);
    int count = 0;
    for (const char *p = source; (p = strstr(p, name)) != NULL; p += n) {
        int before = p > source && (isalnum((unsigned char)p[-1]) ||
                                    p[-1] == '_');
        int after = isalnum((unsigned char)p[n]) || p[n] == '_';
        count += !before && !after;
    }
    return count == 1;
}

void et_export_macro_prefix(const char *name, char *buf, size_t cap)
{
    size_t i;
    for (i = 0; name[i] && i + 2 < cap; i++)
        buf[i] = (char)toupper((unsigned char)name[i]);
    buf[i++] = '_';
    buf[i] = '\0';
}

void et_export_dtype_suffix(const et_einsum *e, char *buf, size_t cap)
{
    int same_in = 1;
    for (int k = 1; k < e->n_ops; k++)
        same_in = same_in && e->op[k].dtype == e->op[0].dtype;
    et_dtype out = e->out.dtype;
    if (e->n_ops == 0 || (same_in && e->op[0].dtype == out)) {
        snprintf(buf, cap, "_%s", et_dtype_name(out));
        return;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < (same_in ? 1 : e->n_ops) && len < cap; k++)
        len += (size_t)snprintf(buf + len, cap - len, "_%s",
                                et_dtype_name(e->op[k].dtype));
    if (len < cap)
        snprintf(buf + len, cap - len, "_to_%s", et_dtype_name(out));
}

/* "dispatch_xik_kj_to_xij_f64": the einsum's terms joined by '_' (an
 * ellipsis is "0", which no index letter can be), "_to_" before the
 * output, then the dtypes as a kernel's default name has them. */
static void default_table_name(const et_einsum *e, char *buf, size_t cap)
{
    et_sbuf b;
    et_sbuf_init(&b);
    et_sbuf_printf(&b, "dispatch_");
    for (const char *c = e->text; *c; c++) {
        if (*c == ',') {
            et_sbuf_printf(&b, "_");
        } else if (c[0] == '-' && c[1] == '>') {
            et_sbuf_printf(&b, "_to_");
            c++;
        } else if (c[0] == '.' && c[1] == '.' && c[2] == '.') {
            et_sbuf_printf(&b, "0");
            c += 2;
        } else if (isalnum((unsigned char)*c) || *c == '_') {
            et_sbuf_printf(&b, "%c", *c);
        }
    }
    char suffix[160];
    et_export_dtype_suffix(e, suffix, sizeof suffix);
    et_sbuf_printf(&b, "%s", suffix);
    char *t = et_sbuf_take(&b);
    snprintf(buf, cap, "%s", t ? t : "");
    free(t);
}

et_status et_export_table_name(const et_einsum *e, const char *asked,
                               char *buf, size_t cap, et_export_error *xe)
{
    if (asked) {
        snprintf(buf, cap, "%s", asked);
        return ET_OK;
    }
    default_table_name(e, buf, cap);
    if (et_export_name_check(buf, xe) == ET_OK)
        return ET_OK;
    int pos = xe->pos;
    et_status st = xp_fail(xe, ET_ERR_INPUT, ET_EXPORT_ABOUT_OPTION,
                           "the table's default name %s is not a usable C "
                           "name (too long?): give it a name",
                           buf);
    xe->pos = pos;
    return st;
}
