/*
 * cmd_peaks.c - `eintune peaks [--remeasure] [--peaks-file FILE]`: the
 * device's FMA throughput per dtype and its read-only and copy bandwidth
 * per memory level, from the cache or measured (and then cached), with
 * the spread of the runs and the winning variants.
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eintune peaks [--remeasure] [--peaks-file FILE] "
            "[--device D] [--json FILE]\n\n"
            "Prints the device's peaks that the roofline model uses: FMA\n"
            "throughput per dtype (GFLOP/s: f32, f64, and f16 where the\n"
            "device computes in half natively) and bandwidth (GB/s, (bytes\n"
            "read + written) / time) of a read-only kernel and of a copy,\n"
            "in DRAM (buffers far larger than the last-level cache) and in\n"
            "each cache level the device reports (L1..L3: a working set of\n"
            "half the cache). Each micro-benchmark searches its variants\n"
            "(vector width, work-group size, accumulators or elements per\n"
            "work-item, access pattern) and keeps the fastest (the variant\n"
            "column), then times every winner again in a second pass; its\n"
            "figure is the winner's fastest launch of either pass, min,\n"
            "median and max its runs. A problem's roofline slices its\n"
            "bytes over the levels (each cache serves up to its capacity,\n"
            "DRAM the rest), read-only or copy by the share it writes.\n"
            "Figures are kept per device, driver and micro-benchmark\n"
            "version in the tuning database (--db FILE, default\n"
            "$XDG_CACHE_HOME/eintune/tuning.db), with a cache file under\n"
            "$XDG_CACHE_HOME/eintune/ (~/.cache/eintune) behind it.\n\n"
            "  --remeasure        measure again and replace the cache\n"
            "                     (15-25 s on a 2-core CPU device)\n"
            "  --peaks-file FILE  vendor figures that replace measured ones\n"
            "                     (also $ET_PEAKS_FILE), JSON such as\n"
            "                     {\"gflops\": {\"f32\": 3000, \"f64\": 1500},\n"
            "                      \"bandwidth_gbs\": 400}; bandwidth_gbs is\n"
            "                     the DRAM copy figure and stands for every\n"
            "                     bandwidth figure the file does not give\n"
            "  --runs N           timed runs per figure and pass (default 5)\n"
            "  --quick            small buffers, short runs, one pass: rough\n"
            "                     figures, measured now, never cached (no\n"
            "                     cache, no --peaks-file)\n"
            "  --device D         opencl:N, opencl:P:D, opencl:NAME, cuda:N\n"
            "  --json FILE        also write JSON: device {name, backend,\n"
            "                     driver}, bench_version, gflops {dtype:\n"
            "                     value}, bandwidth_gbs, bandwidth {read,\n"
            "                     copy} (DRAM), levels [...], the spreads\n"
            "                     and the winning variants; '-' = stdout,\n"
            "                     the table then goes to stderr\n"
            "  --quiet, --verbose, --help\n\n"
            "exit status: 0 success, 1 device or measurement failed,\n"
            "2 bad input (flags, peaks file)\n");
}

static void log_line(void *arg, et_log_level lvl, const char *msg)
{
    (void)arg;
    cli_log(lvl == ET_LOG_DEBUG  ? LOG_DEBUG
            : lvl == ET_LOG_WARN ? LOG_WARN
                                 : LOG_INFO,
            "peaks", "%s", msg);
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
    et_peaks_options o;
    memset(&o, 0, sizeof(o));
    o.log = log_line;
    int opt;
    while ((opt = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 'h': usage(stdout); return 0;
        case 'r': o.remeasure = 1; break;
        case 'p': o.peaks_file = optarg; break;
        case 'Q': o.quick = 1; break;
        case 'n': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || n < 1 || n > 1000)
                return cli_usage_error("peaks", "--runs wants 1..1000, not "
                                       "'%s'", optarg);
            o.runs = (int)n;
            break;
        }
        default: return cli_usage_error("peaks", "unknown flag");
        }
    }
    if (optind < argc)
        return cli_usage_error("peaks", "unexpected argument '%s'",
                               argv[optind]);

    o.device = g_cli.device;
    o.db = g_cli.db;
    et_peaks_report *r = NULL;
    et_diag d;
    et_status st = et_peaks_report_init(&o, &r, &d);
    if (st != ET_OK) {
        cli_api_error("peaks", st, &d);
        return st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
    }
    et_peaks_report_print(r, cli_table_out());
    int rc = 0;
    if (g_cli.json)
        rc = cli_json_emit_api(et_peaks_report_json(r));
    et_peaks_report_free(r);
    return rc ? EXIT_RUN : 0;
}
