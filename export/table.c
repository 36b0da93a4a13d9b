/*
 * table.c - a dispatch table: several tuned kernels of one einsum written
 * as one source file and one C header whose dispatch function picks a
 * kernel by the sizes at run time:
 *
 *   DIR/NAME.cl (.cu)  every kernel, renamed NAME_k0, NAME_k1, ..., and
 *                      NAME_generic, the untransformed kernel with every
 *                      size an argument; its first line marks it as
 *                      eintune's
 *   DIR/NAME.h         NAME_launch, NAME_dispatch(sizes, &launch): the
 *                      kernel to launch and its geometry and arguments;
 *                      macros prefixed as a single export's, NAME in
 *                      upper case and '_' (DISPATCH_XIK_KJ_TO_XIJ_F64_
 *                      N_INDICES), and with embed the source as the
 *                      string <PREFIX>SOURCE (text.c)
 *
 * At run time NAME_dispatch takes, in order: a kernel tuned for exactly
 * the sizes asked; else an open-axis kernel whose other sizes match (it
 * takes the open size as an argument); else NAME_generic.
 */
#include "export/export_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void et_export_entry_free(et_export_entry *x)
{
    et_rendered_free(&x->r);
}

/* The geometry of x's open axis: its step, the global size at one group
 * along it, the dimensions that grow with it, the bytes zeroed per unit of
 * its size. */
static et_status entry_open_geometry(et_export_entry *x, et_kernel *k,
                                     et_backend_kind bk)
{
    et_status st = ET_OK;
    et_launch l1, l2;
    x->step = et_kernel_open_step(k);
    if (et_kernel_set_open_size(k, x->step, NULL) != ET_OK ||
        et_kernel_launch(k, bk, &l1) != ET_OK ||
        et_kernel_set_open_size(k, 2 * x->step, NULL) != ET_OK ||
        et_kernel_launch(k, bk, &l2) != ET_OK)
        st = ET_ERR_INTERNAL;
    for (int q = 0; q < 3 && st == ET_OK; q++) {
        x->g1[q] = q < l1.ndim ? l1.global[q] : 1;
        x->grows[q] = q < l1.ndim && l1.global[q] != l2.global[q];
    }
    if (st == ET_OK)
        x->zero_per = l1.zero_bytes / x->step;
    return st;
}

et_status et_export_entry_render(et_export_entry *x, const et_target *tg,
                                 const et_opt *opt, int n_opts,
                                 const char *table, int number,
                                 const char *spec, et_export_error *xe)
{
    et_backend_kind bk = tg->backend;
    et_kernel *k = NULL;
    char reason[512] = "";
    et_status st = et_kernel_init(&x->e, tg, &k);
    if (st == ET_OK)
        st = et_kernel_apply_opts(k, opt, n_opts, reason, sizeof reason);
    if (st == ET_OK)
        st = et_kernel_render(k, bk, NULL, &x->r);
    if (st == ET_OK && et_einsum_open_axis(&x->e) >= 0)
        st = entry_open_geometry(x, k, bk);
    et_kernel_free(k);
    if (st != ET_OK)
        return xp_fail(xe, st, ET_EXPORT_ABOUT_NONE,
                       "cannot render the kernel of %s at %s: %s",
                       x->e.text, spec,
                       reason[0] ? reason : et_status_str(st));
    snprintf(x->name, sizeof x->name, "%s_k%d", table, number);
    return ET_OK;
}

/* Replaces the kernel's function name in its source ("void NAME(") by
 * name; NULL when out of memory or not found. */
static char *renamed(const char *src, const char *old, const char *name)
{
    char pat[256];
    snprintf(pat, sizeof pat, "void %s(", old);
    const char *at = strstr(src, pat);
    if (!at)
        return NULL;
    et_sbuf b;
    et_sbuf_init(&b);
    et_sbuf_printf(&b, "%.*svoid %s(%s", (int)(at - src), src, name,
                   at + strlen(pat));
    char *t = et_sbuf_take(&b);
    et_sbuf_free(&b);
    return t;
}

/* The kernels renamed and joined, gen (rendered here) last, into *out. */
static et_status join_sources(const et_export_table *t, et_rendered *gen,
                              const char *gname, char **out,
                              et_export_error *xe)
{
    int n = t->n;
    et_status st = et_kernel_render_generic(t->e, t->backend, gen);
    if (st != ET_OK)
        return xp_fail(xe, st, ET_EXPORT_ABOUT_NONE,
                       "cannot render the generic kernel of %s: %s",
                       t->e->text, et_status_str(st));
    char **srcs = calloc((size_t)n + 1, sizeof *srcs);
    if (!srcs)
        return xp_fail(xe, ET_ERR_NOMEM, ET_EXPORT_ABOUT_NONE,
                       "out of memory");
    for (int k = 0; k <= n && st == ET_OK; k++) {
        srcs[k] = k < n ? renamed(t->entry[k].r.source, t->entry[k].r.name,
                                  t->entry[k].name)
                        : renamed(gen->source, gen->name, gname);
        if (!srcs[k])
            st = xp_fail(xe, ET_ERR_INTERNAL, ET_EXPORT_ABOUT_NONE,
                         "cannot rename kernel %d", k);
    }
    if (st == ET_OK)
        *out = et_kernel_sources_join((const char *const *)srcs, n + 1,
                                      t->backend);
    for (int k = 0; k <= n; k++)
        free(srcs[k]);
    free(srcs);
    return st;
}

/* The table's source into *out: the kernels joined, their names checked
 * against their code, and a first line marking it as eintune's (as a
 * kernel's source starts). */
static et_status table_source(const et_export_table *t, char **out,
                              et_export_error *xe)
{
    int n = t->n;
    char gname[128];
    snprintf(gname, sizeof gname, "%s_generic", t->name);
    et_rendered gen;
    memset(&gen, 0, sizeof gen);
    char *src = NULL;
    et_status st = join_sources(t, &gen, gname, &src, xe);
    et_rendered_free(&gen);
    if (st != ET_OK)
        return st;
    /* the kernels' names must not clash with what their code uses */
    for (int k = 0; src && k <= n; k++) {
        const char *kn = k < n ? t->entry[k].name : gname;
        if (!et_export_name_used_once(src, kn)) {
            free(src);
            return xp_fail(xe, ET_ERR_INPUT, ET_EXPORT_ABOUT_OPTION,
                           "name '%s' is used inside the kernels' code (an "
                           "argument, a variable or a built-in): choose "
                           "another --name",
                           kn);
        }
    }
    size_t cap = src ? strlen(src) + 400 : 0;
    char *marked = src ? malloc(cap) : NULL;
    if (!marked) {
        free(src);
        return xp_fail(xe, ET_ERR_NOMEM, ET_EXPORT_ABOUT_NONE,
                       "out of memory");
    }
    snprintf(marked, cap,
             "// eintune %s dispatch %s: %d tuned kernels and %s\n%s",
             et_backend_name(t->backend), t->name, n, gname, src);
    free(src);
    *out = marked;
    return ET_OK;
}

/* Entry x's launch at the sizes asked (its open axis `open`, -1 when
 * none), as the lines of C that fill l and return its number k. */
static void put_fill(et_sbuf *b, const et_export_entry *x, int k, int open)
{
    const et_launch *L = &x->r.launch;
    et_sbuf_printf(b, "        l->kernel = \"%s\";\n", x->name);
    et_sbuf_printf(b, "        l->opts = \"%s\";\n", x->opts);
    et_sbuf_printf(b, "        l->tuned = 1;\n");
    et_sbuf_printf(b, "        l->work_dim = %d;\n", L->ndim);
    if (open >= 0)
        et_sbuf_printf(b, "        long long g = (sizes[%d] + %lldLL) / "
                          "%lldLL;\n",
                       open, (long long)(x->step - 1), (long long)x->step);
    for (int q = 0; q < 3; q++) {
        long long lo = L->has_local && q < L->ndim ? L->local[q] : 1;
        if (open >= 0 && x->grows[q])
            et_sbuf_printf(b, "        l->global[%d] = %lldLL * g;\n", q,
                           (long long)x->g1[q]);
        else
            et_sbuf_printf(b, "        l->global[%d] = %lldLL;\n", q,
                           q < L->ndim ? (long long)L->global[q] : 1LL);
        et_sbuf_printf(b, "        l->local[%d] = %lldLL;\n", q, lo);
    }
    et_sbuf_printf(b, "        l->has_local = %d;\n", L->has_local ? 1 : 0);
    if (open >= 0) {
        et_sbuf_printf(b, "        l->zero_bytes = sizes[%d] * %lldLL;\n",
                       open, (long long)x->zero_per);
        et_sbuf_printf(b, "        l->n_scalars = 1;\n");
        et_sbuf_printf(b, "        l->scalars[0] = sizes[%d];\n", open);
    } else {
        et_sbuf_printf(b, "        l->zero_bytes = %lldLL;\n",
                       (long long)L->zero_bytes);
        et_sbuf_printf(b, "        l->n_scalars = 0;\n");
    }
    et_sbuf_printf(b, "        return %d;\n", k);
}

/* The header's comment, guard, macros, NAME_launch and the list of the
 * kernels. */
static void put_table_head(et_sbuf *b, const et_export_table *t,
                           const char *U, const char *guard,
                           const char *mark, const char *src_file)
{
    const char *P = t->name;
    const et_einsum *e = t->e;
    const et_device_info *info = t->info;
    et_sbuf_printf(b, "%s", mark);
    et_sbuf_printf(b,
        "/*\n"
        " * Generated by eintune %s; regenerate rather than edit.\n"
        " *\n"
        " * einsum  %s (every kernel of %s)\n"
        " * tuned on %s (%s, driver %s)\n"
        " *\n"
        " * %s_dispatch(sizes, &l) picks the kernel for the index sizes\n"
        " * sizes[0..%sN_INDICES-1] (index order below): a kernel tuned\n"
        " * for exactly these sizes, else one tuned with an open axis whose\n"
        " * other sizes match (it takes the open size as an argument), else\n"
        " * %s_generic, the untransformed kernel with every size an\n"
        " * argument. It returns the kernel's number (%sN_KERNELS - 1 is\n"
        " * the generic one), -1 for a size below 1.\n"
        " *\n"
        " * Launch l.kernel from %s: arguments the buffers (the output,\n"
        " * then the inputs in operand order, dense C-ordered arrays; a\n"
        " * batched einsum's rows each a buffer, as ARG_OPERANDS and\n"
        " * ARG_ROWS list them), then\n"
        " * l.scalars[0..l.n_scalars-1] as 64-bit integers (OpenCL cl_long,\n"
        " * CUDA long long). Zero the first l.zero_bytes bytes of the output\n"
        " * first (SPLIT kernels add into it). OpenCL: global l.global,\n"
        " * local l.has_local ? l.local : NULL; CUDA: grid l.global[d] /\n"
        " * l.local[d], block l.local.\n"
        " */\n"
        "#ifndef %s\n#define %s\n\n",
        ET_VERSION, e->text, src_file, info->name,
        et_backend_name(info->target.backend), info->driver_version, P, U,
        P, U, src_file, guard, guard);
    et_sbuf_printf(b, "#define %sVERIFIED %d /* 1: every tuned kernel was "
                      "verified on the device at the sizes it serves */\n",
                   U, t->verified ? 1 : 0);
    et_sbuf_printf(b, "#define %sEINSUM \"%s\"\n", U, e->text);
    et_sbuf_printf(b, "#define %sSOURCE_FILE \"%s\"\n", U, src_file);
    et_sbuf_printf(b, "#define %sBACKEND \"%s\"\n", U,
                   et_backend_name(t->backend));
    et_sbuf_printf(b, "#define %sN_INDICES %d\n", U, e->n_idx);
    et_sbuf_printf(b, "#define %sINDEX_NAMES {", U);
    for (int a = 0; a < e->n_idx; a++)
        et_sbuf_printf(b, "%s\"%s\"", a ? ", " : "", e->idx[a].name);
    et_sbuf_printf(b, "%s}\n", e->n_idx ? "" : "\"\"");
    int n_args = 0, op[ET_MAX_ARGS], row[ET_MAX_ARGS];
    if (!et_kernel_args(e, &n_args, op, row))
        n_args = 0;
    et_sbuf_printf(b, "#define %sN_ARGS %d\n", U, n_args);
    et_sbuf_printf(b, "#define %sN_ROWS %d\n", U, e->n_rows);
    et_sbuf_printf(b, "#define %sROWS_SUMMED %d\n", U,
                   et_einsum_rows_summed(e));
    et_sbuf_printf(b, "/* each buffer's operand (-1: the output) and row "
                      "(-1: not a row) */\n#define %sARG_OPERANDS {", U);
    for (int a = 0; a < n_args; a++)
        et_sbuf_printf(b, "%s%d", a ? ", " : "", op[a]);
    et_sbuf_printf(b, "}\n#define %sARG_ROWS {", U);
    for (int a = 0; a < n_args; a++)
        et_sbuf_printf(b, "%s%d", a ? ", " : "", row[a]);
    et_sbuf_printf(b, "}\n");
    et_sbuf_printf(b, "#define %sN_KERNELS %d\n\n", U, t->n + 1);
    et_sbuf_printf(b,
        "typedef struct %s_launch {\n"
        "    const char *kernel;   /* its function name */\n"
        "    const char *opts;     /* its opts (\"\": untransformed) */\n"
        "    int tuned;            /* 0: the generic kernel */\n"
        "    int work_dim;\n"
        "    long long global[3];  /* work-items per dimension */\n"
        "    long long local[3];\n"
        "    int has_local;\n"
        "    long long zero_bytes; /* of the output, before the launch */\n"
        "    int n_scalars;        /* 64-bit arguments after the buffers */\n"
        "    long long scalars[%d];\n"
        "} %s_launch;\n\n",
        P, e->n_idx > 0 ? e->n_idx : 1, P);
    et_sbuf_printf(b, "/* the kernels: their sizes (-1: an open axis) */\n");
    for (int k = 0; k < t->n; k++) {
        const et_export_entry *x = &t->entry[k];
        et_sbuf_printf(b, "/*   %d %s: ", k, x->name);
        for (int a = 0; a < e->n_idx; a++)
            if (x->e.idx[a].open)
                et_sbuf_printf(b, "%s%s=*", a ? "," : "", e->idx[a].name);
            else
                et_sbuf_printf(b, "%s%s=%lld", a ? "," : "", e->idx[a].name,
                               (long long)x->e.idx[a].size);
        et_sbuf_printf(b, " %s */\n", x->opts[0] ? x->opts : "untransformed");
    }
    et_sbuf_printf(b, "/*   %d %s_generic: any sizes */\n\n", t->n, P);
}

/* NAME_dispatch: the tuned kernels whose sizes match (those of an open
 * one but its open axis), then the generic kernel; ET_DISPATCH and
 * ET_DISPATCH_FN and the guard's end. */
static void put_dispatch(et_sbuf *b, const et_export_table *t,
                         const char *U, const char *guard)
{
    const char *P = t->name;
    const et_einsum *e = t->e;
    int n = t->n;
    et_sbuf_printf(b,
        "static inline int %s_dispatch(const long long *sizes, "
        "%s_launch *l)\n{\n", P, P);
    et_sbuf_printf(b, "    for (int a = 0; a < %d; a++)\n"
                      "        if (sizes[a] < 1)\n"
                      "            return -1;\n", e->n_idx);
    for (int open = 0; open < 2; open++) {
        et_sbuf_printf(b, open ? "    /* an open axis that covers them */\n"
                               : "    /* a kernel tuned for exactly these "
                                 "sizes */\n");
        for (int k = 0; k < n; k++) {
            int oa = et_einsum_open_axis(&t->entry[k].e);
            if ((oa >= 0) != open)
                continue;
            et_sbuf_printf(b, "    if (1");
            for (int a = 0; a < e->n_idx; a++)
                if (a != oa)
                    et_sbuf_printf(b, " && sizes[%d] == %lldLL", a,
                                   (long long)t->entry[k].e.idx[a].size);
            et_sbuf_printf(b, ") {\n");
            put_fill(b, &t->entry[k], k, oa);
            et_sbuf_printf(b, "    }\n");
        }
    }
    et_sbuf_printf(b, "    /* the untransformed kernel, any sizes */\n");
    et_sbuf_printf(b, "    long long elems = 1;\n");
    for (int a = 0; a < e->n_out; a++)
        et_sbuf_printf(b, "    elems *= sizes[%d];\n", a);
    et_sbuf_printf(b,
        "    l->kernel = \"%s_generic\";\n"
        "    l->opts = \"\";\n"
        "    l->tuned = 0;\n"
        "    l->work_dim = 1;\n"
        "    l->global[0] = (elems + 63) / 64 * 64;\n"
        "    l->global[1] = l->global[2] = 1;\n"
        "    l->local[0] = 64;\n"
        "    l->local[1] = l->local[2] = 1;\n"
        "    l->has_local = 1;\n"
        "    l->zero_bytes = 0;\n"
        "    l->n_scalars = %d;\n"
        "    for (int a = 0; a < %d; a++)\n"
        "        l->scalars[a] = sizes[a];\n"
        "    return %d;\n}\n\n",
        P, e->n_idx, e->n_idx, n);
    et_sbuf_printf(b,
        "/* for a program that includes one table: ET_DISPATCH(N_INDICES) is\n"
        " * %sN_INDICES, ET_DISPATCH_FN(dispatch) is %s_dispatch */\n"
        "#ifndef ET_DISPATCH\n#define ET_DISPATCH(x) %s##x\n#endif\n"
        "#ifndef ET_DISPATCH_FN\n#define ET_DISPATCH_FN(x) %s_##x\n#endif\n\n"
        "#endif /* %s */\n",
        U, P, U, P, guard);
}

/* The table's header, its first line mark. NULL when out of memory. */
static char *table_header(const et_export_table *t, const char *mark,
                          const char *src_file)
{
    et_sbuf b;
    et_sbuf_init(&b);
    /* macros: the name in upper case and '_', as a single export's */
    char U[200], guard[300];
    et_export_macro_prefix(t->name, U, sizeof U);
    snprintf(guard, sizeof guard, "ET_DISPATCH_%sH", U);
    put_table_head(&b, t, U, guard, mark, src_file);
    put_dispatch(&b, t, U, guard);
    return et_sbuf_take(&b);
}

/* What res says about the table, once its header is made. */
static void table_result(const et_export_table *t, const char *dir,
                         const char *src_file, et_export_table_result *res)
{
    snprintf(res->source, sizeof res->source, "%s/%s", dir, src_file);
    snprintf(res->header, sizeof res->header, "%s/%s.h", dir, t->name);
    res->n_kernels = t->n + 1;
    for (int k = 0; k < t->n; k++)
        res->n_open += et_einsum_open_axis(&t->entry[k].e) >= 0;
    res->n_tuned = t->n - res->n_open;
    res->backend = t->backend;
    snprintf(res->name, sizeof res->name, "%s", t->name);
    et_export_macro_prefix(t->name, res->prefix, sizeof res->prefix);
}

et_status et_export_table_write(const et_export_table *t,
                                const et_export_files *f,
                                et_export_table_result *res,
                                et_export_error *xe)
{
    char *src = NULL;
    et_status st = table_source(t, &src, xe);
    if (st != ET_OK)
        return st;
    char src_file[200];
    snprintf(src_file, sizeof src_file, "%s.%s", t->name,
             t->backend == ET_BACKEND_CUDA ? "cu" : "cl");
    char mark[400];
    xp_mark(mark, sizeof mark, "dispatch", t->name, t->backend, src);
    char *hdr = table_header(t, mark, src_file);
    if (hdr && f->embed) {
        char U[200];
        et_export_macro_prefix(t->name, U, sizeof U);
        hdr = xp_header_embed(hdr, U, src, src_file);
    }
    if (!hdr) {
        free(src);
        return xp_fail(xe, ET_ERR_NOMEM, ET_EXPORT_ABOUT_NONE,
                       "out of memory");
    }
    table_result(t, f->dir, src_file, res);
    if (xp_make_dirs(f->dir) != 0) {
        st = xp_fail(xe, ET_ERR_IO, ET_EXPORT_ABOUT_FILE,
                     "cannot create %s: %s", f->dir, strerror(errno));
    } else {
        const char *paths[2] = {res->source, res->header};
        st = xp_put_files(f->dir, paths, src, hdr, mark, f->force,
                          &res->replaced, xe);
    }
    free(src);
    free(hdr);
    return st;
}
