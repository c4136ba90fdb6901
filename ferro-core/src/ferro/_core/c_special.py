"""The C helpers of ``torch.special``'s functions that ferro computes in one kernel (``ferro/_ops/special_kernels.py``):
Bessel functions, Airy's Ai, the orthogonal polynomials, Hurwitz's zeta, the regularized incomplete gamma
functions, erfcx.

Written once for OpenCL C and CUDA C (``$FN``, ``$T``: :mod:`ferro._core.expr`). The Bessel functions evaluate
Chebyshev series fitted by ``scripts/fit_special.py`` (``special_coefficients.py``); the others are textbook
algorithms (three-term recurrences, Euler-Maclaurin summation, the series and continued fraction of the incomplete
gamma function, a continued fraction for erfcx), each described where it is defined; the Bessel and Airy helpers
evaluate their series first (at clamped, safe arguments) and then pick the answer. Edge values follow SciPy,
which the CPU kernels call, and PyTorch, which agrees (``bessel_j0``, ``bessel_y0``, ``i0`` and their order-1
companions give NaN at infinity).
"""

from __future__ import annotations

from .expr import Helper
from .special_coefficients import SERIES

__all__ = ["BESSEL", "POLYNOMIALS", "ZETA", "IGAMMA", "IGAMMAC", "ERFCX", "SPHERICAL_J0"]

#: Clenshaw's sum of the Chebyshev series ``c`` (``n`` terms) at ``x`` mapped from [lo, hi] to [-1, 1].
_CHEB = Helper("ferro_cheb", """\
$FN $T ferro_cheb($T x, $T lo, $T hi, const $T *c, int n) {
    $T t = (($T)2 * x - lo - hi) / (hi - lo), t2 = ($T)2 * t, b0 = ($T)0, b1 = ($T)0, b2;
    for (int i = n - 1; i >= 1; --i) { b2 = b1; b1 = b0; b0 = t2 * b1 - b2 + c[i]; }
    return c[0] + t * b0 - b1; }""")


def _series(name: str, arg: str) -> str:
    """C that evaluates series ``name`` of ``SERIES`` at the C expression ``arg`` (a block defining array c_NAME)."""
    lo, hi, n, coef = SERIES[name]
    return (f"const $T c_{name}[] = {{{coef}}};\n"
            f"    $T v_{name} = ferro_cheb({arg}, ($T){lo!r}, ($T){hi!r}, c_{name}, {n});")


def _bessel(name: str, body: str, *series: tuple[str, str]) -> Helper:
    blocks = "\n    ".join(_series(s, arg) for s, arg in series)
    return Helper(f"ferro_{name}", f"$FN $T ferro_{name}($T x) {{\n    {blocks}\n    {body} }}")


# Each Bessel helper evaluates its series first (at safe arguments) and then picks the answer.
_I0E = _bessel("i0e", "$T a = fabs(x); if (isnan(x)) return x; if (isinf(x)) return ($T)0;\n"
                      "    return a <= ($T)8 ? v_I0E_SMALL : v_I0E_LARGE / sqrt(a);",
               ("I0E_SMALL", "fmin(fabs(x), ($T)8)"), ("I0E_LARGE", "($T)8 / fmax(fabs(x), ($T)8)"))
_I1E = _bessel("i1e", "$T a = fabs(x); if (isnan(x)) return x; if (isinf(x)) return copysign(($T)0, x);\n"
                      "    $T r = a <= ($T)8 ? v_I1E_SMALL : v_I1E_LARGE / sqrt(a); return x < ($T)0 ? -r : r;",
               ("I1E_SMALL", "fmin(fabs(x), ($T)8)"), ("I1E_LARGE", "($T)8 / fmax(fabs(x), ($T)8)"))
_I0 = Helper("ferro_i0", "$FN $T ferro_i0($T x) { $T a = fabs(x); return isinf(a) ? NAN : ferro_i0e(a) * exp(a); }")
_I1 = Helper("ferro_i1", "$FN $T ferro_i1($T x) {\n"
             "    $T a = fabs(x); $T r = isinf(a) ? NAN : ferro_i1e(a) * exp(a); return x < ($T)0 ? -r : r; }")
_K_EDGES = "if (isnan(x) || x < ($T)0) return NAN; if (x == ($T)0) return INFINITY; if (isinf(x)) return ($T)0;\n    "
_K0E = _bessel("k0e", _K_EDGES + "$T s = x <= ($T)2 ? x : ($T)2;\n"
               "    return x <= ($T)2 ? (v_K0_SMALL - log(s / ($T)2) * ferro_i0(s)) * exp(s) : v_K0E_LARGE / sqrt(x);",
               ("K0_SMALL", "fmin(x * x, ($T)4)"), ("K0E_LARGE", "($T)2 / fmax(x, ($T)2)"))
_K1E = _bessel("k1e", _K_EDGES + "$T s = x <= ($T)2 ? x : ($T)2;\n"
               "    return x <= ($T)2 ? (v_K1_SMALL / s + log(s / ($T)2) * ferro_i1(s)) * exp(s)"
               " : v_K1E_LARGE / sqrt(x);",
               ("K1_SMALL", "fmin(x * x, ($T)4)"), ("K1E_LARGE", "($T)2 / fmax(x, ($T)2)"))
_K0 = Helper("ferro_k0", "$FN $T ferro_k0($T x) { $T r = ferro_k0e(x); return x > ($T)0 ? r * exp(-x) : r; }")
_K1 = Helper("ferro_k1", "$FN $T ferro_k1($T x) { $T r = ferro_k1e(x); return x > ($T)0 ? r * exp(-x) : r; }")
# J and Y: below 5 a series in x * x (Y less its logarithmic part); beyond, the amplitudes P and Q of
# cos(x - (2n + 1) pi / 4) and sin(...) in 5 / x: J = (P cos - Q sin) / sqrt(x), Y = (P sin + Q cos) / sqrt(x).
_PI = "($T)3.14159265358979323846"
_J0 = _bessel("j0", f"$T a = fabs(x); if (isnan(x) || isinf(x)) return NAN;\n"
                    f"    $T t = a - {_PI} / ($T)4;\n"
                    "    return a <= ($T)5 ? v_J0_SMALL : (v_J0_P * cos(t) - v_J0_Q * sin(t)) / sqrt(a);",
              ("J0_SMALL", "fmin(x * x, ($T)25)"), ("J0_P", "($T)5 / fmax(fabs(x), ($T)5)"),
              ("J0_Q", "($T)5 / fmax(fabs(x), ($T)5)"))
_J1 = _bessel("j1", f"$T a = fabs(x); if (isnan(x) || isinf(x)) return NAN;\n"
                    f"    $T t = a - ($T)3 * {_PI} / ($T)4;\n"
                    "    if (a <= ($T)5) return x * v_J1_SMALL;\n"
                    "    $T r = (v_J1_P * cos(t) - v_J1_Q * sin(t)) / sqrt(a); return x < ($T)0 ? -r : r;",
              ("J1_SMALL", "fmin(x * x, ($T)25)"), ("J1_P", "($T)5 / fmax(fabs(x), ($T)5)"),
              ("J1_Q", "($T)5 / fmax(fabs(x), ($T)5)"))
_Y_EDGES = ("if (isnan(x) || isinf(x) || x < ($T)0) return NAN; if (x == ($T)0) return -INFINITY;\n"
            "    $T s = fmin(x, ($T)5);\n")
_Y0 = _bessel("y0", _Y_EDGES + f"    $T t = x - {_PI} / ($T)4;\n"
              f"    return x <= ($T)5 ? v_Y0_SMALL + ($T)2 / {_PI} * log(s) * ferro_j0(s)"
              " : (v_J0_P * sin(t) + v_J0_Q * cos(t)) / sqrt(x);",
              ("Y0_SMALL", "fmin(x * x, ($T)25)"), ("J0_P", "($T)5 / fmax(x, ($T)5)"),
              ("J0_Q", "($T)5 / fmax(x, ($T)5)"))
_Y1 = _bessel("y1", _Y_EDGES + f"    $T t = x - ($T)3 * {_PI} / ($T)4;\n"
              f"    return x <= ($T)5 ? s * v_Y1_SMALL + ($T)2 / {_PI} * (log(s) * ferro_j1(s) - ($T)1 / s)"
              " : (v_J1_P * sin(t) + v_J1_Q * cos(t)) / sqrt(x);",
              ("Y1_SMALL", "fmin(x * x, ($T)25)"), ("J1_P", "($T)5 / fmax(x, ($T)5)"),
              ("J1_Q", "($T)5 / fmax(x, ($T)5)"))

# Airy's Ai: a series on [-4, 2]; beyond 2, exp(-z) x^(-1/4) times a series in (2 / x)^(3/2) (z = 2/3 x^(3/2)); below
# -4, (A sin(z + pi/4) + B cos(z + pi/4)) / (sqrt(pi) |x|^(1/4)) with A and B series in (4 / |x|)^(3/2).
_AIRY = _bessel("airy_ai", "if (isnan(x) || isinf(x)) return NAN;\n"
                "    if (x > ($T)2) return exp(($T)(-2.0 / 3) * x * sqrt(x)) * v_AI_POS / sqrt(sqrt(x));\n"
                "    if (x >= ($T)-4) return v_AI_MID;\n"
                f"    $T a = -x, t = ($T)(2.0 / 3) * a * sqrt(a) + {_PI} / ($T)4;\n"
                "    return (v_AI_NEG_A * sin(t) + v_AI_NEG_B * cos(t)) / (($T)1.7724538509055160273 * sqrt(sqrt(a)));",
                ("AI_MID", "fmin(fmax(x, ($T)-4), ($T)2)"), ("AI_POS", "pow(($T)2 / fmax(x, ($T)2), ($T)1.5)"),
                ("AI_NEG_A", "pow(($T)4 / fmax(-x, ($T)4), ($T)1.5)"),
                ("AI_NEG_B", "pow(($T)4 / fmax(-x, ($T)4), ($T)1.5)"))

#: op name -> (C expression, helpers)
BESSEL: dict[str, tuple[str, tuple[Helper, ...]]] = {
    "i0": ("ferro_i0(a)", (_CHEB, _I0E, _I0)), "i0e": ("ferro_i0e(a)", (_CHEB, _I0E)),
    "i1": ("ferro_i1(a)", (_CHEB, _I1E, _I1)), "i1e": ("ferro_i1e(a)", (_CHEB, _I1E)),
    "modified_bessel_k0": ("ferro_k0(a)", (_CHEB, _I0E, _I0, _K0E, _K0)),
    "modified_bessel_k1": ("ferro_k1(a)", (_CHEB, _I1E, _I1, _K1E, _K1)),
    "scaled_modified_bessel_k0": ("ferro_k0e(a)", (_CHEB, _I0E, _I0, _K0E)),
    "scaled_modified_bessel_k1": ("ferro_k1e(a)", (_CHEB, _I1E, _I1, _K1E)),
    "bessel_j0": ("ferro_j0(a)", (_CHEB, _J0)), "bessel_j1": ("ferro_j1(a)", (_CHEB, _J1)),
    "bessel_y0": ("ferro_y0(a)", (_CHEB, _J0, _Y0)), "bessel_y1": ("ferro_y1(a)", (_CHEB, _J1, _Y1)),
    "airy_ai": ("ferro_airy_ai(a)", (_CHEB, _AIRY)),
}

#: sin(x) / x, its Taylor series near 0 (no cancellation), 0 at +-inf.
SPHERICAL_J0 = Helper("ferro_spherical_j0", """\
$FN $T ferro_spherical_j0($T x) {
    if (isinf(x)) return ($T)0;
    if (fabs(x) < ($T)0.5) { $T z = x * x;
        return ($T)1 + z * (($T)(-1.0 / 6) + z * (($T)(1.0 / 120) + z * (($T)(-1.0 / 5040) + z * (($T)(1.0 / 362880)
            + z * ($T)(-1.0 / 39916800))))); }
    return sin(x) / x; }""")

# The orthogonal polynomials p_n(x) by their three-term recurrence p_{k+1} = (A x + B) p_k - C p_{k-1} from p_0 = 1
# and p_1; n is truncated to an integer (as PyTorch reads it) and a negative n gives 0.
_POLY = """\
$FN $T ferro_{name}($T x0, $T nf) {{
    if (isnan(x0) || isnan(nf)) return NAN;
    if (nf < ($T)0) return ($T)0;
    long n = (long)nf; $T x = {arg}; if (n == 0) return ($T)1;
    $T p = ($T)1, q = {p1};
    for (long k = 1; k < n; ++k) {{ $T r = {step}; p = q; q = r; }}
    return q; }}"""
#: name -> (p_1, p_{k+1} from q = p_k and p = p_{k-1})
_RECURRENCES = {
    "chebyshev_polynomial_t": ("x", "($T)2 * x * q - p"),
    "chebyshev_polynomial_u": ("($T)2 * x", "($T)2 * x * q - p"),
    "chebyshev_polynomial_v": ("($T)2 * x - ($T)1", "($T)2 * x * q - p"),
    "chebyshev_polynomial_w": ("($T)2 * x + ($T)1", "($T)2 * x * q - p"),
    "hermite_polynomial_h": ("($T)2 * x", "($T)2 * x * q - ($T)2 * ($T)k * p"),
    "hermite_polynomial_he": ("x", "x * q - ($T)k * p"),
    "laguerre_polynomial_l": ("($T)1 - x", "((($T)2 * ($T)k + ($T)1 - x) * q - ($T)k * p) / (($T)k + ($T)1)"),
    "legendre_polynomial_p": ("x", "((($T)2 * ($T)k + ($T)1) * x * q - ($T)k * p) / (($T)k + ($T)1)"),
}


def _polynomial(name: str, shifted: bool) -> tuple[str, tuple[Helper, ...]]:
    base = name.replace("shifted_", "")
    p1, step = _RECURRENCES[base]
    arg = "($T)2 * x0 - ($T)1" if shifted else "x0"
    return f"ferro_{name}(a, b)", (Helper(f"ferro_{name}", _POLY.format(name=name, arg=arg, p1=p1, step=step)),)


#: op name -> (C expression over a = x, b = n, helpers)
POLYNOMIALS: dict[str, tuple[str, tuple[Helper, ...]]] = {
    **{n: _polynomial(n, False) for n in _RECURRENCES},
    **{f"shifted_{n}": _polynomial(f"shifted_{n}", True) for n in _RECURRENCES if n.startswith("chebyshev")},
}

#: Hurwitz's zeta(x, q) = sum over k >= 0 of (q + k)^-x: the first terms summed until q + k > 9 (at least 9 of
#: them), then the Euler-Maclaurin tail with the Bernoulli numbers B_2j / (2j)! (j = 1..12).
ZETA = Helper("ferro_zeta", """\
$FN $T ferro_zeta($T x, $T q) {
    const $T bern[12] = {($T)(1.0 / 12), ($T)(-1.0 / 720), ($T)(1.0 / 30240), ($T)(-1.0 / 1209600),
        ($T)(1.0 / 47900160), ($T)(-691.0 / 1307674368000.0), ($T)(1.0 / 74724249600.0),
        ($T)(-3617.0 / 10670622842880000.0), ($T)(43867.0 / 5109094217170944000.0),
        ($T)(-174611.0 / 802857662698291200000.0), ($T)(854513.0 / 155112100433309859840000.0),
        ($T)(-236364091.0 / 1693824136731743669452800000.0)};
    const $T eps = ($T)1.1102230246251565e-16;
    if (isnan(x) || isnan(q)) return NAN;
    if (x == ($T)1) return INFINITY;
    if (x < ($T)1) return NAN;
    if (q <= ($T)0) { if (q == floor(q)) return INFINITY; if (x != floor(x)) return NAN; }
    $T s = pow(q, -x), a = q, b = ($T)0;
    int i = 0;
    while (i < 9 || a <= ($T)9) { i += 1; a += ($T)1; b = pow(a, -x); s += b; if (fabs(b) < eps * fabs(s)) return s; }
    $T w = a, f = ($T)1, k = ($T)0;
    s += b * w / (x - ($T)1) - ($T)0.5 * b;
    for (int j = 0; j < 12; ++j) {
        f *= x + k; b /= w; $T t = f * b * bern[j]; s += t;
        if (fabs(t) < eps * fabs(s)) break;
        k += ($T)1; f *= x + k; b /= w; k += ($T)1; }
    return s; }""")

#: P(a, x) and Q(a, x) = 1 - P: the power series of P where x < a + 1 (or x <= 1), else the continued fraction of
#: Q (modified Lentz), each scaled by x^a e^-x / Gamma(a) computed in logarithms.
_IGAM_PARTS = Helper("ferro_igam_parts", """\
$FN $T ferro_igam_parts($T a, $T x, int upper) {
    const $T eps = ($T)1.1102230246251565e-16, tiny = ($T)1e-30;
    if (isnan(a) || isnan(x) || a < ($T)0 || x < ($T)0) return NAN;
    if (a == ($T)0) { if (x > ($T)0) return upper ? ($T)0 : ($T)1; return NAN; }
    if (x == ($T)0) return upper ? ($T)1 : ($T)0;
    if (isinf(a)) { if (isinf(x)) return NAN; return upper ? ($T)1 : ($T)0; }
    if (isinf(x)) return upper ? ($T)0 : ($T)1;
    $T lead = a * log(x) - x - lgamma(a);
    if (x <= ($T)1 || x < a + ($T)1) {
        $T term = ($T)1 / a, sum = term, ap = a;
        for (int n = 0; n < 10000; ++n) { ap += ($T)1; term *= x / ap; sum += term; if (term < eps * sum) break; }
        $T p = sum * exp(lead); return upper ? ($T)1 - p : p; }
    $T b = x + ($T)1 - a, c = ($T)1 / tiny, d = ($T)1 / b, h = d;
    for (int i = 1; i < 10000; ++i) {
        $T an = -($T)i * (($T)i - a); b += ($T)2;
        d = an * d + b; if (fabs(d) < tiny) d = tiny;
        c = b + an / c; if (fabs(c) < tiny) c = tiny;
        d = ($T)1 / d; $T del = d * c; h *= del; if (fabs(del - ($T)1) < eps) break; }
    $T qv = exp(lead) * h; return upper ? qv : ($T)1 - qv; }""")
IGAMMA = ("ferro_igam_parts(a, b, 0)", (_IGAM_PARTS,))
IGAMMAC = ("ferro_igam_parts(a, b, 1)", (_IGAM_PARTS,))

#: exp(x^2) erfc(x): directly below 2, then the continued fraction 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + ...))));
#: for negative x, 2 exp(x^2) - erfcx(-x).
ERFCX = Helper("ferro_erfcx", """\
$FN $T ferro_erfcx($T x) {
    if (isnan(x)) return x;
    $T a = fabs(x), r;
    if (a < ($T)2) r = exp(a * a) * erfc(a);
    else if (isinf(a)) r = ($T)0;
    else { $T f = a; for (int k = 60; k >= 1; --k) f = a + ($T)(0.5 * k) / f;
        r = ($T)0.56418958354775628695 / f; }
    if (x >= ($T)0) return r;
    return (x < ($T)-26.7) ? INFINITY : ($T)2 * exp(x * x) - r; }""")
