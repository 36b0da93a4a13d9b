"""feinsum's tutorial transform space for xik,kj->xij, as feinsum ships it
(feinsum/tuning/impls/demo_transform_space.py), loaded from the installed
package and run unchanged through a thin adapter of its API.

The shipped module still speaks feinsum's older API: f.array(SHAPE,
DTYPE) with np.inf for the open batch axis, and f.einsum(..., arg_names=
[...]). feinsum 2025.3 takes f.array(NAME, SHAPE, DTYPE) with a named size
parameter for an open axis. The adapter below gives the module those two
calls in the older form and passes them on in the newer one, and reads
the size N through the newer API (_rebind); the transform space (its
parameters, their ranges and its loopy transformations) is the shipped
one. The reference einsum the module matches against takes the
dtype of the problem (FEINSUM_PEER_DTYPE: float32 or float64), so the same
space serves f32 and f64.

autotune() loads a transform space from a file: this file is that file.
"""
import importlib.util
import os
import types

import numpy as np

import feinsum
from feinsum.tuning import (IntParameter, ParametrizedTransform,
                            _get_impls_path, einsum_arg, transform_param)

_PATH = os.path.join(_get_impls_path(), "demo_transform_space.py")


def _placeholder_array(shape, dtype="float64"):
    return ("array", tuple(shape), dtype)


def _einsum(subscripts, *operands, arg_names=None):
    dtype = os.environ.get("FEINSUM_PEER_DTYPE")
    names = arg_names or ["arg%d" % k for k in range(len(operands))]
    arrs = []
    for name, op in zip(names, operands):
        _, shape, dt = op
        shape = tuple("N_%s" % name if (isinstance(d, float) and np.isinf(d))
                      else d for d in shape)
        arrs.append(feinsum.array(name, shape, dtype or dt))
    return feinsum.einsum(subscripts, *arrs)


def _load():
    spec = importlib.util.spec_from_file_location(
        "feinsum_demo_transform_space", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    adapter = types.SimpleNamespace(**{k: getattr(feinsum, k)
                                       for k in feinsum.__all__})
    adapter.array = _placeholder_array
    adapter.einsum = _einsum
    mod.f = adapter
    return mod


def _rebind(shipped):
    """The shipped space with its two size lookups in the newer API: the
    module reads N (the size of i, k and j) as ensm.arg_shapes[0][1],
    which 2025.3's BatchedEinsum no longer has; the output's shape
    (x, N, N) gives the same N. The parameters and their ranges are the
    shipped ones: n_x_per_wg in [2, 32], n_wi_per_x in [1, N]."""
    def size_n(ensm):
        return ensm.shape[1]

    derived = tuple(einsum_arg(a.var_name, size_n)
                    for a in shipped.einsum_derivative_args)
    ranges = dict(n_x_per_wg=lambda ensm: IntParameter(2, 32),
                  n_wi_per_x=lambda ensm: IntParameter(1, size_n(ensm)))
    params = tuple(transform_param(p.var_name, ranges[p.var_name])
                   for p in shipped.transform_params)
    return ParametrizedTransform(shipped.transform, derived, params)


_mod = _load()
transform = _rebind(_mod.transform)
