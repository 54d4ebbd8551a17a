"""The generated kernels' erf (``render_prelude._ERF``, no branch): its own constants, evaluated as the
device does (float32 values, one rounding per fmaf), within 3 ulp of erf everywhere, and IEEE cases kept."""

from __future__ import annotations

import math
import re

import numpy as np

from prism.codegen.render_prelude import _ERF

f32 = np.float32


def _coefficients(var: str) -> list[float]:
    """The Horner chain of ``var`` in the source: its first value, then each fmaf's addend."""
    first = re.search(rf"float {var} = ([-0-9.e]+)f;", _ERF)
    assert first is not None
    return [float(first.group(1)), *map(float, re.findall(rf"{var} = fmaf\({var}, \w, ([-0-9.e]+)f\);", _ERF))]


def _fma(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    return f32(np.float64(a) * np.float64(b) + np.float64(c))  # the float64 product of two float32 is exact


def _erf32(x: float) -> float:
    p_coef, q_coef = _coefficients("p"), _coefficients("q")
    xv = f32(x)
    a, s = abs(xv), f32(xv * xv)
    p = f32(p_coef[0])
    for c in p_coef[1:]:
        p = _fma(p, s, f32(c))
    if a < 1:
        return float(f32(xv * p))
    t = f32(1.0 / float(_fma(f32(0.5), a, f32(1.0))))
    q = f32(q_coef[0])
    for c in q_coef[1:]:
        q = _fma(q, t, f32(c))
    e = f32(math.exp(-float(s))) if math.isfinite(float(s)) else f32(0.0)
    return math.copysign(float(f32(f32(1.0) - f32(f32(t * q) * e))), float(xv))


def test_the_source_holds_both_chains() -> None:
    assert len(_coefficients("p")) == 7 and len(_coefficients("q")) == 9
    assert "if" not in _ERF.split("{", 1)[1]  # no branch: one select at the end


def test_the_branchless_erf_is_within_3_ulp_of_erf() -> None:
    xs = np.concatenate([np.geomspace(1e-30, 12, 3000), np.linspace(0, 5, 6001)])
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
    assert _erf32(1.0) == float(f32(math.erf(1.0))) or abs(_erf32(1.0) - math.erf(1.0)) < 2e-7
