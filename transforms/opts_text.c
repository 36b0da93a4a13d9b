/*
 * opts_text.c - the text form of opts, "LOCAL(i,8) PREFETCH(1,k,8)
 * NOLOCALS": reading it (et_opts_parse) and writing it (et_opts_format).
 * Both follow the argument kinds of the opt table (opts.c), so an opt's
 * arguments are described there once.
 */
#include "transforms/opts_impl.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

et_opt et_opt_make(et_opt_kind kind, const char *axis, int64_t amt)
{
    et_opt o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.axis.pos = -1;
    o.axis2.pos = -1;
    if (axis)
        snprintf(o.axis.name, sizeof o.axis.name, "%s", axis);
    o.amt = amt;
    return o;
}

/* ---- writing ----------------------------------------------------------- */

int et_opt_format_axis(char *buf, size_t cap, const et_axis_ref *a)
{
    if (a->pos >= 0)
        return snprintf(buf, cap, "%d", a->pos);
    return snprintf(buf, cap, "%s", a->name);
}

/* An unknown kind is written as the most common shape, (axis, amount), so
 * that a refusal can still show what it was given. */
static const et_opt_desc unknown_desc = {
    .name = "?", .n_args = 2, .arg = {ET_OPT_ARG_AXIS, ET_OPT_ARG_AMOUNT},
};

size_t et_opt_format(const et_opt *o, char *buf, size_t cap)
{
    const et_opt_desc *d = et_opt_desc_get(o->kind);
    if (!d)
        d = &unknown_desc;
    /* the longest opt (a name, an operand, an axis name and an amount)
     * is far below this */
    char text[160];
    size_t n = (size_t)snprintf(text, sizeof text, "%s", d->name);
    for (int i = 0; i < d->n_args && n < sizeof text; i++) {
        char *at = text + n;
        size_t left = sizeof text - n;
        int w = 0;
        at[0] = i == 0 ? '(' : ',';
        switch (d->arg[i]) {
        case ET_OPT_ARG_AXIS:
            w = et_opt_format_axis(at + 1, left - 1, &o->axis);
            break;
        case ET_OPT_ARG_AXIS2:
            w = et_opt_format_axis(at + 1, left - 1, &o->axis2);
            break;
        case ET_OPT_ARG_OPERAND:
            w = snprintf(at + 1, left - 1, "%d", o->operand);
            break;
        case ET_OPT_ARG_AMOUNT:
            w = snprintf(at + 1, left - 1, "%lld", (long long)o->amt);
            break;
        }
        n += 1 + (size_t)(w < 0 ? 0 : w);
    }
    if (d->n_args > 0 && n + 1 < sizeof text) {
        text[n++] = ')';
        text[n] = '\0';
    }
    int w = snprintf(buf, cap, "%s", text);
    return w < 0 ? 0 : (size_t)w;
}

size_t et_opts_format(const et_opt *opts, int n, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap > 0)
        buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        char one[128];
        et_opt_format(&opts[i], one, sizeof one);
        size_t l = strlen(one) + (i > 0);
        if (len + l < cap) {
            if (i > 0)
                buf[len] = ' ';
            memcpy(buf + len + (i > 0), one, strlen(one) + 1);
        } else if (cap > 0) {
            buf[cap - 1] = '\0';
        }
        len += l;
    }
    return len;
}

et_status et_opt_refuse(const et_opt_call *c, const char *fmt, ...)
{
    if (c->reason && c->cap > 0) {
        char head[128];
        et_opt_format(c->o, head, sizeof head);
        int n = snprintf(c->reason, c->cap, "%s: ", head);
        if (n >= 0 && (size_t)n < c->cap) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->reason + n, c->cap - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return ET_ERR_REFUSED;
}

/* ---- reading ----------------------------------------------------------- */

/* "LOCAL, UPCAST, ..." from the table, so that an error's list of the
 * opts can never leave one out. */
static void opt_name_list(char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int k = 0; k < ET_OPT_COUNT && n < cap; k++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", k ? ", " : "",
                              et_opt_kind_name((et_opt_kind)k));
}

static et_status parse_error(et_diag *d, int pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static et_status parse_error(et_diag *d, int pos, const char *fmt, ...)
{
    if (d) {
        d->line = 1;
        d->col = pos + 1;
        d->pos = pos;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->msg, sizeof d->msg, fmt, ap);
        va_end(ap);
    }
    return ET_ERR_INPUT;
}

typedef enum { ARG_AXIS, ARG_INT } arg_type;

/* Parses one argument at *p; fills either *num or name. */
static et_status parse_arg(const char *text, const char **p, arg_type want,
                           int64_t *num, et_axis_ref *ax, const char *opt,
                           int argno, et_diag *d)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    int pos = (int)(s - text);
    if (isdigit((unsigned char)*s) || *s == '-' || *s == '+') {
        const char *q = s;
        if (*q == '-' || *q == '+')
            q++;
        if (!isdigit((unsigned char)*q))
            return parse_error(d, pos, "%s: argument %d: expected %s", opt,
                               argno, want == ARG_INT ? "an integer"
                                                      : "an axis");
        int64_t v = 0;
        while (isdigit((unsigned char)*q)) {
            if (v > (INT64_MAX - 9) / 10)
                return parse_error(d, pos, "%s: argument %d: integer too large",
                                   opt, argno);
            v = v * 10 + (*q - '0');
            q++;
        }
        if (*s == '-')
            v = -v;
        if (want == ARG_INT) {
            *num = v;
        } else {
            if (v < 0 || v >= ET_MAX_INDICES)
                return parse_error(d, pos,
                                   "%s: argument %d: axis position %lld out of "
                                   "range",
                                   opt, argno, (long long)v);
            ax->pos = (int)v;
            ax->name[0] = '\0';
        }
        s = q;
    } else if (isalpha((unsigned char)*s) || *s == '_') {
        if (want == ARG_INT)
            return parse_error(d, pos, "%s: argument %d: expected an integer",
                               opt, argno);
        const char *q = s;
        while (isalnum((unsigned char)*q) || *q == '_')
            q++;
        if ((size_t)(q - s) >= ET_AXIS_NAME_LEN)
            return parse_error(d, pos, "%s: argument %d: axis name too long",
                               opt, argno);
        ax->pos = -1;
        memcpy(ax->name, s, (size_t)(q - s));
        ax->name[q - s] = '\0';
        s = q;
    } else {
        return parse_error(d, pos, "%s: argument %d: expected %s", opt, argno,
                           want == ARG_INT ? "an integer" : "an axis");
    }
    while (*s == ' ' || *s == '\t')
        s++;
    *p = s;
    return ET_OK;
}

/* Stores argument number i (its kind from the table) into o; *p is just
 * past it (an operand out of range is reported at its last character). */
static et_status store_arg(const char *text, const char *p,
                           const et_opt_desc *od, int i, int64_t num,
                           const et_axis_ref *ax, et_opt *o, et_diag *d)
{
    switch (od->arg[i]) {
    case ET_OPT_ARG_AXIS:
        o->axis = *ax;
        break;
    case ET_OPT_ARG_AXIS2:
        o->axis2 = *ax;
        break;
    case ET_OPT_ARG_OPERAND:
        if (num < 0 || num >= ET_MAX_OPERANDS)
            return parse_error(d, (int)(p - text) - 1,
                               "%s: operand %lld out of range", od->name,
                               (long long)num);
        o->operand = (int)num;
        break;
    case ET_OPT_ARG_AMOUNT:
        o->amt = num;
        break;
    }
    return ET_OK;
}

/* The parenthesized arguments of od's opt; *p is just past the '('. */
static et_status parse_args(const char *text, const char **p,
                            const et_opt_desc *od, et_opt *o, et_diag *d)
{
    const char *nm = od->name;
    int nargs = od->n_args, got = 0;
    if (nargs == 0) {
        while (**p == ' ' || **p == '\t')
            (*p)++;
        if (**p != ')')
            return parse_error(d, (int)(*p - text), "%s takes no arguments",
                               nm);
        (*p)++;
        return ET_OK;
    }
    for (;;) {
        if (got >= nargs)
            return parse_error(d, (int)(*p - text), "%s takes %d arguments",
                               nm, nargs);
        int64_t num = 0;
        et_axis_ref ax = {-1, ""};
        bool axis = od->arg[got] == ET_OPT_ARG_AXIS ||
                    od->arg[got] == ET_OPT_ARG_AXIS2;
        et_status st = parse_arg(text, p, axis ? ARG_AXIS : ARG_INT, &num,
                                 &ax, nm, got + 1, d);
        if (st == ET_OK)
            st = store_arg(text, *p, od, got, num, &ax, o, d);
        if (st != ET_OK)
            return st;
        got++;
        if (**p == ',') {
            (*p)++;
            continue;
        }
        if (**p == ')') {
            (*p)++;
            break;
        }
        return parse_error(d, (int)(*p - text), "%s: expected ',' or ')'",
                           nm);
    }
    if (got != nargs)
        return parse_error(d, (int)(*p - text) - 1,
                           "%s takes %d arguments, got %d", nm, nargs, got);
    return ET_OK;
}

et_status et_opts_parse(const char *text, et_opt *out, int cap, int *n,
                        et_diag *d)
{
    *n = 0;
    if (d) {
        memset(d, 0, sizeof *d);
        d->pos = -1;
    }
    if (!text)
        return ET_OK;
    const char *p = text;
    int count = 0;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        const char *name = p;
        int pos = (int)(p - text);
        while (isalpha((unsigned char)*p))
            p++;
        size_t len = (size_t)(p - name);
        char names[256];
        opt_name_list(names, sizeof names);
        if (len == 0)
            return parse_error(d, pos, "expected an opt name (%s)", names);
        int kind = -1;
        for (int k = 0; k < ET_OPT_COUNT; k++) {
            const char *kn = et_opt_kind_name((et_opt_kind)k);
            if (strlen(kn) == len && strncmp(kn, name, len) == 0)
                kind = k;
        }
        if (kind < 0)
            return parse_error(d, pos, "unknown opt '%.*s' (expected %s)",
                               (int)len, name, names);
        if (count >= cap)
            return parse_error(d, pos, "too many opts (at most %d)", cap);
        const et_opt_desc *od = et_opt_desc_get((et_opt_kind)kind);
        et_opt o = et_opt_make((et_opt_kind)kind, NULL, 0);
        const char *q = p;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q != '(') {
            /* an opt without arguments may leave out the parentheses */
            if (od->n_args == 0 &&
                (*q == '\0' || isspace((unsigned char)*q) || *p == '\0' ||
                 isspace((unsigned char)*p))) {
                out[count++] = o;
                continue;
            }
            return parse_error(d, (int)(q - text), "%s: expected '('",
                               od->name);
        }
        p = q + 1;
        et_status st = parse_args(text, &p, od, &o, d);
        if (st != ET_OK)
            return st;
        if (*p && !isspace((unsigned char)*p))
            return parse_error(d, (int)(p - text),
                               "expected a space between opts");
        out[count++] = o;
    }
    *n = count;
    return ET_OK;
}
