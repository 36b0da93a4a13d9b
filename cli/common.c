/* common.c - logging, flags, diagnostics and JSON output for the CLI. */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
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

void cli_diag(const char *what, const char *text, const et_diag *d)
{
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
    fprintf(stderr, " (see 'eintune %s --help')\n", cmd);
    return EXIT_INPUT;
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

void cli_getopt_reset(void)
{
    optind = 1;
    opterr = 1;
}
