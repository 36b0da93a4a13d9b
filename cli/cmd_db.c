/*
 * cmd_db.c - `eintune db stats|list|prune|merge`: look at, tidy and merge the tuning
 * database (et_database_* of include/eintune.h) without a device.
 */
#include "cli/cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eintune db stats [--db FILE] [--json FILE]\n"
            "       eintune db list  [--einsum E --shape SPEC [--dtype SPEC]]\n"
            "                        [--outcome NAME[,NAME..]] [--limit N]\n"
            "                        [--db FILE] [--json FILE]\n"
            "       eintune db prune [--failed] [--older-than DAYS]\n"
            "                        [--renderer-old] [--dry-run]\n"
            "                        [--db FILE] [--json FILE]\n"
            "       eintune db merge OUT IN... [--json FILE]\n\n"
            "Looks at, tidies and merges the tuning database, where every trial of\n"
            "`eintune tune` is kept (default $XDG_CACHE_HOME/eintune/"
            "tuning.db,\n"
            "~/.cache/eintune/tuning.db when unset; --db FILE for another).\n\n"
            "stats   counts of devices, einsums, spaces and trials (by\n"
            "        outcome), trials of an older renderer, the time range,\n"
            "        the file size, and an integrity check.\n"
            "list    a table of trials: id, einsum with sizes and dtypes,\n"
            "        device, opts, outcome, GOps/s and median time. Per\n"
            "        einsum and device, ok trials come fastest first, then\n"
            "        the others newest first.\n"
            "  --einsum E --shape SPEC [--dtype SPEC]  only this einsum, or\n"
            "                     any renamed equivalent (same canonical form:\n"
            "                     sizes and dtypes included; default f64)\n"
            "  --outcome NAMES    only these outcomes: ok, refused,\n"
            "                     build_error, launch_error, wrong_result,\n"
            "                     timeout, crash, slower_than_bound\n"
            "  --limit N          at most N rows (default 50; 0 = all)\n"
            "prune   deletes the trials that meet EVERY criterion given (at\n"
            "        least one is needed), in one transaction; devices (with\n"
            "        their peaks), einsums and spaces stay. A pruned trial\n"
            "        is measured again when a search reaches it.\n"
            "  --failed           outcome other than ok (refused, build_error,\n"
            "                     ..., slower_than_bound)\n"
            "  --older-than DAYS  recorded more than DAYS days ago\n"
            "  --renderer-old     made by another renderer version than this\n"
            "                     eintune's (they never match a lookup now)\n"
            "  --dry-run          only count what would be deleted\n"
            "merge   merges the databases IN... (tuned on other machines, or\n"
            "        by other runs) into OUT (created when missing), each in\n"
            "        one transaction: a device, einsum, space or trial OUT\n"
            "        holds already is kept once (a trial measured again\n"
            "        later in IN replaces it; columns OUT lacks are filled\n"
            "        in), everything else is added; trials stay with their\n"
            "        device. Prints the counts per table.\n\n"
            "  --db FILE          the database file\n"
            "  --json FILE        also write JSON ('-' = stdout; the table\n"
            "                     then goes to stderr): stats {db,\n"
            "                     schema_version, file_bytes, devices,\n"
            "                     einsums, spaces, trials, outcomes {status:\n"
            "                     count}, old_renderer, integrity}; list\n"
            "                     {db, trials: [{id, einsum, sizes, dtypes,\n"
            "                     einsum_text, device {name, backend,\n"
            "                     driver}, space, params, opts, status,\n"
            "                     reason, time_s, ci95_s, gops, verified,\n"
            "                     recorded}]}; prune {db, deleted, dry_run};\n"
            "                     merge {db, inputs: [{file, tables: [{name,\n"
            "                     added, same, replaced, skipped}]}]}\n"
            "  --quiet, --verbose, --help\n\n"
            "exit status: 0 success, 1 the database could not be read or\n"
            "written, 2 bad input (flags, einsum, a file that is not an\n"
            "eintune database or is from a newer eintune)\n");
}

static int open_db(et_database **db)
{
    et_diag d;
    et_status st = et_database_open(g_cli.db, db, &d);
    if (st != ET_OK) {
        cli_api_error("db", st, &d);
        return st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
    }
    return 0;
}

static int db_fail(et_status st, const et_diag *d)
{
    cli_api_error("db", st, d);
    return st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
}

static void fmt_bytes(int64_t b, char *buf, size_t cap)
{
    if (b < 1024)
        snprintf(buf, cap, "%" PRId64 " B", b);
    else if (b < 1024 * 1024)
        snprintf(buf, cap, "%.1f KiB", (double)b / 1024);
    else
        snprintf(buf, cap, "%.1f MiB", (double)b / (1024.0 * 1024));
}

static void fmt_time(double s, char *buf, size_t cap)
{
    if (!(s > 0))
        snprintf(buf, cap, "-");
    else if (s < 1e-3)
        snprintf(buf, cap, "%.2f us", s * 1e6);
    else if (s < 1)
        snprintf(buf, cap, "%.3f ms", s * 1e3);
    else
        snprintf(buf, cap, "%.3f s", s);
}

static void fmt_stamp(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm) ||
        strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, cap, "-");
}

/* ---- stats -------------------------------------------------------------- */

static int db_stats(et_database *db)
{
    et_database_stats s;
    et_diag d;
    et_status st = et_database_stats_get(db, &s, &d);
    if (st != ET_OK)
        return db_fail(st, &d);

    FILE *f = cli_table_out();
    char size[64], t0[32], t1[32];
    fmt_bytes(s.file_bytes, size, sizeof(size));
    fmt_stamp(s.oldest, t0, sizeof(t0));
    fmt_stamp(s.newest, t1, sizeof(t1));
    fprintf(f, "database      %s\n", et_database_path(db));
    fprintf(f, "schema        version %d, %s\n", s.schema_version, size);
    fprintf(f, "devices       %" PRId64 "\n", s.devices);
    fprintf(f, "einsums       %" PRId64 "\n", s.einsums);
    fprintf(f, "spaces        %" PRId64 "\n", s.spaces);
    fprintf(f, "trials        %" PRId64 "\n", s.trials);
    for (int o = 0; o < ET_OUTCOME_COUNT; o++)
        if (s.by_outcome[o])
            fprintf(f, "  %-18s %" PRId64 "\n", et_outcome_name((et_outcome)o),
                    s.by_outcome[o]);
    fprintf(f, "old renderer  %" PRId64 " trials (renderer version now %d)\n",
            s.old_renderer, s.renderer_version);
    if (s.trials)
        fprintf(f, "recorded      %s .. %s\n", t0, t1);
    fprintf(f, "integrity     %s\n", s.integrity);

    int rc = s.integrity_ok ? 0 : EXIT_RUN;
    if (!g_cli.json)
        return rc;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "db", et_database_path(db));
    cJSON_AddNumberToObject(doc, "schema_version", s.schema_version);
    cJSON_AddNumberToObject(doc, "file_bytes", (double)s.file_bytes);
    cJSON_AddNumberToObject(doc, "devices", (double)s.devices);
    cJSON_AddNumberToObject(doc, "einsums", (double)s.einsums);
    cJSON_AddNumberToObject(doc, "spaces", (double)s.spaces);
    cJSON_AddNumberToObject(doc, "trials", (double)s.trials);
    cJSON *oc = cJSON_AddObjectToObject(doc, "outcomes");
    for (int o = 0; o < ET_OUTCOME_COUNT; o++)
        cJSON_AddNumberToObject(oc, et_outcome_name((et_outcome)o),
                                (double)s.by_outcome[o]);
    cJSON_AddNumberToObject(doc, "old_renderer", (double)s.old_renderer);
    cJSON_AddNumberToObject(doc, "renderer_version", s.renderer_version);
    cJSON_AddStringToObject(doc, "integrity", s.integrity);
    if (cli_json_emit(doc) != 0)
        rc = EXIT_RUN;
    cJSON_Delete(doc);
    return rc;
}

/* ---- list --------------------------------------------------------------- */

typedef struct list_ctx {
    FILE *f;
    cJSON *arr;    /* NULL without --json */
    int64_t rows;  /* shown */
    int64_t limit; /* 0: all */
    bool more;     /* rows beyond the limit exist */
} list_ctx;

/* The accumulation dtype: the output dtype after "->". */
static const char *acc_dtype(const char *dtypes)
{
    const char *a = strstr(dtypes, "->");
    return a ? a + 2 : "f64";
}

static void add_finite(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

/* "f32" when every operand and the output are f32, else the whole list. */
static const char *short_dtypes(const char *dtypes)
{
    const char *acc = acc_dtype(dtypes);
    size_t n = strlen(acc);
    for (const char *p = dtypes; p < acc - 2; p += n + 1)
        if (strncmp(p, acc, n) != 0 || (p[n] != ',' && p[n] != '-'))
            return dtypes;
    return acc;
}

static cJSON *row_json(const et_database_row *r)
{
    const et_database_row *t = r;
    cJSON *o = cJSON_CreateObject();
    char stamp[32];
    cJSON_AddNumberToObject(o, "id", (double)t->id);
    cJSON_AddStringToObject(o, "einsum", r->einsum);
    cJSON_AddStringToObject(o, "sizes", r->sizes);
    cJSON_AddStringToObject(o, "dtypes", r->dtypes);
    cJSON_AddStringToObject(o, "canonical", r->canonical);
    cJSON_AddStringToObject(o, "einsum_text", t->einsum_text);
    cJSON *d = cJSON_AddObjectToObject(o, "device");
    cJSON_AddStringToObject(d, "name", r->device);
    cJSON_AddStringToObject(d, "backend", r->backend);
    cJSON_AddStringToObject(d, "driver", r->driver);
    if (r->space[0])
        cJSON_AddStringToObject(o, "space", r->space);
    else
        cJSON_AddNullToObject(o, "space");
    cJSON *params = t->params[0] ? cJSON_Parse(t->params) : NULL;
    if (params)
        cJSON_AddItemToObject(o, "params", params);
    else
        cJSON_AddNullToObject(o, "params");
    cJSON_AddStringToObject(o, "opts", t->opts);
    cJSON_AddStringToObject(o, "status", et_outcome_name(t->outcome));
    cJSON_AddStringToObject(o, "reason", t->reason);
    bool timed = t->time_s > 0;
    if (timed) {
        add_finite(o, "time_s", t->time_s);
        cJSON *ci = cJSON_AddArrayToObject(o, "ci95_s");
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(t->ci95_s[0]));
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(t->ci95_s[1]));
        add_finite(o, "cv", t->cv);
        cJSON_AddNumberToObject(o, "runs", t->runs);
        cJSON *g = cJSON_AddObjectToObject(o, "gops");
        add_finite(g, acc_dtype(r->dtypes), t->gops);
    } else {
        cJSON_AddNullToObject(o, "time_s");
        cJSON_AddNullToObject(o, "ci95_s");
        cJSON_AddNullToObject(o, "gops");
    }
    if (t->verify_trials > 0) {
        cJSON *v = cJSON_AddObjectToObject(o, "verified");
        cJSON_AddNumberToObject(v, "trials", t->verify_trials);
        add_finite(v, "max_norm_err", t->max_norm_err);
        add_finite(v, "p_value", t->p_value);
    } else {
        cJSON_AddNullToObject(o, "verified");
    }
    add_finite(o, "compile_s", t->compile_s);
    cJSON_AddStringToObject(o, "kernel", t->kernel);
    cJSON_AddStringToObject(o, "source_hash", t->source_hash);
    cJSON_AddNumberToObject(o, "renderer_version", t->renderer_version);
    fmt_stamp(t->recorded, stamp, sizeof(stamp));
    cJSON_AddStringToObject(o, "recorded", stamp);
    cJSON_AddStringToObject(o, "eintune_version", t->eintune_version);
    return o;
}

static int list_row(void *arg, const et_database_row *r)
{
    list_ctx *c = arg;
    if (c->limit > 0 && c->rows >= c->limit) {
        c->more = true;
        return 1;
    }
    const et_database_row *t = r;
    char einsum[512], opts[2048 + 1024 + 16], gops[32], tm[32];
    snprintf(einsum, sizeof(einsum), "%.200s %.200s %.60s", r->einsum,
             r->sizes, short_dtypes(r->dtypes));
    if (strcmp(t->einsum_text, r->einsum) != 0)
        snprintf(opts, sizeof(opts), "%s (as %s)",
                 t->opts[0] ? t->opts : "untransformed", t->einsum_text);
    else
        snprintf(opts, sizeof(opts), "%s",
                 t->opts[0] ? t->opts : "untransformed");
    if (t->time_s > 0 && isfinite(t->gops))
        snprintf(gops, sizeof(gops), "%.3f", t->gops);
    else
        snprintf(gops, sizeof(gops), "-");
    fmt_time(t->time_s, tm, sizeof(tm));
    fprintf(c->f, "%6" PRId64 "  %-40.*s  %-24.24s  %-36s  %-17s  %9s  %11s",
            t->id, 40, einsum, r->device, opts,
            et_outcome_name(t->outcome), gops, tm);
    if (t->outcome != ET_OUTCOME_OK && t->reason[0])
        fprintf(c->f, "  %.80s", t->reason);
    fputc('\n', c->f);
    if (c->arr)
        cJSON_AddItemToArray(c->arr, row_json(r));
    c->rows++;
    return 0;
}

static int parse_outcomes(const char *list, unsigned *mask)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        et_outcome o;
        if (et_outcome_parse(tok, &o) != 0)
            return cli_usage_error("db list", "unknown outcome '%s'", tok);
        *mask |= 1u << o;
    }
    return 0;
}

static int db_list(et_database *db, const char *text, const char *shape,
                   const char *dtype, unsigned mask, int64_t limit)
{
    et_database_filter flt;
    memset(&flt, 0, sizeof(flt));
    flt.outcome_mask = mask;
    flt.limit = limit > 0 ? limit + 1 : 0; /* one more: "N more" note */
    et_diag d;
    et_problem *p = NULL;
    if (text) {
        et_status st = et_problem_init(text, shape, dtype, &p, &d);
        if (st == ET_ERR_NOMEM) {
            return cli_error("db", EXIT_RUN, "out of memory");
        }
        if (st != ET_OK) {
            cli_diag("einsum", text, &d);
            return EXIT_INPUT;
        }
        flt.problem = p;
    }

    list_ctx c;
    memset(&c, 0, sizeof(c));
    c.f = cli_table_out();
    cJSON *doc = NULL;
    if (g_cli.json) {
        doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "db", et_database_path(db));
        c.arr = cJSON_AddArrayToObject(doc, "trials");
    }
    fprintf(c.f, "%6s  %-40s  %-24s  %-36s  %-17s  %9s  %11s\n", "ID",
            "EINSUM", "DEVICE", "OPTS", "OUTCOME", "GOPS/S", "TIME");
    int rc = 0;
    c.limit = limit;
    et_status st = et_database_list(db, &flt, list_row, &c, &d);
    et_problem_free(p);
    if (st != ET_OK) {
        cJSON_Delete(doc);
        return db_fail(st, &d);
    }
    if (c.rows == 0)
        fprintf(c.f, "(no trials%s)\n", text ? " for this einsum with these sizes and dtypes" : "");
    else if (c.more)
        fprintf(c.f, "(more trials: --limit 0 shows all)\n");
    if (doc) {
        cJSON_AddBoolToObject(doc, "truncated", c.more);
        if (cli_json_emit(doc) != 0)
            rc = EXIT_RUN;
        cJSON_Delete(doc);
    }
    return rc;
}

/* ---- prune -------------------------------------------------------------- */

static int db_prune(et_database *db, const et_database_prune_options *po)
{
    int64_t n = 0;
    et_diag d;
    et_status st = et_database_prune(db, po, &n, &d);
    if (st != ET_OK)
        return db_fail(st, &d);
    fprintf(cli_table_out(), "%s %" PRId64 " trial%s from %s\n",
            po->dry_run ? "would delete" : "deleted", n, n == 1 ? "" : "s",
            et_database_path(db));
    if (!g_cli.json)
        return 0;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "db", et_database_path(db));
    cJSON_AddNumberToObject(doc, "deleted", (double)n);
    cJSON_AddBoolToObject(doc, "dry_run", po->dry_run);
    int rc = cli_json_emit(doc) != 0 ? EXIT_RUN : 0;
    cJSON_Delete(doc);
    return rc;
}

/* ---- merge -------------------------------------------------------------- */

/* `db merge OUT IN...`: its own argument shape (files, not flags). */
static int db_merge(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_COMMON_LONGOPTS,
                                             {0, 0, 0, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        if (opt == 'h') {
            usage(stdout);
            return 0;
        }
        return cli_usage_error("db merge", "unknown flag");
    }
    if (g_cli.db)
        return cli_usage_error("db merge", "--db is not a flag of 'db "
                                           "merge': OUT is the database "
                                           "written");
    if (argc - optind < 2)
        return cli_usage_error("db merge", "usage: eintune db merge OUT "
                                           "IN...");
    const char *out_path = argv[optind];
    et_database *db = NULL;
    et_diag d;
    et_status st = et_database_open(out_path, &db, &d);
    if (st != ET_OK)
        return db_fail(st, &d);
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "db", et_database_path(db));
    cJSON *jin = cJSON_AddArrayToObject(doc, "inputs");
    FILE *f = cli_table_out();
    int rc = 0;
    for (int i = optind + 1; i < argc && rc == 0; i++) {
        et_database_merge_stats ms;
        st = et_database_merge(db, argv[i], &ms, &d);
        if (st != ET_OK) {
            rc = db_fail(st, &d);
            break;
        }
        fprintf(f, "merged %s into %s\n", argv[i], et_database_path(db));
        cJSON *ji = cJSON_CreateObject();
        cJSON_AddStringToObject(ji, "file", argv[i]);
        cJSON *jt = cJSON_AddArrayToObject(ji, "tables");
        for (int k = 0; k < ms.n_tables; k++) {
            const et_database_merge_table *t = &ms.table[k];
            fprintf(f, "  %-10s %6" PRId64 " added, %6" PRId64
                       " already there, %6" PRId64 " replaced by newer",
                    t->name, t->added, t->same, t->replaced);
            if (t->skipped)
                fprintf(f, ", %" PRId64 " skipped (dangling)", t->skipped);
            fputc('\n', f);
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", t->name);
            cJSON_AddNumberToObject(e, "added", (double)t->added);
            cJSON_AddNumberToObject(e, "same", (double)t->same);
            cJSON_AddNumberToObject(e, "replaced", (double)t->replaced);
            cJSON_AddNumberToObject(e, "skipped", (double)t->skipped);
            cJSON_AddItemToArray(jt, e);
        }
        cJSON_AddItemToArray(jin, ji);
    }
    if (rc == 0 && g_cli.json && cli_json_emit(doc) != 0)
        rc = EXIT_RUN;
    cJSON_Delete(doc);
    et_database_close(db);
    return rc;
}

/* ---- the command -------------------------------------------------------- */

int cmd_db(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("db", "missing subcommand: stats, list, "
                                     "prune or merge");
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") ||
        !strcmp(sub, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(sub, "merge"))
        return db_merge(argc - 1, argv + 1);
    enum { STATS, LIST, PRUNE } which;
    if (!strcmp(sub, "stats"))
        which = STATS;
    else if (!strcmp(sub, "list"))
        which = LIST;
    else if (!strcmp(sub, "prune"))
        which = PRUNE;
    else
        return cli_usage_error("db", "unknown subcommand '%s' (stats, list, "
                                     "prune, merge)", sub);

    static const struct option longopts[] = {
        {"einsum", required_argument, 0, 'e'},
        {"shape", required_argument, 0, 's'},
        {"dtype", required_argument, 0, 't'},
        {"outcome", required_argument, 0, 'o'},
        {"limit", required_argument, 0, 'n'},
        {"failed", no_argument, 0, 'F'},
        {"older-than", required_argument, 0, 'O'},
        {"renderer-old", no_argument, 0, 'R'},
        {"dry-run", no_argument, 0, 'D'},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0}};
    const char *text = NULL, *shape = NULL, *dtype = NULL;
    unsigned mask = 0;
    int64_t limit = 50;
    et_database_prune_options po;
    memset(&po, 0, sizeof(po));
    bool list_flag = false, prune_flag = false;
    char name[32];
    snprintf(name, sizeof(name), "db %s", sub);
    int opt;
    argc--;
    argv++;
    while ((opt = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 'h': usage(stdout); return 0;
        case 'e': text = optarg; list_flag = true; break;
        case 's': shape = optarg; list_flag = true; break;
        case 't': dtype = optarg; list_flag = true; break;
        case 'o': {
            list_flag = true;
            int rc = parse_outcomes(optarg, &mask);
            if (rc)
                return rc;
            break;
        }
        case 'n': {
            list_flag = true;
            char *end;
            long long n = strtoll(optarg, &end, 10);
            if (*end || end == optarg || n < 0)
                return cli_usage_error(name, "--limit wants a count >= 0, "
                                             "not '%s'", optarg);
            limit = n;
            break;
        }
        case 'F': po.failed = 1; prune_flag = true; break;
        case 'R': po.renderer_old = 1; prune_flag = true; break;
        case 'D': po.dry_run = 1; prune_flag = true; break;
        case 'O': {
            prune_flag = true;
            char *end;
            double days = strtod(optarg, &end);
            if (*end || end == optarg || !(days > 0) || !isfinite(days))
                return cli_usage_error(name, "--older-than wants a number "
                                             "of days > 0, not '%s'",
                                       optarg);
            po.older_than_days = days;
            break;
        }
        default: return cli_usage_error(name, "unknown flag");
        }
    }
    if (optind < argc)
        return cli_usage_error(name, "unexpected argument '%s'",
                               argv[optind]);
    if (list_flag && which != LIST)
        return cli_usage_error(name, "--einsum, --shape, --dtype, --outcome "
                                     "and --limit are flags of 'db list'");
    if (prune_flag && which != PRUNE)
        return cli_usage_error(name, "--failed, --older-than, "
                                     "--renderer-old and --dry-run are "
                                     "flags of 'db prune'");
    if (which == LIST && (shape || dtype) && !text)
        return cli_usage_error(name, "--shape and --dtype need --einsum");
    if (which == LIST && text && !shape)
        return cli_usage_error(name, "--einsum needs --shape");
    if (which == PRUNE && !po.failed && !po.renderer_old &&
        !(po.older_than_days > 0))
        return cli_usage_error(name, "say what to delete: --failed, "
                                     "--older-than DAYS and/or "
                                     "--renderer-old");
    if (g_cli.device)
        cli_log(LOG_WARN, "db", "--device is not used by 'eintune db'");

    et_database *db = NULL;
    int rc = open_db(&db);
    if (rc)
        return rc;
    switch (which) {
    case STATS: rc = db_stats(db); break;
    case LIST: rc = db_list(db, text, shape, dtype, mask, limit); break;
    case PRUNE: rc = db_prune(db, &po); break;
    }
    et_database_close(db);
    return rc;
}
