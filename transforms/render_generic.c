/*
 * render_generic.c - the untransformed kernel with every size an
 * argument: one kernel that serves any sizes of an einsum's structure
 * (what a dispatch table falls back on for sizes it has no tuned kernel
 * for). Correct first: one work-item per output element, 64-bit index
 * arithmetic throughout, a plain loop per summed index, loads and the
 * store addressed through strides computed from the sizes at run time.
 * Broadcast dimensions (extent 1 in the einsum) stay broadcast. A
 * batched einsum's kernel takes one pointer per row (kernel.h): each
 * work-item's row, its output index 0, chooses them.
 */
#include "transforms/render_impl.h"

#include <stdio.h>
#include <string.h>

#define GENERIC_LOCAL 64

static const char *generic_type(const dialect *D, et_dtype t)
{
    return t == ET_F16 ? D->half_type : t == ET_F32 ? "float" : "double";
}

/* The header comments, the definitions the kernel needs and its
 * signature: the buffers (r's), then n_<index> for every index. */
static void generic_head(rd_out *s, const et_einsum *e, const dialect *D,
                         et_backend_kind b, const et_rendered *r)
{
    const char *name = r->name;
    const char *L = D->long_type;
    rd_put(s, "// eintune %s kernel for %s, every size an argument "
              "(untransformed)\n",
           et_backend_name(b), e->text);
    rd_put(s, "// global: ceil(output elements / %d) * %d, local: %d "
              "(1-D)\n", GENERIC_LOCAL, GENERIC_LOCAL, GENERIC_LOCAL);
    if (D->launch_note)
        rd_put(s, "%s", D->launch_note);
    rd_put(s, "// args: ");
    for (int a = 0; a < r->n_args; a++) {
        char nm[32];
        rd_arg_name(r, a, nm, sizeof nm);
        rd_put(s, "%s%s", a ? ", " : "", nm);
    }
    for (int a = 0; a < e->n_idx; a++)
        rd_put(s, ", n_%s", e->idx[a].name);
    rd_put(s, "\n");
    bool f64 = e->acc_dtype == ET_F64 || e->out.dtype == ET_F64;
    bool f16 = false;
    for (int k = 0; k < e->n_ops; k++) {
        f64 = f64 || e->op[k].dtype == ET_F64;
        f16 = f16 || e->op[k].dtype == ET_F16;
    }
    if (D->fp64_pragma && f64)
        rd_put(s, "%s", D->fp64_pragma);
    if (D->half_helper && f16)
        rd_put(s, "%s", D->half_helper);
    rd_put(s, "\n%s %s(", D->kernel_kw, name);
    for (int a = 0; a < r->n_args; a++) {
        char nm[32];
        int k = r->arg_operand[a];
        rd_arg_name(r, a, nm, sizeof nm);
        if (a)
            rd_put(s, ", ");
        if (k < 0)
            rd_put(s, D->out_ptr, e->out.dtype == ET_F64 ? "double" : "float",
                   nm);
        else
            rd_put(s, D->in_ptr, generic_type(D, e->op[k].dtype), nm);
    }
    for (int a = 0; a < e->n_idx; a++)
        rd_put(s, ", %s n_%s", L, e->idx[a].name);
    rd_put(s, ")\n{\n");
}

/* Declares operand k's address (in<k>_addr) and writes into val its
 * element converted to the sum's type. */
static void generic_operand(rd_out *s, const et_einsum *e, const dialect *D,
                            int k, char *val, size_t cap)
{
    const et_operand *o = &e->op[k];
    /* Horner form over the dims: ((0)*n0 + i0)*n1 + i1 ... */
    char addr[1024];
    et_sbuf ab;
    et_sbuf_fixed(&ab, addr, sizeof addr);
    et_sbuf_puts(&ab, "0");
    for (int r = 0; r < o->rank; r++) {
        if (e->n_rows && o->idx[r] == e->row_axis)
            continue; /* the row: a pointer of its own */
        bool bc = o->dim[r] == 1 && e->idx[o->idx[r]].size != 1;
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "%s", addr);
        et_sbuf_fixed(&ab, addr, sizeof addr);
        if (bc)
            et_sbuf_printf(&ab, "(%s)", tmp);
        else
            et_sbuf_printf(&ab, "(%s) * n_%s + %s", tmp,
                           e->idx[o->idx[r]].name, e->idx[o->idx[r]].name);
    }
    rd_line(s, "%s in%d_addr = %s;", D->long_type, k, addr);
    char a_text[64];
    snprintf(a_text, sizeof a_text, "in%d_addr", k);
    const char *cast = o->dtype == e->acc_dtype ||
                               (o->dtype == ET_F16 && e->acc_dtype == ET_F32)
                           ? ""
                           : (e->acc_dtype == ET_F64 ? "(double)"
                                                     : "(float)");
    char ptr[16];
    snprintf(ptr, sizeof ptr, "in%d", k);
    if (o->dtype == ET_F16)
        D->half_load(val, cap, cast, ptr, a_text);
    else
        snprintf(val, cap, "%sin%d[%s]", cast, k, a_text);
}

/* A batched einsum: the row's pointers, in<k> and out, by its row index
 * (this work-item's; rows summed: the row loop's). */
static void generic_rows(rd_out *s, const et_einsum *e, const dialect *D)
{
    const char *R = e->idx[e->row_axis].name;
    for (int k = -1; k < e->n_ops; k++) {
        if (!et_einsum_op_rowed(e, k))
            continue;
        char nm[16], decl[128], sel[1024];
        snprintf(nm, sizeof nm, k < 0 ? "out" : "in%d", k);
        snprintf(decl, sizeof decl, k < 0 ? D->out_ptr : D->in_ptr,
                 k < 0 ? (e->out.dtype == ET_F64 ? "double" : "float")
                       : generic_type(D, e->op[k].dtype),
                 nm);
        et_sbuf sb;
        et_sbuf_fixed(&sb, sel, sizeof sel);
        rd_row_select(&sb, R, nm, e->n_rows);
        rd_line(s, "%s = %s;", decl, sel);
    }
}

/* One work-item per output element: its indices from the global id, a
 * loop per summed index, the product summed, the store. */
static void generic_body(rd_out *s, const et_einsum *e, const dialect *D)
{
    const char *L = D->long_type;
    const char *acc = rd_acc_type(e->acc_dtype);
    const char *zero = e->acc_dtype == ET_F64 ? "0.0" : "0.0f";
    const char *fma = e->acc_dtype == ET_F32 ? D->fma_f32 : "fma";
    rd_line(s, "%s gid = (%s)%s * %d + (%s)%s;", L, L, D->group_id[0],
            GENERIC_LOCAL, L, D->local_id[0]);
    char n_out[1024] = "1";
    et_sbuf nb;
    et_sbuf_fixed(&nb, n_out, sizeof n_out);
    for (int a = 0; a < e->n_out; a++)
        et_sbuf_printf(&nb, "%sn_%s", a ? " * " : "", e->idx[a].name);
    if (e->n_out == 0)
        et_sbuf_puts(&nb, "1");
    /* no barrier anywhere: surplus work-items may leave at once */
    rd_line(s, "if (gid >= %s) return;", n_out);
    rd_line(s, "%s rest = gid;", L);
    for (int a = e->n_out - 1; a >= 0; a--) {
        rd_line(s, "%s %s = rest %% n_%s;", L, e->idx[a].name,
                e->idx[a].name);
        rd_line(s, "rest /= n_%s;", e->idx[a].name);
    }
    bool summed = et_einsum_rows_summed(e);
    if (e->n_rows && !summed)
        generic_rows(s, e, D);
    rd_line(s, "%s acc = %s;", acc, zero);
    for (int a = e->n_out; a < e->n_idx; a++) {
        rd_line(s, "for (%s %s = 0; %s < n_%s; %s++) {", L, e->idx[a].name,
                e->idx[a].name, e->idx[a].name, e->idx[a].name);
        s->indent++;
    }
    if (summed)
        generic_rows(s, e, D);
    char vals[ET_MAX_OPERANDS][1200];
    for (int k = 0; k < e->n_ops; k++)
        generic_operand(s, e, D, k, vals[k], sizeof vals[k]);
    if (e->n_ops == 1) {
        rd_line(s, "acc += %s;", vals[0]);
    } else {
        char prod[4096];
        et_sbuf pb;
        et_sbuf_fixed(&pb, prod, sizeof prod);
        for (int k = 0; k < e->n_ops - 1; k++)
            et_sbuf_printf(&pb, "%s%s", k ? " * " : "", vals[k]);
        rd_line(s, "acc = %s(%s, %s, acc);", fma, prod, vals[e->n_ops - 1]);
    }
    for (int a = e->n_out; a < e->n_idx; a++) {
        s->indent--;
        rd_line(s, "}");
    }
    const char *ocast = e->out.dtype == e->acc_dtype ? ""
                        : e->out.dtype == ET_F64     ? "(double)"
                                                     : "(float)";
    if (et_einsum_op_rowed(e, -1))
        /* a row's output is the elements after its row index */
        rd_line(s, "out[gid %% (%s / n_%s)] = %sacc;", n_out, e->idx[0].name,
                ocast);
    else
        rd_line(s, "out[gid] = %sacc;", ocast);
}

et_status et_kernel_render_generic(const et_einsum *e, et_backend_kind b,
                                   et_rendered *out)
{
    memset(out, 0, sizeof *out);
    if ((unsigned)b >= ET_BACKEND_COUNT || e->n_ops < 1)
        return ET_ERR_INPUT;
    if (e->n_idx > ET_LAUNCH_MAX_SCALARS ||
        !et_kernel_args(e, &out->n_args, out->arg_operand, out->arg_row))
        return ET_ERR_UNSUPPORTED;
    const dialect *D = &rd_dialects[b];
    rd_out s;
    memset(&s, 0, sizeof s);
    et_sbuf_init(&s.b);
    snprintf(out->name, sizeof out->name, "et_generic_%s",
             e->n_idx > e->n_out ? "r" : "e");
    generic_head(&s, e, D, b, out);
    s.indent = 1;
    generic_body(&s, e, D);
    s.indent = 0;
    rd_put(&s, "}\n");
    out->source = et_sbuf_take(&s.b);
    et_sbuf_free(&s.b);
    if (!out->source)
        return ET_ERR_NOMEM;
    int64_t elems = et_einsum_operand_elems(e, -1);
    out->launch.ndim = 1;
    out->launch.global[0] =
        (elems + GENERIC_LOCAL - 1) / GENERIC_LOCAL * GENERIC_LOCAL;
    out->launch.local[0] = GENERIC_LOCAL;
    out->launch.global[1] = out->launch.global[2] = 1;
    out->launch.local[1] = out->launch.local[2] = 1;
    out->launch.has_local = true;
    out->launch.n_scalars = e->n_idx;
    for (int a = 0; a < out->launch.n_scalars; a++)
        out->launch.scalar[a] = e->idx[a].size;
    return ET_OK;
}
