/*
 * cmd_check.c - `eintune check EINSUM --shape .. [--dtype ..]`: parse and
 * resolve an einsum, print its normalized form, index table, op and byte
 * counts and arithmetic intensity. Bad input: the offending text echoed
 * with a caret on stderr, exit status 2, nothing on stdout.
 */
#include "cli/cli.h"

#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eintune check EINSUM --shape SPEC [--dtype SPEC] "
            "[--json FILE]\n\n"
            "Parses an einsum with its sizes and dtypes and prints the\n"
            "normalized explicit form, every index with its size and role\n"
            "(free, summed, batch), the op count per dtype, the compulsory\n"
            "bytes and the arithmetic intensity (ops per byte).\n\n"
            "  EINSUM          e.g. 'xik,kj->xij', 'ab,bc' (implicit output),\n"
            "                  'ii->i' (diagonal), '...ij,jk->...ik'\n"
            "  --shape SPEC    a size for every index: x=4096,i=35,k=35,j=35;\n"
            "                  ellipsis dimensions as ...=3x2\n"
            "  --dtype SPEC    f16, f32 or f64 for all operands, or one per\n"
            "                  operand: f32,f64 (default f64)\n"
            "  --json FILE     also write JSON (einsum, indices, ops, bytes,\n"
            "                  intensity); '-' = stdout, the table then goes\n"
            "                  to stderr\n"
            "  --device D      device whose peaks give the roofline (default:\n"
            "                  the first OpenCL device; peaks are measured\n"
            "                  once and cached)\n"
            "  --no-roofline   skip the roofline part (no device needed)\n"
            "  --quiet, --verbose, --help\n\n"
            "exit status: 0 success, 2 bad input\n");
}

int cmd_check(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"shape", required_argument, 0, 's'},
        {"dtype", required_argument, 0, 't'},
        {"no-roofline", no_argument, 0, 'n'},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    const char *shape = NULL, *dtype = NULL;
    int opt, roofline = 1;
    /* GNU getopt permutes, so EINSUM may stand before or after the flags;
     * an einsum starting with '-' ("->") goes after "--". */
    while ((opt = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 's': shape = optarg; break;
        case 't': dtype = optarg; break;
        case 'n': roofline = 0; break;
        case 'h': usage(stdout); return 0;
        default: return cli_usage_error("check", "bad flag");
        }
    }
    const char *text = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return cli_usage_error("check", "unexpected argument '%s'",
                               argv[optind]);
    if (!text)
        return cli_usage_error("check", "missing EINSUM");
    if (!shape)
        return cli_usage_error("check", "missing --shape");

    et_diag d;
    memset(&d, 0, sizeof(d));
    et_problem *p = NULL;
    if (et_problem_init(text, shape, dtype, &p, &d) != ET_OK) {
        cli_problem_diag(&d, text, shape, dtype);
        return EXIT_INPUT;
    }
    et_check_report *r = NULL;
    et_status st = et_problem_check(p, g_cli.device, roofline, &r, &d);
    et_problem_free(p);
    if (st != ET_OK) {
        return cli_error("check", EXIT_RUN, "%s", d.msg);
    }
    FILE *f = cli_table_out();
    et_check_report_print(r, f);
    fflush(f);
    int rc = g_cli.json ? cli_json_emit_api(et_check_report_json(r)) : 0;
    et_check_report_free(r);
    return rc ? EXIT_RUN : 0;
}
