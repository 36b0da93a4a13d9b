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
        "usage: eintune export EINSUM --shape SPEC [--dtype SPEC] [--exact]\n"
        "                      [--batch ROWS]\n"
        "                      [--backend opencl|cuda] -o DIR [--name NAME]\n"
        "                      [--force] [--dispatch] [--no-verify]\n"
        "                      [--embed] [--device D] [--db FILE]\n"
        "                      [--json FILE]\n"
        "\n"
        "Writes the fastest verified kernel the tuning database knows for\n"
        "the einsum on the device (see 'eintune best') for a library to\n"
        "embed: DIR/<name>.cl (.cu for CUDA) with the source, and\n"
        "DIR/<name>.h, a C header with the kernel name, the argument order\n"
        "(output first, then the inputs in operand order, a batched\n"
        "einsum's (--batch ROWS, docs/einsum.md) rows each an argument;\n"
        "dtypes, shapes,\n"
        "element counts) and the launch geometry (OpenCL global/local work\n"
        "sizes, CUDA grid/block), its macros prefixed with NAME_ in upper\n"
        "case. The name is the loop sizes and the dtypes (r_16_12_8_f32),\n"
        "or --name. Headers of several kernels can be included in one file.\n"
        "examples/export_demo.c runs one with the plain OpenCL API. A kernel\n"
        "tuned with an open axis (x=*) takes that axis' size at launch: the\n"
        "header's ..._AT(n) macros give the sizes, the geometry and the\n"
        "bytes to zero at size n (n stands for that axis in its name:\n"
        "r_n_35_1_35_35_f64).\n"
        "\n"
        "--dispatch writes the kernels the database knows for every size\n"
        "--shape lists (lists i=8/16/24, ranges i=8:64:8, ties k=i, as for\n"
        "tune) into DIR/NAME.cl (.cu) with NAME_generic, the untransformed\n"
        "kernel with every size an argument, and DIR/NAME.h, whose\n"
        "NAME_dispatch(sizes, &launch) picks at run time the kernel tuned\n"
        "for exactly those sizes, else one with an open axis that covers\n"
        "them, else NAME_generic (examples/dispatch_demo.c runs it). NAME\n"
        "is --name, or dispatch_ with the einsum's letters and the dtypes\n"
        "(dispatch_xik_kj_to_xij_f64); the header's macros are prefixed\n"
        "with NAME_ in upper case, as one kernel's\n"
        "(DISPATCH_XIK_KJ_TO_XIJ_F64_N_INDICES); --force as for one kernel.\n"
        "\n"
        "--embed also puts the source into the header as a C string,\n"
        "NAME_SOURCE (NAME_ in upper case; its length NAME_SOURCE_BYTES),\n"
        "byte for byte the .cl (.cu) file's content, so a program built\n"
        "with the header needs no kernel file at run time; with or without\n"
        "--dispatch.\n"
        "\n"
        "Every kernel written is first verified on the device against the\n"
        "extended-precision reference at the sizes its header serves (an\n"
        "open axis at 1, 2, a prime below its tune-at size, that size and\n"
        "each size asked); one that fails is not written (exit 1). The\n"
        "header says how it was checked (NAME_VERIFIED 1).\n"
        "\n"
        "  --shape SPEC     sizes: x=4096,i=35,k=35,j=35 (x=* an open axis)\n"
        "  --dtype SPEC     f16, f32 or f64, or one per operand (default f64)\n"
        "  --backend KIND   opencl or cuda (default: the device's)\n"
        "  -o, --output DIR directory for the files (created when missing)\n"
        "  --batch ROWS     a batched einsum's rows, as tune --batch: one\n"
        "                   argument per row of the output and of each\n"
        "                   rowed operand\n"
        "  --exact          only a kernel tuned for these sizes or an open\n"
        "                   axis covering them (without: the opts tuned at\n"
        "                   the nearest other sizes re-applied, unverified\n"
        "                   at these; a warning says so)\n"
        "  --name NAME      the kernel's name, a C identifier: the function,\n"
        "                   the files and the macro prefix (NAME_ in upper\n"
        "                   case); with --dispatch the table's files' and\n"
        "                   symbols' prefix\n"
        "  --force          replace files export wrote for another kernel\n"
        "                   (files eintune did not write are never replaced;\n"
        "                   the same kernel is rewritten without --force)\n"
        "  --dispatch       the dispatch table above (only measured kernels)\n"
        "  --no-verify      write without verifying on the device (the\n"
        "                   header then has NAME_VERIFIED 0)\n"
        "  --embed          the source in the header too, as NAME_SOURCE\n"
        "  --device D       opencl:N, opencl:P:D, opencl:NAME or cuda:N\n"
        "  --db FILE        tuning database\n"
        "  --json FILE      JSON: einsum, device, opts, kernel, prefix,\n"
        "                   backend, source, header, replaced, embedded\n"
        "                   ('-' = stdout)\n"
        "\n"
        "exit status: 0 written, 1 nothing known for this einsum on this\n"
        "device, a kernel failed verification or a file could not be\n"
        "written, 2 bad input (flags, einsum,\n"
        "database file, a bad --name, a file of another kernel in the way\n"
        "without --force, a file eintune did not write in the way)\n");
}

/* --no-verify: write kernels without verifying them on the device */
static int no_verify;
/* --embed: the source in the header too, as a C string */
static int embed;

/* --dispatch: the table of every size --shape lists. */
static int export_dispatch(const char *text, const char *shape,
                           const char *dtype, const char *batch,
                           const char *dir, const char *backend,
                           const char *name, int force)
{
    et_dispatch_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.batch = batch;
    o.dir = dir;
    o.name = name;
    o.force = force;
    o.no_verify = no_verify;
    o.embed = embed;
    o.backend = backend;
    o.device = g_cli.device;
    o.db = g_cli.db;
    o.log = cli_api_log;
    o.log_arg = (void *)"export";
    et_dispatch_result res;
    et_diag d;
    et_status st = et_dispatch_export(text, shape, dtype, &o, &res, &d);
    if (st != ET_OK) {
        if (d.input == ET_INPUT_BATCH) {
            cli_batch_diag(&d, text, batch);
            return EXIT_INPUT;
        }
        if (d.input == ET_INPUT_SHAPE || d.input == ET_INPUT_EINSUM ||
            d.input == ET_INPUT_DTYPE) {
            cli_problem_diag(&d, text, shape, dtype);
            return EXIT_INPUT;
        }
        return cli_api_error("export", st, &d);
    }
    cli_log(LOG_INFO, "export", "wrote %s and %s%s", res.source, res.header,
            res.replaced ? " (replacing another table: --force)" : "");
    FILE *f = cli_table_out();
    fprintf(f, "einsum   %s\nname     %s\nprefix   %s\nkernels  %d tuned for "
               "one size, %d with an open axis, 1 generic\nsource   %s\n"
               "header   %s%s%s%s\n",
            text, res.name, res.prefix, res.n_tuned, res.n_open, res.source,
            res.header, embed ? " (source embedded: " : "",
            embed ? res.prefix : "", embed ? "SOURCE)" : "");
    fflush(f);
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "einsum", text);
    cJSON_AddStringToObject(doc, "name", res.name);
    cJSON_AddStringToObject(doc, "backend", et_backend_name(res.backend));
    cJSON_AddStringToObject(doc, "source", res.source);
    cJSON_AddStringToObject(doc, "header", res.header);
    cJSON_AddBoolToObject(doc, "replaced", res.replaced);
    cJSON_AddNumberToObject(doc, "kernels", res.n_kernels);
    cJSON_AddNumberToObject(doc, "tuned", res.n_tuned);
    cJSON_AddNumberToObject(doc, "open", res.n_open);
    cJSON_AddStringToObject(doc, "prefix", res.prefix);
    cJSON_AddBoolToObject(doc, "embedded", embed);
    int status = cli_json_emit(doc) ? EXIT_RUN : 0;
    cJSON_Delete(doc);
    return status;
}

int cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"shape", required_argument, 0, 's'},
        {"dtype", required_argument, 0, 't'},
        {"backend", required_argument, 0, 'b'},
        {"output", required_argument, 0, 'o'},
        {"exact", no_argument, 0, 2001},
        {"dispatch", no_argument, 0, 2002},
        {"name", required_argument, 0, 'n'},
        {"force", no_argument, 0, 'f'},
        {"no-verify", no_argument, 0, 2003},
        {"embed", no_argument, 0, 2004},
        {"batch", required_argument, 0, 2005},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    const char *shape = NULL, *dtype = NULL, *dir = NULL, *backend = NULL;
    const char *name = NULL, *batch = NULL;
    int opt, force = 0, exact = 0, dispatch = 0;
    while ((opt = getopt_long(argc, argv, "o:hqv", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 's': shape = optarg; break;
        case 't': dtype = optarg; break;
        case 'b': backend = optarg; break;
        case 'o': dir = optarg; break;
        case 2001: exact = 1; break;
        case 2002: dispatch = 1; break;
        case 'n': name = optarg; break;
        case 'f': force = 1; break;
        case 2003: no_verify = 1; break;
        case 2004: embed = 1; break;
        case 2005: batch = optarg; break;
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
    if (dispatch && exact)
        return cli_usage_error("export", "--dispatch takes measured kernels "
                               "only: --exact is implied");
    if (dispatch)
        return export_dispatch(text, shape, dtype, batch, dir, backend, name,
                               force);

    et_problem *p = NULL;
    et_best_kernel *bk = NULL;
    cJSON *doc = NULL;
    int status = cli_best_find("export", text, shape, dtype, batch, 0, exact,
                               &p, &bk);
    if (status)
        goto out;

    et_export_options o;
    memset(&o, 0, sizeof o);
    o.dir = dir;
    o.backend = backend;
    o.name = name;
    o.force = force;
    o.no_verify = no_verify;
    o.embed = embed;
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
               "source   %s\nheader   %s%s%s%s\n",
            et_problem_einsum(p), info.opts[0] ? info.opts : "untransformed",
            res.kernel, res.prefix, res.source, res.header,
            embed ? " (source embedded: " : "", embed ? res.prefix : "",
            embed ? "SOURCE)" : "");
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
    cJSON_AddBoolToObject(doc, "embedded", embed);
    cJSON_AddNumberToObject(doc, "time_s", info.time_s);
    status = cli_json_emit(doc) ? EXIT_RUN : 0;
out:
    cJSON_Delete(doc);
    et_best_kernel_free(bk);
    et_problem_free(p);
    return status;
}
