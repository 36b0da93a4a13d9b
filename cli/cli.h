/*
 * cli.h - shared pieces of the eintune command: logging, common flags,
 * diagnostics with a caret, JSON output. Each command lives in cmd_*.c and
 * returns the process exit status: 0 success, 1 a run that could not
 * complete (device, build), 2 bad input.
 */
#ifndef ET_CLI_H
#define ET_CLI_H

#include "eintune.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>

enum { EXIT_RUN = 1, EXIT_INPUT = 2 };

enum cli_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* An error as the JSON error object of `--json -` gives it
 * (docs/roofline.md, "Reports and JSON"): recorded by cli_usage_error,
 * cli_diag, cli_error and cli_exit_status, the first one wins (the later
 * ones are its consequences). */
typedef struct cli_err_record {
    int set;
    char status[16];     /* "usage", "bad input", "run failed" */
    char input[16];      /* what the message is about ("einsum", ...), or "" */
    int pos, line, col;  /* byte in the input, or -1; line:col, or 0 */
    char message[1024];
} cli_err_record;

/* Flags common to every command. */
typedef struct cli_common {
    const char *device;  /* --device, NULL = default */
    const char *db;      /* --db */
    const char *json;    /* --json FILE, "-" = stdout */
    int quiet;
    int verbose;
    int json_written;    /* the JSON document went out */
    cli_err_record err;    /* the first error printed, for --json - */
} cli_common;

extern cli_common g_cli;

/* getopt_long entries for the common flags; append to a command's table. */
#define CLI_COMMON_LONGOPTS                                                 \
    {"device", required_argument, 0, 1001},                                 \
        {"db", required_argument, 0, 1002},                                 \
        {"json", required_argument, 0, 1003},                               \
        {"quiet", no_argument, 0, 'q'}, {"verbose", no_argument, 0, 'v'},  \
        {"help", no_argument, 0, 'h'}

/* Handles a common flag; returns 1 if `opt` was one, 0 otherwise. */
int cli_common_opt(int opt, const char *arg);

/* "[  2s] INFO tag: message" on stderr, filtered by --quiet/--verbose. */
void cli_log(enum cli_level lvl, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prints "eintune: <what>: <msg>" and, when d->pos >= 0, the text echoed
 * with a caret under byte d->pos. */
void cli_diag(const char *what, const char *text, const et_diag *d);

/* Prints a usage error ("eintune CMD: msg; see --help") and returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "eintune CMD: msg", records it as an error of exit status
 * `status` (EXIT_INPUT: bad input, else a failed run) and returns status. */
int cli_error(const char *cmd, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prints "eintune CMD: <d->msg>", records it with d's input, position,
 * line and column, and returns cli_exit_status(st, d). */
int cli_api_error(const char *cmd, et_status st, const et_diag *d);

/* Checks, before anything runs, a file the command will write: its
 * extension when exts (NULL-terminated, e.g. ".svg", ".png") is given,
 * that it is not a directory, and that its directory exists and is
 * writable (dir: path is a directory that must exist, be writable, or be
 * creatable in a writable parent). Returns 0, or prints "eintune CMD:
 * FLAG PATH: why" and returns 2. */
int cli_check_output(const char *cmd, const char *flag, const char *path,
                     const char *const *exts, int dir);

/* With `--json -`, a command that failed without writing its document
 * writes the recorded error (or a generic one for status) to stdout:
 * {"error": {"status", "exit", "message", "input", "pos", "line", "col"}}.
 * Called by main after the command returned status. */
void cli_json_error(const char *cmd, int status);

/* Stream for human-readable tables: stdout, or stderr when --json -. */
FILE *cli_table_out(void);

/* Writes doc to g_cli.json (if set); returns 0 or prints why and 1. */
int cli_json_emit(cJSON *doc);

/* As cli_json_emit for a document the API gave as text (cJSON_Print's
 * formatting); NULL text is out of memory: prints why and returns 1. */
int cli_json_emit_text(const char *text);

/* As cli_json_emit_text, then frees text with et_free. */
int cli_json_emit_api(char *text);

/* An et_log_fn printing through cli_log; arg is the tag (a string). */
void cli_api_log(void *arg, et_log_level level, const char *msg);

/* The exit status for a call that returned st with diagnostic d: 0 for
 * ET_OK, 2 for bad input (ET_ERR_INPUT or ET_ERR_REFUSED about an input
 * of d), 1 otherwise. */
int cli_exit_status(et_status st, const et_diag *d);

/* Prints the diagnostic of et_problem_init with the text it is about
 * echoed: "einsum", "--shape" or "--dtype". */
void cli_problem_diag(const et_diag *d, const char *einsum,
                      const char *shape, const char *dtype);
/* A diagnostic of et_problem_set_batch: under --batch's text or the
 * einsum's. */
void cli_batch_diag(const et_diag *d, const char *einsum, const char *batch);

/* Resets getopt for a subcommand's argv. */
void cli_getopt_reset(void);

int cmd_check(int argc, char **argv);
int cmd_codegen(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_campaign(int argc, char **argv);
int cmd_peaks(int argc, char **argv);
int cmd_db(int argc, char **argv);
int cmd_best(int argc, char **argv);
int cmd_export(int argc, char **argv);

/*
 * For `best` and `export`: the problem of text, shape and dtype (its
 * error echoed with a caret) and the best kernel known for it on --device
 * in --db (et_best_kernel_find; roofline: also the stored peaks; exact:
 * no fallback to other sizes), logging
 * under tag cmd. Returns 0 with *p and *bk set (freed by the caller even
 * on failure), or the exit status after printing why: 1 nothing known or
 * no device, 2 bad input.
 */
int cli_best_find(const char *cmd, const char *text, const char *shape,
                  const char *dtype, const char *batch, int roofline,
                  int exact, et_problem **p, et_best_kernel **bk);

#endif
