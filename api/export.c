/*
 * export.c - et_best_kernel_export: the best known kernel written for a
 * library to embed:
 *
 *   DIR/<kernel>.cl (or .cu)  the kernel source, as `codegen` prints it
 *   DIR/<kernel>.h            a C header: the kernel name, the argument
 *                             order (output, then the inputs in operand
 *                             order) with dtypes, shapes, index lists and
 *                             element counts, and the launch geometry
 *                             (OpenCL global/local sizes, CUDA grid/block)
 *
 * Header macros are prefixed with the kernel name in upper case (so that
 * several exported headers can be included together), e.g. for kernel
 * r_4_2_2_6_2: R_4_2_2_6_2_KERNEL_NAME, R_4_2_2_6_2_GLOBAL_SIZE. Each
 * header also defines ET_EXPORT(x) -> <PREFIX>x unless ET_EXPORT is
 * already defined, for a program that includes a single exported kernel
 * (examples/export_demo.c).
 *
 * Files are written under a temporary name in DIR and renamed, so a
 * reader never sees half a file. DIR is created (with its parents) when
 * missing. A file of the same name that eintune did not write (it lacks
 * the first-line marker) is never overwritten.
 */
#include "api/best_impl.h"

#include "base/sbuf.h"
#include "transforms/kernel.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_MARK "/* eintune export: "

/* mkdir -p */
int api_make_dirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return -1;
    struct stat sb;
    if (stat(buf, &sb) != 0)
        return -1;
    if (!S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* 0: path is absent or starts with mark (ours); 1: something else. */
int api_foreign_file(const char *path, const char *mark)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT ? 0 : 1;
    char head[128] = "";
    size_t n = fread(head, 1, sizeof head - 1, f);
    head[n] = '\0';
    fclose(f);
    return strncmp(head, mark, strlen(mark)) != 0;
}

/* Writes text to path through a temporary file in the same directory. */
int api_write_atomic(const char *path, const char *text)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        off += (size_t)w;
    }
    int saved = errno;
    int ok = off == len && fsync(fd) == 0;
    if (close(fd) != 0)
        ok = 0;
    if (ok && rename(tmp, path) == 0)
        return 0;
    if (!ok && off != len)
        errno = saved;
    saved = errno;
    unlink(tmp);
    errno = saved;
    return -1;
}

static const char *c_type(et_dtype t)
{
    return t == ET_F64 ? "double" : t == ET_F32 ? "float" : "uint16_t";
}

/* text with characters unsafe inside a C comment or string dropped */
static void safe_copy(char *dst, size_t cap, const char *src)
{
    size_t j = 0;
    for (size_t i = 0; src[i] && j + 1 < cap; i++) {
        char c = src[i];
        if (c == '"' || c == '\\' || (c == '*' && src[i + 1] == '/') ||
            !isprint((unsigned char)c))
            continue;
        dst[j++] = c;
    }
    dst[j] = '\0';
}

/* {dims}; with oa >= 0 the dims of that index are "(long long)(n)" */
static void shape_list(et_sbuf *b, const et_operand *o, int oa)
{
    et_sbuf_printf(b, "{");
    for (int r = 0; r < o->rank; r++)
        if (o->idx[r] == oa && o->dim[r] != 1)
            et_sbuf_printf(b, "%s(long long)(n)", r ? ", " : "");
        else
            et_sbuf_printf(b, "%s%lld", r ? ", " : "", (long long)o->dim[r]);
    et_sbuf_printf(b, o->rank ? "}" : "1}");
}

/* The element count of operand k (-1: output) as a C expression of n,
 * the open axis' size. */
static void elems_at(const et_einsum *e, int k, char *buf, size_t cap)
{
    const et_operand *o = k < 0 ? &e->out : &e->op[k];
    int oa = et_einsum_open_axis(e);
    long long c = 1;
    bool uses = false;
    for (int r = 0; r < o->rank; r++) {
        if (o->idx[r] == oa && o->dim[r] != 1)
            uses = true;
        else
            c *= (long long)o->dim[r];
    }
    if (uses)
        snprintf(buf, cap, "((long long)(n) * %lldLL)", c);
    else
        snprintf(buf, cap, "%lldLL", c);
}

static void index_list(et_sbuf *b, const et_operand *o, int max_rank)
{
    et_sbuf_printf(b, "{");
    for (int r = 0; r < max_rank || r == 0; r++)
        et_sbuf_printf(b, "%s%d", r ? ", " : "",
                       r < o->rank ? o->idx[r] : -1);
    et_sbuf_printf(b, "}");
}

/* The header text of the exported kernel. */
static char *header_text(const et_einsum *e, const et_device_info *info,
                         const et_best *best, const et_rendered *r,
                         et_backend_kind bk, const char *src_file,
                         const et_launch *geo1, const et_launch *geo2,
                         int64_t open_step, int64_t zero_per)
{
    int64_t g1[3] = {1, 1, 1}, g2[3] = {1, 1, 1};
    et_sbuf b;
    et_sbuf_init(&b);
    char P[200], guard[220], opts[ET_DB_OPTS_LEN], dev[256];
    size_t i;
    for (i = 0; r->name[i] && i + 2 < sizeof P; i++)
        P[i] = (char)toupper((unsigned char)r->name[i]);
    P[i++] = '_';
    P[i] = '\0';
    snprintf(guard, sizeof guard, "ET_EXPORT_%sH", P);
    safe_copy(opts, sizeof opts, best->opts);
    safe_copy(dev, sizeof dev, info->name);
    const et_db_trial *t = &best->trial;
    int oa = et_einsum_open_axis(e);
    const et_operand *args[ET_MAX_OPERANDS + 1];
    int max_rank = 0;
    for (int a = 0; a < r->n_args; a++) {
        int k = r->arg_operand[a];
        args[a] = k < 0 ? &e->out : &e->op[k];
        if (args[a]->rank > max_rank)
            max_rank = args[a]->rank;
    }

    et_sbuf_printf(&b, HEADER_MARK "%s (%s) */\n", r->name, et_backend_name(bk));
    et_sbuf_printf(&b,
              "/*\n"
              " * Generated by eintune %s; regenerate rather than edit.\n"
              " *\n"
              " * einsum  %s\n"
              " * sizes  ",
              ET_VERSION, e->text);
    for (int x = 0; x < e->n_idx; x++)
        if (x == oa)
            et_sbuf_printf(&b, " %s=* (open: given at launch)",
                           e->idx[x].name);
        else
            et_sbuf_printf(&b, " %s=%lld", e->idx[x].name,
                           (long long)e->idx[x].size);
    et_sbuf_printf(&b, "\n * dtypes  ");
    for (int k = 0; k < e->n_ops; k++)
        et_sbuf_printf(&b, "%s%s", k ? "," : "", et_dtype_name(e->op[k].dtype));
    et_sbuf_printf(&b, " -> %s, accumulated in %s\n", et_dtype_name(e->out.dtype),
              et_dtype_name(e->acc_dtype));
    et_sbuf_printf(&b,
              " * opts    %s\n"
              " * tuned on %s (%s, driver %s): median %.6g s, 95%% "
              "interval [%.6g, %.6g] s\n"
              " * source  %s\n"
              " *\n"
              " * Arguments, in order: buffers of dense C-ordered arrays, the\n"
              " * output first, then the inputs in operand order; with an "
              "open axis, its\n * size last, a 64-bit integer (OpenCL "
              "cl_long, CUDA long long). f16 data\n * are IEEE binary16 "
              "bits (uint16_t). Every size-dependent macro has a\n * form "
              "..._AT(n) of the open axis' size n (which ignores n when "
              "there is\n * no open axis); the constant forms exist only "
              "without one.\n"
              " */\n"
              "#ifndef %s\n#define %s\n\n",
              opts[0] ? opts : "-", dev, et_backend_name(info->target.backend),
              info->driver_version, t->median_s, t->low_s, t->high_s,
              src_file, guard, guard);
    et_sbuf_printf(&b, "#define %sKERNEL_NAME \"%s\"\n", P, r->name);
    et_sbuf_printf(&b, "#define %sSOURCE_FILE \"%s\"\n", P, src_file);
    et_sbuf_printf(&b, "#define %sBACKEND \"%s\"\n", P, et_backend_name(bk));
    et_sbuf_printf(&b, "#define %sEINSUM \"%s\"\n", P, e->text);
    et_sbuf_printf(&b, "#define %sOPTS \"%s\"\n\n", P, opts);

    et_sbuf_printf(&b,
              "/* the open axis: its index number (-1: none), its name, the "
              "number of\n * 64-bit integer arguments after the buffers; "
              "GROUPS_AT(n): work-groups\n * along it, its size rounded up "
              "to steps of OPEN_STEP */\n");
    et_sbuf_printf(&b, "#define %sOPEN_AXIS (%d)\n", P, oa);
    et_sbuf_printf(&b, "#define %sOPEN_NAME \"%s\"\n", P,
                   oa >= 0 ? e->idx[oa].name : "");
    et_sbuf_printf(&b, "#define %sN_SCALARS %d\n", P, oa >= 0 ? 1 : 0);
    et_sbuf_printf(&b, "#define %sOPEN_STEP %lldLL\n", P,
                   (long long)open_step);
    if (oa >= 0)
        et_sbuf_printf(&b, "#define %sGROUPS_AT(n) (((long long)(n) + %lldLL) "
                       "/ %lldLL)\n\n",
                       P, (long long)(open_step - 1), (long long)open_step);
    else
        et_sbuf_printf(&b, "#define %sGROUPS_AT(n) 1LL\n\n", P);

    et_sbuf_printf(&b, "/* index sizes, by index number:");
    for (int x = 0; x < e->n_idx; x++)
        et_sbuf_printf(&b, " %s", e->idx[x].name);
    et_sbuf_printf(&b, " */\n#define %sN_INDICES %d\n", P, e->n_idx);
    for (int at = 0; at < 2; at++) {
        if (at == 0 && oa >= 0)
            continue;
        et_sbuf_printf(&b, "#define %sINDEX_SIZES%s {", P,
                       at ? "_AT(n)" : "");
        for (int x = 0; x < e->n_idx; x++)
            if (at && x == oa)
                et_sbuf_printf(&b, "%s(long long)(n)", x ? ", " : "");
            else
                et_sbuf_printf(&b, "%s%lld", x ? ", " : "",
                               (long long)e->idx[x].size);
        et_sbuf_printf(&b, "%s}\n", e->n_idx ? "" : "1");
    }
    et_sbuf_printf(&b, "\n");

    et_sbuf_printf(&b, "/* arguments: OPERAND -1 is the output; SHAPE the "
                  "array's dims (1 where it\n * broadcasts); INDICES the "
                  "index number of each dim */\n");
    et_sbuf_printf(&b, "#define %sN_ARGS %d\n", P, r->n_args);
    for (int a = 0; a < r->n_args; a++) {
        const et_operand *o = args[a];
        int64_t elems = et_einsum_operand_elems(e, r->arg_operand[a]);
        size_t es = et_dtype_size(o->dtype);
        et_sbuf_printf(&b, "/* arg %d: %s */\n", a,
                  r->arg_operand[a] < 0 ? "output" : "input");
        et_sbuf_printf(&b, "#define %sARG%d_OPERAND (%d)\n", P, a,
                  r->arg_operand[a]);
        et_sbuf_printf(&b, "#define %sARG%d_DTYPE \"%s\"\n", P, a,
                  et_dtype_name(o->dtype));
        et_sbuf_printf(&b, "#define %sARG%d_CTYPE %s\n", P, a, c_type(o->dtype));
        et_sbuf_printf(&b, "#define %sARG%d_ELEM_SIZE %zu\n", P, a, es);
        if (oa < 0) {
            et_sbuf_printf(&b, "#define %sARG%d_ELEMS %lld\n", P, a,
                           (long long)elems);
            et_sbuf_printf(&b, "#define %sARG%d_BYTES %lld\n", P, a,
                           (long long)elems * (long long)es);
        }
        char ex[128];
        elems_at(e, r->arg_operand[a], ex, sizeof ex);
        et_sbuf_printf(&b, "#define %sARG%d_ELEMS_AT(n) %s\n", P, a, ex);
        et_sbuf_printf(&b, "#define %sARG%d_BYTES_AT(n) (%s * %zuLL)\n", P, a,
                       ex, es);
        et_sbuf_printf(&b, "#define %sARG%d_RANK %d\n", P, a, o->rank);
        if (oa < 0) {
            et_sbuf_printf(&b, "#define %sARG%d_SHAPE ", P, a);
            shape_list(&b, o, -1);
            et_sbuf_printf(&b, "\n");
        }
        et_sbuf_printf(&b, "#define %sARG%d_SHAPE_AT(n) ", P, a);
        shape_list(&b, o, oa);
        et_sbuf_printf(&b, "\n#define %sARG%d_INDICES ", P, a);
        index_list(&b, o, o->rank);
        et_sbuf_printf(&b, "\n");
    }
    et_sbuf_printf(&b, "\n/* the same, as tables indexed by argument (INDICES "
                  "and SHAPES padded\n * with -1 and 1 to MAX_RANK) */\n");
    et_sbuf_printf(&b, "#define %sMAX_RANK %d\n", P, max_rank ? max_rank : 1);
    const char *tab[] = {"OPERANDS", "ELEM_SIZES", "ELEMS", "RANKS"};
    et_sbuf_printf(&b, "#define %sARG_ELEMS_AT(n) {", P);
    for (int a = 0; a < r->n_args; a++) {
        char ex[128];
        elems_at(e, r->arg_operand[a], ex, sizeof ex);
        et_sbuf_printf(&b, "%s%s", a ? ", " : "", ex);
    }
    et_sbuf_printf(&b, "}\n");
    for (int w = 0; w < 4; w++) {
        if (w == 2 && oa >= 0)
            continue;
        et_sbuf_printf(&b, "#define %sARG_%s {", P, tab[w]);
        for (int a = 0; a < r->n_args; a++) {
            const et_operand *o = args[a];
            long long v = w == 0   ? r->arg_operand[a]
                          : w == 1 ? (long long)et_dtype_size(o->dtype)
                          : w == 2 ? (long long)et_einsum_operand_elems(
                                         e, r->arg_operand[a])
                                   : o->rank;
            et_sbuf_printf(&b, "%s%lld", a ? ", " : "", v);
        }
        et_sbuf_printf(&b, "}\n");
    }
    et_sbuf_printf(&b, "#define %sARG_DTYPES {", P);
    for (int a = 0; a < r->n_args; a++)
        et_sbuf_printf(&b, "%s\"%s\"", a ? ", " : "",
                  et_dtype_name(args[a]->dtype));
    et_sbuf_printf(&b, "}\n#define %sARG_INDICES {", P);
    for (int a = 0; a < r->n_args; a++) {
        et_sbuf_printf(&b, "%s", a ? ", " : "");
        index_list(&b, args[a], max_rank);
    }
    et_sbuf_printf(&b, "}\n");
    for (int at = 0; at < 2; at++) {
        if (at == 0 && oa >= 0)
            continue;
        et_sbuf_printf(&b, "#define %sARG_SHAPES%s {", P, at ? "_AT(n)" : "");
        for (int a = 0; a < r->n_args; a++) {
            et_sbuf_printf(&b, "%s{", a ? ", " : "");
            for (int d = 0; d < (max_rank ? max_rank : 1); d++) {
                const et_operand *o = args[a];
                if (at && d < o->rank && o->idx[d] == oa && o->dim[d] != 1)
                    et_sbuf_printf(&b, "%s(long long)(n)", d ? ", " : "");
                else
                    et_sbuf_printf(&b, "%s%lld", d ? ", " : "",
                                   d < o->rank ? (long long)o->dim[d] : 1LL);
            }
            et_sbuf_printf(&b, "}");
        }
        et_sbuf_printf(&b, "}\n");
    }
    et_sbuf_printf(&b, "\n");

    const et_launch *L = &r->launch;
    int64_t gl[3] = {1, 1, 1}, lo[3] = {1, 1, 1};
    for (int d = 0; d < L->ndim && d < 3; d++) {
        gl[d] = L->global[d];
        lo[d] = L->has_local ? L->local[d] : 1;
        g1[d] = d < geo1->ndim ? geo1->global[d] : 1;
        g2[d] = d < geo2->ndim ? geo2->global[d] : 1;
    }
    et_sbuf_printf(&b,
              "/* launch geometry. OpenCL: clEnqueueNDRangeKernel(q, k, "
              "WORK_DIM, NULL,\n * GLOBAL_SIZE, HAS_LOCAL ? LOCAL_SIZE : "
              "NULL, ...). CUDA: <<<GRID_DIM, BLOCK_DIM,\n * "
              "SHARED_BYTES>>> (the kernel declares its shared memory: "
              "%lld bytes). */\n",
              (long long)r->local_bytes);
    et_sbuf_printf(&b, "#define %sWORK_DIM %d\n", P, L->ndim);
    if (oa < 0) {
        et_sbuf_printf(&b, "#define %sGLOBAL_SIZE {%lld, %lld, %lld}\n", P,
                       (long long)gl[0], (long long)gl[1], (long long)gl[2]);
        et_sbuf_printf(&b, "#define %sGRID_DIM {%lld, %lld, %lld}\n", P,
                       (long long)(gl[0] / lo[0]), (long long)(gl[1] / lo[1]),
                       (long long)(gl[2] / lo[2]));
    }
    /* with an open axis, the dimensions that grow with it (g1: one group
     * along it, g2: two) take GROUPS_AT(n) times their size at one */
    et_sbuf_printf(&b, "#define %sGLOBAL_SIZE_AT(n) {", P);
    for (int d = 0; d < 3; d++)
        if (oa >= 0 && g1[d] != g2[d])
            et_sbuf_printf(&b, "%s%lldLL * %sGROUPS_AT(n)", d ? ", " : "",
                           (long long)g1[d], P);
        else
            et_sbuf_printf(&b, "%s%lld", d ? ", " : "", (long long)gl[d]);
    et_sbuf_printf(&b, "}\n#define %sGRID_DIM_AT(n) {", P);
    for (int d = 0; d < 3; d++)
        if (oa >= 0 && g1[d] != g2[d])
            et_sbuf_printf(&b, "%s%lldLL * %sGROUPS_AT(n)", d ? ", " : "",
                           (long long)(g1[d] / lo[d]), P);
        else
            et_sbuf_printf(&b, "%s%lld", d ? ", " : "",
                           (long long)(gl[d] / lo[d]));
    et_sbuf_printf(&b, "}\n");
    et_sbuf_printf(&b, "#define %sLOCAL_SIZE {%lld, %lld, %lld}\n", P,
              (long long)lo[0], (long long)lo[1], (long long)lo[2]);
    et_sbuf_printf(&b, "#define %sHAS_LOCAL %d\n", P, L->has_local ? 1 : 0);
    et_sbuf_printf(&b, "#define %sBLOCK_DIM {%lld, %lld, %lld}\n", P,
              (long long)lo[0], (long long)lo[1], (long long)lo[2]);
    et_sbuf_printf(&b, "#define %sSHARED_BYTES 0\n", P);
    et_sbuf_printf(&b,
              "/* bytes of the output to set to zero before every launch "
              "(SPLIT: work-groups\n * add partial sums into it); 0 = "
              "none */\n");
    if (oa < 0) {
        et_sbuf_printf(&b, "#define %sZERO_OUTPUT_BYTES %lld\n", P,
                       (long long)L->zero_bytes);
        et_sbuf_printf(&b, "#define %sZERO_OUTPUT_BYTES_AT(n) %lldLL\n\n", P,
                       (long long)L->zero_bytes);
    } else {
        et_sbuf_printf(&b, "#define %sZERO_OUTPUT_BYTES_AT(n) "
                       "((long long)(n) * %lldLL)\n\n",
                       P, (long long)zero_per);
    }
    et_sbuf_printf(&b,
              "/* for a program that includes one exported kernel */\n"
              "#ifndef ET_EXPORT\n#define ET_EXPORT(x) %s##x\n#endif\n\n"
              "#endif /* %s */\n",
              P, guard);
    return et_sbuf_take(&b); /* NULL when out of memory */
}

et_status et_best_kernel_export(const et_best_kernel *bk,
                                const et_export_options *o,
                                et_export_result *out, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    memset(out, 0, sizeof *out);
    if (!o || !o->dir || !o->dir[0])
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "an output directory is needed");
    if (strlen(o->dir) > 3000)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "the output directory's name is too long");
    if (o->backend && strcmp(o->backend, "opencl") &&
        strcmp(o->backend, "cuda"))
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "backend must be opencl or cuda, not '%s'",
                        o->backend);
    const et_einsum *e = &bk->e;
    const et_device_info *info = &bk->info;
    const et_best *best = &bk->best;
    const char *dir = o->dir;
    et_kernel *k = NULL;
    et_rendered rend;
    char *hdr = NULL;
    memset(&rend, 0, sizeof rend);

    et_target tg = info->target;
    et_backend_kind bk_kind = tg.backend;
    if (o->backend)
        bk_kind = strcmp(o->backend, "cuda") == 0 ? ET_BACKEND_CUDA
                                                  : ET_BACKEND_OPENCL;
    if (bk_kind != tg.backend) {
        api_log(o->log, o->log_arg, ET_LOG_WARN,
                "the kernel was tuned on %s (%s); rendered for %s with the "
                "same opts, untimed there",
                info->name, et_backend_name(tg.backend),
                et_backend_name(bk_kind));
        tg.backend = bk_kind;
    }
    if (best->source == ET_BEST_FALLBACK)
        api_log(o->log, o->log_arg, ET_LOG_WARN,
                "no kernel tuned at these sizes: the opts tuned at %s are "
                "re-applied at %s, unverified there ('eintune run --best' "
                "verifies them; --exact refuses)",
                best->tuned_at, best->applied_at);
    char reason[512] = "";
    et_status st = et_kernel_init(e, &tg, &k);
    if (st == ET_OK)
        st = et_kernel_apply_opts(k, best->opt, best->n_opts, reason,
                                  sizeof reason);
    if (st == ET_OK)
        st = et_kernel_render(k, bk_kind, NULL, &rend);
    if (st != ET_OK) {
        api_fail(diag, st, ET_INPUT_NONE,
                 "cannot render the kernel for %s: %s",
                 et_backend_name(bk_kind),
                 reason[0] ? reason : et_status_str(st));
        goto out;
    }

    char src_file[300];
    snprintf(src_file, sizeof src_file, "%s.%s", rend.name,
             bk_kind == ET_BACKEND_CUDA ? "cu" : "cl");
    snprintf(out->source, sizeof out->source, "%s/%s", dir, src_file);
    snprintf(out->header, sizeof out->header, "%s/%s.h", dir, rend.name);
    snprintf(out->kernel, sizeof out->kernel, "%s", rend.name);
    out->backend = bk_kind;
    /* the geometry at one and two groups along an open axis, and the
     * zeroed bytes per unit of its size */
    et_launch geo1 = rend.launch, geo2 = rend.launch;
    int64_t step = et_kernel_open_step(k), zero_per = 0;
    if (et_einsum_open_axis(e) >= 0) {
        if (et_kernel_set_open_size(k, step, NULL) != ET_OK ||
            et_kernel_launch(k, bk_kind, &geo1) != ET_OK ||
            et_kernel_set_open_size(k, 2 * step, NULL) != ET_OK ||
            et_kernel_launch(k, bk_kind, &geo2) != ET_OK) {
            st = api_fail(diag, ET_ERR_INTERNAL, ET_INPUT_NONE,
                          "no launch geometry for the open axis");
            goto out;
        }
        zero_per = geo1.zero_bytes / step;
    }
    hdr = header_text(e, info, best, &rend, bk_kind, src_file, &geo1, &geo2,
                      step, zero_per);
    if (!hdr) {
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        goto out;
    }
    if (api_make_dirs(dir) != 0) {
        st = api_fail(diag, ET_ERR_IO, ET_INPUT_FILE, "cannot create %s: %s",
                      dir, strerror(errno));
        snprintf(diag->file, sizeof diag->file, "%s", dir);
        goto out;
    }
    /* the source starts "// eintune <backend> kernel" (transforms/) */
    if (api_foreign_file(out->source, "// eintune ") ||
        api_foreign_file(out->header, HEADER_MARK)) {
        st = api_fail(diag, ET_ERR_INPUT, ET_INPUT_FILE,
                      "%s or %s exists and was not written by eintune "
                      "export; not overwriting it",
                      out->source, out->header);
        goto out;
    }
    if (api_write_atomic(out->source, rend.source) != 0 ||
        api_write_atomic(out->header, hdr) != 0) {
        st = api_fail(diag, ET_ERR_IO, ET_INPUT_FILE,
                      "cannot write in %s: %s", dir, strerror(errno));
        goto out;
    }
    st = ET_OK;
out:
    free(hdr);
    et_rendered_free(&rend);
    et_kernel_free(k);
    return st;
}
