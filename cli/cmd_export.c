/*
 * cmd_export.c - `eintune export`: the best known kernel for an einsum on
 * a device (as `eintune best` finds it), written for a library to embed
 * (et_best_kernel_export: DIR/<name>.cl or .cu and DIR/<name>.h; see
 * include/eintune.h for the names, the header's macros and what happens
 * to files in the way).
 */
#include "cli/cli.h"

#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: eintune export EINSUM --shape SPEC [--dtype SPEC]\n"
        "                      [--backend opencl|cuda] -o DIR [--name NAME]\n"
        "                      [--force] [--device D] [--db FILE]\n"
        "                      [--json FILE]\n"
        "\n"
        "Writes the fastest verified kernel the tuning database knows for\n"
        "the einsum on the device (see 'eintune best') for a library to\n"
        "embed: DIR/<name>.cl (.cu for CUDA) with the source, and\n"
        "DIR/<name>.h, a C header with the kernel name, the argument order\n"
        "(output first, then the inputs in operand order; dtypes, shapes,\n"
        "element counts) and the launch geometry (OpenCL global/local work\n"
        "sizes, CUDA grid/block), its macros prefixed with NAME_ in upper\n"
        "case. The name is the loop sizes and the dtypes (r_16_12_8_f32),\n"
        "or --name. Headers of several kernels can be included in one file.\n"
        "examples/export_demo.c runs one with the plain OpenCL API.\n"
        "\n"
        "  --shape SPEC     sizes: x=4096,i=35,k=35,j=35\n"
        "  --dtype SPEC     f16, f32 or f64, or one per operand (default f64)\n"
        "  --backend KIND   opencl or cuda (default: the device's)\n"
        "  -o, --output DIR directory for the files (created when missing)\n"
        "  --name NAME      the kernel's name, a C identifier: the function,\n"
        "                   the files and the macro prefix (NAME_ in upper\n"
        "                   case)\n"
        "  --force          replace files export wrote for another kernel\n"
        "                   (files eintune did not write are never replaced;\n"
        "                   the same kernel is rewritten without --force)\n"
        "  --device D       opencl:N, opencl:P:D, opencl:NAME or cuda:N\n"
        "  --db FILE        tuning database\n"
        "  --json FILE      JSON: einsum, device, opts, kernel, prefix,\n"
        "                   backend, source, header, replaced ('-' = stdout)\n"
        "\n"
        "exit status: 0 written, 1 nothing known for this einsum on this\n"
        "device or a file could not be written, 2 bad input (flags, einsum,\n"
        "database file, a bad --name, a file of another kernel in the way\n"
        "without --force, a file eintune did not write in the way)\n");
}

int cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"shape", required_argument, 0, 's'},
        {"dtype", required_argument, 0, 't'},
        {"backend", required_argument, 0, 'b'},
        {"output", required_argument, 0, 'o'},
        {"name", required_argument, 0, 'n'},
        {"force", no_argument, 0, 'f'},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    const char *shape = NULL, *dtype = NULL, *dir = NULL, *backend = NULL;
    const char *name = NULL;
    int opt, force = 0;
    while ((opt = getopt_long(argc, argv, "o:hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 's': shape = optarg; break;
        case 't': dtype = optarg; break;
        case 'b': backend = optarg; break;
        case 'o': dir = optarg; break;
        case 'n': name = optarg; break;
        case 'f': force = 1; break;
        case 'h': usage(stdout); return 0;
        default:
            return cli_usage_error("export", "unknown or incomplete flag");
        }
    }
    const char *text = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return cli_usage_error("export", "unexpected argument '%s'",
                               argv[optind]);
    if (!text)
        return cli_usage_error("export", "missing EINSUM");
    if (!shape)
        return cli_usage_error("export", "missing --shape");
    if (!dir || !dir[0])
        return cli_usage_error("export", "missing -o DIR");
    if (backend && strcmp(backend, "opencl") && strcmp(backend, "cuda"))
        return cli_usage_error("export", "--backend must be opencl or cuda, "
                               "not '%s'", backend);
    if (strlen(dir) > 3000)
        return cli_usage_error("export", "-o DIR is too long");
    et_diag d;
    if (name && et_export_name_validate(name, &d) != ET_OK) {
        cli_diag("--name", name, &d);
        return EXIT_INPUT;
    }
    if (cli_check_output("export", "-o", dir, NULL, 1))
        return EXIT_INPUT;

    et_problem *p = NULL;
    et_best_kernel *bk = NULL;
    cJSON *doc = NULL;
    int status = cli_best_find("export", text, shape, dtype, 0, &p, &bk);
    if (status)
        goto out;

    et_export_options o;
    memset(&o, 0, sizeof o);
    o.dir = dir;
    o.backend = backend;
    o.name = name;
    o.force = force;
    o.log = cli_api_log;
    o.log_arg = (void *)"export";
    et_export_result res;
    et_status st = et_best_kernel_export(bk, &o, &res, &d);
    if (st != ET_OK) {
        status = cli_api_error("export", st, &d);
        goto out;
    }
    et_best_info info;
    et_best_kernel_info(bk, &info);
    cli_log(LOG_INFO, "export", "wrote %s and %s%s", res.source, res.header,
            res.replaced ? " (replacing another kernel: --force)" : "");
    FILE *f = cli_table_out();
    fprintf(f, "einsum   %s\nopts     %s\nkernel   %s\nprefix   %s\n"
               "source   %s\nheader   %s\n",
            et_problem_einsum(p), info.opts[0] ? info.opts : "untransformed",
            res.kernel, res.prefix, res.source, res.header);
    fflush(f);

    doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "einsum", et_problem_einsum(p));
    cJSON *jd = cJSON_AddObjectToObject(doc, "device");
    cJSON_AddStringToObject(jd, "name", info.device);
    cJSON_AddStringToObject(jd, "backend", et_backend_name(info.backend));
    cJSON_AddStringToObject(jd, "driver", info.driver);
    cJSON_AddStringToObject(doc, "opts", info.opts);
    cJSON_AddStringToObject(doc, "kernel", res.kernel);
    cJSON_AddStringToObject(doc, "prefix", res.prefix);
    cJSON_AddStringToObject(doc, "backend", et_backend_name(res.backend));
    cJSON_AddStringToObject(doc, "source", res.source);
    cJSON_AddStringToObject(doc, "header", res.header);
    cJSON_AddBoolToObject(doc, "replaced", res.replaced);
    cJSON_AddNumberToObject(doc, "time_s", info.time_s);
    status = cli_json_emit(doc) ? EXIT_RUN : 0;
out:
    cJSON_Delete(doc);
    et_best_kernel_free(bk);
    et_problem_free(p);
    return status;
}
