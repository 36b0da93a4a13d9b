#!/usr/bin/python3
"""Writes the .npy fixtures of tests/test_npy.c with NumPy (run with
/usr/bin/python3, which has python3-numpy; committed output, so the tests do
not need NumPy). Values are arange-based so the C test can recompute them:
element with C-order linear index t holds (t + 1) * 0.5 * sign, with sign
-1 for odd t."""
import numpy as np
from numpy.lib import format as fmt


def vals(shape, dtype):
    n = int(np.prod(shape)) if len(shape) else 1
    t = np.arange(n, dtype=np.float64)
    v = (t + 1) * 0.5 * np.where(t % 2 == 1, -1.0, 1.0)
    return v.reshape(shape).astype(dtype)


def save(name, arr, version=None):
    with open(name, "wb") as f:
        fmt.write_array(f, arr, version=version)


save("v1_f8_2x3.npy", vals((2, 3), "<f8"))
save("v1_f4_4.npy", vals((4,), "<f4"))
save("v1_f2_3x2.npy", vals((3, 2), "<f2"))
save("v1_f8_scalar.npy", vals((), "<f8"))
save("v1_f4_2x1x3x2.npy", vals((2, 1, 3, 2), "<f4"))
save("v2_f4_3x4.npy", vals((3, 4), "<f4"), version=(2, 0))
save("v3_f8_5.npy", vals((5,), "<f8"), version=(3, 0))
save("fortran_f8_2x3x4.npy", np.asfortranarray(vals((2, 3, 4), "<f8")))
save("fortran_f4_3x5.npy", np.asfortranarray(vals((3, 5), "<f4")))
save("be_f4_2x2.npy", vals((2, 2), ">f4"))
save("be_f8_3.npy", vals((3,), ">f8"))
save("be_f2_2x3.npy", vals((2, 3), ">f2"))
save("be_fortran_f8_2x3.npy", np.asfortranarray(vals((2, 3), ">f8")))
# refused: not a float dtype
save("bad_i4_3.npy", np.arange(3, dtype="<i4"))
save("bad_c16_2.npy", np.zeros(2, dtype="<c16"))
save("bad_struct.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<f8")]))
save("bad_zero_dim.npy", np.zeros((2, 0), dtype="<f8"))
