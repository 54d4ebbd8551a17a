"""The generated kernels' erf (``render_prelude._ERF``, no branch): its own constants, evaluated as the
device does (float32 values, one rounding per fmaf), within 3 ulp of erf everywhere, and IEEE cases kept."""

from __future__ import annotations

import math
import re

import numpy as np

from prism.codegen.render_prelude import _ERF

f32 = np.float32
_NUM = r"(-?[0-9.]+(?:e-?[0-9]+)?)f"


def _chains() -> tuple[list[float], list[float]]:
    """The coefficients of the one Horner chain, highest first: (|x| < 1, |x| >= 1)."""
    pairs = re.findall(rf"small \? {_NUM} : {_NUM}", _ERF)
    return [float(a) for a, _ in pairs], [float(b) for _, b in pairs]


def _fma(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    return f32(np.float64(a) * np.float64(b) + np.float64(c))  # the float64 product of two float32 is exact


def _erf32(x: float) -> float:
    small_c, big_c = _chains()
    xv = f32(x)
    a = abs(xv)
    small = bool(a < 1)
    z = f32(xv * xv) if small else min(a, f32(4.0))
    coef = small_c if small else big_c
    r = f32(coef[0])
    for c in coef[1:]:
        r = _fma(r, z, f32(c))
    if small:
        return float(f32(xv * r))
    lg = _fma(r, -a, -a)
    e = f32(2.0 ** float(lg)) if math.isfinite(float(lg)) else f32(0.0)
    return math.copysign(float(f32(f32(1.0) - e)), float(xv))


def test_the_source_is_one_chain_and_no_branch() -> None:
    small_c, big_c = _chains()
    assert len(small_c) == len(big_c) == 8
    assert " if " not in _ERF and "if (" not in _ERF


def test_the_branchless_erf_is_within_3_ulp_of_erf() -> None:
    xs = np.concatenate([np.geomspace(1e-30, 12, 3000), np.linspace(0, 6, 6001)])
    worst = 0.0
    for x in np.concatenate([xs, -xs]):
        x32 = float(f32(x))
        ref = math.erf(x32)
        ulp = float(np.spacing(f32(abs(ref)))) if ref else float(np.spacing(f32(0)))
        worst = max(worst, abs(_erf32(x32) - ref) / ulp)
    assert worst <= 3.0, worst


def test_zeros_and_infinities_keep_their_values() -> None:
    assert _erf32(0.0) == 0.0 and math.copysign(1.0, _erf32(-0.0)) == -1.0
    assert _erf32(math.inf) == 1.0 and _erf32(-math.inf) == -1.0
    assert _erf32(5.0) == 1.0 and _erf32(-30.0) == -1.0
