"""Fit the Chebyshev series of ferro's Bessel-function C helpers and write them to
``ferro-core/src/ferro/_core/special_coefficients.py``.

Each series is an interpolant at Chebyshev points of a smooth function derived from SciPy's
values (``scipy.special``): the Bessel functions less their logarithmic or oscillating parts, on a
finite interval in ``x`` (or ``x * x``) and on ``u = c / x`` beyond it. The printed error is the
largest relative error of the fitted function on a dense grid, in float64.

    python scripts/fit_special.py
"""

from __future__ import annotations

import pathlib

import numpy as np
from numpy.polynomial import chebyshev
from scipy import special as sp

OUT = pathlib.Path(__file__).resolve().parents[1] / "ferro-core/src/ferro/_core/special_coefficients.py"


def _theta(x: np.ndarray, order: int) -> np.ndarray:
    return x - (2 * order + 1) * np.pi / 4


def _amp(j, y, order):  # sqrt(x) * (J cos t + Y sin t), sqrt(x) * (Y cos t - J sin t)
    def a(u):
        x = 5 / u
        t = _theta(x, order)
        return np.sqrt(x) * (j(x) * np.cos(t) + y(x) * np.sin(t))

    def b(u):
        x = 5 / u
        t = _theta(x, order)
        return np.sqrt(x) * (y(x) * np.cos(t) - j(x) * np.sin(t))
    return a, b


_J0A, _J0B = _amp(sp.j0, sp.y0, 0)
_J1A, _J1B = _amp(sp.j1, sp.y1, 1)

def _airy_pos(u):  # x^(1/4) exp(2/3 x^(3/2)) Ai(x) at x = 2 / u^(2/3)
    x = 2 / u ** (2 / 3)
    return sp.airye(x)[0] * x ** 0.25


def _airy_neg(which):  # the amplitudes of sin and cos of 2/3 x^(3/2) + pi / 4 in Ai(-x), at x = 4 / u^(2/3)
    def f(u):
        x = 4 / u ** (2 / 3)
        t = 2 / 3 * x ** 1.5 + np.pi / 4
        ai, _, bi, _ = sp.airy(-x)
        s = np.sqrt(np.pi) * x ** 0.25
        return s * (ai * np.sin(t) + bi * np.cos(t)) if which == "A" else s * (ai * np.cos(t) - bi * np.sin(t))
    return f


#: name -> (function of t on [-1, 1] mapped from the domain, domain, degree)
FITS = {
    # modified Bessel functions of the first kind: i0e, i1e on [0, 8] and sqrt(x) i0e(x) in u = 8 / x
    "I0E_SMALL": (sp.i0e, (0.0, 8.0), 32),
    "I0E_LARGE": (lambda u: sp.i0e(8 / u) * np.sqrt(8 / u), (0.0, 1.0), 28),
    "I1E_SMALL": (sp.i1e, (0.0, 8.0), 32),
    "I1E_LARGE": (lambda u: sp.i1e(8 / u) * np.sqrt(8 / u), (0.0, 1.0), 28),
    # second kind: k0 + log(x / 2) i0 and x (k1 - log(x / 2) i1) in s = x * x on [0, 4]; sqrt(x) k0e in u = 2 / x
    "K0_SMALL": (lambda s: sp.k0(np.sqrt(s)) + np.log(np.sqrt(s) / 2) * sp.i0(np.sqrt(s)), (0.0, 4.0), 16),
    "K1_SMALL": (lambda s: np.sqrt(s) * (sp.k1(np.sqrt(s)) - np.log(np.sqrt(s) / 2) * sp.i1(np.sqrt(s))),
                 (0.0, 4.0), 16),
    "K0E_LARGE": (lambda u: sp.k0e(2 / u) * np.sqrt(2 / u), (0.0, 1.0), 28),
    "K1E_LARGE": (lambda u: sp.k1e(2 / u) * np.sqrt(2 / u), (0.0, 1.0), 28),
    # Bessel functions: j0 and j1 / x in s = x * x on [0, 25]; y0 - 2 / pi log(x) j0, (y1 - 2 / pi (log(x) j1 -
    # 1 / x)) / x likewise; beyond 5 the amplitudes of the cosine and sine of x - (2 n + 1) pi / 4 in u = 5 / x
    "J0_SMALL": (lambda s: sp.j0(np.sqrt(s)), (0.0, 25.0), 30),
    "J1_SMALL": (lambda s: sp.j1(np.sqrt(s)) / np.sqrt(s), (0.0, 25.0), 30),
    "Y0_SMALL": (lambda s: sp.y0(np.sqrt(s)) - 2 / np.pi * np.log(np.sqrt(s)) * sp.j0(np.sqrt(s)), (0.0, 25.0), 30),
    "Y1_SMALL": (lambda s: (sp.y1(np.sqrt(s)) - 2 / np.pi * (np.log(np.sqrt(s)) * sp.j1(np.sqrt(s))
                                                          - 1 / np.sqrt(s))) / np.sqrt(s), (0.0, 25.0), 30),
    "J0_P": (_J0A, (0.0, 1.0), 30), "J0_Q": (_J0B, (0.0, 1.0), 30),
    "J1_P": (_J1A, (0.0, 1.0), 30), "J1_Q": (_J1B, (0.0, 1.0), 30),
    # Airy's Ai: directly on [-4, 2]; beyond 2, x^(1/4) exp(2/3 x^(3/2)) Ai(x) in u = (2 / x)^(3/2); below -4 the
    # amplitudes of sin and cos of 2/3 |x|^(3/2) + pi / 4 in u = (4 / |x|)^(3/2)
    "AI_MID": (lambda x: sp.airy(x)[0], (-4.0, 2.0), 40),
    "AI_POS": (_airy_pos, (0.0, 1.0), 30),
    "AI_NEG_A": (_airy_neg("A"), (0.0, 1.0), 30), "AI_NEG_B": (_airy_neg("B"), (0.0, 1.0), 30),
}


def fit(fn, domain, deg):
    series = chebyshev.Chebyshev.interpolate(fn, deg, domain=list(domain))
    grid = np.linspace(*domain, 20001)[1:-1]
    want = fn(grid)
    err = np.max(np.abs(series(grid) - want) / np.maximum(np.abs(want), 1e-300))
    return series.coef, err


def main() -> None:
    lines = ['"""Chebyshev series of the Bessel-function C helpers (``c_special.py``), written by',
             "``scripts/fit_special.py`` (which says what each approximates): name -> (domain low, domain high,",
             'the number of terms, the coefficients of T0, T1, ... as C text)."""', "",
             "from __future__ import annotations", "", "SERIES: dict[str, tuple[float, float, int, str]] = {"]
    for name, (fn, domain, deg) in FITS.items():
        coef, err = fit(fn, domain, deg)
        keep = len(coef)
        while keep > 1 and abs(coef[keep - 1]) < 1e-18 * max(abs(coef[0]), 1):
            keep -= 1
        print(f"{name}: degree {keep - 1}, max relative error {err:.2e}")
        nums = [repr(float(c)) for c in coef[:keep]]
        rows = [", ".join(nums[i:i + 4]) + ("" if i + 4 >= keep else ", ") for i in range(0, keep, 4)]
        lines.append(f"    {name!r}: ({domain[0]!r}, {domain[1]!r}, {keep}, (")
        lines.extend(f'        "{r}"' for r in rows)
        lines.append("    )),")
    lines.append("}")
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
