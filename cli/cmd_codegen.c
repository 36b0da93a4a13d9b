/*
 * cmd_codegen.c - `eintune codegen`: print the kernel source for an einsum
 * and an opt list, with the launch geometry in a comment at its top.
 */
#include "cli/cli.h"

#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eintune codegen EINSUM --shape SIZES [--dtype T] "
            "[--opts OPTS]\n"
            "                       [--batch ROWS] [--backend opencl|cuda]\n\n"
            "Prints the kernel for EINSUM on stdout; the launch geometry is\n"
            "in a comment at its top, so the output compiles as it is.\n\n"
            "  --shape SIZES   index sizes, e.g. i=64,k=35,j=35\n"
            "  --dtype T       f16, f32 or f64 for all operands, or one per\n"
            "                  operand (f32,f64); default f64\n"
            "  --opts OPTS     opt list, e.g. 'LOCAL(i,8) UPCAST(j,4) "
            "UNROLL(k,0)'\n"
            "                  opts: LOCAL UPCAST UNROLL GROUP GROUPTOP "
            "PADTO SPLIT LOOP\n"
            "                  (axis,n), "
            "SWAP(a,b), NOLOCALS, HOIST, FACTOR, STAGE,\n"
            "                  NTSTORE, PREFETCH(operand,axis,n)\n"
            "  --batch ROWS    a batched einsum's rows, \"u,Dr; u,Ds\" (as tune)\n"
            "  --backend B     opencl (default) or cuda\n\n"
            "Exit status: 0 printed, 2 bad einsum, shape, dtype or opts (a\n"
            "refused opt prints the rule on stderr).\n");
}

int cmd_codegen(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"shape", required_argument, 0, 's'},
        {"dtype", required_argument, 0, 't'},
        {"opts", required_argument, 0, 'o'},
        {"backend", required_argument, 0, 'b'},
        {"space", required_argument, 0, 'S'},
        {"params", required_argument, 0, 'P'},
        {"batch", required_argument, 0, 'B'},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    const char *shape = NULL, *dtype = NULL, *opts_text = NULL;
    const char *batch = NULL;
    et_backend_kind backend = ET_BACKEND_OPENCL;
    cli_getopt_reset();
    int c;
    while ((c = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        switch (c) {
        case 's': shape = optarg; break;
        case 't': dtype = optarg; break;
        case 'o': opts_text = optarg; break;
        case 'B': batch = optarg; break;
        case 'b':
            if (!strcmp(optarg, "opencl"))
                backend = ET_BACKEND_OPENCL;
            else if (!strcmp(optarg, "cuda"))
                backend = ET_BACKEND_CUDA;
            else
                return cli_usage_error("codegen",
                                       "unknown backend '%s' (opencl or cuda)",
                                       optarg);
            break;
        case 'S':
        case 'P':
            return cli_usage_error("codegen",
                                   "--space/--params are not available yet");
        case 'h': usage(stdout); return 0;
        case '?': return cli_usage_error("codegen", "bad flag");
        default:
            if (!cli_common_opt(c, optarg))
                return cli_usage_error("codegen", "bad flag");
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("codegen", "expected one EINSUM argument");
    if (!shape)
        return cli_usage_error("codegen", "--shape is required");
    const char *text = argv[optind];

    et_diag d;
    memset(&d, 0, sizeof d);
    d.pos = -1;
    et_problem *p = NULL;
    et_status st = et_problem_init(text, shape, dtype, &p, &d);
    if (st != ET_OK) {
        cli_diag("einsum", text, &d);
        return EXIT_INPUT;
    }
    if (batch && et_problem_set_batch(p, batch, &d) != ET_OK) {
        et_problem_free(p);
        cli_batch_diag(&d, text, batch);
        return EXIT_INPUT;
    }
    et_kernel_source *k = NULL;
    st = et_codegen(p, opts_text, backend, &k, &d);
    et_problem_free(p);
    if (st == ET_OK) {
        fputs(k->source, stdout);
        et_kernel_source_free(k);
        return 0;
    }
    if (st == ET_ERR_REFUSED) {
        return cli_error("codegen", EXIT_INPUT, "opt refused: %s", d.msg);
    }
    if (d.input == ET_INPUT_OPTS) {
        cli_diag("opts", opts_text, &d);
        return EXIT_INPUT;
    }
    cli_api_error("codegen", st, &d);
    return st == ET_ERR_UNSUPPORTED || st == ET_ERR_INPUT ? EXIT_INPUT
                                                          : EXIT_RUN;
}
