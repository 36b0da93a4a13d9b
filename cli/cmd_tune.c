/*
 * cmd_tune.c - `eintune tune`: binds a transform space to the einsum,
 * searches it on a device, verifies and times every candidate, and
 * reports the best against the roofline.
 */
#include "cli/cli.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: eintune tune EINSUM --shape SPEC [--dtype SPEC] [--space FILE]\n"
        "                    [--tune-at SPEC] [--batch ROWS] [--opts '..']\n"
        "                    [--search beam|random|grid]\n"
        "                    [--budget N] [--time-limit SEC] [--beam-width K]\n"
        "                    [--seed N] [--seeds N | --no-seed] [--retime]\n"
        "                    [--race K] [--model on|off] [--plot FILE]\n"
        "                    [--device D] [--db FILE] [--json FILE]\n"
        "\n"
        "Searches a transform space for the fastest verified kernel of the\n"
        "einsum on the device. Every candidate is checked against an\n"
        "extended-precision reference on 3 input sets before it is timed.\n"
        "\n"
        "  --shape SPEC      sizes: x=4096,i=35,k=35,j=35 (...=3x2 for '...');\n"
        "                    x=* (or x=inf) makes x an open axis: the kernel\n"
        "                    takes its size at launch and serves every size;\n"
        "                    several problems: a list i=8/16/24, a range\n"
        "                    i=8:64:8 (stop included), a tie k=i (the same\n"
        "                    size as i): each problem is tuned in turn into\n"
        "                    the database, then one summary table (its\n"
        "                    \"from\" column: race, this run or database,\n"
        "                    whose median the time is)\n"
        "  --tune-at SPEC    the size an open axis is tuned at: x=4096\n"
        "                    (default 1024); candidates are also verified\n"
        "                    at x=1 and at the largest prime below it\n"
        "  --dtype SPEC      f16, f32 or f64, or one per operand (default f64)\n"
        "  --batch ROWS      a batched einsum: the operands of each row,\n"
        "                    \"u,Dr; u,Ds; u,Dt\"; one kernel computes every\n"
        "                    row's output, reading an array named in several\n"
        "                    rows once (docs/einsum.md); with '+' between\n"
        "                    rows (\"u0,Dr + u1,Ds\") their sum, one output;\n"
        "                    an open axis (x=*) stays open\n"
        "  --space FILE      YAML transform space (default: a built-in\n"
        "                    tinygrad-style action pool that fits any einsum)\n"
        "  --opts '..'       fixed opts the search builds on\n"
        "  --search KIND     beam (default), random or grid\n"
        "  --budget N        candidates answered (default 100)\n"
        "  --time-limit SEC  wall-time limit of the run: the search gets 85 %%,\n"
        "                    the final race the rest; a converged action\n"
        "                    beam widens (to 8 times its width at most,\n"
        "                    docs/spaces.md) while time and budget remain;\n"
        "                    the seeds are timed even past it\n"
        "  --beam-width K    beam members kept per round (default 4)\n"
        "  --seed N          seed of the search and of the inputs (default 0)\n"
        "  --seeds N         seeds: the search first tries the best opts of\n"
        "                    the N nearest other tuned problems in the\n"
        "                    database on this device (the same einsum at\n"
        "                    other sizes, einsums of the same structure;\n"
        "                    nearest by sum |log2 size ratio|), re-applied\n"
        "                    here; opts the rules refuse here are dropped\n"
        "                    and logged; seeds are timed and count against\n"
        "                    the budget (default 3, at most 16); after them\n"
        "                    the register block and staging the einsum's\n"
        "                    structure suggests (docs/spaces.md, Seeds)\n"
        "  --no-seed         no seeds, from the database or the structure:\n"
        "                    the search starts from scratch\n"
        "  --retime          re-measure points the database already knows\n"
        "  --race K          final race: the K fastest distinct verified\n"
        "                    candidates and the untransformed kernel timed\n"
        "                    round robin on the same inputs; the winner must\n"
        "                    be faster by a 95 %% interval, else the tied\n"
        "                    kernel with the fewest opts is chosen; the\n"
        "                    reported times and speed-up are the race's\n"
        "                    (default 3, at most 8; 0: no race); under\n"
        "                    --time-limit, an untransformed kernel too slow\n"
        "                    to fit and slower than every candidate stays\n"
        "                    out (its time then the search's); an open\n"
        "                    axis races at the tune-at size, several\n"
        "                    problems one race each\n"
        "  --model on|off    the cost model (default on): fitted on the\n"
        "                    database's trials of the device and this run's\n"
        "                    candidates, it ranks each search step's new\n"
        "                    candidates and only the promising ones are\n"
        "                    timed; off: every candidate is timed\n"
        "  --db FILE         tuning database (default\n"
        "                    $XDG_CACHE_HOME/eintune/tuning.db); every trial\n"
        "                    is committed as it completes, so a killed run\n"
        "                    resumes where it stopped\n"
        "  --plot FILE       chart (.svg or .png): the candidates on the\n"
        "                    roofline, and the search's convergence (each\n"
        "                    candidate's time against elapsed time, the\n"
        "                    best so far)\n"
        "  --device D        opencl:N, opencl:P:D, opencl:NAME or cuda:N\n"
        "  --json FILE       the result as JSON ('-' = stdout)\n"
        "\n"
        "The log (stderr) has a line per candidate, one per new best with\n"
        "its GOps/s and %% of roofline, and a progress line (candidate k of\n"
        "the budget or time of the limit, elapsed, time left, best so far):\n"
        "redrawn in place on a terminal, a plain line at most once a second\n"
        "in a pipe or file. -q: only errors, warnings and the report.\n"
        "^C finishes the candidate in flight, then reports what was found.\n"
        "exit status: 0 success (a verified kernel found), 1 the run could\n"
        "not complete or no candidate passed, 2 bad input\n");
}

static volatile sig_atomic_t g_stop;

static void on_sigint(int sig)
{
    (void)sig;
    g_stop = 1;
}

/*
 * The log of a run: a line per candidate and one per new best (INFO, so
 * --quiet drops them), and a progress line: on a terminal one line that
 * is redrawn in place after every candidate (and after any log line that
 * scrolled it away), in a pipe or a file a plain log line at most once a
 * second (the first candidate's always), so that a long run's log shows
 * its pace without doubling every candidate.
 */
typedef struct tune_cli {
    int tty;
    int progress_shown;       /* the in-place line is on the terminal */
    char line[512];           /* the last progress line, "" before one */
    double last_plain;        /* elapsed_s of the last plain line, -1 */
} tune_cli;

static void clear_progress(tune_cli *tc)
{
    if (tc->progress_shown) {
        fputs("\r\033[K", stderr);
        tc->progress_shown = 0;
    }
}

static void show_progress(tune_cli *tc)
{
    if (!tc->tty || g_cli.quiet || !tc->line[0])
        return;
    fprintf(stderr, "\r\033[K%s", tc->line);
    fflush(stderr);
    tc->progress_shown = 1;
}

static void on_log(void *arg, et_log_level lvl, const char *msg)
{
    tune_cli *tc = arg;
    clear_progress(tc);
    cli_log(lvl == ET_LOG_DEBUG  ? LOG_DEBUG
            : lvl == ET_LOG_WARN ? LOG_WARN
                                 : LOG_INFO,
            "tune", "%s", msg);
    show_progress(tc);
}

/* "12 s", "3.5 min", "1.2 h" */
static void fmt_duration(char *buf, size_t cap, double s)
{
    if (s < 0)
        s = 0;
    if (s < 90)
        snprintf(buf, cap, "%.0f s", s);
    else if (s < 5400)
        snprintf(buf, cap, "%.1f min", s / 60);
    else
        snprintf(buf, cap, "%.1f h", s / 3600);
}

/* "candidate 5/100, 12 s elapsed, ~3.5 min left, best 0.0435 ms
 * (UPCAST(i,16))"; when the time limit ends the run before the budget
 * would: "candidate 5, 12 s of the 30 s limit, ~18 s left, ..." */
static void progress_text(const et_progress *p, char *out, size_t cap)
{
    char el[32], left[32], lim[32];
    fmt_duration(el, sizeof el, p->elapsed_s);
    double per = p->candidate > 0 ? p->elapsed_s / p->candidate : 0;
    double by_budget = per * (p->budget - p->candidate);
    int time_bound = p->time_limit_s > 0 &&
                     p->time_limit_s - p->elapsed_s < by_budget;
    size_t n;
    if (time_bound) {
        fmt_duration(lim, sizeof lim, p->time_limit_s);
        fmt_duration(left, sizeof left, p->time_limit_s - p->elapsed_s);
        n = (size_t)snprintf(out, cap, "candidate %d, %s of the %s limit, "
                             "~%s left", p->candidate, el, lim, left);
    } else {
        fmt_duration(left, sizeof left, by_budget);
        n = (size_t)snprintf(out, cap, "candidate %d/%d, %s elapsed, ~%s "
                             "left", p->candidate, p->budget, el, left);
    }
    if (n >= cap)
        return;
    if (p->have_best)
        snprintf(out + n, cap - n, ", best %.4g ms (%s)",
                 p->best_time_s * 1e3,
                 p->best_opts[0] ? p->best_opts : "untransformed");
    else
        snprintf(out + n, cap - n, ", no verified kernel yet");
}

/* A new best as one line, then the progress line. */
static int on_progress(void *arg, const et_progress *p)
{
    tune_cli *tc = arg;
    if (p->new_best) {
        clear_progress(tc);
        char roof[64] = "";
        if (p->best_roofline_pct > 0)
            snprintf(roof, sizeof roof, ", %.3g %% of roofline",
                     p->best_roofline_pct);
        cli_log(LOG_INFO, "tune", "new best: %s%s%s, %.4g ms, %.4g GOps/s%s",
                p->best_opts[0] ? p->best_opts : "untransformed",
                p->params[0] ? " " : "", p->params, p->best_time_s * 1e3,
                p->best_gops, roof);
    }
    if (g_cli.quiet)
        return 0;
    progress_text(p, tc->line, sizeof tc->line);
    if (tc->tty) {
        show_progress(tc);
    } else if (tc->last_plain < 0 || p->elapsed_s - tc->last_plain >= 1) {
        cli_log(LOG_INFO, "tune", "%s", tc->line);
        tc->last_plain = p->elapsed_s;
    }
    return 0;
}

/* Runs one problem with SIGINT finishing the candidate in flight. */
static et_status run_one(et_problem *p, et_tune_options *to, tune_cli *tc,
                         et_tune_report **rep, et_diag *d)
{
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    memset(d, 0, sizeof *d);
    et_status st = et_tune_run_full(p, to, rep, d);
    sigaction(SIGINT, &old_sa, NULL);
    clear_progress(tc);
    return st;
}

/* A failed run's message and exit status. */
static int run_error(et_status st, const et_diag *d, const char *opts_text)
{
    if (d->input == ET_INPUT_OPTS) {
        cli_diag("--opts", opts_text, d);
        return EXIT_INPUT;
    }
    cli_api_error("tune", st, d);
    return st == ET_ERR_INPUT || d->input == ET_INPUT_SPACE ? EXIT_INPUT
                                                            : EXIT_RUN;
}

/* One problem: its report, JSON and plot. */
static int tune_one(et_problem *p, et_tune_options *to, tune_cli *tc,
                    const char *opts_text, const char *plot)
{
    et_diag d;
    et_tune_report *rep = NULL;
    et_status st = run_one(p, to, tc, &rep, &d);
    if (st != ET_OK)
        return run_error(st, &d, opts_text);

    if (et_tune_report_rank(rep) > 0) {
        /* an evaluating rank of an MPI run: rank 0 reports */
        et_tune_report_free(rep);
        return 0;
    }
    FILE *f = cli_table_out();
    et_tune_report_print(rep, f);
    fflush(f);

    et_tune_summary sum;
    et_tune_report_summary(rep, &sum);
    int status = EXIT_RUN;
    if (g_cli.json && cli_json_emit_api(et_tune_report_json(rep)))
        goto out;
    if (plot && et_tune_report_has_roofline(rep)) {
        if (et_tune_report_plot(rep, plot, &d) != ET_OK) {
            cli_error("tune", EXIT_RUN, "plot: %s", d.msg);
            goto out;
        }
        cli_log(LOG_INFO, "tune", "wrote %s", plot);
    }
    status = sum.found ? 0 : EXIT_RUN;
out:
    et_tune_report_free(rep);
    return status;
}

/*
 * Several problems: each tuned in turn into the same database (its log as
 * for one), then one table, a row per problem; --json gets an array of
 * the runs' documents with their shape. Exit 0 when every problem has a
 * verified kernel; a problem that cannot run is reported in its row and
 * the next one runs (^C stops them all).
 */
static int tune_many(et_problem **probs, char **specs, int n,
                     et_tune_options *to, tune_cli *tc,
                     const char *opts_text)
{
    et_tune_summary *sum = calloc((size_t)n, sizeof *sum);
    char (*why)[160] = calloc((size_t)n, sizeof *why);
    char **json = calloc((size_t)n, sizeof *json);
    int status = 0, input_error = 0, evaluating = 0;
    if (!sum || !why || !json) {
        status = cli_error("tune", EXIT_RUN, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if (g_stop) {
            snprintf(why[i], sizeof why[i], "not run (interrupted)");
            status = EXIT_RUN;
            continue;
        }
        cli_log(LOG_INFO, "tune", "problem %d/%d: %s", i + 1, n, specs[i]);
        et_diag d;
        et_tune_report *rep = NULL;
        et_status st = run_one(probs[i], to, tc, &rep, &d);
        if (st != ET_OK) {
            int rc = run_error(st, &d, opts_text);
            snprintf(why[i], sizeof why[i], "%.150s", d.msg);
            status = EXIT_RUN;
            if (rc == EXIT_INPUT) {
                /* the same space or opts fail every problem alike */
                input_error = 1;
                break;
            }
            continue;
        }
        if (et_tune_report_rank(rep) > 0) {
            /* an evaluating rank of an MPI run: rank 0 reports */
            evaluating = 1;
            et_tune_report_free(rep);
            continue;
        }
        et_tune_report_summary(rep, &sum[i]);
        if (!sum[i].found) {
            snprintf(why[i], sizeof why[i], "no candidate passed");
            status = EXIT_RUN;
        }
        if (g_cli.json)
            json[i] = et_tune_report_json(rep);
        et_tune_report_free(rep);
    }
    if (input_error) {
        status = EXIT_INPUT;
        goto out;
    }
    if (evaluating)
        goto out;
    FILE *f = cli_table_out();
    fprintf(f, "%-28s %-36s %12s %-8s %12s %8s\n", "shape", "best opts",
            "time ms", "from", "untransf. ms", "speedup");
    for (int i = 0; i < n; i++) {
        if (!sum[i].found) {
            fprintf(f, "%-28s none: %s\n", specs[i], why[i]);
            continue;
        }
        /* the race's figures when it ran; a speed-up only from times of
         * this run (et_tune_summary.speedup) */
        char sp[32] = "-";
        if (sum[i].speedup > 0)
            snprintf(sp, sizeof sp, "%.2fx", sum[i].speedup);
        /* "from": whose time it is, the race's or the search's */
        fprintf(f, "%-28s %-36s %12.4g %-8s %12.4g %8s\n", specs[i],
                sum[i].opts[0] ? sum[i].opts : "untransformed",
                sum[i].time_s * 1e3, sum[i].time_source,
                sum[i].baseline_s * 1e3, sp);
    }
    fflush(f);
    if (g_cli.json) {
        /* an array of {"shape": SPEC, "run": the run's document} */
        size_t cap = 16, len = 0;
        for (int i = 0; i < n; i++)
            cap += strlen(specs[i]) + (json[i] ? strlen(json[i]) : 4) + 32;
        char *all = malloc(cap);
        if (!all) {
            status = cli_error("tune", EXIT_RUN, "out of memory");
            goto out;
        }
        len += (size_t)snprintf(all + len, cap - len, "[");
        for (int i = 0; i < n; i++)
            len += (size_t)snprintf(all + len, cap - len,
                                    "%s{\"shape\": \"%s\", \"run\": %s}",
                                    i ? ",\n" : "\n", specs[i],
                                    json[i] ? json[i] : "null");
        snprintf(all + len, cap - len, "\n]");
        if (cli_json_emit_text(all))
            status = EXIT_RUN;
        free(all);
    }
out:
    for (int i = 0; json && i < n; i++)
        et_free(json[i]);
    free(json);
    free(sum);
    free(why);
    return status;
}

/* The command line of `eintune tune`. */
typedef struct tune_args {
    const char *text;         /* EINSUM */
    const char *shape, *dtype, *space_path, *opts_text, *plot, *tune_at;
    const char *batch;        /* --batch: a batched einsum's rows */
    et_tune_options to;       /* the flags that set run options */
} tune_args;

/* Parses the command line into a: 0, -1 after --help (exit 0), else the
 * exit status of a usage error. */
static int parse_args(int argc, char **argv, tune_args *a)
{
    static const struct option longopts[] = {
        {"shape", required_argument, 0, 's'},
        {"dtype", required_argument, 0, 't'},
        {"space", required_argument, 0, 2001},
        {"opts", required_argument, 0, 2002},
        {"search", required_argument, 0, 2003},
        {"budget", required_argument, 0, 2004},
        {"time-limit", required_argument, 0, 2005},
        {"beam-width", required_argument, 0, 2006},
        {"seed", required_argument, 0, 2007},
        {"retime", no_argument, 0, 2008},
        {"plot", required_argument, 0, 2009},
        {"race", required_argument, 0, 2010},
        {"tune-at", required_argument, 0, 2011},
        {"seeds", required_argument, 0, 2012},
        {"no-seed", no_argument, 0, 2013},
        {"model", required_argument, 0, 2014},
        {"batch", required_argument, 0, 2015},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    et_tune_options *to = &a->to;
    int opt;
    char *end;
    while ((opt = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 's': a->shape = optarg; break;
        case 't': a->dtype = optarg; break;
        case 2001: a->space_path = optarg; break;
        case 2015: a->batch = optarg; break;
        case 2002: a->opts_text = optarg; break;
        case 2003:
            if (strcmp(optarg, "beam") && strcmp(optarg, "random") &&
                strcmp(optarg, "grid"))
                return cli_usage_error("tune", "--search must be beam, "
                                       "random or grid, not '%s'", optarg);
            to->search = optarg;
            break;
        case 2004:
            errno = 0;
            to->budget = (int)strtol(optarg, &end, 10);
            if (errno || *end || to->budget < 1 || to->budget > 1000000)
                return cli_usage_error("tune", "--budget must be an integer "
                                       "in [1, 1000000], not '%s'", optarg);
            break;
        case 2005:
            errno = 0;
            to->time_limit_s = strtod(optarg, &end);
            if (errno || *end || !(to->time_limit_s > 0))
                return cli_usage_error("tune", "--time-limit must be a "
                                       "positive number of seconds, not "
                                       "'%s'", optarg);
            break;
        case 2006:
            errno = 0;
            to->beam_width = (int)strtol(optarg, &end, 10);
            if (errno || *end || to->beam_width < 1 ||
                to->beam_width > 1024)
                return cli_usage_error("tune", "--beam-width must be an "
                                       "integer in [1, 1024], not '%s'",
                                       optarg);
            break;
        case 2007:
            errno = 0;
            to->seed = strtoull(optarg, &end, 10);
            if (errno || *end || optarg[0] == '-')
                return cli_usage_error("tune", "--seed must be a "
                                       "non-negative integer, not '%s'",
                                       optarg);
            break;
        case 2008: to->retime = 1; break;
        case 2009: a->plot = optarg; break;
        case 2010:
            errno = 0;
            to->race = (int)strtol(optarg, &end, 10);
            if (errno || *end || !*optarg || to->race < 0 || to->race > 8)
                return cli_usage_error("tune", "--race must be an integer "
                                       "in [0, 8], not '%s'", optarg);
            if (to->race == 0)
                to->race = -1;
            break;
        case 2011: a->tune_at = optarg; break;
        case 2012:
            errno = 0;
            to->n_seeds = (int)strtol(optarg, &end, 10);
            if (errno || *end || !*optarg || to->n_seeds < 1 ||
                to->n_seeds > 16)
                return cli_usage_error("tune", "--seeds must be an integer "
                                       "in [1, 16], not '%s'", optarg);
            break;
        case 2013: to->no_seeding = 1; break;
        case 2014:
            if (strcmp(optarg, "on") && strcmp(optarg, "off"))
                return cli_usage_error("tune", "--model must be on or off, "
                                       "not '%s'", optarg);
            to->model = strcmp(optarg, "off") ? 0 : -1;
            break;
        case 'h': usage(stdout); return -1;
        default: return cli_usage_error("tune", "bad flag");
        }
    }
    if (to->no_seeding && to->n_seeds)
        return cli_usage_error("tune", "--seeds and --no-seed exclude each "
                               "other");
    a->text = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return cli_usage_error("tune", "unexpected argument '%s'",
                               argv[optind]);
    if (!a->text)
        return cli_usage_error("tune", "missing EINSUM");
    if (!a->shape)
        return cli_usage_error("tune", "missing --shape");
    if (a->plot) {
        size_t n = strlen(a->plot);
        if (n < 4 || (strcasecmp(a->plot + n - 4, ".svg") != 0 &&
                      strcasecmp(a->plot + n - 4, ".png") != 0))
            return cli_usage_error("tune", "--plot FILE must end in .svg or "
                                   ".png");
    }
    if (a->plot && cli_check_output("tune", "--plot", a->plot, NULL, 0))
        return EXIT_INPUT;
    return 0;
}

int cmd_tune(int argc, char **argv)
{
    tune_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc < 0)
        return 0;
    if (rc)
        return rc;
    et_tune_options *to = &a.to;

    /* Everything about the input is checked before a device is opened:
     * every problem here, the opts and the space by the API before it
     * opens one. */
    et_diag d;
    memset(&d, 0, sizeof d);
    char *specs = NULL;
    int n_specs = 0;
    if (et_shape_expand(a.shape, &specs, &n_specs, &d) != ET_OK) {
        cli_problem_diag(&d, a.text, a.shape, a.dtype);
        return EXIT_INPUT;
    }
    if (n_specs > 1 && a.plot) {
        et_free(specs);
        return cli_usage_error("tune", "--plot draws one problem's "
                               "candidates; --shape gives %d", n_specs);
    }
    et_problem **probs = calloc((size_t)n_specs, sizeof *probs);
    char **spec_of = calloc((size_t)n_specs, sizeof *spec_of);
    int status = EXIT_INPUT;
    if (!probs || !spec_of) {
        status = cli_error("tune", EXIT_RUN, "out of memory");
        goto done;
    }
    char *line = specs;
    for (int i = 0; i < n_specs; i++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        spec_of[i] = line;
        line = nl ? nl + 1 : line + strlen(line);
        if (et_problem_init(a.text, spec_of[i], a.dtype, &probs[i], &d) !=
            ET_OK) {
            cli_problem_diag(&d, a.text, spec_of[i], a.dtype);
            goto done;
        }
        if (a.tune_at &&
            et_problem_set_tune_at(probs[i], a.tune_at, &d) != ET_OK) {
            cli_diag("--tune-at", a.tune_at, &d);
            goto done;
        }
        if (a.batch && et_problem_set_batch(probs[i], a.batch, &d) != ET_OK) {
            cli_batch_diag(&d, a.text, a.batch);
            goto done;
        }
    }
    tune_cli tc;
    memset(&tc, 0, sizeof tc);
    tc.tty = isatty(2);
    tc.last_plain = -1;
    to->device = g_cli.device;
    to->db = g_cli.db;
    to->start_opts = a.opts_text;
    to->space = a.space_path;
    to->cancel = &g_stop;
    to->log = on_log;
    to->log_arg = &tc;
    to->progress = on_progress;
    to->progress_arg = &tc;
    if (n_specs == 1) {
        status = tune_one(probs[0], to, &tc, a.opts_text, a.plot);
        goto done;
    }
    status = tune_many(probs, spec_of, n_specs, to, &tc, a.opts_text);
done:
    for (int i = 0; probs && i < n_specs; i++)
        et_problem_free(probs[i]);
    free(probs);
    free(spec_of);
    et_free(specs);
    return status;
}
