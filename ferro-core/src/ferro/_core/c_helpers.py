"""The C helper functions of ferro's own elementwise expressions, written once for OpenCL C and CUDA C.

Each is a :class:`~ferro._core.expr.Helper` (``$FN`` the dialect's function
qualifier, ``$T`` the compute type, ``$ERR`` the error-flag pointer type);
the ops' records in ``ferro/_ops/elementwise.py`` name the ones they call.
Edge values follow PyTorch (which follows NumPy / SciPy where they agree).
"""

from __future__ import annotations

from .expr import Helper

__all__ = ["FREM", "FFLOORDIV", "IREM", "IFLOORDIV", "IPOW", "LOGADDEXP", "SIGMOID", "DIGAMMA", "ERFINV"]

#: Python's % for floats: the result takes the sign of the divisor.
FREM = Helper("ferro_frem", """\
$FN $T ferro_frem($T a, $T b) {
    $T r = fmod(a, b); return (r != ($T)0 && ((r < ($T)0) != (b < ($T)0))) ? r + b : r; }""")

#: Python's // for floats (as PyTorch: the quotient of fmod, rounded, with the sign of a / b at 0).
FFLOORDIV = Helper("ferro_ffloordiv", """\
$FN $T ferro_ffloordiv($T a, $T b) {
    if (b == ($T)0) return a / b;
    $T m = fmod(a, b); $T d = (a - m) / b;
    if (m != ($T)0 && ((b < ($T)0) != (m < ($T)0))) d -= ($T)1;
    if (d == ($T)0) return copysign(($T)0, a / b);
    $T f = floor(d); return (d - f > ($T)0.5) ? f + ($T)1 : f; }""")

#: Integer division by zero cannot raise in a kernel: it sets *err to 2 (ZeroDivisionError at the next
#: synchronization) and gives 0.
IREM = Helper("ferro_irem", """\
$FN $T ferro_irem($T a, $T b, $ERR err) {
    if (b == 0) { *err = 2; return 0; }
    $T r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }""")

IFLOORDIV = Helper("ferro_ifloordiv", """\
$FN $T ferro_ifloordiv($T a, $T b, $ERR err) {
    if (b == 0) { *err = 2; return 0; }
    $T q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }""")

#: Integer power by squaring; a negative exponent gives 0 except for bases 1 and -1 (as PyTorch).
IPOW = Helper("ferro_ipow", """\
$FN $T ferro_ipow($T a, $T b) {
    if (b < 0) return (a == 1) ? 1 : (a == -1 ? ((b & 1) ? a : 1) : 0);
    $T r = 1; while (b) { if (b & 1) r *= a; a *= a; b >>= 1; } return r; }""")

LOGADDEXP = Helper("ferro_logaddexp", """\
$FN $T ferro_logaddexp($T a, $T b) {
    if (a == b) return a + log(($T)2);
    $T m = fmax(a, b); return isnan(m) ? a + b : m + log1p(exp(-fabs(a - b))); }""")

#: Stable on both tails: exp of a non-positive number never overflows.
SIGMOID = Helper("ferro_sigmoid", """\
$FN $T ferro_sigmoid($T a) {
    if (a >= ($T)0) return ($T)1 / (($T)1 + exp(-a));
    $T e = exp(a); return e / (($T)1 + e); }""")

#: Reflection below 0, recurrence up to 6, then the asymptotic series (SciPy's edge values).
DIGAMMA = Helper("ferro_digamma", """\
$FN $T ferro_digamma($T x) {
    if (isnan(x) || x == -INFINITY) return NAN;
    if (x == ($T)0) return signbit(x) ? INFINITY : -INFINITY;
    $T r = 0;
    if (x < ($T)0) {
        if (x == floor(x)) return NAN;
        const $T pi = ($T)3.14159265358979323846; r = -pi / tan(pi * x); x = ($T)1 - x; }
    while (x < ($T)6) { r -= ($T)1 / x; x += ($T)1; }
    const $T f = ($T)1 / (x * x);
    return r + log(x) - ($T)0.5 / x - f * (($T)(1.0 / 12) - f * (($T)(1.0 / 120) - f * (($T)(1.0 / 252) -
        f * (($T)(1.0 / 240) - f * ($T)(1.0 / 132))))); }""")

#: Giles' approximation refined by two Newton steps on erf (full precision in float and double).
ERFINV = Helper("ferro_erfinv", """\
$FN $T ferro_erfinv($T y) {
    if (y <= ($T)-1) return y == ($T)-1 ? -INFINITY : NAN;
    if (y >= ($T)1) return y == ($T)1 ? INFINITY : NAN;
    $T w = -log((($T)1 - y) * (($T)1 + y)), p;
    if (w < ($T)5) { w -= ($T)2.5; p = ($T)2.81022636e-08; p = ($T)3.43273939e-07 + p * w;
        p = ($T)-3.5233877e-06 + p * w; p = ($T)-4.39150654e-06 + p * w; p = ($T)0.00021858087 + p * w;
        p = ($T)-0.00125372503 + p * w; p = ($T)-0.00417768164 + p * w; p = ($T)0.246640727 + p * w;
        p = ($T)1.50140941 + p * w; }
    else { w = sqrt(w) - ($T)3; p = ($T)-0.000200214257; p = ($T)0.000100950558 + p * w;
        p = ($T)0.00134934322 + p * w; p = ($T)-0.00367342844 + p * w; p = ($T)0.00573950773 + p * w;
        p = ($T)-0.0076224613 + p * w; p = ($T)0.00943887047 + p * w; p = ($T)1.00167406 + p * w;
        p = ($T)2.83297682 + p * w; }
    $T x = p * y;
    for (int i = 0; i < 2; ++i) x -= (erf(x) - y) / (($T)1.1283791670955126 * exp(-x * x));
    return x; }""")
