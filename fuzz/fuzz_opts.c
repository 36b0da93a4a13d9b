/*
 * fuzz_opts.c - libFuzzer driver for the opt-list parser and the kernel IR.
 *
 * Input layout: byte 0 picks an einsum from the table below (sizes chosen
 * to hit odd, prime, huge and rank-0 cases), byte 1 picks the target
 * (generic OpenCL or CUDA profile) and how refusals are handled, the rest
 * is opt-list text for et_opts_parse().
 *
 * A parsed list is formatted and parsed again (the text form must round
 * trip), then applied to the einsum's kernel - either in one call that
 * stops at the first refusal, or opt by opt skipping refused ones - and the
 * resulting kernel is rendered for both backends. Invariants: diagnostics
 * are terminated and point inside the text, a refusal leaves the kernel
 * unchanged, a rendered kernel has a source and an identifier for a name,
 * launch geometry is positive.
 */
#include "einsum/einsum.h"
#include "transforms/kernel.h"
#include "transforms/target.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct {
    const char *text, *shape, *dtype;
} cases[] = {
    {"xik,kj->xij", "x=64,i=35,k=35,j=35", "f32"},
    {"ij,jk->ik", "i=16,j=16,k=16", "f64"},
    {"ij->ji", "i=1000,j=3", "f32"},
    {"ii->", "i=7", "f64"},
    {"i,i->", "i=4096", "f32"},
    {"xre,rij,xej->xei", "x=8,r=3,i=10,j=10,e=4", "f32"},
    {"abcde->edcba", "a=2,b=3,c=4,d=5,e=6", "f16"},
    {"ij->i", "i=1048576,j=1024", "f32"},
    {"i,j->ij", "i=100003,j=65537", "f64"},
    {",i->i", "i=13", "f32"},
    {"...ij,jk->...ik", "...=3x2,i=5,j=7,k=9", "f32"},
    {"ab,bc,cd->ad", "a=1,b=1,c=1,d=1", "f16,f32,f64"},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static void check_msg(const char *msg, size_t cap)
{
    if (!memchr(msg, 0, cap))
        abort();
}

static void render_check(const et_kernel *k, et_backend_kind b)
{
    et_rendered r;
    memset(&r, 0, sizeof r);
    et_status st = et_kernel_render(k, b, NULL, &r);
    if (st == ET_OK) {
        if (!r.source || !r.source[0])
            abort();
        if (!memchr(r.name, 0, sizeof r.name) || !r.name[0] ||
            !(isalpha((unsigned char)r.name[0]) || r.name[0] == '_'))
            abort();
        for (const char *c = r.name; *c; c++)
            if (!isalnum((unsigned char)*c) && *c != '_')
                abort();
        if (r.launch.ndim < 1 || r.launch.ndim > 3)
            abort();
        for (int d = 0; d < r.launch.ndim; d++)
            if (r.launch.global[d] < 1 || r.launch.local[d] < 0 ||
                (r.launch.has_local && (r.launch.local[d] < 1 ||
                                        r.launch.global[d] %
                                            r.launch.local[d])))
                abort();
    } else if (st != ET_ERR_UNSUPPORTED && st != ET_ERR_NOMEM) {
        abort();
    }
    et_rendered_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned pick = data[0] % N_CASES;
    unsigned mode = data[1];
    char *text = malloc(size - 2 + 1);
    if (!text)
        return 0;
    memcpy(text, data + 2, size - 2);
    text[size - 2] = 0;
    size_t len = strlen(text);

    et_opt opts[ET_MAX_OPTS];
    int n = 0;
    et_diag d;
    et_status st = et_opts_parse(text, opts, ET_MAX_OPTS, &n, &d);
    if (st != ET_OK) {
        if (st != ET_ERR_INPUT)
            abort();
        check_msg(d.msg, sizeof d.msg);
        if (d.pos < -1 || (d.pos >= 0 && (size_t)d.pos > len))
            abort();
        free(text);
        return 0;
    }
    if (n < 0 || n > ET_MAX_OPTS)
        abort();

    /* the text form round trips */
    char fmt[8192], fmt2[8192];
    size_t need = et_opts_format(opts, n, fmt, sizeof fmt);
    if (need < sizeof fmt) {
        et_opt again[ET_MAX_OPTS];
        int n2 = 0;
        if (et_opts_parse(fmt, again, ET_MAX_OPTS, &n2, &d) != ET_OK ||
            n2 != n)
            abort();
        et_opts_format(again, n2, fmt2, sizeof fmt2);
        if (strcmp(fmt, fmt2) != 0)
            abort();
    }

    et_einsum e;
    if (et_einsum_from_strings(cases[pick].text, cases[pick].shape,
                               cases[pick].dtype, &e, &d) != ET_OK)
        abort(); /* the table is valid */
    et_target t = et_target_generic((mode & 1) ? ET_BACKEND_CUDA
                                               : ET_BACKEND_OPENCL);
    et_kernel *k = NULL;
    if (et_kernel_init(&e, &t, &k) != ET_OK) {
        free(text);
        return 0;
    }
    char reason[512];
    if (mode & 2) {
        /* opt by opt, refused ones skipped: a refusal leaves k unchanged */
        for (int i = 0; i < n; i++) {
            et_kernel *before = et_kernel_clone(k);
            if (!before)
                break;
            st = et_kernel_apply_opt(k, &opts[i], reason, sizeof reason);
            if (st == ET_ERR_REFUSED) {
                check_msg(reason, sizeof reason);
                if (memcmp(before, k, sizeof *k) != 0)
                    abort();
            } else if (st != ET_OK) {
                abort();
            }
            et_kernel_free(before);
        }
    } else {
        st = et_kernel_apply_opts(k, opts, n, reason, sizeof reason);
        if (st != ET_OK && st != ET_ERR_REFUSED)
            abort();
        if (st == ET_ERR_REFUSED)
            check_msg(reason, sizeof reason);
    }
    (void)et_kernel_group_size(k);
    (void)et_kernel_local_bytes(k);
    et_launch L;
    (void)et_kernel_launch(k, ET_BACKEND_OPENCL, &L);
    (void)et_kernel_launch(k, ET_BACKEND_CUDA, &L);
    render_check(k, ET_BACKEND_OPENCL);
    render_check(k, ET_BACKEND_CUDA);
    et_kernel_free(k);
    free(text);
    return 0;
}
