/*
 * cmd_best.c - `eintune best`: the fastest verified kernel the tuning
 * database knows for an einsum on a device (or for a renamed or reordered
 * equivalent, through the canonical form), its opts in the asker's names,
 * its time, GOps/s against the roofline and its verification figures.
 *
 * Also cli_best_lookup, the part `export` shares: the einsum resolved,
 * the database opened before any device (a refused file costs no device
 * start), the device opened isolated only to learn its name and driver
 * (the database key) and closed again.
 */
#include "cli/cli.h"
#include "einsum/einsum.h"
#include "db/db.h"
#include "measure/remote.h"
#include "roofline/peaks.h"
#include "roofline/report.h"
#include "roofline/roofline.h"
#include "transforms/kernel.h"
#include "tune/best.h"
#include "tune/peaks_db.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: eintune best EINSUM --shape SPEC [--dtype SPEC]\n"
        "                    [--device D] [--db FILE] [--json FILE]\n"
        "\n"
        "The fastest verified kernel the tuning database knows for the\n"
        "einsum on the device: tuned for this einsum or for one that differs\n"
        "only by index names and operand order (its opts are shown in this\n"
        "einsum's names). Shows its opts, time with the 95 %% interval,\n"
        "measured and roofline GOps/s (the roofline from the stored peaks;\n"
        "nothing is measured) and the verification figures.\n"
        "\n"
        "  --shape SPEC   sizes: x=4096,i=35,k=35,j=35 (...=3x2 for '...')\n"
        "  --dtype SPEC   f16, f32 or f64, or one per operand (default f64)\n"
        "  --device D     opencl:N, opencl:P:D, opencl:NAME or cuda:N\n"
        "  --db FILE      tuning database (default\n"
        "                 $XDG_CACHE_HOME/eintune/tuning.db)\n"
        "  --json FILE    JSON: einsum, device {name, backend, driver}, opts,\n"
        "                 kernel, time_s, ci95_s [low, high], gops and\n"
        "                 roofline_gops (dtype -> value; roofline_gops null\n"
        "                 without stored peaks), verified {trials,\n"
        "                 max_norm_err, p_value}, tuned_as {einsum, opts}\n"
        "                 ('-' = stdout)\n"
        "\n"
        "exit status: 0 a kernel is known, 1 nothing known for this einsum\n"
        "on this device (tune it first) or the device cannot be opened,\n"
        "2 bad input (einsum, shape, dtype, flags, a database file that is\n"
        "not eintune's)\n");
}

int cli_best_lookup(const char *cmd, const char *text, const char *shape,
                    const char *dtype, struct et_einsum *e,
                    struct et_device_info *info, struct et_best *best,
                    struct et_peaks *peaks, int *have_peaks)
{
    et_subscripts *sub = malloc(sizeof *sub);
    et_shape_spec *sp = malloc(sizeof *sp);
    et_dtype dt[ET_MAX_OPERANDS];
    et_diag d;
    et_error err;
    et_db *db = NULL;
    et_device *dev = NULL;
    int status = EXIT_INPUT;
    memset(&d, 0, sizeof d);
    err.msg[0] = '\0';
    if (have_peaks)
        *have_peaks = 0;
    if (!sub || !sp) {
        fprintf(stderr, "eintune %s: out of memory\n", cmd);
        status = EXIT_RUN;
        goto out;
    }
    if (et_subscripts_parse(text, sub, &d) != ET_OK) {
        cli_diag("einsum", text, &d);
        goto out;
    }
    if (et_shape_spec_parse(shape, sp, &d) != ET_OK) {
        cli_diag("--shape", shape, &d);
        goto out;
    }
    if (et_dtype_spec_parse(dtype, sub->n_ops, dt, &d) != ET_OK) {
        cli_diag("--dtype", dtype, &d);
        goto out;
    }
    if (et_einsum_resolve(sub, sp, NULL, dt, e, &d) != ET_OK) {
        cli_diag("einsum", text, &d);
        goto out;
    }
    et_status st = et_db_open(g_cli.db, &db, &err);
    if (st != ET_OK) {
        fprintf(stderr, "eintune %s: %s\n", cmd, err.msg);
        status = st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
        goto out;
    }
    cli_log(LOG_DEBUG, cmd, "database %s", et_db_path(db));
    st = et_device_open_isolated(g_cli.device, NULL, &dev, &err);
    if (st != ET_OK) {
        fprintf(stderr, "eintune %s: %s\n", cmd, err.msg);
        status = st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
        goto out;
    }
    *info = dev->info;
    et_device_close(dev);
    dev = NULL;
    bool found = false;
    st = et_best_find(db, e, info, best, &found, &err);
    if (st != ET_OK) {
        fprintf(stderr, "eintune %s: %s\n", cmd, err.msg);
        status = EXIT_RUN;
        goto out;
    }
    if (!found) {
        fprintf(stderr,
                "eintune %s: no verified kernel known for %s on %s (driver "
                "%s) in %s; run 'eintune tune' first\n",
                cmd, e->text, info->name, info->driver_version,
                et_db_path(db));
        status = EXIT_RUN;
        goto out;
    }
    if (!best->exact)
        cli_log(LOG_WARN, cmd,
                "the stored kernel's source could not be reproduced for "
                "%s; its opts are mapped by name",
                e->text);
    if (peaks && have_peaks) {
        et_error perr;
        perr.msg[0] = '\0';
        if (et_peaks_db_load(db, info, peaks, &perr) == ET_OK ||
            et_peaks_load(info, peaks, &perr) == ET_OK)
            *have_peaks = 1;
        else
            cli_log(LOG_INFO, cmd, "no roofline: %s", perr.msg);
    }
    status = 0;
out:
    if (dev)
        et_device_close(dev);
    et_db_close(db);
    free(sub);
    free(sp);
    return status;
}

static void add_device(cJSON *doc, const et_device_info *info)
{
    cJSON *jd = cJSON_AddObjectToObject(doc, "device");
    cJSON_AddStringToObject(jd, "name", info->name);
    cJSON_AddStringToObject(jd, "backend",
                            et_backend_name(info->target.backend));
    cJSON_AddStringToObject(jd, "driver", info->driver_version);
}

int cmd_best(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"shape", required_argument, 0, 's'},
        {"dtype", required_argument, 0, 't'},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    const char *shape = NULL, *dtype = NULL;
    int opt;
    while ((opt = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 's': shape = optarg; break;
        case 't': dtype = optarg; break;
        case 'h': usage(stdout); return 0;
        default: return cli_usage_error("best", "unknown or incomplete flag");
        }
    }
    const char *text = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return cli_usage_error("best", "unexpected argument '%s'",
                               argv[optind]);
    if (!text)
        return cli_usage_error("best", "missing EINSUM");
    if (!shape)
        return cli_usage_error("best", "missing --shape");

    et_einsum *e = malloc(sizeof *e);
    et_best *b = malloc(sizeof *b);
    et_device_info info;
    et_peaks peaks;
    et_kernel *k = NULL;
    et_rendered rend;
    cJSON *doc = NULL;
    int have_peaks = 0, status = EXIT_RUN;
    memset(&rend, 0, sizeof rend);
    if (!e || !b) {
        fprintf(stderr, "eintune best: out of memory\n");
        goto out;
    }
    status = cli_best_lookup("best", text, shape, dtype, e, &info, b, &peaks,
                             &have_peaks);
    if (status)
        goto out;
    status = EXIT_RUN;

    /* the kernel in the asker's names (its name may differ from the
     * stored one when the einsum was renamed) */
    if (et_kernel_init(e, &info.target, &k) != ET_OK ||
        et_kernel_apply_opts(k, b->opt, b->n_opts, NULL, 0) != ET_OK ||
        et_kernel_render(k, info.target.backend, NULL, &rend) != ET_OK) {
        fprintf(stderr, "eintune best: cannot render the kernel\n");
        goto out;
    }
    const et_db_trial *t = &b->trial;
    et_roofline roof;
    char why[256] = "";
    if (have_peaks &&
        et_roofline_compute(e, &peaks, &roof, why, sizeof why) != ET_OK) {
        cli_log(LOG_WARN, "best", "no roofline: %s", why);
        have_peaks = 0;
    }
    int64_t ops[ET_DTYPE_COUNT];
    et_einsum_ops(e, ops);

    FILE *f = cli_table_out();
    fprintf(f, "einsum      %s\n", e->text);
    fprintf(f, "device      %s (%s, driver %s)\n", info.name,
            et_backend_name(info.target.backend), info.driver_version);
    if (strcmp(t->einsum_text, e->text) != 0)
        fprintf(f, "tuned as    %s with %s\n", t->einsum_text,
                t->opts[0] ? t->opts : "-");
    fprintf(f, "opts        %s\n", b->opts[0] ? b->opts : "-");
    fprintf(f, "kernel      %s\n", rend.name);
    fprintf(f, "time        %.4g ms [%.4g, %.4g] (%d runs, cv %.3g)\n",
            t->median_s * 1e3, t->low_s * 1e3, t->high_s * 1e3, t->runs,
            t->cv);
    if (isfinite(t->p_value))
        fprintf(f, "verified    %d trials, max normalized error %.3g, "
                   "p = %.3g\n",
                t->verify_trials, t->max_norm_err, t->p_value);
    else
        fprintf(f, "verified    %d trials, max normalized error %.3g\n",
                t->verify_trials, t->max_norm_err);
    if (have_peaks) {
        fputc('\n', f);
        et_roofline_table(f, &roof, t->median_s);
    } else {
        for (int d = 0; d < ET_DTYPE_COUNT; d++)
            if (ops[d] > 0 && t->median_s > 0)
                fprintf(f, "gops        %.4g (%s; no stored peaks for the "
                           "roofline)\n",
                        (double)ops[d] / t->median_s / 1e9,
                        et_dtype_name((et_dtype)d));
    }
    fflush(f);

    doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "einsum", e->text);
    add_device(doc, &info);
    cJSON_AddStringToObject(doc, "opts", b->opts);
    cJSON_AddStringToObject(doc, "kernel", rend.name);
    cJSON_AddNumberToObject(doc, "time_s", t->median_s);
    cJSON *ci = cJSON_AddArrayToObject(doc, "ci95_s");
    cJSON_AddItemToArray(ci, cJSON_CreateNumber(t->low_s));
    cJSON_AddItemToArray(ci, cJSON_CreateNumber(t->high_s));
    if (have_peaks) {
        cJSON_AddItemToObject(doc, "gops",
                              et_measured_gops_json(&roof, t->median_s));
        cJSON_AddItemToObject(doc, "roofline_gops",
                              et_roofline_gops_json(&roof));
    } else {
        cJSON *g = cJSON_AddObjectToObject(doc, "gops");
        for (int d = 0; d < ET_DTYPE_COUNT; d++)
            if (ops[d] > 0 && t->median_s > 0)
                cJSON_AddNumberToObject(g, et_dtype_name((et_dtype)d),
                                        (double)ops[d] / t->median_s / 1e9);
        cJSON_AddNullToObject(doc, "roofline_gops");
    }
    cJSON *jv = cJSON_AddObjectToObject(doc, "verified");
    cJSON_AddNumberToObject(jv, "trials", t->verify_trials);
    cJSON_AddNumberToObject(jv, "max_norm_err", t->max_norm_err);
    if (isfinite(t->p_value))
        cJSON_AddNumberToObject(jv, "p_value", t->p_value);
    else
        cJSON_AddNullToObject(jv, "p_value");
    cJSON *ta = cJSON_AddObjectToObject(doc, "tuned_as");
    cJSON_AddStringToObject(ta, "einsum", t->einsum_text);
    cJSON_AddStringToObject(ta, "opts", t->opts);
    cJSON_AddStringToObject(ta, "kernel", t->kernel_name);
    cJSON_AddBoolToObject(ta, "source_reproduced", b->exact);
    status = cli_json_emit(doc) ? EXIT_RUN : 0;
out:
    cJSON_Delete(doc);
    et_rendered_free(&rend);
    et_kernel_free(k);
    free(e);
    free(b);
    return status;
}
