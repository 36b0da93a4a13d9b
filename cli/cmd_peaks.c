/*
 * cmd_peaks.c - `eintune peaks [--remeasure] [--peaks-file FILE]`: the
 * device's FMA throughput per dtype and its streaming bandwidth, from the
 * cache or measured (and then cached), with the spread of the runs.
 */
#include "cli/cli.h"
#include "measure/remote.h"
#include "roofline/peaks.h"
#include "roofline/report.h"
#include "tune/peaks_db.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eintune peaks [--remeasure] [--peaks-file FILE] "
            "[--device D] [--json FILE]\n\n"
            "Prints the device's peaks that the roofline model uses: FMA\n"
            "throughput per dtype (GFLOP/s: f32, f64, and f16 where the\n"
            "device computes in half natively) and streaming bandwidth\n"
            "(GB/s: read, write, copy, triad over buffers far larger than\n"
            "the last-level cache, (bytes read + written) / time). Each is\n"
            "the best of several runs on the device timer; min, median and\n"
            "max show the spread. Figures are kept per device and driver in\n"
            "the tuning database (--db FILE, default\n"
            "$XDG_CACHE_HOME/eintune/tuning.db), with a cache file under\n"
            "$XDG_CACHE_HOME/eintune/ (~/.cache/eintune) behind it.\n\n"
            "  --remeasure        measure again and replace the cache\n"
            "  --peaks-file FILE  vendor figures that replace measured ones\n"
            "                     (also $ET_PEAKS_FILE), JSON such as\n"
            "                     {\"gflops\": {\"f32\": 3000, \"f64\": 1500},\n"
            "                      \"bandwidth_gbs\": 400}\n"
            "  --runs N           timed runs per figure (default 5)\n"
            "  --quick            small buffers and short runs: rough figures,\n"
            "                     measured now, never cached (no cache, no\n"
            "                     --peaks-file)\n"
            "  --device D         opencl:N, opencl:P:D, opencl:NAME, cuda:N\n"
            "  --json FILE        also write JSON: device {name, backend,\n"
            "                     driver}, gflops {dtype: value},\n"
            "                     bandwidth_gbs, and the spreads; '-' =\n"
            "                     stdout, the table then goes to stderr\n"
            "  --quiet, --verbose, --help\n\n"
            "exit status: 0 success, 1 device or measurement failed,\n"
            "2 bad input (flags, peaks file)\n");
}

static void log_line(void *arg, const char *msg)
{
    (void)arg;
    cli_log(LOG_INFO, "peaks", "%s", msg);
}

int cmd_peaks(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"remeasure", no_argument, 0, 'r'},
        {"peaks-file", required_argument, 0, 'p'},
        {"runs", required_argument, 0, 'n'},
        {"quick", no_argument, 0, 'Q'},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0}};
    et_peaks_get_opts o;
    memset(&o, 0, sizeof(o));
    o.measure.log = log_line;
    int quick = 0, opt;
    while ((opt = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 'h': usage(stdout); return 0;
        case 'r': o.remeasure = true; break;
        case 'p': o.peaks_file = optarg; break;
        case 'Q': quick = 1; break;
        case 'n': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || n < 1 || n > 1000)
                return cli_usage_error("peaks", "--runs wants 1..1000, not "
                                       "'%s'", optarg);
            o.measure.runs = (int)n;
            break;
        }
        default: return cli_usage_error("peaks", "unknown flag");
        }
    }
    if (optind < argc)
        return cli_usage_error("peaks", "unexpected argument '%s'",
                               argv[optind]);

    et_error err;
    err.msg[0] = '\0';
    et_device *dev = NULL;
    et_db *db = NULL;
    et_status st;
    if (!quick) {
        st = et_db_open(g_cli.db, &db, &err);
        if (st != ET_OK && g_cli.db) {
            fprintf(stderr, "eintune peaks: %s\n", err.msg);
            return st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
        }
        if (st != ET_OK)
            cli_log(LOG_WARN, "peaks", "no tuning database: %s", err.msg);
        err.msg[0] = '\0';
    }
    st = et_device_open_isolated(g_cli.device, NULL, &dev, &err);
    if (st == ET_ERR_DEVICE && !dev) {
        char path[1024];
        if (et_remote_worker_path(path, sizeof(path)) != 0) {
            cli_log(LOG_WARN, "peaks", "no device worker (%s): measuring "
                    "in this process", path);
            err.msg[0] = '\0';
            st = et_device_open(g_cli.device, &dev, &err);
        }
    }
    if (st != ET_OK) {
        fprintf(stderr, "eintune peaks: %s\n", err.msg);
        et_db_close(db);
        return st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
    }
    cli_log(LOG_INFO, "peaks", "device %s (%s, driver %s)", dev->info.name,
            et_backend_name(dev->info.target.backend),
            dev->info.driver_version);

    et_peaks p;
    if (quick) {
        /* rough figures: shown, never cached */
        o.measure.quick = true;
        st = et_peaks_measure(dev, &o.measure, &p, &err);
    } else {
        st = et_peaks_get_db(dev, db, &o, &p, &err);
    }
    et_device_close(dev);
    et_db_close(db);
    if (st != ET_OK) {
        fprintf(stderr, "eintune peaks: %s\n", err.msg);
        return st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
    }
    /* On a CPU device another busy process takes whole cores from the
     * benchmark: its runs then spread widely (best ~2x worst on 2 cores). */
    for (int t = 0; p.source == ET_PEAKS_MEASURED && t < ET_DTYPE_COUNT;
         t++) {
        const et_spread *s = &p.gflops_spread[t];
        if (s->runs > 1 && s->min < 0.7 * s->max) {
            cli_log(LOG_WARN, "peaks",
                    "%s FMA runs varied from %.1f to %.1f GFLOP/s: the "
                    "device may be busy with other work; the best run is "
                    "kept (--remeasure on an idle device to refresh)",
                    et_dtype_name((et_dtype)t), s->min, s->max);
            break;
        }
    }
    et_peaks_print(cli_table_out(), &p);
    if (!g_cli.json)
        return 0;
    cJSON *doc = et_peaks_to_json(&p);
    if (!doc) {
        fprintf(stderr, "eintune peaks: out of memory\n");
        return EXIT_RUN;
    }
    int rc = cli_json_emit(doc);
    cJSON_Delete(doc);
    return rc ? EXIT_RUN : 0;
}
