/* common.c - logging, flags, diagnostics and JSON output for the CLI. */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

cli_common g_cli;

static double start_time(void)
{
    static double t0 = -1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    if (t0 < 0)
        t0 = now;
    return now - t0;
}

__attribute__((constructor)) static void cli_clock_start(void)
{
    (void)start_time();
}

int cli_common_opt(int opt, const char *arg)
{
    switch (opt) {
    case 1001: g_cli.device = arg; return 1;
    case 1002: g_cli.db = arg; return 1;
    case 1003: g_cli.json = arg; return 1;
    case 'q': g_cli.quiet = 1; return 1;
    case 'v': g_cli.verbose = 1; return 1;
    default: return 0;
    }
}

void cli_log(enum cli_level lvl, const char *tag, const char *fmt, ...)
{
    static const char *const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    if (lvl == LOG_DEBUG && !g_cli.verbose)
        return;
    if (lvl == LOG_INFO && g_cli.quiet)
        return;
    fprintf(stderr, "[%3.0fs] %s %s: ", start_time(), names[lvl], tag);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Records the first error for the JSON error object of --json -. */
static void record(const char *status, const char *input, int pos, int line,
                   int col, const char *fmt, va_list ap)
{
    cli_err_record *e = &g_cli.err;
    if (e->set)
        return;
    e->set = 1;
    snprintf(e->status, sizeof e->status, "%s", status);
    snprintf(e->input, sizeof e->input, "%s", input ? input : "");
    e->pos = pos;
    e->line = line;
    e->col = col;
    vsnprintf(e->message, sizeof e->message, fmt, ap);
}

static void recordf(const char *status, const char *input, int pos,
                    int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void recordf(const char *status, const char *input, int pos,
                    int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(status, input, pos, line, col, fmt, ap);
    va_end(ap);
}

void cli_diag(const char *what, const char *text, const et_diag *d)
{
    /* "input" as et_input_name says it: "--shape" is "shape", a .npy
     * file is "file" */
    const char *in = what[0] == '-' && what[1] == '-' ? what + 2 : what;
    if (!strcmp(in, "input") || !strcmp(in, "output"))
        in = "file";
    recordf("", in, text ? d->pos : -1, d->line, d->col, "%s", d->msg);
    if (d->line > 0)
        fprintf(stderr, "eintune: %s:%d:%d: %s\n", what, d->line, d->col,
                d->msg);
    else
        fprintf(stderr, "eintune: %s: %s\n", what, d->msg);
    if (text && d->pos >= 0 && (size_t)d->pos <= strlen(text)) {
        fprintf(stderr, "  %s\n  ", text);
        for (int i = 0; i < d->pos; i++)
            fputc(text[i] == '\t' ? '\t' : ' ', stderr);
        fputs("^\n", stderr);
    }
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    fprintf(stderr, "eintune %s: ", cmd);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    va_start(ap, fmt);
    record("usage", "", -1, 0, 0, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'eintune %s --help')\n", cmd);
    return EXIT_INPUT;
}

int cli_error(const char *cmd, int status, const char *fmt, ...)
{
    fprintf(stderr, "eintune%s%s: ", cmd[0] ? " " : "", cmd);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    va_start(ap, fmt);
    record("", "", -1, 0, 0, fmt, ap);
    va_end(ap);
    return status;
}

int cli_api_error(const char *cmd, et_status st, const et_diag *d)
{
    fprintf(stderr, "eintune %s: %s\n", cmd, d->msg);
    recordf("", et_input_name(d->input), d->pos, d->line, d->col, "%s",
            d->msg);
    return cli_exit_status(st, d);
}

/* The error of cli_check_output: prints it and returns 2. */
static int out_error(const char *cmd, const char *flag, const char *path,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int out_error(const char *cmd, const char *flag, const char *path,
                     const char *fmt, ...)
{
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    fprintf(stderr, "eintune %s: %s %s: %s\n", cmd, flag, path, why);
    recordf("", flag[0] == '-' && flag[1] == '-' ? flag + 2 : flag, -1, 0, 0,
            "%s %s: %s", flag, path, why);
    return EXIT_INPUT;
}

int cli_check_output(const char *cmd, const char *flag, const char *path,
                     const char *const *exts, int dir)
{
    if (!path || !path[0])
        return out_error(cmd, flag, "''", "empty path");
    if (exts) {
        const char *base = strrchr(path, '/');
        const char *dot = strrchr(base ? base : path, '.');
        int ok = 0;
        char list[128] = "";
        for (int i = 0; exts[i]; i++) {
            ok = ok || (dot && strcasecmp(dot, exts[i]) == 0);
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                     i == 0 ? "" : exts[i + 1] ? ", " : " or ", exts[i]);
        }
        if (!ok)
            return out_error(cmd, flag, path, "must end in %s", list);
    }
    struct stat sb;
    if (stat(path, &sb) == 0) {
        if (!dir && S_ISDIR(sb.st_mode))
            return out_error(cmd, flag, path, "is a directory");
        if (dir && !S_ISDIR(sb.st_mode))
            return out_error(cmd, flag, path, "is not a directory");
        if (access(path, W_OK) != 0)
            return out_error(cmd, flag, path, "not writable: %s",
                             strerror(errno));
        if (!dir)
            goto parent; /* replaced through a temporary next to it */
        return 0;
    }
    if (errno != ENOENT)
        return out_error(cmd, flag, path, "%s", strerror(errno));
parent:;
    /* the directory it goes into (for -o DIR, the nearest existing
     * ancestor: the directories below it are created) */
    char *p = strdup(path);
    if (!p)
        return out_error(cmd, flag, path, "out of memory");
    int rc = 0;
    for (;;) {
        char *slash = strrchr(p, '/');
        while (slash && slash > p && slash[1] == '\0') {
            *slash = '\0'; /* trailing slashes */
            slash = strrchr(p, '/');
        }
        if (!slash)
            strcpy(p, ".");
        else if (slash == p)
            p[1] = '\0';
        else
            *slash = '\0';
        if (stat(p, &sb) == 0) {
            if (!S_ISDIR(sb.st_mode))
                rc = out_error(cmd, flag, path, "%s is not a directory", p);
            else if (access(p, W_OK | X_OK) != 0)
                rc = out_error(cmd, flag, path,
                               "cannot write in directory %s: %s", p,
                               strerror(errno));
            break;
        }
        if (errno != ENOENT || !dir) {
            rc = out_error(cmd, flag, path, "directory %s: %s", p,
                           strerror(errno));
            break;
        }
        if (!strcmp(p, ".") || !strcmp(p, "/"))
            break;
    }
    free(p);
    return rc;
}

void cli_json_error(const char *cmd, int status)
{
    if (status == 0 || !g_cli.json || strcmp(g_cli.json, "-") != 0 ||
        g_cli.json_written)
        return;
    const cli_err_record *e = &g_cli.err;
    cJSON *doc = cJSON_CreateObject();
    cJSON *je = cJSON_AddObjectToObject(doc, "error");
    const char *st = e->set && e->status[0] ? e->status
                     : status == EXIT_INPUT ? "bad input"
                                            : "run failed";
    cJSON_AddStringToObject(je, "status", st);
    cJSON_AddNumberToObject(je, "exit", status);
    char generic[160];
    snprintf(generic, sizeof generic, "eintune %s failed (see stderr)", cmd);
    cJSON_AddStringToObject(je, "message", e->set ? e->message : generic);
    if (e->set && e->input[0])
        cJSON_AddStringToObject(je, "input", e->input);
    else
        cJSON_AddNullToObject(je, "input");
    if (e->set && e->pos >= 0)
        cJSON_AddNumberToObject(je, "pos", e->pos);
    else
        cJSON_AddNullToObject(je, "pos");
    if (e->set && e->line > 0) {
        cJSON_AddNumberToObject(je, "line", e->line);
        cJSON_AddNumberToObject(je, "col", e->col);
    }
    char *text = cJSON_Print(doc);
    if (text) {
        fputs(text, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    }
    cJSON_free(text);
    cJSON_Delete(doc);
}

FILE *cli_table_out(void)
{
    if (g_cli.json && strcmp(g_cli.json, "-") == 0)
        return stderr;
    return stdout;
}

int cli_json_emit(cJSON *doc)
{
    if (!g_cli.json)
        return 0;
    char *text = cJSON_Print(doc);
    int rc = cli_json_emit_text(text);
    cJSON_free(text);
    return rc;
}

int cli_json_emit_text(const char *text)
{
    if (!g_cli.json)
        return 0;
    if (!text) {
        fprintf(stderr, "eintune: out of memory writing JSON\n");
        return 1;
    }
    int rc = 0;
    if (strcmp(g_cli.json, "-") == 0) {
        g_cli.json_written = 1;
        fputs(text, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    } else {
        /* a regular file (or a new one) appears whole: written under a
         * temporary name next to it (O_EXCL, never through a planted
         * symlink) and renamed over it; a FIFO or device is written as is */
        struct stat sb;
        int special = stat(g_cli.json, &sb) == 0 && !S_ISREG(sb.st_mode);
        size_t plen = strlen(g_cli.json);
        char *tmp = special ? NULL : malloc(plen + 32);
        FILE *f = NULL;
        int created = 0;
        if (special) {
            f = fopen(g_cli.json, "w");
        } else if (tmp) {
            snprintf(tmp, plen + 32, "%s.tmp.%ld", g_cli.json,
                     (long)getpid());
            int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
                fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            created = fd >= 0;
            f = fd >= 0 ? fdopen(fd, "w") : NULL;
            if (!f && fd >= 0)
                close(fd);
        }
        if (!f || fputs(text, f) < 0 || fputc('\n', f) == EOF) {
            fprintf(stderr, "eintune: cannot write %s: %s\n", g_cli.json,
                    strerror(errno));
            rc = 1;
        }
        if (f && fclose(f) != 0 && rc == 0) {
            fprintf(stderr, "eintune: cannot write %s: %s\n", g_cli.json,
                    strerror(errno));
            rc = 1;
        }
        if (created && rc == 0 && rename(tmp, g_cli.json) != 0) {
            fprintf(stderr, "eintune: cannot write %s: %s\n", g_cli.json,
                    strerror(errno));
            rc = 1;
        }
        if (created && rc != 0)
            unlink(tmp);
        free(tmp);
    }
    return rc;
}

int cli_json_emit_api(char *text)
{
    int rc = cli_json_emit_text(text);
    et_free(text);
    return rc;
}

void cli_api_log(void *arg, et_log_level level, const char *msg)
{
    enum cli_level lvl = level == ET_LOG_DEBUG  ? LOG_DEBUG
                         : level == ET_LOG_WARN ? LOG_WARN
                                                : LOG_INFO;
    cli_log(lvl, arg ? (const char *)arg : "eintune", "%s", msg);
}

int cli_exit_status(et_status st, const et_diag *d)
{
    if (st == ET_OK)
        return 0;
    recordf("", et_input_name(d->input), d->pos, d->line, d->col, "%s",
            d->msg);
    if ((st == ET_ERR_INPUT || st == ET_ERR_REFUSED) &&
        d->input != ET_INPUT_NONE)
        return EXIT_INPUT;
    return EXIT_RUN;
}

void cli_problem_diag(const et_diag *d, const char *einsum,
                      const char *shape, const char *dtype)
{
    if (d->input == ET_INPUT_SHAPE)
        cli_diag("--shape", shape, d);
    else if (d->input == ET_INPUT_DTYPE)
        cli_diag("--dtype", dtype, d);
    else
        cli_diag("einsum", einsum, d);
}

void cli_batch_diag(const et_diag *d, const char *einsum, const char *batch)
{
    if (d->input == ET_INPUT_BATCH)
        cli_diag("--batch", batch, d);
    else
        cli_diag("einsum", einsum, d);
}

void cli_getopt_reset(void)
{
    optind = 1;
    opterr = 1;
}
