/*
 * cmd_run.c - `eintune run`: executes an einsum on .npy inputs and writes
 * the output as .npy, optionally verifying and timing the kernel.
 *
 * All device work goes through an isolated device (a worker process, see
 * measure/remote.h): a kernel that hangs or crashes the driver costs this
 * run, never leaves a hung terminal.
 *
 * --verify does two things: the statistical verification of
 * docs/measurement.md (R input sets drawn by the verifier, the untransformed
 * kernel as the baseline of the one-sided test), and a check of the output
 * on the user's own inputs against the extended-precision reference,
 * element by element within the rigorous bound.
 */
#include "cli/cli.h"
#include "einsum/einsum.h"
#include "einsum/npy.h"
#include "measure/backend.h"
#include "db/db.h"
#include "measure/remote.h"
#include "measure/timing.h"
#include "measure/verify.h"
#include "roofline/peaks.h"
#include "roofline/report.h"
#include "roofline/roofline.h"
#include "transforms/kernel.h"
#include "tune/best.h"
#include "tune/peaks_db.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void run_usage(FILE *f)
{
    fprintf(f,
        "usage: eintune run EINSUM -i A.npy [-i B.npy ...] -o C.npy\n"
        "                   [--opts '..' | --best] [--verify] [--time]\n"
        "                   [--plot FILE] [--device D] [--db FILE]\n"
        "                   [--json FILE] [--quiet] [--verbose]\n"
        "\n"
        "Runs the einsum on the inputs (one -i per operand, in order; shapes\n"
        "and dtypes come from the files) and writes the output to -o as\n"
        ".npy (f32 or f64, the widest input dtype, f32 at least).\n"
        "\n"
        "  --opts '..'   opts to apply, e.g. 'LOCAL(i,8) UPCAST(j,4)'\n"
        "  --best        the opts of the fastest verified kernel the tuning\n"
        "                database (--db FILE) knows for this einsum, its\n"
        "                sizes and dtypes on the device (or a renamed\n"
        "                equivalent); exit 2 when it knows none\n"
        "  --verify      statistical verification (3 trials, one-sided test\n"
        "                against the untransformed kernel) and a check of\n"
        "                the output against the extended-precision reference\n"
        "  --time        time with the protocol (median, 95 %% interval) and\n"
        "                print measured against roofline GOps/s\n"
        "  --plot FILE   with --time: roofline chart (.svg or .png)\n"
        "  --device D    opencl:N, opencl:P:D, opencl:NAME or cuda:N\n"
        "  --json FILE   machine-readable result ('-' = stdout)\n"
        "\n"
        "exit status: 0 success, 1 the run could not complete or the\n"
        "verification failed, 2 bad input\n");
}

typedef struct run_args {
    const char *einsum;
    const char *inputs[ET_MAX_OPERANDS];
    int n_inputs;
    const char *output;
    const char *opts;
    const char *plot;
    int best;
    int verify;
    int time;
} run_args;

static int parse_args(int argc, char **argv, run_args *a)
{
    static const struct option longopts[] = {
        {"input", required_argument, 0, 'i'},
        {"output", required_argument, 0, 'o'},
        {"opts", required_argument, 0, 2001},
        {"verify", no_argument, 0, 2002},
        {"time", no_argument, 0, 2003},
        {"plot", required_argument, 0, 2004},
        {"best", no_argument, 0, 2005},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "i:o:qvh", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 'i':
            if (a->n_inputs >= ET_MAX_OPERANDS)
                return cli_usage_error("run", "more than %d inputs",
                                       ET_MAX_OPERANDS);
            a->inputs[a->n_inputs++] = optarg;
            break;
        case 'o': a->output = optarg; break;
        case 2001: a->opts = optarg; break;
        case 2002: a->verify = 1; break;
        case 2003: a->time = 1; break;
        case 2004: a->plot = optarg; break;
        case 2005: a->best = 1; break;
        case 'h': run_usage(stdout); return -1;
        default: return cli_usage_error("run", "unknown or incomplete flag");
        }
    }
    if (optind >= argc)
        return cli_usage_error("run", "missing EINSUM");
    a->einsum = argv[optind++];
    if (optind < argc)
        return cli_usage_error("run", "unexpected argument '%s'",
                               argv[optind]);
    if (a->n_inputs == 0)
        return cli_usage_error("run", "missing inputs (-i FILE per operand)");
    if (!a->output)
        return cli_usage_error("run", "missing output (-o FILE)");
    if (a->plot && !a->time)
        return cli_usage_error("run", "--plot needs --time");
    if (a->best && a->opts)
        return cli_usage_error("run", "--best and --opts exclude each other");
    return 0;
}

/* Device buffers of one run: output first, then the inputs. */
typedef struct run_bufs {
    et_buffer *buf[ET_MAX_OPERANDS + 1];
    int n;
} run_bufs;

static void bufs_free(et_device *dev, run_bufs *b)
{
    for (int i = 0; i < b->n; i++)
        if (b->buf[i])
            et_buffer_free(dev, b->buf[i]);
    b->n = 0;
}

/* Unit roundoff of a dtype as accumulated here (f16 computes in f32). */
static double unit_roundoff(et_dtype t)
{
    return t == ET_F64 ? ldexp(1.0, -53) : ldexp(1.0, -24);
}

/*
 * Checks out (in e->out.dtype) against the reference of the user's inputs.
 * Returns 0 when every element is within its bound; fills *max_err.
 */
static int check_output(const et_einsum *e, const et_array *in,
                        const void *out, double *max_err, char *why,
                        size_t cap)
{
    int64_t n = et_einsum_operand_elems(e, -1);
    long double *ref = malloc((size_t)n * sizeof *ref);
    long double *absv = malloc((size_t)n * sizeof *absv);
    const void *inputs[ET_MAX_OPERANDS];
    int rc = -1;
    if (!ref || !absv) {
        snprintf(why, cap, "out of memory for the reference");
        goto done;
    }
    for (int k = 0; k < e->n_ops; k++)
        inputs[k] = in[k].data;
    if (et_reference_eval(e, inputs, ref, absv) != ET_OK) {
        snprintf(why, cap, "the reference evaluator failed");
        goto done;
    }
    int64_t terms = 1;
    for (int i = e->n_out; i < e->n_idx; i++)
        terms *= e->idx[i].size;
    double u = unit_roundoff(e->acc_dtype);
    double u_out = e->out.dtype == e->acc_dtype ? 0.0
                                                : unit_roundoff(e->out.dtype);
    double nn = (double)(terms + e->n_ops - 2);
    if (nn < 0)
        nn = 0;
    /* past n*u >= 1 the bound is vacuous (a sum of 2^24 or more f32
     * terms): every finite result passes, as in measure/verify.c */
    double gamma = nn * u < 1 ? nn * u / (1.0 - nn * u) : INFINITY;
    *max_err = 0;
    rc = 0;
    for (int64_t i = 0; i < n; i++) {
        double got = e->out.dtype == ET_F64 ? ((const double *)out)[i]
                                            : ((const float *)out)[i];
        long double r = ref[i];
        double bound = u_out * fabs((double)r);
        if (absv[i] != 0)
            bound += gamma * (double)absv[i];
        double err = fabs((double)((long double)got - r));
        double ne;
        if (!isfinite(got) && isfinite((double)r))
            ne = INFINITY;
        else if (bound > 0)
            ne = err / bound;
        else
            ne = err > 0 ? INFINITY : 0;
        if (ne > *max_err)
            *max_err = ne;
        if (ne > 1 && rc == 0) {
            snprintf(why, cap,
                     "element %lld: got %.17g, reference %.17Lg, normalized "
                     "error %.3g > 1",
                     (long long)i, got, r, ne);
            rc = 1;
        }
    }
done:
    free(ref);
    free(absv);
    return rc;
}

/* Builds program `src` on dev; reports a build error and returns non-0. */
static int build(et_device *dev, const et_rendered *r, et_program **p)
{
    et_error err = {{0}};
    et_status st = et_program_build(dev, r->source, r->name, p, &err);
    if (st != ET_OK) {
        fprintf(stderr, "eintune run: cannot build kernel %s: %s\n",
                r->name, err.msg);
        return 1;
    }
    return 0;
}

int cmd_run(int argc, char **argv)
{
    run_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc < 0)
        return 0;
    if (rc)
        return rc;

    et_array in[ET_MAX_OPERANDS];
    memset(in, 0, sizeof in);
    et_subscripts sub;
    et_einsum e;
    et_diag d = {0};
    et_opt opts[ET_MAX_OPTS];
    int n_opts = 0;
    et_device *dev = NULL;
    et_kernel *kern = NULL, *base = NULL;
    et_rendered rend = {0}, rend_base = {0};
    et_program *prog = NULL, *prog_base = NULL;
    et_verifier *ver = NULL;
    run_bufs bufs = {{0}, 0};
    void *out_host = NULL;
    cJSON *doc = NULL;
    et_error err = {{0}};
    et_db *db = NULL;
    et_best *best = NULL;
    int status = EXIT_RUN;

    /* Everything about the input is checked before a device is opened. */
    if (et_subscripts_parse(a.einsum, &sub, &d) != ET_OK) {
        cli_diag("einsum", a.einsum, &d);
        return EXIT_INPUT;
    }
    if (sub.n_ops != a.n_inputs) {
        d.pos = -1;
        snprintf(d.msg, sizeof d.msg,
                 "the einsum has %d operand%s but %d input%s given",
                 sub.n_ops, sub.n_ops == 1 ? "" : "s", a.n_inputs,
                 a.n_inputs == 1 ? " was" : "s were");
        cli_diag("einsum", a.einsum, &d);
        return EXIT_INPUT;
    }
    if (a.opts && et_opts_parse(a.opts, opts, ET_MAX_OPTS, &n_opts, &d) !=
                      ET_OK) {
        cli_diag("opts", a.opts, &d);
        return EXIT_INPUT;
    }
    et_operand_shapes shapes = {0};
    et_dtype dtypes[ET_MAX_OPERANDS];
    shapes.n_ops = a.n_inputs;
    for (int k = 0; k < a.n_inputs; k++) {
        if (et_npy_read(a.inputs[k], &in[k], &d) != ET_OK) {
            cli_diag("input", NULL, &d);
            status = EXIT_INPUT;
            goto out;
        }
        shapes.rank[k] = in[k].rank;
        for (int r = 0; r < in[k].rank; r++)
            shapes.dim[k][r] = in[k].dim[r];
        dtypes[k] = in[k].dtype;
    }
    if (et_einsum_resolve(&sub, NULL, &shapes, dtypes, &e, &d) != ET_OK) {
        cli_diag("einsum", a.einsum, &d);
        status = EXIT_INPUT;
        goto out;
    }

    /* the database before the device: a refused file costs no worker */
    et_status st;
    if (a.best) {
        st = et_db_open(g_cli.db, &db, &err);
        if (st != ET_OK) {
            fprintf(stderr, "eintune run: %s\n", err.msg);
            status = st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
            goto out;
        }
    }

    st = et_device_open_isolated(g_cli.device, NULL, &dev, &err);
    if (st != ET_OK) {
        fprintf(stderr, "eintune run: %s\n", err.msg);
        status = st == ET_ERR_INPUT ? EXIT_INPUT : EXIT_RUN;
        goto out;
    }
    cli_log(LOG_INFO, "run", "device %s (%s)", dev->info.name,
            dev->info.spec);
    if (e.acc_dtype == ET_F64 && !dev->info.target.has_fp64) {
        fprintf(stderr, "eintune run: device %s has no fp64 support\n",
                dev->info.name);
        goto out;
    }

    if (a.best) {
        bool found = false;
        best = malloc(sizeof *best);
        if (!best) {
            fprintf(stderr, "eintune run: out of memory\n");
            goto out;
        }
        st = et_best_find(db, &e, &dev->info, best, &found, &err);
        if (st != ET_OK) {
            fprintf(stderr, "eintune run: --best: %s\n", err.msg);
            goto out;
        }
        if (!found) {
            fprintf(stderr,
                    "eintune run: --best: no verified kernel known for %s "
                    "(these sizes and dtypes) on %s in %s; tune it first or "
                    "give --opts\n",
                    e.text, dev->info.name, et_db_path(db));
            status = EXIT_INPUT;
            goto out;
        }
        memcpy(opts, best->opt, (size_t)best->n_opts * sizeof opts[0]);
        n_opts = best->n_opts;
        cli_log(LOG_INFO, "run", "best known: %s (tuned as %s, %.4g ms)",
                best->opts[0] ? best->opts : "-", best->trial.einsum_text,
                best->trial.median_s * 1e3);
    }

    char reason[512] = "";
    if (et_kernel_init(&e, &dev->info.target, &kern) != ET_OK ||
        et_kernel_init(&e, &dev->info.target, &base) != ET_OK) {
        fprintf(stderr, "eintune run: cannot build the kernel IR\n");
        goto out;
    }
    if (et_kernel_apply_opts(kern, opts, n_opts, reason, sizeof reason) !=
        ET_OK) {
        fprintf(stderr, "eintune run: opt refused: %s\n", reason);
        status = EXIT_INPUT;
        goto out;
    }
    et_backend_kind bk = dev->info.target.backend;
    if (et_kernel_render(kern, bk, NULL, &rend) != ET_OK) {
        fprintf(stderr, "eintune run: cannot render the kernel\n");
        goto out;
    }
    cli_log(LOG_DEBUG, "run", "kernel %s", rend.name);
    if (build(dev, &rend, &prog))
        goto out;

    /* The user's data: output first, then the inputs. */
    int64_t out_elems = et_einsum_operand_elems(&e, -1);
    size_t out_bytes = (size_t)out_elems * et_dtype_size(e.out.dtype);
    out_host = malloc(out_bytes ? out_bytes : 1);
    if (!out_host) {
        fprintf(stderr, "eintune run: out of memory\n");
        goto out;
    }
    bufs.n = 1 + e.n_ops;
    for (int i = 0; i < bufs.n; i++) {
        size_t bytes = i == 0 ? out_bytes
                              : (size_t)et_array_elems(&in[i - 1]) *
                                    et_dtype_size(in[i - 1].dtype);
        st = et_buffer_alloc(dev, bytes ? bytes : 1, &bufs.buf[i], &err);
        if (st == ET_OK && i > 0)
            st = et_buffer_write(dev, bufs.buf[i], 0, in[i - 1].data, bytes,
                                 &err);
        if (st != ET_OK) {
            fprintf(stderr, "eintune run: %s\n", err.msg);
            goto out;
        }
    }
    st = et_launch_kernel(dev, prog, &rend.launch, bufs.buf, NULL, bufs.n,
                          NULL, &err);
    if (st == ET_OK)
        st = et_buffer_read(dev, bufs.buf[0], 0, out_host, out_bytes, &err);
    if (st != ET_OK) {
        fprintf(stderr, "eintune run: kernel %s failed: %s\n", rend.name,
                err.msg);
        goto out;
    }

    /* Write the output before anything else can fail. */
    et_array res = {0};
    res.dtype = e.out.dtype;
    res.rank = e.out.rank;
    for (int r = 0; r < e.out.rank; r++)
        res.dim[r] = e.out.dim[r];
    res.data = out_host;
    if (et_npy_write(a.output, &res, &d) != ET_OK) {
        cli_diag("output", NULL, &d);
        goto out;
    }
    cli_log(LOG_INFO, "run", "wrote %s", a.output);

    doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "einsum", e.text);
    cJSON *jdev = cJSON_AddObjectToObject(doc, "device");
    cJSON_AddStringToObject(jdev, "name", dev->info.name);
    cJSON_AddStringToObject(jdev, "backend", et_backend_name(bk));
    cJSON_AddStringToObject(jdev, "driver", dev->info.driver_version);
    char opt_text[2048] = "";
    et_opts_format(kern->opts, kern->n_opts, opt_text, sizeof opt_text);
    cJSON_AddStringToObject(doc, "opts", opt_text);
    cJSON_AddStringToObject(doc, "kernel", rend.name);
    cJSON_AddStringToObject(doc, "output", a.output);

    int failed = 0;
    if (a.verify) {
        double max_err = 0;
        char why[512] = "";
        int bad = check_output(&e, in, out_host, &max_err, why, sizeof why);
        cJSON *jv = cJSON_AddObjectToObject(doc, "verified");
        cJSON_AddNumberToObject(jv, "output_max_norm_err", max_err);
        if (bad) {
            fprintf(stderr, "eintune run: output check failed: %s\n", why);
            failed = 1;
        } else {
            cli_log(LOG_INFO, "run",
                    "output checked against the reference: max normalized "
                    "error %.3g",
                    max_err);
        }
        et_verify_result vr = {0};
        if (et_verifier_init(&e, NULL, &ver, &err) != ET_OK) {
            fprintf(stderr, "eintune run: %s\n", err.msg);
            goto out;
        }
        if (et_kernel_render(base, bk, NULL, &rend_base) != ET_OK ||
            build(dev, &rend_base, &prog_base))
            goto out;
        st = et_verifier_baseline_kernel(ver, dev, prog_base,
                                         &rend_base.launch, &vr, &err);
        if (st != ET_OK || vr.outcome != ET_OUTCOME_OK) {
            fprintf(stderr, "eintune run: the untransformed kernel failed: "
                            "%s\n", st != ET_OK ? err.msg : vr.reason);
            goto out;
        }
        st = et_verify_kernel(ver, dev, prog, &rend.launch, &vr, &err);
        if (st != ET_OK) {
            fprintf(stderr, "eintune run: verification could not run: %s\n",
                    err.msg);
            goto out;
        }
        char line[256];
        et_verify_summary(&vr, line, sizeof line);
        cJSON_AddNumberToObject(jv, "trials", vr.trials);
        cJSON_AddNumberToObject(jv, "max_norm_err", vr.max_norm_err);
        if (isfinite(vr.p_value))
            cJSON_AddNumberToObject(jv, "p_value", vr.p_value);
        else
            cJSON_AddNullToObject(jv, "p_value");
        cJSON_AddStringToObject(jv, "status", et_outcome_name(vr.outcome));
        if (vr.outcome != ET_OUTCOME_OK) {
            fprintf(stderr, "eintune run: verification failed: %s\n",
                    vr.reason);
            failed = 1;
        } else {
            cli_log(LOG_INFO, "run", "%s", line);
        }
    }

    if (a.time && !failed) {
        et_timing t = {0};
        et_result tr = {0};
        st = et_time_kernel(dev, prog, &rend.launch, bufs.buf, NULL, bufs.n,
                            NULL, &t, &tr, &err);
        if (st != ET_OK) {
            fprintf(stderr, "eintune run: timing failed: %s\n", err.msg);
            goto out;
        }
        char line[256];
        et_timing_format(&t, line, sizeof line);
        cli_log(LOG_INFO, "run", "%s", line);
        cJSON_AddNumberToObject(doc, "time_s", t.median_s);
        cJSON *ci = cJSON_AddArrayToObject(doc, "ci95_s");
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(t.low_s));
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(t.high_s));
        cJSON_AddNumberToObject(doc, "cv", t.cv);
        cJSON_AddNumberToObject(doc, "runs", t.runs);

        et_peaks pk;
        et_peaks_get_opts po = {0};
        char why[256] = "";
        et_roofline rl;
        if (et_peaks_get_db(dev, db, &po, &pk, &err) != ET_OK) {
            cli_log(LOG_WARN, "run", "no roofline: %s", err.msg);
        } else if (et_roofline_compute(&e, &pk, &rl, why, sizeof why) !=
                   ET_OK) {
            cli_log(LOG_WARN, "run", "no roofline: %s", why);
        } else {
            et_roofline_table(cli_table_out(), &rl, t.median_s);
            et_report_add_gops(doc, &rl, t.median_s);
            if (a.plot) {
                et_plot_point pt = {rl.intensity,
                                    (double)rl.ops_total / t.median_s / 1e9};
                char title[ET_MAX_TEXT + 300];
                snprintf(title, sizeof title, "%s on %s", e.text,
                         dev->info.name);
                et_plot plot = {&pk, title, &pt, 1, 0, NULL};
                char pwhy[256] = "";
                if (et_plot_write(a.plot, &plot, pwhy, sizeof pwhy) !=
                    ET_OK) {
                    fprintf(stderr, "eintune run: plot: %s\n", pwhy);
                    goto out;
                }
                cli_log(LOG_INFO, "run", "wrote %s", a.plot);
            }
        }
    }
    if (cli_json_emit(doc))
        goto out;
    status = failed ? EXIT_RUN : 0;

out:
    if (ver)
        et_verifier_release(ver);
    et_verifier_free(ver);
    if (dev) {
        bufs_free(dev, &bufs);
        if (prog)
            et_program_free(dev, prog);
        if (prog_base)
            et_program_free(dev, prog_base);
        et_device_close(dev);
    }
    et_rendered_free(&rend);
    et_rendered_free(&rend_base);
    et_kernel_free(kern);
    et_kernel_free(base);
    for (int k = 0; k < a.n_inputs; k++)
        et_array_free(&in[k]);
    free(out_host);
    cJSON_Delete(doc);
    free(best);
    et_db_close(db);
    return status;
}
