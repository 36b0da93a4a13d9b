/*
 * files.c - the files an export writes and those in its way: the
 * directory made with its parents, what a file of the same name holds
 * (absent, eintune's with the same kernel or table, eintune's with
 * another, or not eintune's: a source by its first line, a header by its
 * marker line, which carries a hash of the source), the rule that refuses
 * to overwrite, and the writes through a temporary file and a rename. Also
 * xp_fail, the way every file of export/ fills its error.
 */
#include "export/export_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a file in the way of an export holds. */
typedef enum file_state {
    FILE_ABSENT = 0,
    FILE_SAME,      /* eintune's, with what is about to be written */
    FILE_OTHER,     /* eintune's, another kernel or table */
    FILE_FOREIGN    /* not written by eintune export (or unreadable) */
} file_state;

et_status xp_fail(et_export_error *xe, et_status st, et_export_about about,
                  const char *fmt, ...)
{
    xe->about = about;
    xe->pos = -1;
    xe->file[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(xe->err.msg, sizeof xe->err.msg, fmt, ap);
    va_end(ap);
    return st;
}

int xp_make_dirs(const char *path)
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
static file_state source_state(const char *path, const char *source)
{
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return FILE_ABSENT;
    char *text = read_text(path);
    if (!text)
        return FILE_FOREIGN;
    file_state s = strncmp(text, "// eintune ", 11) != 0 ? FILE_FOREIGN
                   : strcmp(text, source) == 0           ? FILE_SAME
                                                         : FILE_OTHER;
    free(text);
    return s;
}

/* The header at path against the marker line it would get (mark, through
 * its newline): the marker names the kernel (or the dispatch table), its
 * backend and its source's hash. A kernel's header and a dispatch table's
 * are both eintune's ("/" "* eintune "). */
static file_state header_state(const char *path, const char *mark)
{
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return FILE_ABSENT;
    FILE *f = fopen(path, "rb");
    if (!f)
        return FILE_FOREIGN;
    char head[512] = "";
    if (!fgets(head, sizeof head, f))
        head[0] = '\0';
    fclose(f);
    if (strncmp(head, "/* eintune ", 11) != 0)
        return FILE_FOREIGN;
    return strcmp(head, mark) == 0 ? FILE_SAME : FILE_OTHER;
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

/* The rule for files in the way: paths[0] the source, paths[1] the
 * header. A foreign file is never replaced, another eintune file only
 * with force. */
static et_status files_check(const char *const paths[2],
                             const file_state fs[2], bool force,
                             et_export_error *xe)
{
    for (int f = 0; f < 2; f++) {
        if (fs[f] != FILE_FOREIGN)
            continue;
        et_status st = xp_fail(xe, ET_ERR_INPUT, ET_EXPORT_ABOUT_FILE,
                               "%s exists and was not written by eintune "
                               "export; not overwriting it (remove it, or "
                               "export under another name)",
                               paths[f]);
        snprintf(xe->file, sizeof xe->file, "%.511s", paths[f]);
        return st;
    }
    for (int f = 0; f < 2 && !force; f++) {
        if (fs[f] != FILE_OTHER)
            continue;
        char what[700];
        describe_source(paths[0], what, sizeof what);
        et_status st = xp_fail(xe, ET_ERR_INPUT, ET_EXPORT_ABOUT_FILE,
                               "%s holds another exported kernel%s%s%s; "
                               "not replacing it unless forced (--force), "
                               "or export this one under another name "
                               "(--name)",
                               paths[f], what[0] ? " (" : "", what,
                               what[0] ? ")" : "");
        snprintf(xe->file, sizeof xe->file, "%.511s", paths[f]);
        return st;
    }
    return ET_OK;
}

/* FNV-1a, 64 bits: the source's identity in the header's marker. */
static unsigned long long text_hash(const char *s)
{
    unsigned long long h = 14695981039346656037ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

void xp_mark(char *buf, size_t cap, const char *what, const char *name,
             et_backend_kind backend, const char *source)
{
    snprintf(buf, cap, "/* eintune %s: %s (%s), source %016llx */\n", what,
             name, et_backend_name(backend), text_hash(source));
}

/* Writes text to path through a temporary file in the same directory: 0,
 * or -1 with errno. */
static int write_atomic(const char *path, const char *text)
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

et_status xp_put_files(const char *dir, const char *const paths[2],
                       const char *source, const char *hdr, const char *mark,
                       bool force, bool *replaced, et_export_error *xe)
{
    /* both files are looked at before either is written */
    file_state fs[2] = {source_state(paths[0], source),
                        header_state(paths[1], mark)};
    et_status st = files_check(paths, fs, force, xe);
    if (st != ET_OK)
        return st;
    *replaced = fs[0] == FILE_OTHER || fs[1] == FILE_OTHER;
    if (write_atomic(paths[0], source) != 0 ||
        write_atomic(paths[1], hdr) != 0)
        return xp_fail(xe, ET_ERR_IO, ET_EXPORT_ABOUT_FILE,
                       "cannot write in %s: %s", dir, strerror(errno));
    return ET_OK;
}
