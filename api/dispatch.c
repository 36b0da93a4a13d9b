/*
 * dispatch.c - et_dispatch_export: several tuned kernels of one einsum
 * written as one source file and one C header whose dispatch function
 * picks a kernel by the sizes at run time, for a kernel library that
 * calls the einsum with many sizes:
 *
 *   DIR/NAME.cl (.cu)  every kernel, renamed NAME_k0, NAME_k1, ..., and
 *                      NAME_generic, the untransformed kernel with every
 *                      size an argument
 *   DIR/NAME.h         NAME_launch, NAME_dispatch(sizes, &launch): the
 *                      kernel to launch and its geometry and arguments;
 *                      macros prefixed as a single export's, NAME in
 *                      upper case and '_' (DISPATCH_XIK_KJ_TO_XIJ_F64_
 *                      N_INDICES), and with o->embed the source as the
 *                      string <PREFIX>SOURCE (export.c's
 *                      api_header_embed)
 *
 * The kernels are the answers of the database for the sizes listed (a
 * shape spec with lists and ranges, as tune takes): a kernel tuned for
 * exactly those sizes, or one tuned with an open axis that covers them
 * (kept once however many sizes it covers). At run time NAME_dispatch
 * takes, in order: a kernel tuned for exactly the sizes asked; else an
 * open-axis kernel whose other sizes match (it takes the open size as an
 * argument); else NAME_generic. Re-applying opts tuned at other sizes,
 * `best`'s last resort, needs a kernel rendered for the new sizes, which
 * a file written ahead of time cannot hold: the generic kernel stands in.
 *
 * NAME and the files in the way follow export's rules (export.c): NAME is
 * the caller's C identifier or "dispatch_" with the einsum's letters and
 * dtypes, so tables of one einsum in two dtypes do not collide; the same
 * table is rewritten, another kernel's or table's files are replaced only
 * when forced, a file eintune did not write never. The header's marker
 * line carries a hash of the source, which tells the same table from
 * another.
 */
#include "api/best_impl.h"
#include "tune/deliver.h"

#include "base/sbuf.h"
#include "measure/remote.h"
#include "transforms/kernel.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DISPATCH_MARK "/* eintune dispatch: "

/* One kernel of the table. */
typedef struct dentry {
    et_einsum e;               /* the einsum it runs (open axis or not) */
    et_best best;
    et_rendered r;
    char name[200];
    int64_t step;              /* open axis: groups are ceil(n / step) */
    int64_t g1[3], grows[3];   /* open axis: global at one group; grows */
    int64_t zero_per;          /* open axis: zeroed bytes per unit of n */
    int64_t served[ET_DELIVER_MAX_SIZES]; /* open axis: the listed sizes it
                                           * serves, verified at */
    int n_served;
} dentry;

/* "dispatch_xik_kj_to_xij_f64": the einsum's terms joined by '_' (an
 * ellipsis is "0", which no index letter can be), "_to_" before the
 * output, then the dtypes as export's default names have them. */
static void default_name(const et_einsum *e, char *buf, size_t cap)
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
    api_dtype_suffix(e, suffix, sizeof suffix);
    et_sbuf_printf(&b, "%s", suffix);
    char *t = et_sbuf_take(&b);
    snprintf(buf, cap, "%s", t ? t : "");
    free(t);
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

/* Geometry of entry d at its open axis' size n into lines of C. */
static void put_fill(et_sbuf *b, const char *P, const dentry *d, int k,
                     int open)
{
    const et_launch *L = &d->r.launch;
    et_sbuf_printf(b, "        l->kernel = \"%s\";\n", d->name);
    et_sbuf_printf(b, "        l->opts = \"%s\";\n", d->best.opts);
    et_sbuf_printf(b, "        l->tuned = 1;\n");
    et_sbuf_printf(b, "        l->work_dim = %d;\n", L->ndim);
    if (open >= 0)
        et_sbuf_printf(b, "        long long g = (sizes[%d] + %lldLL) / "
                          "%lldLL;\n",
                       open, (long long)(d->step - 1), (long long)d->step);
    for (int q = 0; q < 3; q++) {
        long long lo = L->has_local && q < L->ndim ? L->local[q] : 1;
        if (open >= 0 && d->grows[q])
            et_sbuf_printf(b, "        l->global[%d] = %lldLL * g;\n", q,
                           (long long)d->g1[q]);
        else
            et_sbuf_printf(b, "        l->global[%d] = %lldLL;\n", q,
                           q < L->ndim ? (long long)L->global[q] : 1LL);
        et_sbuf_printf(b, "        l->local[%d] = %lldLL;\n", q, lo);
    }
    et_sbuf_printf(b, "        l->has_local = %d;\n", L->has_local ? 1 : 0);
    if (open >= 0) {
        et_sbuf_printf(b, "        l->zero_bytes = sizes[%d] * %lldLL;\n",
                       open, (long long)d->zero_per);
        et_sbuf_printf(b, "        l->n_scalars = 1;\n");
        et_sbuf_printf(b, "        l->scalars[0] = sizes[%d];\n", open);
    } else {
        et_sbuf_printf(b, "        l->zero_bytes = %lldLL;\n",
                       (long long)L->zero_bytes);
        et_sbuf_printf(b, "        l->n_scalars = 0;\n");
    }
    et_sbuf_printf(b, "        return %d;\n", k);
    (void)P;
}

static char *header_text(const char *P, const char *mark,
                         const et_einsum *e, const et_device_info *info,
                         const dentry *d, int n, et_backend_kind bk,
                         const char *src_file, bool verified)
{
    et_sbuf b;
    et_sbuf_init(&b);
    /* macros: the name in upper case and '_', as a single export's */
    char U[200], guard[300];
    api_macro_prefix(P, U, sizeof U);
    snprintf(guard, sizeof guard, "ET_DISPATCH_%sH", U);
    et_sbuf_printf(&b, "%s", mark);
    et_sbuf_printf(&b,
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
        " * then the inputs in operand order, dense C-ordered arrays), then\n"
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
    et_sbuf_printf(&b, "#define %sVERIFIED %d /* 1: every tuned kernel was "
                       "verified on the device at the sizes it serves */\n",
                   U, verified ? 1 : 0);
    et_sbuf_printf(&b, "#define %sEINSUM \"%s\"\n", U, e->text);
    et_sbuf_printf(&b, "#define %sSOURCE_FILE \"%s\"\n", U, src_file);
    et_sbuf_printf(&b, "#define %sBACKEND \"%s\"\n", U, et_backend_name(bk));
    et_sbuf_printf(&b, "#define %sN_INDICES %d\n", U, e->n_idx);
    et_sbuf_printf(&b, "#define %sINDEX_NAMES {", U);
    for (int a = 0; a < e->n_idx; a++)
        et_sbuf_printf(&b, "%s\"%s\"", a ? ", " : "", e->idx[a].name);
    et_sbuf_printf(&b, "%s}\n", e->n_idx ? "" : "\"\"");
    et_sbuf_printf(&b, "#define %sN_ARGS %d\n", U, e->n_ops + 1);
    et_sbuf_printf(&b, "#define %sN_KERNELS %d\n\n", U, n + 1);
    et_sbuf_printf(&b,
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
    et_sbuf_printf(&b, "/* the kernels: their sizes (-1: an open axis) */\n");
    for (int k = 0; k < n; k++) {
        et_sbuf_printf(&b, "/*   %d %s: ", k, d[k].name);
        for (int a = 0; a < e->n_idx; a++)
            if (d[k].e.idx[a].open)
                et_sbuf_printf(&b, "%s%s=*", a ? "," : "", e->idx[a].name);
            else
                et_sbuf_printf(&b, "%s%s=%lld", a ? "," : "", e->idx[a].name,
                               (long long)d[k].e.idx[a].size);
        et_sbuf_printf(&b, " %s */\n", d[k].best.opts[0] ? d[k].best.opts
                                                       : "untransformed");
    }
    et_sbuf_printf(&b, "/*   %d %s_generic: any sizes */\n\n", n, P);
    et_sbuf_printf(&b,
        "static inline int %s_dispatch(const long long *sizes, "
        "%s_launch *l)\n{\n", P, P);
    et_sbuf_printf(&b, "    for (int a = 0; a < %d; a++)\n"
                       "        if (sizes[a] < 1)\n"
                       "            return -1;\n", e->n_idx);
    et_sbuf_printf(&b, "    /* a kernel tuned for exactly these sizes */\n");
    for (int k = 0; k < n; k++) {
        if (et_einsum_open_axis(&d[k].e) >= 0)
            continue;
        et_sbuf_printf(&b, "    if (1");
        for (int a = 0; a < e->n_idx; a++)
            et_sbuf_printf(&b, " && sizes[%d] == %lldLL", a,
                           (long long)d[k].e.idx[a].size);
        et_sbuf_printf(&b, ") {\n");
        put_fill(&b, P, &d[k], k, -1);
        et_sbuf_printf(&b, "    }\n");
    }
    et_sbuf_printf(&b, "    /* an open axis that covers them */\n");
    for (int k = 0; k < n; k++) {
        int oa = et_einsum_open_axis(&d[k].e);
        if (oa < 0)
            continue;
        et_sbuf_printf(&b, "    if (1");
        for (int a = 0; a < e->n_idx; a++)
            if (a != oa)
                et_sbuf_printf(&b, " && sizes[%d] == %lldLL", a,
                               (long long)d[k].e.idx[a].size);
        et_sbuf_printf(&b, ") {\n");
        put_fill(&b, P, &d[k], k, oa);
        et_sbuf_printf(&b, "    }\n");
    }
    et_sbuf_printf(&b, "    /* the untransformed kernel, any sizes */\n");
    et_sbuf_printf(&b, "    long long elems = 1;\n");
    for (int a = 0; a < e->n_out; a++)
        et_sbuf_printf(&b, "    elems *= sizes[%d];\n", a);
    et_sbuf_printf(&b,
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
    et_sbuf_printf(&b,
        "/* for a program that includes one table: ET_DISPATCH(N_INDICES) is\n"
        " * %sN_INDICES, ET_DISPATCH_FN(dispatch) is %s_dispatch */\n"
        "#ifndef ET_DISPATCH\n#define ET_DISPATCH(x) %s##x\n#endif\n"
        "#ifndef ET_DISPATCH_FN\n#define ET_DISPATCH_FN(x) %s_##x\n#endif\n\n"
        "#endif /* %s */\n",
        U, P, U, P, guard);
    return et_sbuf_take(&b);
}

et_status et_dispatch_export(const char *einsum, const char *shapes,
                             const char *dtypes,
                             const et_dispatch_options *o,
                             et_dispatch_result *out, et_diag *diag)
{
    et_diag local;
    et_dispatch_result local_out;
    if (!diag)
        diag = &local;
    if (!out)
        out = &local_out;
    api_diag_clear(diag);
    memset(out, 0, sizeof *out);
    API_NEED(diag, einsum, "einsum");
    API_NEED(diag, shapes, "shapes");
    API_NEED(diag, o, "o");
    if (!o->dir || !o->dir[0])
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "an output directory is needed");
    if (strlen(o->dir) > 3000)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "the output directory's name is too long");
    if (o->name && et_export_name_validate(o->name, diag) != ET_OK)
        return diag->status;
    if (o->backend && strcmp(o->backend, "opencl") &&
        strcmp(o->backend, "cuda"))
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "backend must be opencl or cuda, not '%s'",
                        o->backend);

    char P[112] = "";
    char *specs = NULL, *src = NULL, *hdr = NULL;
    char **srcs = NULL;
    int n_specs = 0, n = 0;
    dentry *d = NULL;
    et_einsum *e0 = NULL;
    et_device_info *info = calloc(1, sizeof *info);
    et_db *db = NULL;
    et_rendered gen;
    memset(&gen, 0, sizeof gen);
    et_error err = {{0}};
    et_status st = et_shape_expand(shapes, &specs, &n_specs, diag);
    if (st != ET_OK)
        goto out;
    d = calloc((size_t)n_specs, sizeof *d);
    e0 = calloc(1, sizeof *e0);
    if (!d || !e0 || !info) {
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        goto out;
    }
    /* the database first, then the device's key (as best does) */
    st = et_db_open(o->db, &db, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_FILE, &err);
        goto out;
    }
    et_device *dev = NULL;
    st = et_device_open_isolated(o->device, NULL, &dev, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                  : ET_INPUT_NONE, &err);
        goto out;
    }
    *info = dev->info;
    et_device_close(dev);
    et_target tg = info->target;
    et_backend_kind bk = tg.backend;
    if (o->backend)
        bk = strcmp(o->backend, "cuda") == 0 ? ET_BACKEND_CUDA
                                             : ET_BACKEND_OPENCL;
    tg.backend = bk;

    char *line = specs;
    for (int i = 0; i < n_specs; i++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        et_einsum *e = &d[n].e;
        st = et_einsum_from_strings(einsum, line, dtypes, e, diag);
        if (st != ET_OK)
            goto out;
        if (i == 0) {
            *e0 = *e;
            if (o->name) {
                snprintf(P, sizeof P, "%s", o->name);
            } else {
                default_name(e0, P, sizeof P);
                if (et_export_name_validate(P, diag) != ET_OK) {
                    st = api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                                  "the table's default name %s is not a "
                                  "usable C name (too long?): give it a "
                                  "name",
                                  P);
                    goto out;
                }
            }
        }
        const char *spec_i = line;
        line = nl ? nl + 1 : line + strlen(line);
        bool found = false;
        st = et_best_find(db, e, info, true, &d[n].best, &found, &err);
        if (st != ET_OK) {
            api_fail_err(diag, st, ET_INPUT_NONE, &err);
            goto out;
        }
        if (!found) {
            api_log(o->log, o->log_arg, ET_LOG_WARN,
                    "no kernel tuned for %s at %s: the generic kernel "
                    "serves it", e->text, spec_i);
            continue;
        }
        *e = d[n].best.e;
        /* an open-axis kernel that covers several listed sizes once */
        bool dup = false;
        for (int k = 0; k < n && !dup; k++)
            dup = d[k].best.trial.id == d[n].best.trial.id &&
                  et_einsum_open_axis(&d[k].e) >= 0 &&
                  strcmp(d[k].best.opts, d[n].best.opts) == 0;
        if (dup) {
            for (int k = 0; k < n; k++)
                if (d[k].best.trial.id == d[n].best.trial.id &&
                    et_einsum_open_axis(&d[k].e) >= 0 &&
                    d[k].n_served < ET_DELIVER_MAX_SIZES - 4) {
                    int oa = et_einsum_open_axis(e);
                    d[k].served[d[k].n_served++] = e->idx[oa].size;
                    break;
                }
            continue;
        }
        if (et_einsum_open_axis(e) >= 0)
            d[n].served[d[n].n_served++] = e->idx[et_einsum_open_axis(e)].size;
        et_kernel *k = NULL;
        char reason[512] = "";
        st = et_kernel_init(e, &tg, &k);
        if (st == ET_OK)
            st = et_kernel_apply_opts(k, d[n].best.opt, d[n].best.n_opts,
                                      reason, sizeof reason);
        if (st == ET_OK)
            st = et_kernel_render(k, bk, NULL, &d[n].r);
        if (st == ET_OK && et_einsum_open_axis(e) >= 0) {
            et_launch l1, l2;
            d[n].step = et_kernel_open_step(k);
            if (et_kernel_set_open_size(k, d[n].step, NULL) != ET_OK ||
                et_kernel_launch(k, bk, &l1) != ET_OK ||
                et_kernel_set_open_size(k, 2 * d[n].step, NULL) != ET_OK ||
                et_kernel_launch(k, bk, &l2) != ET_OK)
                st = ET_ERR_INTERNAL;
            for (int q = 0; q < 3 && st == ET_OK; q++) {
                d[n].g1[q] = q < l1.ndim ? l1.global[q] : 1;
                d[n].grows[q] = q < l1.ndim && l1.global[q] != l2.global[q];
            }
            d[n].zero_per = l1.zero_bytes / d[n].step;
        }
        et_kernel_free(k);
        if (st != ET_OK) {
            api_fail(diag, st, ET_INPUT_NONE,
                     "cannot render the kernel of %s at %s: %s", e->text,
                     spec_i, reason[0] ? reason : et_status_str(st));
            goto out;
        }
        snprintf(d[n].name, sizeof d[n].name, "%s_k%d", P, n);
        n++;
    }
    /* what reaches a user was verified: each kernel at the sizes it
     * serves (an open one also at 1, 2 and a prime) */
    for (int k = 0; k < n && !o->no_verify; k++) {
        et_kernel *kk = NULL;
        char vline[768] = "";
        st = et_kernel_init(&d[k].e, &tg, &kk);
        if (st == ET_OK)
            st = et_kernel_apply_opts(kk, d[k].best.opt, d[k].best.n_opts,
                                      NULL, 0);
        if (st == ET_OK)
            st = api_deliver_verify(info, kk, &d[k].best, d[k].served,
                                    d[k].n_served, vline, sizeof vline,
                                    diag);
        else
            api_fail(diag, st, ET_INPUT_NONE, "cannot build kernel %d", k);
        et_kernel_free(kk);
        if (st != ET_OK)
            goto out;
        api_log(o->log, o->log_arg, ET_LOG_INFO, "%s (%s): %s", d[k].name,
                d[k].best.opts[0] ? d[k].best.opts : "untransformed", vline);
    }
    st = et_kernel_render_generic(e0, bk, &gen);
    if (st != ET_OK) {
        api_fail(diag, st, ET_INPUT_NONE,
                 "cannot render the generic kernel of %s: %s", e0->text,
                 et_status_str(st));
        goto out;
    }
    srcs = calloc((size_t)n + 1, sizeof *srcs);
    if (!srcs) {
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        goto out;
    }
    char gname[128];
    snprintf(gname, sizeof gname, "%s_generic", P);
    for (int k = 0; k <= n; k++) {
        srcs[k] = k < n ? renamed(d[k].r.source, d[k].r.name, d[k].name)
                        : renamed(gen.source, gen.name, gname);
        if (!srcs[k]) {
            st = api_fail(diag, ET_ERR_INTERNAL, ET_INPUT_NONE,
                          "cannot rename kernel %d", k);
            goto out;
        }
    }
    src = et_kernel_sources_join((const char *const *)srcs, n + 1, bk);
    /* the kernels' names must not clash with what their code uses */
    for (int k = 0; src && k <= n; k++) {
        const char *kn = k < n ? d[k].name : gname;
        if (!api_name_used_once(src, kn)) {
            st = api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                          "name '%s' is used inside the kernels' code (an "
                          "argument, a variable or a built-in): choose "
                          "another --name",
                          kn);
            goto out;
        }
    }
    char src_file[200];
    snprintf(src_file, sizeof src_file, "%s.%s", P,
             bk == ET_BACKEND_CUDA ? "cu" : "cl");
    if (!src) {
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        goto out;
    }
    /* the source's first line marks it as ours, as export's */
    size_t cap = strlen(src) + 400;
    char *marked = malloc(cap);
    if (!marked) {
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        goto out;
    }
    snprintf(marked, cap,
             "// eintune %s dispatch %s: %d tuned kernels and %s\n%s",
             et_backend_name(bk), P, n, gname, src);
    free(src);
    src = marked;
    char mark[400];
    snprintf(mark, sizeof mark, DISPATCH_MARK "%s (%s), source %016llx */\n",
             P, et_backend_name(bk), api_text_hash(src));
    hdr = header_text(P, mark, e0, info, d, n, bk, src_file, !o->no_verify);
    if (hdr && o->embed) {
        char U[200];
        api_macro_prefix(P, U, sizeof U);
        hdr = api_header_embed(hdr, U, src, src_file);
    }
    if (!hdr) {
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        goto out;
    }
    snprintf(out->source, sizeof out->source, "%s/%s", o->dir, src_file);
    snprintf(out->header, sizeof out->header, "%s/%s.h", o->dir, P);
    out->n_kernels = n + 1;
    for (int k = 0; k < n; k++)
        out->n_open += et_einsum_open_axis(&d[k].e) >= 0;
    out->n_tuned = n - out->n_open;
    out->backend = bk;
    snprintf(out->name, sizeof out->name, "%s", P);
    api_macro_prefix(P, out->prefix, sizeof out->prefix);
    if (api_make_dirs(o->dir) != 0) {
        st = api_fail(diag, ET_ERR_IO, ET_INPUT_FILE, "cannot create %s: %s",
                      o->dir, strerror(errno));
        goto out;
    }
    /* both files are looked at before either is written */
    const char *paths[2] = {out->source, out->header};
    api_file_state fs[2] = {api_source_state(out->source, src),
                            api_header_state(out->header, mark)};
    if ((st = api_files_check(paths, fs, o->force, diag)) != ET_OK)
        goto out;
    out->replaced = fs[0] == API_FILE_OTHER || fs[1] == API_FILE_OTHER;
    if (api_write_atomic(out->source, src) != 0 ||
        api_write_atomic(out->header, hdr) != 0) {
        st = api_fail(diag, ET_ERR_IO, ET_INPUT_FILE,
                      "cannot write in %s: %s", o->dir, strerror(errno));
        goto out;
    }
    st = ET_OK;
out:
    for (int k = 0; srcs && k <= n; k++)
        free(srcs[k]);
    free(srcs);
    for (int k = 0; d && k < n_specs; k++)
        et_rendered_free(&d[k].r);
    et_rendered_free(&gen);
    free(d);
    free(e0);
    free(info);
    free(specs);
    free(src);
    free(hdr);
    et_db_close(db);
    return st;
}
