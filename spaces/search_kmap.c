/*
 * search_kmap.c - the searches' hash map, a 64-bit key to a double: the
 * kernels answered and their times, their first seqs, the texts already
 * reported, the points drawn. Open addressing with linear probing from
 * the key's low bits, doubled once half full.
 */
#include "spaces/search_impl.h"

#include <stdlib.h>
#include <string.h>

bool srch_kmap_find(const kmap *m, uint64_t k, double *v)
{
    if (!m->cap)
        return false;
    for (size_t i = k & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->used[i])
            return false;
        if (m->key[i] == k) {
            if (v)
                *v = m->val[i];
            return true;
        }
    }
}

bool srch_kmap_put(kmap *m, uint64_t k, double v)
{
    if (2 * (m->n + 1) > m->cap) {
        kmap g = {m->cap ? m->cap * 2 : 256, 0, NULL, NULL, NULL};
        g.key = malloc(g.cap * sizeof(uint64_t));
        g.val = malloc(g.cap * sizeof(double));
        g.used = calloc(g.cap, sizeof(bool));
        if (!g.key || !g.val || !g.used) {
            free(g.key);
            free(g.val);
            free(g.used);
            return false;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->used[i])
                srch_kmap_put(&g, m->key[i], m->val[i]);
        free(m->key);
        free(m->val);
        free(m->used);
        *m = g;
    }
    size_t i = k & (m->cap - 1);
    while (m->used[i] && m->key[i] != k)
        i = (i + 1) & (m->cap - 1);
    if (!m->used[i])
        m->n++;
    m->used[i] = true;
    m->key[i] = k;
    m->val[i] = v;
    return true;
}

void srch_kmap_free(kmap *m)
{
    free(m->key);
    free(m->val);
    free(m->used);
    memset(m, 0, sizeof(*m));
}
