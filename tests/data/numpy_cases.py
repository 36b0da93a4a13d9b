#!/usr/bin/python3
# Writes NumPy einsum cases for tests/test_cli_run.c into the directory given
# as argv[1]: per case k, inputs k_<j>.npy, NumPy's output k_ref.npy, the sum
# of |terms| per output element k_abs.npy (the einsum of the absolute
# values), and one line in cases.txt:
#   k<TAB>einsum<TAB>n_inputs<TAB>opts<TAB>acc dtype
# Each einsum is tried untransformed (opts "-") and with the opts listed.
import os
import sys

import numpy as np

CASES = [
    # einsum, shapes, dtype, [opt lists]
    ("ij,jk->ik", [(7, 5), (5, 9)], "f64", ["UPCAST(0,7) UNROLL(j,5)"]),
    ("ij,jk", [(8, 6), (6, 4)], "f32", ["LOCAL(i,4) UPCAST(k,4)"]),
    ("ji,jk->ik", [(6, 8), (6, 4)], "f64", ["GROUP(j,2)"]),
    ("ij,kj->ik", [(8, 6), (4, 6)], "f64", ["GROUPTOP(j,3) LOCAL(i,2)"]),
    ("ij,jk->ki", [(8, 6), (6, 4)], "f32", ["SWAP(k,i)"]),
    ("xik,kj->xij", [(4, 8, 8), (8, 8)], "f64",
     ["LOCAL(i,4) UPCAST(j,4) UNROLL(k,4)", "PREFETCH(1,k,4) LOCAL(j,4)"]),
    ("bij,bjk->bik", [(3, 5, 7), (3, 7, 2)], "f64", ["PADTO(j,8) UNROLL(j,4)"]),
    ("ij,j->i", [(9, 16), (16,)], "f64", ["UPCAST(i,3) UNROLL(j,4)"]),
    ("i,i->", [(33,), (33,)], "f64", ["PADTO(i,36) GROUP(i,4)"]),
    ("i,i", [(10,), (10,)], "f32", ["UNROLL(i,5)"]),
    ("i,j->ij", [(5,), (6,)], "f64", ["UPCAST(j,3) LOCAL(i,5)"]),
    ("i,j", [(5,), (6,)], "f32", []),
    ("ij->", [(7, 9)], "f64", ["GROUPTOP(i,7)"]),
    ("ij->i", [(7, 9)], "f64", ["UNROLL(j,3)"]),
    ("ij->j", [(7, 9)], "f32", ["NOLOCALS"]),
    ("ij", [(4, 5)], "f64", []),
    ("ji", [(4, 5)], "f64", ["UPCAST(i,5)"]),
    ("ij->ji", [(4, 5)], "f64", ["LOCAL(i,2)"]),
    ("ii->i", [(6, 6)], "f64", ["UPCAST(i,3)"]),
    ("ii", [(6, 6)], "f64", []),
    ("ii->", [(6, 6)], "f32", ["GROUP(i,3)"]),
    ("iij->ij", [(3, 3, 4)], "f64", []),
    ("iji->j", [(3, 4, 3)], "f64", ["UPCAST(j,2)"]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 6)], "f64",
     ["UPCAST(l,3) UNROLL(k,5)"]),
    ("ij,jk,kl", [(3, 4), (4, 5), (5, 6)], "f32", []),
    ("xre,rij,xej->xei", [(8, 3, 4), (3, 5, 5), (8, 4, 5)], "f64",
     ["LOCAL(x,4) UPCAST(i,5) UNROLL(j,5)"]),
    ("a,b,c,d->abcd", [(2,), (3,), (2,), (2,)], "f64", ["UPCAST(d,2)"]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 2), (2, 5)], "f64", []),
    ("ab,bc,cd,de,ef->af", [(2, 3), (3, 4), (4, 2), (2, 5), (5, 3)], "f64",
     ["UNROLL(d,2)"]),
    ("a,a,a,a,a,a->a", [(7,)] * 6, "f64", ["PADTO(a,8) UPCAST(a,4)"]),
    ("ab,b,a,ab,b,a,ab->", [(3, 4), (4,), (3,), (3, 4), (4,), (3,), (3, 4)],
     "f64", ["GROUP(a,3)"]),
    (",ij->ij", [(), (3, 4)], "f64", []),
    ("ij,->ij", [(3, 4), ()], "f32", ["UPCAST(j,4)"]),
    (",->", [(), ()], "f64", []),
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 2)], "f64",
     ["UNROLL(j,5)"]),
    ("...ij,jk->...ik", [(2, 4, 5), (5, 3)], "f64", []),
    ("...i,...i", [(3, 4), (3, 4)], "f64", []),
    ("i...->...", [(4, 2, 3)], "f64", []),
    ("ij...,jk...->ik...", [(2, 3, 2), (3, 4, 2)], "f64", []),
    ("i,i->i", [(1,), (5,)], "f64", []),  # broadcast size 1
    ("ij,ij->ij", [(3, 1), (3, 4)], "f64", []),
    ("Ba,ab", [(2, 3), (3, 4)], "f64", []),
    ("ijk->kji", [(2, 3, 4)], "f32", ["UPCAST(i,2)"]),
    ("ijkl->", [(2, 3, 4, 5)], "f64", ["UNROLL(l,5) GROUP(k,2)"]),
    ("ijkl,ijkl->ij", [(2, 3, 4, 5), (2, 3, 4, 5)], "f64", []),
    ("abcde->edcba", [(2, 1, 3, 2, 2)], "f64", ["LOCAL(a,2)"]),
    ("xik,xk->xi", [(6, 35, 35), (6, 35)], "f64",
     ["UPCAST(i,5) UNROLL(k,7)", "PADTO(k,36) GROUP(k,4)"]),
    ("ij,jk->ik", [(35, 35), (35, 35)], "f32",
     ["PADTO(i,40) LOCAL(i,8) UPCAST(k,5)"]),
]

# NumPy dtype per name; f16 inputs are read by eintune as half.
NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261122)
    lines = []
    for k, (expr, shapes, dt, opts) in enumerate(CASES):
        arrs = [rng.uniform(-1, 1, s).astype(NP[dt]) for s in shapes]
        for j, a in enumerate(arrs):
            np.save(os.path.join(out, f"{k}_{j}.npy"), a)
        wide = [a.astype(np.longdouble) for a in arrs]
        ref = np.einsum(expr, *wide)
        absv = np.einsum(expr, *[np.abs(a) for a in wide])
        np.save(os.path.join(out, f"{k}_ref.npy"), np.asarray(ref, np.float64))
        np.save(os.path.join(out, f"{k}_abs.npy"), np.asarray(absv, np.float64))
        for o in ["-"] + opts:
            lines.append(f"{k}\t{expr}\t{len(arrs)}\t{o}\t{dt}")
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
