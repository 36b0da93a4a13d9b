/*
 * cmd_tune.c - `eintune tune`: binds a transform space to the einsum,
 * searches it on a device, verifies and times every candidate, and
 * reports the best against the roofline.
 */
#include "cli/cli.h"
#include "einsum/einsum.h"
#include "db/db.h"
#include "measure/remote.h"
#include "roofline/peaks.h"
#include "roofline/report.h"
#include "roofline/roofline.h"
#include "spaces/search.h"
#include "spaces/space.h"
#include "transforms/kernel.h"
#include "tune/peaks_db.h"
#include "tune/tune.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: eintune tune EINSUM --shape SPEC [--dtype SPEC] [--space FILE]\n"
        "                    [--opts '..'] [--search beam|random|grid]\n"
        "                    [--budget N] [--time-limit SEC] [--beam-width K]\n"
        "                    [--seed N] [--retime] [--plot FILE]\n"
        "                    [--device D] [--db FILE] [--json FILE]\n"
        "\n"
        "Searches a transform space for the fastest verified kernel of the\n"
        "einsum on the device. Every candidate is checked against an\n"
        "extended-precision reference on 3 input sets before it is timed.\n"
        "\n"
        "  --shape SPEC      sizes: x=4096,i=35,k=35,j=35 (...=3x2 for '...')\n"
        "  --dtype SPEC      f16, f32 or f64, or one per operand (default f64)\n"
        "  --space FILE      YAML transform space (default: a built-in\n"
        "                    tinygrad-style action pool that fits any einsum)\n"
        "  --opts '..'       fixed opts the search builds on\n"
        "  --search KIND     beam (default), random or grid\n"
        "  --budget N        candidates answered (default 100)\n"
        "  --time-limit SEC  wall-time limit of the search\n"
        "  --beam-width K    beam members kept per round (default 4)\n"
        "  --seed N          seed of the search and of the inputs (default 0)\n"
        "  --retime          re-measure points the database already knows\n"
        "  --db FILE         tuning database (default\n"
        "                    $XDG_CACHE_HOME/eintune/tuning.db); every trial\n"
        "                    is committed as it completes, so a killed run\n"
        "                    resumes where it stopped\n"
        "  --plot FILE       roofline chart of the candidates (.svg or .png)\n"
        "  --device D        opencl:N, opencl:P:D, opencl:NAME or cuda:N\n"
        "  --json FILE       the result as JSON ('-' = stdout)\n"
        "\n"
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

typedef struct tune_cli {
    et_roofline roof;
    et_peaks peaks;
    bool have_roof;
    bool tty;
    bool progress_shown;
} tune_cli;

static void clear_progress(tune_cli *tc)
{
    if (tc->progress_shown) {
        fputs("\r\033[K", stderr);
        tc->progress_shown = false;
    }
}

static void on_log(void *arg, et_tune_level lvl, const char *msg)
{
    tune_cli *tc = arg;
    clear_progress(tc);
    cli_log(lvl == ET_TUNE_DEBUG  ? LOG_DEBUG
            : lvl == ET_TUNE_WARN ? LOG_WARN
                                  : LOG_INFO,
            "tune", "%s", msg);
}

static int on_progress(void *arg, int done, int budget,
                       const et_tune_candidate *c,
                       const et_tune_candidate *best)
{
    tune_cli *tc = arg;
    (void)c;
    if (!tc->tty || g_cli.quiet)
        return 0;
    char b[64] = "none yet";
    if (best)
        snprintf(b, sizeof b, "%.4g ms", best->timing.median_s * 1e3);
    fprintf(stderr, "\r\033[K[%d/%d] best %s", done, budget, b);
    fflush(stderr);
    tc->progress_shown = true;
    return 0;
}

static void on_best(void *arg, const et_tune_candidate *best)
{
    tune_cli *tc = arg;
    clear_progress(tc);
    if (!tc->have_roof || g_cli.quiet)
        return;
    cli_log(LOG_INFO, "tune", "new best: %s", best->opts);
    et_roofline_table(stderr, &tc->roof, best->timing.median_s);
}

/* "{'a': 1, 'b': true}" -> a JSON object (names are identifiers). */
static cJSON *params_json(const char *text)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *p = buf; *p; p++)
        if (*p == '\'')
            *p = '"';
    cJSON *j = cJSON_Parse(buf);
    return j ? j : cJSON_CreateObject();
}

static cJSON *candidate_json(const et_tune_candidate *c, const tune_cli *tc)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "params", params_json(c->params));
    cJSON_AddStringToObject(j, "opts", c->opts);
    cJSON_AddStringToObject(j, "status", et_outcome_name(c->outcome));
    cJSON_AddStringToObject(j, "reason", c->reason);
    if (c->outcome == ET_OUTCOME_OK) {
        cJSON_AddNumberToObject(j, "time_s", c->timing.median_s);
        if (tc->have_roof)
            cJSON_AddItemToObject(
                j, "gops", et_measured_gops_json(&tc->roof,
                                                 c->timing.median_s));
    } else {
        cJSON_AddNullToObject(j, "time_s");
        cJSON_AddNullToObject(j, "gops");
    }
    cJSON_AddBoolToObject(j, "cached", c->cached);
    return j;
}

static cJSON *result_json(const et_einsum *e, const et_device *dev,
                          const et_space *sp, et_search_kind kind,
                          const et_tune_result *r, const tune_cli *tc)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "einsum", e->text);
    cJSON *jd = cJSON_AddObjectToObject(doc, "device");
    cJSON_AddStringToObject(jd, "name", dev->info.name);
    cJSON_AddStringToObject(jd, "backend",
                            et_backend_name(dev->info.target.backend));
    cJSON_AddStringToObject(jd, "driver", dev->info.driver_version);
    cJSON_AddStringToObject(doc, "space", sp->name);
    cJSON_AddStringToObject(doc, "search", et_search_name(kind));
    cJSON_AddNumberToObject(doc, "evaluations", r->evaluations);
    cJSON_AddNumberToObject(doc, "cached", r->cached);
    cJSON *jf = cJSON_AddObjectToObject(doc, "failures");
    for (int o = 1; o < ET_OUTCOME_COUNT; o++)
        if (r->failures[o])
            cJSON_AddNumberToObject(jf, et_outcome_name((et_outcome)o),
                                    r->failures[o]);
    cJSON_AddNumberToObject(doc, "elapsed_s", r->elapsed_s);
    /* where the time went: builds, verification (with the driver's compile
     * at a kernel's first launch), timing, the untransformed kernel, and
     * the rest (search, rendering, database) */
    cJSON *jt = cJSON_AddObjectToObject(doc, "time_s");
    cJSON_AddNumberToObject(jt, "baseline", r->baseline_s);
    cJSON_AddNumberToObject(jt, "build", r->build_s);
    cJSON_AddNumberToObject(jt, "verify", r->verify_s);
    cJSON_AddNumberToObject(jt, "timing", r->timing_s);
    cJSON_AddNumberToObject(jt, "other",
                            r->elapsed_s - r->baseline_s - r->build_s -
                                r->verify_s - r->timing_s);
    cJSON_AddStringToObject(doc, "stop_reason", r->stop_reason);
    cJSON *jb = cJSON_AddObjectToObject(doc, "baseline");
    cJSON_AddNumberToObject(jb, "time_s", r->baseline.median_s);
    if (r->best >= 0) {
        const et_tune_candidate *b = &r->cand[r->best];
        cJSON *best = cJSON_AddObjectToObject(doc, "best");
        cJSON_AddItemToObject(best, "params", params_json(b->params));
        cJSON_AddStringToObject(best, "opts", b->opts);
        cJSON_AddStringToObject(best, "kernel", b->kernel);
        cJSON_AddNumberToObject(best, "time_s", b->timing.median_s);
        cJSON *ci = cJSON_AddArrayToObject(best, "ci95_s");
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(b->timing.low_s));
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(b->timing.high_s));
        if (tc->have_roof) {
            cJSON_AddItemToObject(
                best, "gops",
                et_measured_gops_json(&tc->roof, b->timing.median_s));
            cJSON_AddItemToObject(best, "roofline_gops",
                                  et_roofline_gops_json(&tc->roof));
        }
        cJSON *jv = cJSON_AddObjectToObject(best, "verified");
        cJSON_AddNumberToObject(jv, "trials", b->verify.trials);
        cJSON_AddNumberToObject(jv, "max_norm_err", b->verify.max_norm_err);
        if (isfinite(b->verify.p_value))
            cJSON_AddNumberToObject(jv, "p_value", b->verify.p_value);
        else
            cJSON_AddNullToObject(jv, "p_value");
    } else {
        cJSON_AddNullToObject(doc, "best");
    }
    cJSON *jc = cJSON_AddArrayToObject(doc, "candidates");
    for (int i = 0; i < r->n_cand; i++)
        cJSON_AddItemToArray(jc, candidate_json(&r->cand[i], tc));
    return doc;
}

static int write_plot(const char *path, const et_einsum *e,
                      const et_device *dev, const et_tune_result *r,
                      const tune_cli *tc)
{
    et_plot_point *pts = calloc((size_t)r->n_cand + 1, sizeof *pts);
    int n = 0, best = -1;
    if (!pts)
        return 1;
    for (int i = 0; i < r->n_cand; i++) {
        if (r->cand[i].outcome != ET_OUTCOME_OK)
            continue;
        if (i == r->best)
            best = n;
        pts[n].intensity = tc->roof.intensity;
        pts[n].gops = (double)tc->roof.ops_total /
                      r->cand[i].timing.median_s / 1e9;
        n++;
    }
    char title[ET_MAX_TEXT + 300];
    snprintf(title, sizeof title, "%s on %s", e->text, dev->info.name);
    et_plot plot = {&tc->peaks, title, pts, n, best, NULL};
    char why[256] = "";
    int rc = 0;
    if (et_plot_write(path, &plot, why, sizeof why) != ET_OK) {
        fprintf(stderr, "eintune tune: plot: %s\n", why);
        rc = 1;
    } else {
        cli_log(LOG_INFO, "tune", "wrote %s", path);
    }
    free(pts);
    return rc;
}

int cmd_tune(int argc, char **argv)
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
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    const char *shape = NULL, *dtype = NULL, *space_path = NULL;
    const char *opts_text = NULL, *plot = NULL;
    et_tune_opts to;
    memset(&to, 0, sizeof to);
    int opt;
    char *end;
    while ((opt = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 's': shape = optarg; break;
        case 't': dtype = optarg; break;
        case 2001: space_path = optarg; break;
        case 2002: opts_text = optarg; break;
        case 2003:
            if (et_search_parse(optarg, &to.search.kind) != 0)
                return cli_usage_error("tune", "--search must be beam, "
                                       "random or grid, not '%s'", optarg);
            break;
        case 2004:
            errno = 0;
            to.search.budget = (int)strtol(optarg, &end, 10);
            if (errno || *end || to.search.budget < 1 ||
                to.search.budget > 1000000)
                return cli_usage_error("tune", "--budget must be an integer "
                                       "in [1, 1000000], not '%s'", optarg);
            break;
        case 2005:
            errno = 0;
            to.search.time_limit_s = strtod(optarg, &end);
            if (errno || *end || !(to.search.time_limit_s > 0))
                return cli_usage_error("tune", "--time-limit must be a "
                                       "positive number of seconds, not "
                                       "'%s'", optarg);
            break;
        case 2006:
            errno = 0;
            to.search.beam_width = (int)strtol(optarg, &end, 10);
            if (errno || *end || to.search.beam_width < 1 ||
                to.search.beam_width > 1024)
                return cli_usage_error("tune", "--beam-width must be an "
                                       "integer in [1, 1024], not '%s'",
                                       optarg);
            break;
        case 2007:
            errno = 0;
            to.search.seed = strtoull(optarg, &end, 10);
            if (errno || *end || optarg[0] == '-')
                return cli_usage_error("tune", "--seed must be a "
                                       "non-negative integer, not '%s'",
                                       optarg);
            break;
        case 2008: to.retime = true; break;
        case 2009: plot = optarg; break;
        case 'h': usage(stdout); return 0;
        default: return cli_usage_error("tune", "bad flag");
        }
    }
    const char *text = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return cli_usage_error("tune", "unexpected argument '%s'",
                               argv[optind]);
    if (!text)
        return cli_usage_error("tune", "missing EINSUM");
    if (!shape)
        return cli_usage_error("tune", "missing --shape");
    if (plot) {
        size_t n = strlen(plot);
        if (n < 4 || (strcasecmp(plot + n - 4, ".svg") != 0 &&
                      strcasecmp(plot + n - 4, ".png") != 0))
            return cli_usage_error("tune", "--plot FILE must end in .svg or "
                                   ".png");
    }

    /* Everything about the input is checked before a device is opened. */
    static et_subscripts sub;
    static et_shape_spec sp;
    static et_einsum e;
    static et_opt start[ET_MAX_OPTS];
    et_dtype dt[ET_MAX_OPERANDS];
    et_diag d;
    memset(&d, 0, sizeof d);
    if (et_subscripts_parse(text, &sub, &d) != ET_OK) {
        cli_diag("einsum", text, &d);
        return EXIT_INPUT;
    }
    if (et_shape_spec_parse(shape, &sp, &d) != ET_OK) {
        cli_diag("--shape", shape, &d);
        return EXIT_INPUT;
    }
    if (et_dtype_spec_parse(dtype, sub.n_ops, dt, &d) != ET_OK) {
        cli_diag("--dtype", dtype, &d);
        return EXIT_INPUT;
    }
    if (et_einsum_resolve(&sub, &sp, NULL, dt, &e, &d) != ET_OK) {
        cli_diag("einsum", text, &d);
        return EXIT_INPUT;
    }
    int n_start = 0;
    if (opts_text &&
        et_opts_parse(opts_text, start, ET_MAX_OPTS, &n_start, &d) != ET_OK) {
        cli_diag("--opts", opts_text, &d);
        return EXIT_INPUT;
    }
    to.search.start = start;
    to.search.n_start = n_start;
    to.verify.seed = to.search.seed;

    et_space *space = NULL;
    et_status st;
    if (space_path)
        st = et_space_load(space_path, &space, &d);
    else
        st = et_space_load_text(et_builtin_space_yaml,
                                strlen(et_builtin_space_yaml),
                                "<built-in space>", &space, &d);
    if (st != ET_OK) {
        fprintf(stderr, "eintune tune: %s\n", d.msg);
        return st == ET_ERR_IO ? EXIT_INPUT : EXIT_INPUT;
    }

    int status = EXIT_RUN;
    et_db *db = NULL;
    et_device *dev = NULL;
    et_binding *b = NULL;
    et_tune_result res;
    memset(&res, 0, sizeof res);
    res.best = -1;
    cJSON *doc = NULL;
    et_error err = {{0}};
    tune_cli tc;
    memset(&tc, 0, sizeof tc);
    tc.tty = isatty(2);

    st = et_device_open_isolated(g_cli.device, NULL, &dev, &err);
    if (st != ET_OK) {
        fprintf(stderr, "eintune tune: %s\n", err.msg);
        status = st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
        goto out;
    }
    st = et_db_open(g_cli.db, &db, &err);
    if (st != ET_OK) {
        fprintf(stderr, "eintune tune: %s\n", err.msg);
        status = st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
        goto out;
    }
    char hash[ET_DB_HASH_LEN];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)space->hash);
    st = et_db_space_id(db, space->name, hash, &to.db_space_id, &err);
    if (st != ET_OK) {
        fprintf(stderr, "eintune tune: %s\n", err.msg);
        goto out;
    }
    to.db = db;
    cli_log(LOG_INFO, "tune", "database %s", et_db_path(db));
    cli_log(LOG_INFO, "tune", "device %s (%s), space %s, search %s",
            dev->info.name, dev->info.spec, space->name,
            et_search_name(to.search.kind));
    if (e.acc_dtype == ET_F64 && !dev->info.target.has_fp64) {
        fprintf(stderr, "eintune tune: device %s has no fp64 support\n",
                dev->info.name);
        goto out;
    }
    if (et_space_bind(space, &e, &dev->info.target, &b, &d) != ET_OK) {
        fprintf(stderr, "eintune tune: %s\n", d.msg);
        status = EXIT_INPUT;
        goto out;
    }

    et_peaks_get_opts po = {0};
    char why[256] = "";
    if (et_peaks_get_db(dev, db, &po, &tc.peaks, &err) != ET_OK)
        cli_log(LOG_WARN, "tune", "no roofline: %s", err.msg);
    else if (et_roofline_compute(&e, &tc.peaks, &tc.roof, why, sizeof why) !=
             ET_OK)
        cli_log(LOG_WARN, "tune", "no roofline: %s", why);
    else
        tc.have_roof = true;

    to.stop = &g_stop;
    to.log = on_log;
    to.progress = on_progress;
    to.new_best = on_best;
    to.arg = &tc;
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    st = et_tune_run(dev, b, &to, &res, &err);
    sigaction(SIGINT, &old_sa, NULL);
    clear_progress(&tc);
    if (st != ET_OK) {
        fprintf(stderr, "eintune tune: %s\n", err.msg);
        status = st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
        goto out;
    }

    FILE *f = cli_table_out();
    fprintf(f, "einsum      %s\n", e.text);
    fprintf(f, "device      %s\n", dev->info.name);
    fprintf(f, "space       %s, search %s, %s after %.1f s\n", space->name,
            et_search_name(to.search.kind), res.stop_reason, res.elapsed_s);
    int n_failed = 0;
    for (int o = 1; o < ET_OUTCOME_COUNT; o++)
        n_failed += res.failures[o];
    fprintf(f,
            "candidates  %d evaluated in this run, %d answered from the "
            "database; %d failed, refused or cut at the bound\n",
            res.evaluations, res.cached, n_failed);
    if (res.evaluations > 0)
        fprintf(f,
                "spent       %.1f s: untransformed %.1f, builds %.1f (%.3f s "
                "a candidate), verification %.1f, timing %.1f, reference and "
                "search %.1f\n",
                res.elapsed_s, res.baseline_s, res.build_s,
                res.build_s / res.evaluations, res.verify_s, res.timing_s,
                res.elapsed_s - res.baseline_s - res.build_s - res.verify_s -
                    res.timing_s);
    fprintf(f, "untransformed %.4g ms\n", res.baseline.median_s * 1e3);
    if (res.best >= 0) {
        const et_tune_candidate *best = &res.cand[res.best];
        fprintf(f, "best        %s\n", best->opts[0] ? best->opts : "-");
        fprintf(f, "params      %s\n", best->params);
        fprintf(f, "time        %.4g ms [%.4g, %.4g], %.1fx the untransformed "
                   "kernel\n",
                best->timing.median_s * 1e3, best->timing.low_s * 1e3,
                best->timing.high_s * 1e3,
                res.baseline.median_s / best->timing.median_s);
        char vl[256];
        et_verify_summary(&best->verify, vl, sizeof vl);
        fprintf(f, "%s\n\n", vl);
        if (tc.have_roof)
            et_roofline_table(f, &tc.roof, best->timing.median_s);
    } else {
        fprintf(f, "best        none: no candidate passed\n");
    }
    fflush(f);

    doc = result_json(&e, dev, space, to.search.kind, &res, &tc);
    if (cli_json_emit(doc))
        goto out;
    if (plot && tc.have_roof && write_plot(plot, &e, dev, &res, &tc))
        goto out;
    status = res.best >= 0 ? 0 : EXIT_RUN;

out:
    cJSON_Delete(doc);
    et_tune_result_free(&res);
    et_binding_free(b);
    if (dev)
        et_device_close(dev);
    et_db_close(db);
    et_space_free(space);
    return status;
}
