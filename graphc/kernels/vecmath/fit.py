"""Offline derivation of the polynomial coefficients used by `vecmath` (not imported at run time).

Each polynomial is a weighted least-squares fit, in 60-digit mpmath arithmetic, on Chebyshev
nodes of the reduced interval; the weight is the factor by which a coefficient error reaches the
final result, so the fit minimises the error that matters (near-minimax on Chebyshev nodes).
`python3 -m graphc.kernels.vecmath.fit` prints every table with its worst weighted error after
rounding the coefficients to the target precision; `python3 -m graphc.kernels.vecmath.fit PATH`
writes them to PATH as the module `coeffs.py`.
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 60


def fit(g, weight, lo, hi, degree, nodes=None):
    """Coefficients c0..c_degree of sum c_k t**k ~ g(t) on [lo, hi], weighted by weight(t)."""
    n = nodes or 4 * (degree + 1)
    ts = [mp.mpf(lo) + (mp.mpf(hi) - lo) * (1 - mp.cos(mp.pi * (i + 0.5) / n)) / 2
          for i in range(n)]
    a = mp.matrix(n, degree + 1)
    b = mp.matrix(n, 1)
    for i, t in enumerate(ts):
        w = weight(t)
        for k in range(degree + 1):
            a[i, k] = w * t ** k
        b[i] = w * g(t)
    coeffs, _ = mp.qr_solve(a, b)
    return [coeffs[k] for k in range(degree + 1)]


def fit_fixed_first(g, weight, lo, hi, degree, cast):
    """Like `fit`, with c0 fixed to cast(g(0)) and c1..c_degree fitted to what that rounding
    leaves: for a leading coefficient like -1/6, whose float32 rounding error alone would
    dominate the error when t reaches 2.5 (sin on |r| <= pi/2)."""
    c0 = mp.mpf(float(cast(g(mp.mpf(0)))))
    rest = fit(lambda t: (g(t) - c0) / t, lambda t: weight(t) * t, lo, hi, degree - 1)
    return [c0] + rest


def worst(g, weight, lo, hi, coeffs, cast, samples=2000):
    """Largest weighted error of the coefficients rounded by `cast` (np.float32/np.float64)."""
    cs = [mp.mpf(float(cast(c))) for c in coeffs]
    err = 0
    for i in range(samples + 1):
        t = mp.mpf(lo) + (mp.mpf(hi) - lo) * i / samples
        if t == 0:
            continue
        approx = sum(c * t ** k for k, c in enumerate(cs))
        err = max(err, abs(weight(t) * (approx - g(t))))
    return err


def _series_safe(f, t0=mp.mpf("1e-30")):
    return lambda t: f(t if t != 0 else t0)


def _erfcx_about(center):
    return lambda t: mp.erfc(t + center) * mp.exp((t + center) ** 2)


def _erfc_weight(center):
    return lambda t: mp.exp(-(t + center) ** 2)


_SQ = mp.sqrt
FIXED_FIRST = {"sin_pi"}          # tables fitted by fit_fixed_first
# name -> (g, weight, lo, hi, {dtype: degree}); each table is stored as NAME_F32 / NAME_F64
TABLES = {
    # exp(r) = 1 + r + r^2 P(r), |r| <= ln2/2; error reaches exp through r^2
    "exp": (_series_safe(lambda r: (mp.exp(r) - 1 - r) / r ** 2), lambda r: r ** 2 / mp.exp(r),
            -mp.log(2) / 2, mp.log(2) / 2, {np.float32: 5, np.float64: 10}),
    # log1p(f) = f - f^2/2 + s (f^2/2 + z P(z)), s = f/(2+f), z = s^2 <= ((sqrt2-1)/(sqrt2+1))^2
    "log": (_series_safe(lambda z: (2 * mp.atanh(_SQ(z)) / _SQ(z) - 2) / z),
            lambda z: z / 2, 0, ((_SQ(2) - 1) / (_SQ(2) + 1)) ** 2,
            {np.float32: 3, np.float64: 7}),
    # tanh(x) = x + x^3 P(x^2), |x| < 0.625; relative error reaches tanh through x^2
    "tanh": (_series_safe(lambda u: (mp.tanh(_SQ(u)) - _SQ(u)) / (u * _SQ(u))),
             lambda u: u, 0, mp.mpf("0.625") ** 2, {np.float32: 5, np.float64: 11}),
    # sin(r) = r + r^3 P(r^2), |r| <= pi/4
    "sin": (_series_safe(lambda u: (mp.sin(_SQ(u)) - _SQ(u)) / (u * _SQ(u))),
            lambda u: u, 0, (mp.pi / 4) ** 2, {np.float32: 3, np.float64: 6}),
    # sin(r) = r + r^3 P(r^2), |r| <= pi/2 (reduction by pi: no cos polynomial needed);
    # c0 fixed to float32(-1/6) (fit_fixed_first)
    "sin_pi": (_series_safe(lambda u: (mp.sin(_SQ(u)) - _SQ(u)) / (u * _SQ(u))),
               lambda u: u, 0, (mp.pi / 2) ** 2, {np.float32: 4}),
    # cos(r) = 1 - r^2/2 + r^4 P(r^2), |r| <= pi/4
    "cos": (_series_safe(lambda u: (mp.cos(_SQ(u)) - 1 + u / 2) / u ** 2),
            lambda u: u ** 2, 0, (mp.pi / 4) ** 2, {np.float32: 3, np.float64: 6}),
    # erf(x) = x + x P(x^2), |x| < 0.875 (relative)
    "erf_small": (_series_safe(lambda u: mp.erf(_SQ(u)) / _SQ(u) - 1), lambda u: 1,
                  0, mp.mpf("0.875") ** 2, {np.float32: 5, np.float64: 10}),
    # erfc(a) = exp(-a^2) P(a - center) for a in [lo, hi]: the erfc term reaches erf = 1 - erfc
    # weighted by exp(-a^2). float32 uses one piece up to 4 (erfc(4) < 2^-25); float64 two
    # pieces up to 6 (erfc(6) < 2^-54), selected per lane.
    "erfc": (_erfcx_about(2.4375), _erfc_weight(2.4375), 0.875 - 2.4375, 4 - 2.4375,
             {np.float32: 9}),
    "erfc_near": (_erfcx_about(1.6875), _erfc_weight(1.6875), 0.875 - 1.6875, 2.5 - 1.6875,
                  {np.float64: 18}),
    "erfc_far": (_erfcx_about(4.25), _erfc_weight(4.25), 2.5 - 4.25, 6 - 4.25,
                 {np.float64: 12}),
}


def tables():
    """{"EXP_F32": (coefficients as float32...), ...} with each table's worst weighted error."""
    out = {}
    for name, (g, w, lo, hi, degrees) in TABLES.items():
        for cast, degree in degrees.items():
            cs = (fit_fixed_first(g, w, lo, hi, degree, cast) if name in FIXED_FIRST
                  else fit(g, w, lo, hi, degree))
            suffix = "_F32" if cast is np.float32 else "_F64"
            out[name.upper() + suffix] = ([float(cast(c)) for c in cs],
                                          worst(g, w, lo, hi, cs, cast, 500))
    return out


def _round53(v):
    m, e = mp.frexp(v)
    return float(mp.ldexp(mp.nint(mp.ldexp(m, 53)), e - 53))


def _trig_constants():
    """2/pi as a 400-bit integer (Payne-Hanek tables are built from it at import) and pi/2 as
    three float64 parts (each the float64 nearest to what the previous ones leave)."""
    with mp.workdps(200):
        two_over_pi = int(mp.floor(2 / mp.pi * mp.mpf(2) ** 400))
    p1 = _round53(mp.pi / 2)
    p2 = _round53(mp.pi / 2 - p1)
    p3 = _round53(mp.pi / 2 - p1 - p2)
    digits = f"{two_over_pi:x}"
    parts = [f'    "{digits[i:i + 64]}"' for i in range(0, len(digits), 64)]
    return ["# floor(2/pi * 2**400)", "TWO_OVER_PI_2_400 = int(", *parts, "    , 16)",
            f"PIO2_F64 = ({p1!r}, {p2!r}, {p3!r})"]


def main(path=None):
    """Print, or write to `path` as a Python module, every table with its worst error."""
    lines = ['"""Polynomial coefficients for `vecmath`; generated, do not edit:',
             "python3 -m graphc.kernels.vecmath.fit graphc/kernels/vecmath/coeffs.py", '"""',
             "import numpy as np", ""]
    for name, (coeffs, err) in tables().items():
        cast = "np.float32" if name.endswith("_F32") else "np.float64"
        lines.append(f"# worst weighted error after rounding: {mp.nstr(err, 3)}")
        lines.append(f"{name} = tuple({cast}(c) for c in (")
        lines += [f"    {c!r}," for c in coeffs]
        lines.append("))")
    lines += _trig_constants()
    text = "\n".join(lines) + "\n"
    if path:
        with open(path, "w") as f:
            f.write(text)
    else:
        print(text)


if __name__ == "__main__":
    import sys
    main(sys.argv[1] if len(sys.argv) > 1 else None)
