/*
 * cmd_codegen.c - `eintune codegen`: print the kernel source for an einsum
 * and an opt list, with the launch geometry in a comment at its top.
 */
#include "cli/cli.h"
#include "einsum/einsum.h"
#include "transforms/kernel.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eintune codegen EINSUM --shape SIZES [--dtype T] "
            "[--opts OPTS]\n"
            "                       [--backend opencl|cuda]\n\n"
            "Prints the kernel for EINSUM on stdout; the launch geometry is\n"
            "in a comment at its top, so the output compiles as it is.\n\n"
            "  --shape SIZES   index sizes, e.g. i=64,k=35,j=35\n"
            "  --dtype T       f16, f32 or f64 for all operands, or one per\n"
            "                  operand (f32,f64); default f64\n"
            "  --opts OPTS     opt list, e.g. 'LOCAL(i,8) UPCAST(j,4) "
            "UNROLL(k,0)'\n"
            "                  opts: LOCAL UPCAST UNROLL GROUP GROUPTOP "
            "PADTO SPLIT (axis,n),\n"
            "                  SWAP(a,b), NOLOCALS, PREFETCH(operand,axis,n)\n"
            "  --backend B     opencl (default) or cuda\n\n"
            "Not yet available: --space S --params k=v (transform spaces).\n"
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
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    const char *shape = NULL, *dtype = NULL, *opts_text = NULL;
    et_backend_kind backend = ET_BACKEND_OPENCL;
    cli_getopt_reset();
    int c;
    while ((c = getopt_long(argc, argv, "hqv", longopts, NULL)) != -1) {
        switch (c) {
        case 's': shape = optarg; break;
        case 't': dtype = optarg; break;
        case 'o': opts_text = optarg; break;
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

    et_einsum *e = calloc(1, sizeof *e);
    et_opt *opts = calloc(ET_MAX_OPTS, sizeof *opts);
    et_kernel *k = NULL;
    et_rendered r = {0};
    int rc = EXIT_INPUT;
    et_diag d;
    memset(&d, 0, sizeof d);
    d.pos = -1;
    if (!e || !opts) {
        fprintf(stderr, "eintune codegen: out of memory\n");
        rc = EXIT_RUN;
        goto done;
    }
    et_status st = et_einsum_from_strings(text, shape, dtype, e, &d);
    if (st != ET_OK) {
        cli_diag("einsum", text, &d);
        goto done;
    }
    int n = 0;
    st = et_opts_parse(opts_text, opts, ET_MAX_OPTS, &n, &d);
    if (st != ET_OK) {
        cli_diag("opts", opts_text, &d);
        goto done;
    }
    et_target t = et_target_generic(backend);
    st = et_kernel_init(e, &t, &k);
    if (st != ET_OK) {
        fprintf(stderr, "eintune codegen: %s\n", et_status_str(st));
        goto done;
    }
    char reason[512];
    st = et_kernel_apply_opts(k, opts, n, reason, sizeof reason);
    if (st != ET_OK) {
        fprintf(stderr, "eintune codegen: opt refused: %s\n", reason);
        goto done;
    }
    st = et_kernel_render(k, backend, NULL, &r);
    if (st != ET_OK) {
        fprintf(stderr, "eintune codegen: cannot render: %s\n",
                et_status_str(st));
        rc = st == ET_ERR_UNSUPPORTED ? EXIT_INPUT : EXIT_RUN;
        goto done;
    }
    fputs(r.source, stdout);
    rc = 0;
done:
    et_rendered_free(&r);
    et_kernel_free(k);
    free(opts);
    free(e);
    return rc;
}
