/*
 * cmd_run.c - `eintune run`: executes an einsum on .npy inputs and writes
 * the output as .npy, optionally verifying and timing the kernel, through
 * the runner of include/eintune.h (et_runner_*): the device is a worker
 * process, so a kernel that hangs or crashes the driver costs this run,
 * never leaves a hung terminal.
 *
 * --verify does two things: the statistical verification of
 * docs/measurement.md (R input sets drawn by the verifier, the untransformed
 * kernel as the baseline of the one-sided test), and a check of the output
 * on the user's own inputs against the extended-precision reference,
 * element by element within the rigorous bound.
 */
#include "cli/cli.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* as many operands as NumPy's einsum takes */
#define RUN_MAX_INPUTS 32
/* --batch: distinct arrays and rows */
#define RUN_MAX_ARRAYS 64
#define ET_RUN_MAX_ROWS 16

static void run_usage(FILE *f)
{
    fprintf(f,
        "usage: eintune run EINSUM -i A.npy [-i B.npy ...] -o C.npy\n"
        "       eintune run EINSUM --batch ROWS -i NAME=A.npy ... -o C0.npy\n"
        "                   -o C1.npy ...\n"
        "                   [--opts '..' | --best [--exact]] [--verify] [--time]\n"
        "                   [--plot FILE] [--device D] [--db FILE]\n"
        "                   [--json FILE] [--quiet] [--verbose]\n"
        "\n"
        "Runs the einsum on the inputs (one -i per operand, in order; shapes\n"
        "and dtypes come from the files) and writes the output to -o as\n"
        ".npy (f32 or f64, the widest input dtype, f32 at least).\n"
        "\n"
        "  --batch ROWS  a batched einsum (docs/einsum.md): the operands of\n"
        "                each row, \"u,Dr; u,Ds; u,Dt\"; every array is one\n"
        "                -i NAME=FILE, every row's output one -o, in row\n"
        "                order; one kernel computes them all. Rows joined\n"
        "                by '+' (\"u0,Dr + u1,Ds\") are summed into one\n"
        "                output: one -o\n"
        "  --opts '..'   opts to apply, e.g. 'LOCAL(i,8) UPCAST(j,4)'\n"
        "  --best        the opts of the fastest verified kernel the tuning\n"
        "                database (--db FILE) knows for this einsum, its\n"
        "                sizes and dtypes on the device (or a renamed\n"
        "                equivalent); a kernel tuned with an open axis (x=*)\n"
        "                runs at any size of it; sizes never tuned take the\n"
        "                opts tuned at the nearest other sizes, verified at\n"
        "                these sizes before use; exit 1 when none applies\n"
        "  --exact       with --best: no fallback to other sizes\n"
        "  --verify      statistical verification (3 trials, one-sided test\n"
        "                against the untransformed kernel) and a check of\n"
        "                the output against the extended-precision reference\n"
        "  --time        time with the protocol (median, 95 %% interval) and\n"
        "                print measured against roofline GOps/s (the peaks\n"
        "                from --db where given, as `eintune peaks --db`\n"
        "                keeps them, else from the cache file)\n"
        "  --plot FILE   with --time: roofline chart (.svg or .png)\n"
        "  --device D    opencl:N, opencl:P:D, opencl:NAME or cuda:N\n"
        "  --json FILE   machine-readable result ('-' = stdout): einsum,\n"
        "                sizes, dtypes, device, opts, kernel, output...; on\n"
        "                failure with '-', {\"error\": {...}} (docs/roofline.md)\n"
        "\n"
        "The files it writes (-o, --plot, --json) are checked before it runs:\n"
        "a --plot not ending in .svg or .png, a directory that does not exist\n"
        "or is not writable is bad input.\n"
        "\n"
        "exit status: 0 success, 1 the run could not complete or the\n"
        "verification failed, 2 bad input\n");
}

typedef struct run_args {
    const char *einsum;
    const char *inputs[RUN_MAX_INPUTS];
    int n_inputs;
    const char *output;
    const char *outputs[ET_RUN_MAX_ROWS]; /* --batch: one per row */
    int n_outputs;
    const char *batch;
    const char *opts;
    const char *plot;
    int best;
    int exact;
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
        {"exact", no_argument, 0, 2006},
        {"batch", required_argument, 0, 2007},
        CLI_COMMON_LONGOPTS,
        {0, 0, 0, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "i:o:qvh", longopts, NULL)) != -1) {
        if (cli_common_opt(opt, optarg))
            continue;
        switch (opt) {
        case 'i':
            if (a->n_inputs >= RUN_MAX_INPUTS)
                return cli_usage_error("run", "more than %d inputs",
                                       RUN_MAX_INPUTS);
            a->inputs[a->n_inputs++] = optarg;
            break;
        case 'o':
            if (a->n_outputs >= ET_RUN_MAX_ROWS)
                return cli_usage_error("run", "more than %d outputs",
                                       ET_RUN_MAX_ROWS);
            a->outputs[a->n_outputs++] = optarg;
            a->output = optarg;
            break;
        case 2007: a->batch = optarg; break;
        case 2001: a->opts = optarg; break;
        case 2002: a->verify = 1; break;
        case 2003: a->time = 1; break;
        case 2004: a->plot = optarg; break;
        case 2005: a->best = 1; break;
        case 2006: a->exact = 1; break;
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
    if (a->n_outputs > 1 && !a->batch)
        return cli_usage_error("run", "one -o (several only with --batch, "
                               "one per row)");
    if (a->plot && !a->time)
        return cli_usage_error("run", "--plot needs --time");
    if (a->best && a->opts)
        return cli_usage_error("run", "--best and --opts exclude each other");
    if (a->exact && !a->best)
        return cli_usage_error("run", "--exact needs --best");
    /* the files it will write, before anything runs */
    static const char *const plot_exts[] = {".svg", ".png", NULL};
    if (a->plot && cli_check_output("run", "--plot", a->plot, plot_exts, 0))
        return EXIT_INPUT;
    for (int i = 0; i < a->n_outputs; i++)
        if (cli_check_output("run", "-o", a->outputs[i], NULL, 0))
            return EXIT_INPUT;
    return 0;
}

/* The inputs of a run: the arrays read from the files and the problem
 * they make with the einsum. */
typedef struct run_inputs {
    et_host_array in[RUN_MAX_INPUTS];
    const void *data[RUN_MAX_INPUTS];
    et_problem *p;
    /* --batch: the rowed operands' rows one after another (data[k]) */
    void *stacked[RUN_MAX_INPUTS];
} run_inputs;

static void inputs_free(run_inputs *ri, int n)
{
    for (int k = 0; k < n; k++)
        et_host_array_free(&ri->in[k]);
    for (int k = 0; k < RUN_MAX_INPUTS; k++)
        free(ri->stacked[k]);
    et_problem_free(ri->p);
    ri->p = NULL;
}

/* --batch: the input NAME=FILE called name, -1 if none. */
static int input_named(const run_args *a, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < a->n_inputs; i++)
        if (strncmp(a->inputs[i], name, n) == 0 && a->inputs[i][n] == '=')
            return i;
    return -1;
}

static bool same_shape(const et_host_array *x, const et_host_array *y)
{
    if (x->dtype != y->dtype || x->ndim != y->ndim)
        return false;
    for (int d = 0; d < x->ndim; d++)
        if (x->dims[d] != y->dims[d])
            return false;
    return true;
}

/* --batch: the named arrays read, the problem made from row 0's arrays
 * and batched, every other row's arrays checked against row 0's and
 * stacked after them. ri->in[i] holds -i number i. Returns 0 or the exit
 * status after printing why. */
static int load_batch(const run_args *a, run_inputs *ri)
{
    et_diag d;
    for (int i = 0; i < a->n_inputs; i++) {
        const char *eq = strchr(a->inputs[i], '=');
        if (!eq || eq == a->inputs[i])
            return cli_usage_error("run", "with --batch every input is "
                                   "-i NAME=FILE, not '%s'", a->inputs[i]);
        if (et_npy_load(eq + 1, &ri->in[i], &d) != ET_OK) {
            cli_diag("input", NULL, &d);
            return EXIT_INPUT;
        }
    }
    int n_ops = 0;
    if (et_einsum_count_operands(a->einsum, &n_ops, &d) != ET_OK) {
        cli_diag("einsum", a->einsum, &d);
        return EXIT_INPUT;
    }
    /* the problem is made from row 0's arrays (the names before the
     * first ';' or '+'), then batched: et_problem_set_batch checks the
     * spec */
    int first[RUN_MAX_INPUTS];
    const char *spec = a->batch;
    char row0[1024];
    size_t l = strcspn(spec, ";+");
    if (l >= sizeof row0)
        return cli_error("run", EXIT_INPUT, "--batch: row 0 is too long");
    memcpy(row0, spec, l);
    row0[l] = '\0';
    int ndim[RUN_MAX_INPUTS];
    const int64_t *dims[RUN_MAX_INPUTS];
    et_dtype dt[RUN_MAX_INPUTS];
    char *save = NULL;
    int k = 0;
    for (char *t = strtok_r(row0, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ' || *t == '\t')
            t++;
        size_t tl = strlen(t);
        while (tl && (t[tl - 1] == ' ' || t[tl - 1] == '\t'))
            t[--tl] = '\0';
        if (k >= n_ops) {
            k++;
            break;
        }
        int i = input_named(a, t);
        if (i < 0)
            return cli_error("run", EXIT_INPUT, "--batch names '%s': no "
                             "-i %s=FILE", t, t);
        first[k] = i;
        ndim[k] = ri->in[i].ndim;
        dims[k] = ri->in[i].dims;
        dt[k] = ri->in[i].dtype;
        k++;
    }
    if (k != n_ops ||
        et_problem_init_arrays(a->einsum, n_ops, ndim, dims, dt, &ri->p,
                               &d) != ET_OK) {
        if (k != n_ops)
            return cli_error("run", EXIT_INPUT, "--batch: row 0 names %s%d "
                             "arrays; the einsum has %d operands",
                             k > n_ops ? "more than " : "",
                             k > n_ops ? n_ops : k, n_ops);
        cli_diag("einsum", a->einsum, &d);
        return EXIT_INPUT;
    }
    if (et_problem_set_batch(ri->p, a->batch, &d) != ET_OK) {
        cli_batch_diag(&d, a->einsum, a->batch);
        return EXIT_INPUT;
    }
    int R = et_problem_n_rows(ri->p);
    int n_out = et_problem_n_outputs(ri->p);
    if (a->n_outputs != n_out && n_out == 1)
        return cli_error("run", EXIT_INPUT, "--batch sums its %d rows into "
                         "one output: give one -o, %d given", R,
                         a->n_outputs);
    if (a->n_outputs != n_out)
        return cli_error("run", EXIT_INPUT, "--batch has %d rows: give one "
                         "-o per row, %d given", R, a->n_outputs);
    for (int op = 0; op < n_ops; op++) {
        const et_host_array *h0 = &ri->in[first[op]];
        size_t bytes = (size_t)et_host_array_elems(h0) *
                       (h0->dtype == ET_F64 ? 8 : h0->dtype == ET_F32 ? 4 : 2);
        bool rowed = false;
        for (int r = 1; r < R; r++)
            rowed = rowed || strcmp(et_problem_row_name(ri->p, r, op),
                                    et_problem_row_name(ri->p, 0, op)) != 0;
        if (!rowed) {
            ri->data[op] = h0->data;
            continue;
        }
        ri->stacked[op] = malloc(bytes * (size_t)R + 1);
        if (!ri->stacked[op])
            return cli_error("run", EXIT_RUN, "out of memory");
        for (int r = 0; r < R; r++) {
            const char *nm = et_problem_row_name(ri->p, r, op);
            int i = input_named(a, nm);
            if (i < 0)
                return cli_error("run", EXIT_INPUT, "--batch names '%s': no "
                                 "-i %s=FILE", nm, nm);
            if (!same_shape(&ri->in[i], h0))
                return cli_error("run", EXIT_INPUT, "'%s' (row %d, operand "
                                 "%d) differs in shape or dtype from '%s' "
                                 "(row 0)", nm, r, op,
                                 et_problem_row_name(ri->p, 0, op));
            memcpy((char *)ri->stacked[op] + (size_t)r * bytes,
                   ri->in[i].data, bytes);
        }
        ri->data[op] = ri->stacked[op];
    }
    return 0;
}

/* Everything about the input, checked before a device is opened: the
 * einsum, the number of inputs, the opts' syntax, the files, then the
 * problem they make. Returns 0 or the exit status after printing why. */
static int load_inputs(const run_args *a, run_inputs *ri)
{
    if (a->batch)
        return load_batch(a, ri);
    et_diag d;
    int n_ops = 0;
    if (et_einsum_count_operands(a->einsum, &n_ops, &d) != ET_OK) {
        cli_diag("einsum", a->einsum, &d);
        return EXIT_INPUT;
    }
    if (n_ops != a->n_inputs) {
        d.pos = -1;
        d.line = 0;
        snprintf(d.msg, sizeof d.msg,
                 "the einsum has %d operand%s but %d input%s given", n_ops,
                 n_ops == 1 ? "" : "s", a->n_inputs,
                 a->n_inputs == 1 ? " was" : "s were");
        cli_diag("einsum", a->einsum, &d);
        return EXIT_INPUT;
    }
    if (a->opts && et_opts_validate(a->opts, &d) != ET_OK) {
        cli_diag("opts", a->opts, &d);
        return EXIT_INPUT;
    }
    int ndim[RUN_MAX_INPUTS];
    const int64_t *dims[RUN_MAX_INPUTS];
    et_dtype dtypes[RUN_MAX_INPUTS];
    for (int k = 0; k < a->n_inputs; k++) {
        if (et_npy_load(a->inputs[k], &ri->in[k], &d) != ET_OK) {
            cli_diag("input", NULL, &d);
            return EXIT_INPUT;
        }
        ndim[k] = ri->in[k].ndim;
        dims[k] = ri->in[k].dims;
        dtypes[k] = ri->in[k].dtype;
        ri->data[k] = ri->in[k].data;
    }
    et_status st = et_problem_init_arrays(a->einsum, a->n_inputs, ndim, dims,
                                          dtypes, &ri->p, &d);
    if (st != ET_OK) {
        if (st == ET_ERR_NOMEM) {
            return cli_error("run", EXIT_RUN, "out of memory");
        }
        cli_diag("einsum", a->einsum, &d);
        return EXIT_INPUT;
    }
    return 0;
}

/* Opens the device (and the database for --best), finds the best kernel
 * with --best, and builds the kernel. Returns 0 or the exit status after
 * printing why. */
static int open_and_build(const run_args *a, const et_problem *p,
                          et_runner **r)
{
    et_run_options o;
    memset(&o, 0, sizeof o);
    o.device = g_cli.device;
    o.db = g_cli.db;
    o.opts = a->opts;
    o.best = a->best;
    o.exact = a->exact;
    o.log = cli_api_log;
    o.log_arg = (void *)"run";
    et_diag d;
    et_status st = et_runner_open(p, &o, r, &d);
    if (st != ET_OK) {
        cli_error("run", 0, "%s", d.msg);
        return cli_exit_status(st, &d);
    }
    if (a->best) {
        st = et_runner_find_best(*r, NULL, NULL, &d);
        /* nothing known: the library's words, exit 1 as everywhere */
        if (st == ET_ERR_NOT_FOUND)
            return cli_api_error("run", st, &d);
        if (st != ET_OK) {
            return cli_error("run", EXIT_RUN, "--best: %s", d.msg);
        }
    }
    st = et_runner_build(*r, &d);
    if (st == ET_ERR_REFUSED) {
        return cli_error("run", EXIT_INPUT, "opt refused: %s", d.msg);
    }
    if (st != ET_OK)
        return cli_error("run", EXIT_RUN, "%s", d.msg);
    return 0;
}

/* --verify: the output on the user's inputs, then the statistical
 * verification. Returns 0, 1 when a check failed (the run goes on to
 * write its JSON), or -1 when verification could not run. */
static int verify(et_runner *r, const run_inputs *ri, const void *out)
{
    et_run_verification v;
    memset(&v, 0, sizeof v);
    et_diag d;
    int failed = 0;
    if (et_runner_check_output(r, ri->data, out, &v, &d) != ET_OK) {
        cli_error("run", EXIT_RUN, "output check failed: %s", d.msg);
        failed = 1;
    } else if (!v.output_ok) {
        cli_error("run", EXIT_RUN, "output check failed: %s",
                  v.output_reason);
        failed = 1;
    } else {
        cli_log(LOG_INFO, "run",
                "output checked against the reference: max normalized "
                "error %.3g",
                v.output_max_norm_err);
    }
    if (et_runner_verify(r, &v, &d) != ET_OK) {
        cli_error("run", EXIT_RUN, "%s", d.msg);
        return -1;
    }
    if (v.outcome != ET_OUTCOME_OK) {
        cli_error("run", EXIT_RUN, "verification failed: %s", v.reason);
        failed = 1;
    } else {
        cli_log(LOG_INFO, "run", "%s", v.summary);
    }
    return failed;
}

/* --time: the protocol, then the roofline table and --plot. Returns 0 or
 * the exit status after printing why. */
static int time_run(et_runner *r, const char *plot)
{
    et_run_timing t;
    et_diag d;
    if (et_runner_time(r, &t, &d) != ET_OK) {
        return cli_error("run", EXIT_RUN, "%s", d.msg);
    }
    cli_log(LOG_INFO, "run", "%s", t.summary);
    int drawn = 0;
    if (et_runner_roofline(r, cli_table_out(), plot, &drawn, &d) != ET_OK) {
        return cli_error("run", EXIT_RUN, "plot: %s", d.msg);
    }
    if (drawn && plot)
        cli_log(LOG_INFO, "run", "wrote %s", plot);
    return 0;
}

/* Writes out to -o, or a batched output's rows each to its -o (rows
 * summed: the one output to its -o). Returns 0, or 1 after printing
 * why. */
static int write_outputs(const run_args *a, const et_host_array *out)
{
    et_diag d;
    /* parse_args and the batch check: one -o per output */
    bool rowed = a->batch && a->n_outputs > 1;
    int R = rowed ? a->n_outputs : 1;
    for (int r = 0; r < R; r++) {
        et_host_array row = *out;
        if (rowed) {
            /* the row axis is the output's first dimension */
            row.ndim = out->ndim - 1;
            memmove(row.dims, out->dims + 1, sizeof row.dims[0] *
                    (size_t)row.ndim);
            size_t bytes = (size_t)et_host_array_elems(&row) *
                           (out->dtype == ET_F64 ? 8 : 4);
            row.data = (char *)out->data + (size_t)r * bytes;
        }
        const char *path = rowed ? a->outputs[r] : a->output;
        if (et_npy_save(path, &row, &d) != ET_OK) {
            cli_diag("output", NULL, &d);
            return 1;
        }
        cli_log(LOG_INFO, "run", "wrote %s", path);
    }
    return 0;
}

/* Emits a run's JSON (et_runner_json's text, taken), for a batched run
 * with "outputs": every row's file in row order ("output" is row 0's).
 * Returns cli_json_emit's status. */
static int emit_json(char *json, const run_args *a)
{
    cJSON *doc = a->batch && json ? cJSON_Parse(json) : NULL;
    if (!doc) {
        int bad = cli_json_emit_text(json);
        et_free(json);
        return bad;
    }
    et_free(json);
    cJSON *arr = cJSON_AddArrayToObject(doc, "outputs");
    for (int i = 0; arr && i < a->n_outputs; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(a->outputs[i]));
    int bad = cli_json_emit(doc);
    cJSON_Delete(doc);
    return bad;
}

int cmd_run(int argc, char **argv)
{
    run_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc < 0)
        return 0;
    if (rc)
        return rc;

    run_inputs ri;
    memset(&ri, 0, sizeof ri);
    et_runner *r = NULL;
    et_host_array out = {0};
    et_diag d;
    int status = load_inputs(&a, &ri);
    if (status)
        goto done;
    status = open_and_build(&a, ri.p, &r);
    if (status)
        goto done;
    status = EXIT_RUN;
    if (et_host_array_init(ri.p, -1, &out) != ET_OK) {
        cli_error("run", EXIT_RUN, "out of memory");
        goto done;
    }
    if (et_runner_exec(r, out.data, ri.data, &d) != ET_OK) {
        cli_error("run", EXIT_RUN, "%s", d.msg);
        goto done;
    }
    /* Write the output before anything else can fail: a batched
     * einsum's rows one file each */
    if (write_outputs(&a, &out))
        goto done;

    int failed = 0;
    if (a.verify) {
        failed = verify(r, &ri, out.data);
        if (failed < 0)
            goto done;
    }
    if (a.time && !failed && time_run(r, a.plot))
        goto done;
    if (g_cli.json) {
        char *json = et_runner_json(r, a.batch ? a.outputs[0] : a.output);
        if (emit_json(json, &a))
            goto done;
    }
    status = failed ? EXIT_RUN : 0;
done:
    et_runner_free(r);
    et_host_array_free(&out);
    inputs_free(&ri, a.n_inputs);
    return status;
}
