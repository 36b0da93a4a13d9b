/*
 * search_dedupe.c - the de-duplication key of a kernel
 * (et_kernel_dedupe_key, search.h): its rendered source up to the names it
 * gives, and its launch geometry, hashed with FNV-1a.
 */
#include "spaces/search_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t srch_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

/* Names a kernel source uses that are not its own: the languages'
 * keywords, qualifiers and types, and the builtins that are not called
 * (those that are, like vload4 or fma, are kept by the '(' rule). */
static const char *const kept_names[] = {
    "auto", "break", "case", "char", "const", "constant", "continue",
    "default", "do", "double", "else", "enum", "extern", "float", "for",
    "global", "goto", "half", "if", "inline", "int", "kernel", "local",
    "long", "private", "register", "restrict", "return", "short", "signed",
    "size_t", "ptrdiff_t", "sizeof", "static", "struct", "switch",
    "typedef", "uchar", "uint", "ulong", "union", "unsigned", "ushort",
    "void", "volatile", "while", "bool", "true", "false", "__kernel",
    "__global", "__local", "__constant", "__private", "__attribute__",
    "__restrict__", "__global__", "__shared__", "__device__", "__half",
    "__forceinline__", "threadIdx", "blockIdx", "blockDim", "gridDim",
};

/* A vector type name: a scalar type followed by 2, 3, 4, 8 or 16. */
static bool vector_type(const char *t, size_t n)
{
    static const char *const scalars[] = {
        "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
        "float", "double", "half"};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        size_t m = strlen(scalars[i]);
        if (n > m && !strncmp(t, scalars[i], m)) {
            const char *w = t + m;
            size_t wn = n - m;
            if ((wn == 1 && strchr("2348", w[0])) ||
                (wn == 2 && w[0] == '1' && w[1] == '6'))
                return true;
        }
    }
    return false;
}

static bool kept_name(const char *t, size_t n)
{
    bool upper = true; /* macros and constants: CLK_LOCAL_MEM_FENCE */
    for (size_t i = 0; i < n; i++)
        if (t[i] >= 'a' && t[i] <= 'z')
            upper = false;
    if (upper)
        return true;
    for (size_t i = 0; i < sizeof kept_names / sizeof kept_names[0]; i++)
        if (strlen(kept_names[i]) == n && !strncmp(kept_names[i], t, n))
            return true;
    return vector_type(t, n);
}

static bool ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_char(char c)
{
    return ident_start(c) || (c >= '0' && c <= '9');
}

/*
 * FNV of a source up to the names it gives: comments and white space are
 * dropped, the kernel's own name becomes "$K", and every other name the
 * source introduces becomes "$N" in order of first use, so two sources
 * that differ only by consistent renaming (accv_c0 here, accv_0_c0 there)
 * hash alike. Kept as they are: keywords, types, upper-case macros,
 * member names (after '.'), and any name followed by '(' (builtins and
 * functions), so a different builtin or type is a different kernel.
 */
static uint64_t source_hash_up_to_names(uint64_t h, const char *src,
                                        const char *kname)
{
    const char **names = NULL;
    size_t *lens = NULL;
    size_t n_names = 0, cap = 0;
    size_t klen = kname ? strlen(kname) : 0;
    char prev = 0; /* the last character hashed */
    for (const char *s = src; *s;) {
        if (s[0] == '/' && s[1] == '/') {
            while (*s && *s != '\n')
                s++;
            continue;
        }
        if (s[0] == '/' && s[1] == '*') {
            const char *e = strstr(s + 2, "*/");
            s = e ? e + 2 : s + strlen(s);
            continue;
        }
        if (*s == ' ' || *s == '\t' || *s == '\r') {
            s++;
            continue;
        }
        if (*s == '\n') { /* line ends matter for preprocessor lines */
            if (prev != '\n')
                h = srch_fnv(h, "\n", 1);
            prev = '\n';
            s++;
            continue;
        }
        if (*s == '"') {
            const char *e = s + 1;
            while (*e && *e != '"')
                e += e[0] == '\\' && e[1] ? 2 : 1;
            if (*e)
                e++;
            h = srch_fnv(h, s, (size_t)(e - s));
            prev = '"';
            s = e;
            continue;
        }
        if (s[0] >= '0' && s[0] <= '9') { /* a number, as it is */
            const char *e = s;
            while (ident_char(*e) || *e == '.')
                e++;
            h = srch_fnv(h, s, (size_t)(e - s));
            h = srch_fnv(h, " ", 1);
            prev = '0';
            s = e;
            continue;
        }
        if (!ident_start(*s)) {
            h = srch_fnv(h, s, 1);
            prev = *s++;
            continue;
        }
        const char *e = s;
        while (ident_char(*e))
            e++;
        size_t n = (size_t)(e - s);
        const char *after = e;
        while (*after == ' ' || *after == '\t')
            after++;
        char tok[32];
        if (klen && n == klen && !strncmp(s, kname, n)) {
            h = srch_fnv(h, "$K ", 3);
        } else if (prev == '.' || *after == '(' || kept_name(s, n)) {
            h = srch_fnv(h, s, n);
            h = srch_fnv(h, " ", 1);
        } else {
            size_t k = 0;
            while (k < n_names && !(lens[k] == n && !strncmp(names[k], s, n)))
                k++;
            if (k == n_names) {
                if (n_names == cap) {
                    size_t nc = cap ? 2 * cap : 64;
                    const char **nn = realloc(names, nc * sizeof *nn);
                    if (nn)
                        names = nn;
                    size_t *nl = nn ? realloc(lens, nc * sizeof *nl) : NULL;
                    if (nl)
                        lens = nl;
                    if (!nn || !nl) { /* no memory: hash the name itself */
                        h = srch_fnv(h, s, n);
                        prev = 'a';
                        s = e;
                        continue;
                    }
                    cap = nc;
                }
                names[n_names] = s;
                lens[n_names++] = n;
            }
            int m = snprintf(tok, sizeof tok, "$%zu ", k);
            h = srch_fnv(h, tok, (size_t)m);
        }
        prev = 'a';
        s = e;
    }
    free(names);
    free(lens);
    return h;
}

uint64_t et_kernel_dedupe_key(const et_kernel *k, et_backend_kind backend)
{
    uint64_t h = 1469598103934665603ULL;
    et_rendered r;
    memset(&r, 0, sizeof(r));
    if (et_kernel_render(k, backend, NULL, &r) != ET_OK) {
        /* not renderable: the canonical opt list stands in for the source */
        char buf[2048];
        size_t n = et_opts_format(k->opts, k->n_opts, buf, sizeof(buf));
        h = srch_fnv(h, "norender", 8);
        return srch_fnv(h, buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
    }
    h = source_hash_up_to_names(h, r.source, r.name);
    int64_t geo[8] = {r.launch.ndim, r.launch.has_local};
    for (int i = 0; i < 3; i++) {
        geo[2 + i] = r.launch.global[i];
        geo[5 + i] = r.launch.has_local ? r.launch.local[i] : 0;
    }
    h = srch_fnv(h, geo, sizeof(geo));
    et_rendered_free(&r);
    if (et_einsum_open_axis(&k->e) >= 0) {
        /* an open axis: the geometry above is the one at the size it is
         * tuned at; the step its size is rounded up to (the launch's
         * groups at every other size) goes in too, so that two kernels
         * meet only when they launch alike at every size */
        int64_t step = et_kernel_open_step(k);
        h = srch_fnv(h, "open", 4);
        h = srch_fnv(h, &step, sizeof step);
    }
    return h;
}

/* A kernel's de-duplication key for the binding's backend. */
uint64_t srch_key_of(const srch *S, const et_kernel *k)
{
    return et_kernel_dedupe_key(k, S->b ? et_binding_base(S->b)->target.backend
                                        : ET_BACKEND_OPENCL);
}
