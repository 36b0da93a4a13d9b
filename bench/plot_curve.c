/*
 * plot_curve - draws search-efficiency curves (bench/search_curve.c's CSV)
 * with cairo: best-so-far speed as a percentage of the reference best
 * (100 * reference time / best time) against the wall time of the tuning
 * session, a step line per search, dashed lines at 100 % and at 90 %
 * (the "within 10 %" target).
 *
 *   plot_curve OUT.png|OUT.svg TITLE REF_TIME_S LABEL CSV [LABEL CSV ...]
 */
#include <cairo.h>
#include <cairo-svg.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAXPTS 20000
#define MAXSER 8

typedef struct series {
    const char *label;
    int n;
    double t[MAXPTS], pct[MAXPTS];
} series;

static series g_s[MAXSER];

static int load(series *s, const char *path, double ref)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    char line[4096];
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        return 0;
    }
    while (s->n < MAXPTS && fgets(line, sizeof line, f)) {
        double t = 0, best = NAN;
        char *p = line, *end;
        t = strtod(p, &end);
        /* skip answered, status, cached, cand_time_s: 4 commas */
        for (int c = 0; c < 5 && p; c++) {
            p = strchr(p, ',');
            if (p)
                p++;
        }
        if (!p)
            continue;
        best = strtod(p, &end);
        if (end == p || !(best > 0))
            continue;
        s->t[s->n] = t;
        s->pct[s->n] = 100.0 * ref / best;
        s->n++;
    }
    fclose(f);
    return 0;
}

static const double g_col[MAXSER][3] = {
    {0.12, 0.40, 0.75}, {0.85, 0.37, 0.01}, {0.20, 0.63, 0.17},
    {0.55, 0.25, 0.60}, {0.80, 0.10, 0.15}, {0.40, 0.40, 0.40},
    {0.09, 0.75, 0.81}, {0.74, 0.74, 0.13}};

int main(int argc, char **argv)
{
    if (argc < 6 || (argc - 4) % 2) {
        fprintf(stderr, "usage: plot_curve OUT TITLE REF_TIME_S LABEL CSV "
                        "[LABEL CSV ...]\n");
        return 2;
    }
    const char *out = argv[1], *title = argv[2];
    double ref = atof(argv[3]);
    if (!(ref > 0)) {
        fprintf(stderr, "plot_curve: reference time must be > 0\n");
        return 2;
    }
    int ns = 0;
    double tmax = 1, pmax = 110;
    for (int a = 4; a + 1 < argc && ns < MAXSER; a += 2, ns++) {
        g_s[ns].label = argv[a];
        if (load(&g_s[ns], argv[a + 1], ref))
            return 1;
        for (int i = 0; i < g_s[ns].n; i++) {
            if (g_s[ns].t[i] > tmax)
                tmax = g_s[ns].t[i];
            if (g_s[ns].pct[i] > pmax)
                pmax = g_s[ns].pct[i];
        }
    }
    tmax *= 1.05;
    pmax = ceil(pmax / 10.0) * 10.0;
    if (pmax > 400)
        pmax = 400;

    const double W = 800, H = 500, L = 90, R = 20, T = 40, B = 55;
    size_t n = strlen(out);
    int svg = n > 4 && !strcasecmp(out + n - 4, ".svg");
    cairo_surface_t *surf =
        svg ? cairo_svg_surface_create(out, W, H)
            : cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)W, (int)H);
    cairo_t *cr = cairo_create(surf);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    const double pw = W - L - R, ph = H - T - B;
#define X(v) (L + (v) / tmax * pw)
#define Y(v) (T + ph - (v) / pmax * ph)

    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                           CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 11);
    /* grid and ticks */
    double tstep = pow(10, floor(log10(tmax / 2)));
    if (tmax / tstep > 10)
        tstep *= 2;
    char buf[64];
    cairo_set_line_width(cr, 1);
    for (double v = 0; v <= tmax; v += tstep) {
        cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
        cairo_move_to(cr, X(v), T);
        cairo_line_to(cr, X(v), T + ph);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
        snprintf(buf, sizeof buf, "%g", v);
        cairo_move_to(cr, X(v) - 8, T + ph + 16);
        cairo_show_text(cr, buf);
    }
    double pstep = pmax > 200 ? 50 : 20;
    for (double v = 0; v <= pmax; v += pstep) {
        cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
        cairo_move_to(cr, L, Y(v));
        cairo_line_to(cr, L + pw, Y(v));
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
        snprintf(buf, sizeof buf, "%g %%", v);
        cairo_move_to(cr, L - 44, Y(v) + 4);
        cairo_show_text(cr, buf);
    }
    cairo_rectangle(cr, L, T, pw, ph);
    cairo_stroke(cr);
    /* reference and target lines */
    double dash[] = {6, 4};
    cairo_set_dash(cr, dash, 2, 0);
    for (int k = 0; k < 2; k++) {
        double v = k ? 90 : 100;
        cairo_set_source_rgb(cr, k ? 0.8 : 0.3, k ? 0.2 : 0.3, k ? 0.2 : 0.3);
        cairo_move_to(cr, L, Y(v));
        cairo_line_to(cr, L + pw, Y(v));
        cairo_stroke(cr);
    }
    cairo_set_dash(cr, NULL, 0, 0);
    /* series: best-so-far is a step function */
    cairo_set_line_width(cr, 2);
    for (int s = 0; s < ns; s++) {
        cairo_set_source_rgb(cr, g_col[s][0], g_col[s][1], g_col[s][2]);
        for (int i = 0; i < g_s[s].n; i++) {
            double x = X(g_s[s].t[i]), y = Y(fmin(g_s[s].pct[i], pmax));
            if (i == 0)
                cairo_move_to(cr, x, y);
            else
                cairo_line_to(cr, x, Y(fmin(g_s[s].pct[i - 1], pmax))),
                    cairo_line_to(cr, x, y);
        }
        cairo_stroke(cr);
        for (int i = 0; i < g_s[s].n; i++) {
            cairo_arc(cr, X(g_s[s].t[i]), Y(fmin(g_s[s].pct[i], pmax)), 2.5,
                      0, 2 * M_PI);
            cairo_fill(cr);
        }
        cairo_rectangle(cr, L + pw - 190, T + 12 + 18 * s, 14, 10);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_move_to(cr, L + pw - 170, T + 21 + 18 * s);
        cairo_show_text(cr, g_s[s].label);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, 13);
    cairo_move_to(cr, L, 24);
    cairo_show_text(cr, title);
    cairo_set_font_size(cr, 12);
    cairo_move_to(cr, L + pw / 2 - 90, H - 14);
    cairo_show_text(cr, "wall time of the tuning session (s)");
    cairo_save(cr);
    cairo_move_to(cr, 24, T + ph / 2 + 125);
    cairo_rotate(cr, -M_PI / 2);
    cairo_show_text(cr, "best so far, % of the reference best's speed");
    cairo_restore(cr);

    cairo_destroy(cr);
    int rc = 0;
    if (!svg && cairo_surface_write_to_png(surf, out) != CAIRO_STATUS_SUCCESS)
        rc = 1;
    cairo_surface_finish(surf);
    if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS)
        rc = 1;
    cairo_surface_destroy(surf);
    if (rc)
        fprintf(stderr, "plot_curve: cannot write %s\n", out);
    return rc;
}
