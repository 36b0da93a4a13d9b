/*
 * fuzz_space.c - libFuzzer driver for the YAML space loader, the
 * expression language inside it and binding.
 *
 * The input is the YAML text, given to et_space_load_text(). A space that
 * loads is bound to an einsum built from its own pattern (every letter a
 * small size picked from the input's hash, so bounds such as `i` vary) or,
 * for `einsum: any`, to a fixed batched matmul. For up to two mappings a
 * few points are evaluated - every parameter at its first, last or middle
 * value, and a point with only the first parameter decided - through
 * et_binding_point_kernel; the first valid kernel is rendered. The action
 * pool is expanded and every action applied to the base kernel.
 * Invariants: messages are terminated, error lines and columns are >= 1,
 * point statuses are in range, opt counts within their caps.
 */
#include "einsum/einsum.h"
#include "spaces/space.h"
#include "transforms/kernel.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_diag(const et_diag *d)
{
    if (!memchr(d->msg, 0, sizeof d->msg))
        abort();
}

static void try_point(const et_binding *b, const et_point *pt, int *rendered)
{
    et_opt opts[ET_MAX_OPTS];
    int n = -1;
    char reason[512];
    et_kernel *k = NULL;
    et_point_status ps = et_binding_point_kernel(b, pt, opts, ET_MAX_OPTS, &n,
                                                 &k, reason, sizeof reason);
    if ((unsigned)ps >= ET_POINT_STATUS_COUNT)
        abort();
    if (ps != ET_POINT_OK) {
        if (!memchr(reason, 0, sizeof reason))
            abort();
        if (k)
            abort();
        return;
    }
    if (n < 0 || n > ET_MAX_OPTS || !k)
        abort();
    char txt[4096];
    et_opts_format(opts, n, txt, sizeof txt);
    char pbuf[2048];
    et_point_format(b, pt, pbuf, sizeof pbuf);
    if (!*rendered) {
        et_rendered r;
        memset(&r, 0, sizeof r);
        if (et_kernel_render(k, ET_BACKEND_OPENCL, NULL, &r) == ET_OK &&
            (!r.source || !r.source[0]))
            abort();
        et_rendered_free(&r);
        *rendered = 1;
    }
    et_kernel_free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    et_space *s = NULL;
    et_diag d;
    et_status st = et_space_load_text((const char *)data, size, "fuzz.yaml",
                                      &s, &d);
    if (st != ET_OK) {
        if (st != ET_ERR_INPUT && st != ET_ERR_NOMEM)
            abort();
        check_diag(&d);
        if (st == ET_ERR_INPUT && (d.line < 1 || d.col < 1))
            abort();
        if (s)
            abort();
        return 0;
    }

    /* the user's einsum: the pattern itself with small sizes */
    static const int64_t sizes[] = {1, 2, 3, 4, 6, 8, 12, 16, 35};
    uint64_t h = s->hash;
    et_einsum u;
    int ok;
    if (s->any_einsum) {
        ok = et_einsum_from_strings("xik,kj->xij", "x=8,i=6,k=12,j=4", "f32",
                                    &u, &d) == ET_OK;
    } else {
        char shape[1024] = "";
        size_t len = 0;
        for (int i = 0; i < s->pate.n_idx && len < sizeof shape - 64; i++) {
            int64_t sz = sizes[h % (sizeof sizes / sizeof sizes[0])];
            h = h / 7 + 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
            len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%s=%lld",
                                    i ? "," : "", s->pate.idx[i].name,
                                    (long long)sz);
        }
        const char *dt = "f32";
        if (s->has_dtypes && !s->dtype_ok[ET_F32])
            dt = s->dtype_ok[ET_F64] ? "f64" : "f16";
        ok = et_einsum_from_strings(s->pate.text, shape, dt, &u, &d) == ET_OK;
    }
    if (!ok) {
        et_space_free(s);
        return 0;
    }

    et_binding *b = NULL;
    st = et_space_bind(s, &u, NULL, &b, &d);
    if (st != ET_OK) {
        check_diag(&d);
        if (b)
            abort();
        et_space_free(s);
        return 0;
    }

    int rendered = 0;
    int n_maps = et_binding_n_maps(b);
    if (n_maps < 1 || n_maps > ET_SPACE_MAX_MAPS)
        abort();
    const int *order = et_binding_order(b);
    for (int m = 0; m < n_maps && m < 2; m++) {
        for (int which = 0; which < 4; which++) {
            et_point pt;
            memset(&pt, 0, sizeof pt);
            pt.map = m;
            for (int j = 0; j < s->n_params; j++) {
                int k = order[j];
                if (k < 0 || k >= s->n_params)
                    abort();
                if (which == 3 && j > 0)
                    break;
                const int64_t *v = NULL;
                int nv = et_binding_domain(b, m, k, &v);
                if (nv < 1 || !v)
                    abort();
                int at = which == 0 ? 0 : which == 1 ? nv - 1 : nv / 2;
                pt.v[k] = v[at];
                pt.decided |= (uint64_t)1 << k;
            }
            try_point(b, &pt, &rendered);
        }
    }

    const et_opt *acts = NULL;
    int n_act = et_binding_actions(b, &acts);
    if (n_act < 0 || (n_act > 0 && !acts))
        abort();
    const et_kernel *base = et_binding_base(b);
    for (int i = 0; i < n_act && i < 256; i++) {
        et_kernel *k = et_kernel_clone(base);
        if (!k)
            break;
        char reason[512];
        st = et_kernel_apply_opt(k, &acts[i], reason, sizeof reason);
        if (st != ET_OK && st != ET_ERR_REFUSED)
            abort();
        et_kernel_free(k);
    }

    et_binding_free(b);
    et_space_free(s);
    return 0;
}
