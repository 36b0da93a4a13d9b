/*
 * cmd_campaign.c - `eintune campaign FILE`: tunes a list of problems one
 * after another, or one per free rank under mpirun, and prints one summary
 * table (and JSON) at the end. Everything it does is et_campaign_*.
 */
#include "cli/cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: eintune campaign FILE [--retime] [--device D] [--db FILE]\n"
        "                        [--json FILE]\n"
        "\n"
        "Tunes every problem of FILE, a YAML list:\n"
        "  - einsum: \"xik,kj->xij\"      (required)\n"
        "    shape: x=256,i=16,k=16,j=16  (required; or {x: 256, i: 16, ...})\n"
        "    dtype: f32                    (default f64)\n"
        "    space: tiled.yaml             (relative to FILE; default the\n"
        "                                   built-in action pool)\n"
        "    budget: 24                    (default 100)\n"
        "    search: beam                  (beam, random or grid)\n"
        "    time-limit: 60                (seconds; default none)\n"
        "    seed: 0\n"
        "    race: 3                       (final race; 0: none)\n"
        "one after another on one device, every trial in the database. A\n"
        "problem tuned to its end is recorded as finished: the campaign run\n"
        "again answers it from the database and times nothing for it, and\n"
        "resumes the others. Under mpirun (mpirun -n N eintune campaign\n"
        "FILE) rank 0 owns the database and hands each problem to the next\n"
        "free rank, which tunes it on its own device (--device: a list\n"
        "indexed by the node-local rank) and cores. Ends with one summary\n"
        "table (--json: the same as JSON).\n"
        "\n"
        "  --retime          tune every problem again, measuring again what\n"
        "                    the database knows\n"
        "  --device D        opencl:N, opencl:P:D, opencl:NAME or cuda:N\n"
        "  --db FILE         tuning database (default\n"
        "                    $XDG_CACHE_HOME/eintune/tuning.db)\n"
        "  --json FILE       the summary as JSON ('-' = stdout)\n"
        "\n"
        "^C finishes the candidates in flight, then reports.\n"
        "exit status: 0 every problem has a verified kernel, 1 a problem\n"
        "failed, found none or was not run, 2 bad input (FILE's YAML, keys\n"
        "or values, named FILE:LINE:COLUMN; a space file; a device spec\n"
        "naming no device)\n");
}

static volatile sig_atomic_t g_stop;

static void on_sigint(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* The campaign file's line `line` echoed with a caret under `col`. */
static void echo_line(const char *file, int line, int col)
{
    FILE *f = fopen(file, "r");
    if (!f || line < 1)
        goto out;
    char buf[1024];
    for (int l = 1; fgets(buf, sizeof buf, f); l++) {
        if (l < line)
            continue;
        buf[strcspn(buf, "\r\n")] = '\0';
        fprintf(stderr, "  %s\n  %*s^\n", buf, col > 1 ? col - 1 : 0, "");
        break;
    }
out:
    if (f)
        fclose(f);
}

/* A line per settled problem (a failure is the API's warning). */
static void on_done(void *arg, const et_campaign_entry *e)
{
    (void)arg;
    const et_tune_summary *s = &e->summary;
    if (e->state == ET_CAMPAIGN_TUNED || e->state == ET_CAMPAIGN_FROM_DB)
        cli_log(LOG_INFO, "campaign", "problem %d (%s %s %s): %s, %s%s",
                e->index + 1, e->einsum, e->shape, e->dtype,
                e->state == ET_CAMPAIGN_TUNED ? "tuned" : "from the database",
                s->found ? "best " : "no verified kernel",
                s->found ? (s->opts[0] ? s->opts : "untransformed") : "");
}

int cmd_campaign(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"retime", no_argument, 0, 2001},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    et_campaign_options co;
    memset(&co, 0, sizeof co);
    int opt;
    while ((opt = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 2001: co.retime = 1; break;
        case 'h': usage(stdout); return 0;
        default: return cli_usage_error("campaign", "bad flag");
        }
    }
    const char *file = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return cli_usage_error("campaign", "unexpected argument '%s'",
                               argv[optind]);
    if (!file)
        return cli_usage_error("campaign", "missing FILE");

    et_diag d;
    memset(&d, 0, sizeof d);
    et_campaign *c = NULL;
    et_status st = et_campaign_load(file, &c, &d);
    if (st != ET_OK) {
        int status = cli_api_error("campaign", st, &d);
        if (st == ET_ERR_INPUT && d.input == ET_INPUT_FILE && d.line > 0)
            echo_line(file, d.line, d.col);
        /* a campaign that cannot be read is bad input too */
        return st == ET_ERR_IO ? EXIT_INPUT : status;
    }
    co.device = g_cli.device;
    co.db = g_cli.db;
    co.log = cli_api_log;
    co.log_arg = "campaign";
    co.cancel = &g_stop;
    co.done = on_done;
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    et_campaign_report *rep = NULL;
    memset(&d, 0, sizeof d);
    st = et_campaign_run(c, &co, &rep, &d);
    sigaction(SIGINT, &old_sa, NULL);
    et_campaign_free(c);
    if (st != ET_OK)
        return cli_api_error("campaign", st, &d);
    if (et_campaign_report_rank(rep) > 0) {
        /* a rank that tuned problems for rank 0, which reports */
        et_campaign_report_free(rep);
        return 0;
    }
    FILE *f = cli_table_out();
    et_campaign_report_print(rep, f);
    fflush(f);
    int status = 0;
    for (int i = 0; i < et_campaign_report_n(rep); i++) {
        et_campaign_entry e;
        et_campaign_report_entry(rep, i, &e);
        if (e.state == ET_CAMPAIGN_NOT_RUN || e.state == ET_CAMPAIGN_FAILED ||
            !e.summary.found)
            status = EXIT_RUN;
    }
    if (g_cli.json && cli_json_emit_api(et_campaign_report_json(rep)))
        status = EXIT_RUN;
    et_campaign_report_free(rep);
    return status;
}
