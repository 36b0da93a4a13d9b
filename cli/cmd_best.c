/*
 * cmd_best.c - `eintune best`: the fastest verified kernel the tuning
 * database knows for an einsum on a device (or for a renamed or reordered
 * equivalent, through the canonical form), its opts in the asker's names,
 * its time, GOps/s against the roofline and its verification figures
 * (et_best_kernel_find, et_best_report_print/_json).
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: eintune best EINSUM --shape SPEC [--dtype SPEC] [--exact]\n"
        "                    [--batch ROWS] [--device D] [--db FILE]\n"
        "                    [--json FILE]\n"
        "\n"
        "The fastest verified kernel the tuning database knows for the\n"
        "einsum on the device: tuned for this einsum or for one that differs\n"
        "only by index names and operand order (its opts are shown in this\n"
        "einsum's names). Shows its opts, time with the 95 %% interval\n"
        "(the search's median; \"race time\" is the final race's, when a\n"
        "race chose it: the figure to compare),\n"
        "measured and roofline GOps/s (the roofline from the stored peaks;\n"
        "nothing is measured) and the verification figures.\n"
        "Sizes never tuned: a kernel tuned with an open axis (x=*) that\n"
        "covers them, else the opts tuned at the nearest other sizes (sum\n"
        "over axes of |log2 ratio|) re-applied where the rules accept them,\n"
        "saying so (\"tuned at x=512, applied at x=1024\"; no time shown).\n"
        "\n"
        "  --shape SPEC   sizes: x=4096,i=35,k=35,j=35 (...=3x2 for '...');\n"
        "                 x=* asks for the kernel of the open einsum\n"
        "  --batch ROWS   a batched einsum's rows, as tune --batch\n"
        "  --exact        only a kernel tuned for these sizes (or an open\n"
        "                 axis covering them): no fallback\n"
        "  --dtype SPEC   f16, f32 or f64, or one per operand (default f64)\n"
        "  --device D     opencl:N, opencl:P:D, opencl:NAME or cuda:N\n"
        "  --db FILE      tuning database (default\n"
        "                 $XDG_CACHE_HOME/eintune/tuning.db)\n"
        "  --json FILE    JSON: einsum, device {name, backend, driver}, opts,\n"
        "                 kernel, time_s, ci95_s [low, high] (the\n"
        "                 search's; time_source \"search\"), race (null or\n"
        "                 {time_s, ci95_s, rounds, verdict}), gops and\n"
        "                 roofline_gops (dtype -> value; roofline_gops null\n"
        "                 without stored peaks), verified {trials,\n"
        "                 max_norm_err, p_value}, tuned_as {einsum, opts},\n"
        "                 source (exact, open or fallback), open_axis,\n"
        "                 tuned_at, applied_at ('-' = stdout)\n"
        "\n"
        "exit status: 0 a kernel is known, 1 nothing known for this einsum\n"
        "on this device (tune it first) or the device cannot be opened,\n"
        "2 bad input (einsum, shape, dtype, flags, a database file that is\n"
        "not eintune's)\n");
}

int cli_best_find(const char *cmd, const char *text, const char *shape,
                  const char *dtype, const char *batch, int roofline,
                  int exact, et_problem **p, et_best_kernel **bk)
{
    et_diag d;
    *p = NULL;
    *bk = NULL;
    et_status st = et_problem_init(text, shape, dtype, p, &d);
    if (st == ET_ERR_NOMEM) {
        return cli_error(cmd, EXIT_RUN, "out of memory");
    }
    if (st != ET_OK) {
        cli_problem_diag(&d, text, shape, dtype);
        return EXIT_INPUT;
    }
    if (batch && et_problem_set_batch(*p, batch, &d) != ET_OK) {
        cli_batch_diag(&d, text, batch);
        return EXIT_INPUT;
    }
    et_best_options o;
    memset(&o, 0, sizeof o);
    o.device = g_cli.device;
    o.db = g_cli.db;
    o.roofline = roofline;
    o.exact = exact;
    o.log = cli_api_log;
    o.log_arg = (void *)cmd;
    /* nothing known is ET_ERR_NOT_FOUND: the library's words, exit 1 */
    st = et_best_kernel_find(*p, &o, bk, &d);
    if (st != ET_OK) {
        return cli_api_error(cmd, st, &d);
    }
    return 0;
}

int cmd_best(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"shape", required_argument, 0, 's'},
        {"dtype", required_argument, 0, 't'},
        {"exact", no_argument, 0, 2001},
        {"batch", required_argument, 0, 2002},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    const char *shape = NULL, *dtype = NULL, *batch = NULL;
    int opt, exact = 0;
    while ((opt = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 's': shape = optarg; break;
        case 't': dtype = optarg; break;
        case 2001: exact = 1; break;
        case 2002: batch = optarg; break;
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

    et_problem *p = NULL;
    et_best_kernel *bk = NULL;
    int status = cli_best_find("best", text, shape, dtype, batch, 1, exact,
                               &p, &bk);
    if (status == 0) {
        if (et_best_report_print(bk, cli_table_out()) != 0) {
            cli_error("best", EXIT_RUN, "cannot render the kernel");
            status = EXIT_RUN;
        } else if (g_cli.json) {
            char *json = et_best_report_json(bk);
            status = cli_json_emit_text(json) ? EXIT_RUN : 0;
            et_free(json);
        }
    }
    et_best_kernel_free(bk);
    et_problem_free(p);
    return status;
}
