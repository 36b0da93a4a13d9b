/*
 * export.c - et_best_kernel_export: the best known kernel written for a
 * library to embed:
 *
 *   DIR/<name>.cl (or .cu)  the kernel source, as `codegen` prints it but
 *                           with the function called <name>
 *   DIR/<name>.h            a C header: the kernel name, the argument
 *                           order (output, then the inputs in operand
 *                           order) with dtypes, shapes, index lists and
 *                           element counts, and the launch geometry
 *                           (OpenCL global/local sizes, CUDA grid/block)
 *
 * <name> is the caller's (a C identifier) or the renderer's name, which
 * holds the loop sizes only, followed by the dtypes: r_16_12_8_f32 and
 * r_16_12_8_f64 are the two kernels of one shape, which must be able to
 * live in one directory and one program. Header macros are prefixed with
 * the name in upper case and the include guard is made from it, so
 * several exported headers can be included together, e.g. for
 * r_4_2_2_6_2_f32: R_4_2_2_6_2_F32_KERNEL_NAME, ..._GLOBAL_SIZE. Each
 * header also defines ET_EXPORT(x) -> <PREFIX>x unless ET_EXPORT is
 * already defined, for a program that includes a single exported kernel
 * (examples/export_demo.c). With o->embed the header also holds the
 * source as a C string, <PREFIX>SOURCE (api_header_embed, which the
 * dispatch table shares), byte for byte the .cl/.cu file.
 *
 * What is in the way: a file of the same name that eintune did not write
 * (it lacks the first-line marker) is never overwritten; one eintune
 * wrote for another kernel (another problem, other opts, another backend)
 * is replaced only when the caller forces it; one that holds this very
 * kernel is rewritten (its timings may be newer). The header's marker
 * line names the kernel by a hash of its source, so that is the test.
 * Both files are checked before either is written, and each is written
 * under a temporary name in DIR and renamed, so a reader never sees half
 * a file. DIR is created (with its parents) when missing.
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

/* The whole file (malloc'ed, NUL-terminated), NULL when it cannot be read
 * (errno says why) or is over 64 MiB. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    et_sbuf b;
    et_sbuf_init(&b);
    char chunk[8192];
    size_t n, total = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 &&
           (total += n) <= ((size_t)64 << 20))
        et_sbuf_printf(&b, "%.*s", (int)n, chunk);
    int bad = ferror(f) || total > ((size_t)64 << 20);
    fclose(f);
    char *text = et_sbuf_take(&b);
    if (bad || !text) {
        free(text);
        return NULL;
    }
    return text;
}

/* The source at path against the one to write: an eintune source starts
 * "// eintune " (transforms/); the same kernel is the same text. */
api_file_state api_source_state(const char *path, const char *source)
{
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return API_FILE_ABSENT;
    char *text = read_text(path);
    if (!text)
        return API_FILE_FOREIGN;
    api_file_state s = strncmp(text, "// eintune ", 11) != 0
                           ? API_FILE_FOREIGN
                       : strcmp(text, source) == 0 ? API_FILE_SAME
                                                   : API_FILE_OTHER;
    free(text);
    return s;
}

/* The header at path against the marker line it would get (mark, through
 * its newline): the marker names the kernel (or the dispatch table), its
 * backend and its source's hash. A kernel's header and a dispatch table's
 * are both eintune's (HEADER_MARK, DISPATCH_MARK: "/" "* eintune "). */
api_file_state api_header_state(const char *path, const char *mark)
{
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return API_FILE_ABSENT;
    FILE *f = fopen(path, "rb");
    if (!f)
        return API_FILE_FOREIGN;
    char head[512] = "";
    if (!fgets(head, sizeof head, f))
        head[0] = '\0';
    fclose(f);
    if (strncmp(head, "/* eintune ", 11) != 0)
        return API_FILE_FOREIGN;
    return strcmp(head, mark) == 0 ? API_FILE_SAME : API_FILE_OTHER;
}

/* What the eintune source at path is for ("opencl kernel for ij,jk->ik
 * (f32,f32 -> f32, ...), opts: ..."), "" when it cannot be told. */
static void describe_source(const char *path, char *buf, size_t cap)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    char l1[600] = "", l2[600] = "";
    if (fgets(l1, sizeof l1, f) && strncmp(l1, "// eintune ", 11) == 0) {
        if (!fgets(l2, sizeof l2, f) || strncmp(l2, "// opts: ", 9) != 0)
            l2[0] = '\0';
        l1[strcspn(l1, "\n")] = '\0';
        l2[strcspn(l2, "\n")] = '\0';
        snprintf(buf, cap, "%.300s%s%.300s", l1 + 11,
                 l2[0] ? ", opts " : "", l2[0] ? l2 + 9 : "");
    }
    fclose(f);
}

et_status api_files_check(const char *const paths[2],
                          const api_file_state fs[2], int force,
                          et_diag *diag)
{
    for (int f = 0; f < 2; f++) {
        if (fs[f] != API_FILE_FOREIGN)
            continue;
        et_status st = api_fail(diag, ET_ERR_INPUT, ET_INPUT_FILE,
                                "%s exists and was not written by eintune "
                                "export; not overwriting it (remove it, or "
                                "export under another name)",
                                paths[f]);
        snprintf(diag->file, sizeof diag->file, "%.511s", paths[f]);
        return st;
    }
    for (int f = 0; f < 2 && !force; f++) {
        if (fs[f] != API_FILE_OTHER)
            continue;
        char what[700];
        describe_source(paths[0], what, sizeof what);
        et_status st = api_fail(diag, ET_ERR_INPUT, ET_INPUT_FILE,
                                "%s holds another exported kernel%s%s%s; "
                                "not replacing it unless forced (--force), "
                                "or export this one under another name "
                                "(--name)",
                                paths[f], what[0] ? " (" : "", what,
                                what[0] ? ")" : "");
        snprintf(diag->file, sizeof diag->file, "%.511s", paths[f]);
        return st;
    }
    return ET_OK;
}

/* FNV-1a, 64 bits: the source's identity in the header's marker. */
unsigned long long api_text_hash(const char *s)
{
    unsigned long long h = 14695981039346656037ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

void api_macro_prefix(const char *name, char *buf, size_t cap)
{
    size_t i;
    for (i = 0; name[i] && i + 2 < cap; i++)
        buf[i] = (char)toupper((unsigned char)name[i]);
    buf[i++] = '_';
    buf[i] = '\0';
}

/* Words a kernel cannot be called: C's keywords, OpenCL C's qualifiers
 * and types. (Names the kernel's own code uses are caught by
 * name_used_once on the rendered source.) */
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

et_status et_export_name_validate(const char *name, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, name, "name");
    if (!name[0])
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "the kernel's name is empty");
    size_t n = strlen(name);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!(isalpha(c) || c == '_' || (i > 0 && isdigit(c))) || c > 127) {
            et_status st = api_fail(
                diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                "name '%.100s%s' is not a C identifier: '%c' at %zu "
                "(letters, digits and '_', not starting with a digit)",
                name, n > 100 ? "..." : "", isprint(c) ? c : '?', i + 1);
            diag->pos = (int)i;
            return st;
        }
    }
    if (n > 100)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "name '%.100s...' is longer than 100 characters",
                        name);
    if (name[0] == '_' && (name[1] == '_' || isupper((unsigned char)name[1])))
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "name '%s' is reserved to the compiler (it starts "
                        "with '__' or '_' and a capital)",
                        name);
    for (size_t w = 0; w < sizeof reserved_words / sizeof *reserved_words;
         w++)
        if (strcmp(name, reserved_words[w]) == 0)
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "name '%s' is a keyword or type of C or OpenCL "
                            "C",
                            name);
    /* vector types: float4, uint16, ... */
    static const char *const scalars[] = {"char", "uchar", "short", "ushort",
                                          "int", "uint", "long", "ulong",
                                          "float", "double", "half"};
    for (size_t t = 0; t < sizeof scalars / sizeof *scalars; t++) {
        size_t l = strlen(scalars[t]);
        const char *w = name + l;
        if (strncmp(name, scalars[t], l) == 0 &&
            (!strcmp(w, "2") || !strcmp(w, "3") || !strcmp(w, "4") ||
             !strcmp(w, "8") || !strcmp(w, "16")))
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "name '%s' is an OpenCL C vector type", name);
    }
    return ET_OK;
}

/* Does name appear in source as a whole identifier exactly once (as the
 * kernel's name)? Otherwise it would clash with something the kernel's
 * code uses (a built-in, an argument, a variable). */
int api_name_used_once(const char *source, const char *name)
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

/* "_f32" when every operand and the output have one dtype, else
 * "_f16_to_f32" (one input dtype) or "_f32_f64_to_f64". */
void api_dtype_suffix(const et_einsum *e, char *buf, size_t cap)
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

/* {dims}; with oa >= 0 the dims of that index (those that do not
 * broadcast: their extent is its size, oa_size) are "(long long)(n)" */
static void shape_list(et_sbuf *b, const et_operand *o, int oa,
                       int64_t oa_size)
{
    et_sbuf_printf(b, "{");
    for (int r = 0; r < o->rank; r++)
        if (o->idx[r] == oa && o->dim[r] == oa_size)
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
        if (o->idx[r] == oa && o->dim[r] == e->idx[oa].size)
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
                         et_backend_kind bk, const char *mark,
                         const char *src_file, const et_launch *geo1,
                         const et_launch *geo2, int64_t open_step,
                         int64_t zero_per)
{
    int64_t g1[3] = {1, 1, 1}, g2[3] = {1, 1, 1};
    et_sbuf b;
    et_sbuf_init(&b);
    char P[200], guard[220], opts[ET_DB_OPTS_LEN], dev[256];
    api_macro_prefix(r->name, P, sizeof P);
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

    et_sbuf_printf(&b, "%s", mark);
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
              opts[0] ? opts : "untransformed", dev,
              et_backend_name(info->target.backend),
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
            shape_list(&b, o, -1, 0);
            et_sbuf_printf(&b, "\n");
        }
        et_sbuf_printf(&b, "#define %sARG%d_SHAPE_AT(n) ", P, a);
        shape_list(&b, o, oa, oa >= 0 ? e->idx[oa].size : 0);
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
                if (at && d < o->rank && o->idx[d] == oa && o->dim[d] == e->idx[oa].size)
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

/* text as a C string literal: one piece in quotes per line of text, each
 * but the last ending in a backslash (the pieces are a macro's body).
 * Escaped: quote, backslash, '?' (no trigraph can form), tab, CR, and
 * every other byte outside printable ASCII as three octal digits, so the
 * literal's bytes are text's exactly. */
void api_c_string(et_sbuf *b, const char *text)
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

char *api_header_embed(char *hdr, const char *prefix, const char *source,
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
    api_c_string(&b, source);
    et_sbuf_printf(&b, "\n\n%s", end);
    free(hdr);
    return et_sbuf_take(&b);
}

/* hdr (freed) with its verification: a " * checked ..." line after the
 * " * source ..." line of the comment, and PREFIX_VERIFIED 1 or 0 after
 * the include guard. NULL when out of memory. */
static char *header_add_check(char *hdr, const char *prefix,
                              const char *line, bool verified)
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

et_status et_best_kernel_export(const et_best_kernel *bk,
                                const et_export_options *o,
                                et_export_result *out, et_diag *diag)
{
    et_diag local;
    et_export_result local_out;
    if (!diag)
        diag = &local;
    if (!out)
        out = &local_out;
    api_diag_clear(diag);
    memset(out, 0, sizeof *out);
    API_NEED(diag, bk, "bk");
    API_NEED(diag, o, "o");
    if (!o->dir || !o->dir[0])
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
    if (o->name && et_export_name_validate(o->name, diag) != ET_OK)
        return diag->status;
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
    char name[160] = "";
    et_status st = et_kernel_init(e, &tg, &k);
    if (st == ET_OK)
        st = et_kernel_apply_opts(k, best->opt, best->n_opts, reason,
                                  sizeof reason);
    if (st != ET_OK) {
        api_fail(diag, st, ET_INPUT_NONE,
                 "cannot render the kernel for %s: %s",
                 et_backend_name(bk_kind),
                 reason[0] ? reason : et_status_str(st));
        goto out;
    }
    if (o->name) {
        snprintf(name, sizeof name, "%s", o->name);
    } else {
        char base[160], suffix[160];
        et_kernel_name(k, base, sizeof base);
        api_dtype_suffix(e, suffix, sizeof suffix);
        if (strlen(base) + strlen(suffix) >= 101) {
            st = api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                          "the kernel's name %s%s would be over 100 "
                          "characters: give it a name",
                          base, suffix);
            goto out;
        }
        snprintf(name, sizeof name, "%.100s%.50s", base, suffix);
    }
    et_render_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.name = name;
    st = et_kernel_render(k, bk_kind, &ro, &rend);
    if (st != ET_OK) {
        api_fail(diag, st, ET_INPUT_NONE,
                 "cannot render the kernel for %s: %s",
                 et_backend_name(bk_kind), et_status_str(st));
        goto out;
    }
    if (!api_name_used_once(rend.source, name)) {
        st = api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                      "name '%s' is used inside the kernel's code (an "
                      "argument, a variable or a built-in): choose another",
                      name);
        goto out;
    }

    char src_file[300];
    snprintf(src_file, sizeof src_file, "%s.%s", rend.name,
             bk_kind == ET_BACKEND_CUDA ? "cu" : "cl");
    snprintf(out->source, sizeof out->source, "%s/%s", dir, src_file);
    snprintf(out->header, sizeof out->header, "%s/%s.h", dir, rend.name);
    snprintf(out->kernel, sizeof out->kernel, "%s", rend.name);
    api_macro_prefix(rend.name, out->prefix, sizeof out->prefix);
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
    /* what reaches a user was verified: at the sizes the header serves */
    char vline[768] = "not verified on a device (written with --no-verify)";
    if (!o->no_verify) {
        int oa = et_einsum_open_axis(e);
        int64_t asked = oa >= 0 ? e->idx[oa].size : 0;
        st = api_deliver_verify(info, k, best, &asked, oa >= 0 ? 1 : 0,
                                vline, sizeof vline, diag);
        if (st != ET_OK)
            goto out;
        api_log(o->log, o->log_arg, ET_LOG_INFO, "%s", vline);
    }
    char mark[300];
    snprintf(mark, sizeof mark, HEADER_MARK "%s (%s), source %016llx */\n",
             rend.name, et_backend_name(bk_kind),
             api_text_hash(rend.source));
    hdr = header_text(e, info, best, &rend, bk_kind, mark, src_file, &geo1,
                      &geo2, step, zero_per);
    if (!hdr || !(hdr = header_add_check(hdr, out->prefix, vline,
                                         !o->no_verify)) ||
        (o->embed && !(hdr = api_header_embed(hdr, out->prefix, rend.source,
                                              src_file)))) {
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        goto out;
    }
    if (api_make_dirs(dir) != 0) {
        st = api_fail(diag, ET_ERR_IO, ET_INPUT_FILE, "cannot create %s: %s",
                      dir, strerror(errno));
        snprintf(diag->file, sizeof diag->file, "%s", dir);
        goto out;
    }
    /* both files are looked at before either is written */
    const char *paths[2] = {out->source, out->header};
    api_file_state fs[2] = {api_source_state(out->source, rend.source),
                            api_header_state(out->header, mark)};
    if ((st = api_files_check(paths, fs, o->force, diag)) != ET_OK)
        goto out;
    out->replaced = fs[0] == API_FILE_OTHER || fs[1] == API_FILE_OTHER;
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
