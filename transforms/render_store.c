/*
 * render_store.c - the end of a rendered kernel: the GROUP combine of the
 * lanes' partial sums, then the stores (masked where PADTO padded,
 * vector stores where contiguous, SPLIT's atomic adds into the zeroed
 * output, NTSTORE's stores past the caches).
 */
#include "transforms/render_impl.h"

#include <stdio.h>
#include <string.h>

void rd_emit_stores(ctx *c)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    plist ups;
    rd_plist_kind(c, &ups, ET_PART_UPCAST, -2);
    char base[512], addr[600], mask[512], accn[256], ptr[32];
    if (rd_emit_vstores_direct(c))
        return;
    rd_addr_base(c, -1, base, sizeof base);
    rd_line(s, "%s out_addr = %s;", c->itype, base);
    int64_t vals[MAXP] = {0};
    const char *ot = rd_acc_type(k->e.out.dtype);
    const char *cast = k->e.out.dtype == k->e.acc_dtype ? ""
                       : k->e.out.dtype == ET_F64     ? "(double)"
                                                      : "(float)";
    if (et_kernel_has_split(k)) {
        /* SPLIT: this work-group's partial sums go into the zeroed output */
        const char *add = c->D->atomic_add;
        int64_t n = rd_plist_count(c, &ups);
        for (int64_t ci = 0; ci < n; ci++) {
            rd_combo_fill(c, &ups, ci, vals);
            rd_combo_name(c, accn, sizeof accn, "acc", &ups, vals);
            rd_addr_str(addr, sizeof addr, "out_addr",
                        rd_addr_off(c, -1, &ups, vals));
            rd_ptr_name(c, -1, &ups, vals, ptr, sizeof ptr);
            if (rd_mask_expr(c, -1, &ups, vals, mask, sizeof mask))
                rd_line(s, "if (%s) %s(%s + %s, %s%s);", mask, add, ptr, addr,
                        cast, accn);
            else
                rd_line(s, "%s(%s + %s, %s%s);", add, ptr, addr, cast, accn);
        }
        return;
    }
    int vp = rd_vector_part(c, -1, &ups);
    if (vp >= 0) {
        plist rest = {0};
        for (int i = 0; i < ups.n; i++)
            if (ups.p[i] != vp)
                rest.p[rest.n++] = ups.p[i];
        int64_t n = k->part[vp].size;
        int64_t nrest = rd_plist_count(c, &rest);
        for (int64_t ri = 0; ri < nrest; ri++) {
            memset(vals, 0, sizeof vals);
            rd_combo_fill(c, &rest, ri, vals);
            vals[vp] = 0;
            rd_addr_str(addr, sizeof addr, "out_addr",
                        rd_addr_off(c, -1, &ups, vals));
            char list[4096];
            et_sbuf lb;
            et_sbuf_fixed(&lb, list, sizeof list);
            for (int64_t v = 0; v < n; v++) {
                vals[vp] = v;
                rd_combo_name(c, accn, sizeof accn, "acc", &ups, vals);
                et_sbuf_printf(&lb, "%s%s", v ? ", " : "", accn);
            }
            rd_ptr_name(c, -1, &ups, vals, ptr, sizeof ptr);
            if (k->ntstore) {
                /* rd_vector_part: the lanes are aligned */
                char st[4600];
                c->D->nt_store(st, sizeof st, ot, n, list, ptr, addr);
                rd_line(s, "%s", st);
            } else {
                c->D->vector_store(s, ot, n, list, ptr, addr);
            }
        }
        return;
    }
    int64_t n = rd_plist_count(c, &ups);
    for (int64_t ci = 0; ci < n; ci++) {
        rd_combo_fill(c, &ups, ci, vals);
        rd_combo_name(c, accn, sizeof accn, "acc", &ups, vals);
        rd_addr_str(addr, sizeof addr, "out_addr",
                    rd_addr_off(c, -1, &ups, vals));
        rd_ptr_name(c, -1, &ups, vals, ptr, sizeof ptr);
        char st[1200], val[300];
        if (k->ntstore) {
            snprintf(val, sizeof val, "%s%s", cast, accn);
            c->D->nt_store(st, sizeof st, ot, 1, val, ptr, addr);
        } else {
            snprintf(st, sizeof st, "%s[%s] = %s%s;", ptr, addr, cast, accn);
        }
        if (rd_mask_expr(c, -1, &ups, vals, mask, sizeof mask))
            rd_line(s, "if (%s) %s", mask, st);
        else
            rd_line(s, "%s", st);
    }
}

void rd_emit_group_combine(ctx *c)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    const et_part *g = &k->part[k->group_part];
    plist ups;
    rd_plist_kind(c, &ups, ET_PART_UPCAST, -2);
    int64_t n = rd_plist_count(c, &ups);
    int64_t vals[MAXP] = {0};
    char accn[256];
    if (g->size == 1) {
        /* one lane: nothing to combine, and the size-1 lane index is
         * not declared (its value is always 0) */
        rd_emit_stores(c);
        return;
    }
    rd_line(s, "// combine the partial sums of the %lld lanes of %s",
            (long long)g->size, g->name);
    for (int64_t ci = 0; ci < n; ci++) {
        rd_combo_fill(c, &ups, ci, vals);
        rd_combo_name(c, accn, sizeof accn, "acc", &ups, vals);
        rd_line(s, "red[%lld + lid_flat] = %s;", (long long)(ci * c->wg), accn);
    }
    rd_line(s, "%s", c->D->barrier);
    rd_line(s, "if (%s == 0) {", g->name);
    s->indent++;
    for (int64_t ci = 0; ci < n; ci++) {
        rd_combo_fill(c, &ups, ci, vals);
        rd_combo_name(c, accn, sizeof accn, "acc", &ups, vals);
        rd_line(s, "for (%s ln = 1; ln < %lld; ln++)", c->itype,
                (long long)g->size);
        rd_line(s, "    %s += red[%lld + lid_flat + ln];", accn,
                (long long)(ci * c->wg));
    }
    rd_emit_stores(c);
    s->indent--;
    rd_line(s, "}");
}
