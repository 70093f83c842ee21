"""Derivative rules as data: one entry per primitive (IR opcode, LLVM intrinsic, libm function),
giving the partial derivatives of its result with respect to each argument.

Forward mode forms the tangent  d_out = sum_i partial_i * d_in_i ; reverse mode accumulates
d_in_i += partial_i * d_out. Both read this one table, so adding a function (say `erf`) is one
line here. A partial is built with a Builder from the primal arguments `x` and the primal
result `r`; None means the result does not depend on that argument (an integer exponent,
say), and a function with all-None partials is piecewise constant (floor, round, ...)."""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from adgen.ir_ad.ir.builder import Builder, V
from adgen.ir_ad.ir import Type, intrinsic_family

Partials = Callable[[Builder, list[V], V], list[V | None]]


@dataclass(frozen=True)
class Rule:
    arity: int
    partials: Partials
    # For primitives of two arguments whose result is one of them (min, max): whether it is the
    # first, an i1 from the arguments and result. Both modes take the primitive for a select by
    # it (its tangent the chosen argument's; its adjoint to the chosen argument whole, the other an
    # exact zero, as a select's): no product, so a loop's chain of adjoints through max
    # (logsumexp's) is a select per iteration, not a multiply and a select. Reverse mode asks for
    # the choice, a byte to store where the arguments would be words.
    choice: Callable[[Builder, list[V], V], V] | None = None
    # A derivative written by hand: the reverse sweep stores the function's result rather than
    # call it again, and the rule refuses derivatives flowing into a parameter it takes as const
    # (`refuse` gets which arguments carry derivatives and says what is wrong, or None).
    recompute: bool = True
    refuse: Callable[[list[bool]], str | None] | None = None
    # About what computing the primitive costs, in instructions (libm's exp, tanh...: tens), for the
    # cache plan's trade of time against memory: a result whose computation costs COST_PER_BYTE or
    # more per byte of it is stored rather than computed again by the reverse sweep (plan/keys.py).
    cost: int = 1
    # Whether a partial is a zero chosen by comparison (the argument min/max did not pick): that
    # argument's own partials may be infinite or NaN there, and must not reach the derivative
    # (masked.py, and forward mode's product with this partial).
    masks: bool = False
    # The primitive of the same argument whose value this one's partial is (sin's is cos, cos's is
    # -sin), which LLVM computes with it in one call (sincos). The reverse sweep takes the partial
    # from the primal's call of it where there is one (sweeps/adjoints.py); where there is none it
    # computes the partner itself, and computing this primitive again there costs all but nothing
    # (plan/costs.py).
    partner: str | None = None
    # Partials that are all quotients by one value (fdiv's, 1 / b and -r / b): `over(b, x, r)` gives
    # that divisor and the numerators (None: no dependence). Where the result is at hand (other
    # partials asked for it) and no argument is a constant, the reverse sweep divides the adjoint
    # by it once, where the adjoint arrives, and scales the numerators by that quotient, as a
    # backward pass written by hand does (d / b, then -(d / b) * r): the division is then off the
    # path of the primal's own, which the reciprocal 1 / b, computed beside it, delays (bundle
    # adjustment's u = X / Z: 1.06 to 1.02 of Enzyme's time). Elsewhere the partials are better: a
    # norm's x[i] / |x| needs no quotient again, only 1 / |x|, once; 1 / x is that reciprocal
    # itself. Forward mode uses `partials`.
    over: Callable[[Builder, list[V], V], tuple[V, list[V | None]]] | None = None


def _c(b: Builder, like: V, value: float) -> V:
    return b.const(like.type, value)


def _recip(b, x):  # 1 / x
    return b.fdiv(_c(b, x, 1.0), x)


def _quotient(b, x, r):
    """a / b: 1 / b, and -a / b^2 as -r * (1 / b) where the quotient r is at hand (Builder.at_hand:
    forward mode's), else as -a * (1 / b) * (1 / b)."""
    inv = _recip(b, x[1])
    return [inv, b.fneg(b.fmul(_quotient_again(b, x, r), inv))]


def _quotient_again(b, x, r):
    """a / b, for a partial: r where it is at hand (bundle adjustment's u = X / Z, which the
    reverse sweep has for u * u), else a * (1 / b): not a division per element where it is not (a
    norm's x[i] / |x|, whose 1 / |x| is computed once)."""
    return r if b.at_hand is not None and b.at_hand(r) else b.fmul(x[0], _recip(b, x[1]))


def _half_reciprocal(b, r):
    """sqrt's partial, 0.5 / r; 0.5 * (1 / r) where the code divides 1 by r too (GradBench's
    particle, `1 / dist`, whose derivative has 1 / r as well: `divides_one_by`): LLVM computes 1 / r
    once (EarlyCSE), a division fewer. Halving is exact: the value is the same."""
    if b.divides is not None and b.divides(r):
        return b.fmul(_recip(b, r), _c(b, r, 0.5))
    return b.fdiv(_c(b, r, 0.5), r)


def divides_one_by(fn, inst) -> bool:
    """Whether the block computing `inst` (of function `fn`) divides 1 by its result (`1 / sqrt(...)`)."""
    block = next((b for b in fn.blocks if any(i is inst for i in b.instructions)), None)
    return block is not None and any(i.opcode == "fdiv" and i.operands[1].value == inst.result and
                                     is_one(i.operands[0].value) for i in block.instructions)


def is_one(constant: str) -> bool:
    try:
        return float(constant) == 1.0
    except ValueError:
        return False


def _one_minus_sq(b, x):  # 1 - x*x
    return b.fsub(_c(b, x, 1.0), b.fmul(x, x))


def _first_won(b, x, r):  # min/max: whether the result is the first argument
    return b.fcmp("oeq", r, x[0])


def _by_winner(b, first, like):
    """min/max: the argument the result came from gets the whole derivative (ties: the first)."""
    one, zero = _c(b, like, 1.0), _c(b, like, 0.0)
    return [b.select(first, one, zero), b.select(first, zero, one)]


def _pick_by_result(b, x, r):
    return _by_winner(b, _first_won(b, x, r), r)


def _min_max() -> "Rule":
    return Rule(2, _pick_by_result, _first_won, masks=True)


def _sign(b, x):  # -1, 0 or 1
    zero = _c(b, x, 0.0)
    pos = b.select(b.fcmp("ogt", x, zero), _c(b, x, 1.0), zero)
    return b.select(b.fcmp("olt", x, zero), _c(b, x, -1.0), pos)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf_slope(b, x):  # 2/sqrt(pi) * exp(-x^2)
    return b.fmul(_c(b, x, _TWO_OVER_SQRT_PI), b.math("exp", b.fneg(b.fmul(x, x))))


# psi(y) ~ log y - 1/(2y) - sum B_2k / (2k y^2k), k = 1..6: below 1e-11 relative error for y >= 6
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760)


def _digamma(b, x):
    """psi(x) = Gamma'(x)/Gamma(x), straight-line: reflected to x >= 0.5 (psi(1-x) - pi cot(pi x)),
    moved up by six (psi(y) = psi(y+6) - sum 1/(y+k)), then the asymptotic series."""
    half, one = _c(b, x, 0.5), _c(b, x, 1.0)
    low = b.fcmp("olt", x, half)
    y = b.select(low, b.fsub(one, x), x)
    shift = _c(b, x, 0.0)
    for k in range(6):
        shift = b.fadd(shift, _recip(b, b.fadd(y, _c(b, x, float(k)))))
    z = b.fadd(y, _c(b, x, 6.0))
    inv2 = _recip(b, b.fmul(z, z))
    series, power = _c(b, x, 0.0), inv2
    for coefficient in _DIGAMMA_SERIES:
        series = b.fadd(series, b.fmul(_c(b, x, coefficient), power))
        power = b.fmul(power, inv2)
    psi = b.fsub(b.fsub(b.fsub(b.math("log", z), b.fdiv(half, z)), series), shift)
    pi = _c(b, x, math.pi)
    cot = _recip(b, b.math("tan", b.fmul(pi, x)))
    return b.select(low, b.fsub(psi, b.fmul(pi, cot)), psi)


def _rem(b, x, r):  # x - trunc(x/y)*y
    return [_c(b, r, 1.0), b.fneg(b.math("trunc", b.fdiv(x[0], x[1])))]


def _remainder(b, x, r):  # x - n*y, n = x/y rounded to the nearest integer, ties to even
    return [_c(b, r, 1.0), b.fneg(b.math("roundeven", b.fdiv(x[0], x[1])))]


def _fdim(b, x, r):  # x - y where x > y, else 0
    above, one, zero = b.fcmp("ogt", x[0], x[1]), _c(b, r, 1.0), _c(b, r, 0.0)
    return [b.select(above, one, zero), b.select(above, _c(b, r, -1.0), zero)]


def _mantissa(b, x, r):  # frexp(x, &e) = x * 2^-e: r/x (exactly 2^-e), 1 at x = 0; nothing for &e
    zero = b.fcmp("oeq", x[0], _c(b, r, 0.0))
    return [b.select(zero, _c(b, r, 1.0), b.fdiv(r, x[0])), None]


def _scaled(b, x, r):  # ldexp(x, n) = x * 2^n: 2^n, and nothing for the integer n
    return [b.math("ldexp", _c(b, r, 1.0), x[1]), None]


COST_PER_BYTE = 2  # (see Rule.cost)

R = Rule
RULES: dict[str, Rule] = {
    # IR opcodes
    "fadd": R(2, lambda b, x, r: [_c(b, r, 1.0), _c(b, r, 1.0)]),
    "fsub": R(2, lambda b, x, r: [_c(b, r, 1.0), _c(b, r, -1.0)]),
    "fmul": R(2, lambda b, x, r: [x[1], x[0]]),
    "fdiv": R(2, _quotient, over=lambda b, x, r: (x[1], [_c(b, r, 1.0), b.fneg(_quotient_again(b, x, r))])),
    "frem": R(2, lambda b, x, r: _rem(b, x, r)),
    "fneg": R(1, lambda b, x, r: [_c(b, r, -1.0)]),
    # powers and roots
    "sqrt": R(1, lambda b, x, r: [_half_reciprocal(b, r)]),
    "cbrt": R(1, lambda b, x, r: [b.fdiv(r, b.fmul(_c(b, r, 3.0), x[0]))], cost=30),
    "pow": R(2, lambda b, x, r: [b.fmul(x[1], b.math("pow", x[0], b.fsub(x[1], _c(b, r, 1.0)))),
                                 b.fmul(r, b.math("log", x[0]))], cost=60),
    "powi": R(2, lambda b, x, r: [b.fmul(b.cast("sitofp", x[1], r.type),
                                         b.powi(x[0], b.binary("sub", x[1], V(x[1].type, "1")))), None]),
    "hypot": R(2, lambda b, x, r: [b.fdiv(x[0], r), b.fdiv(x[1], r)], cost=20),
    "fma": R(3, lambda b, x, r: [x[1], x[0], _c(b, r, 1.0)]),
    "ldexp": R(2, _scaled),
    "scalbn": R(2, _scaled),
    "frexp": R(2, _mantissa),
    "fmuladd": R(3, lambda b, x, r: [x[1], x[0], _c(b, r, 1.0)]),
    # exponentials and logarithms
    "exp": R(1, lambda b, x, r: [r], cost=25),
    "exp2": R(1, lambda b, x, r: [b.fmul(r, _c(b, r, math.log(2.0)))], cost=25),
    "exp10": R(1, lambda b, x, r: [b.fmul(r, _c(b, r, math.log(10.0)))], cost=30),
    "expm1": R(1, lambda b, x, r: [b.fadd(r, _c(b, r, 1.0))], cost=30),
    "log": R(1, lambda b, x, r: [_recip(b, x[0])], cost=25),
    "log2": R(1, lambda b, x, r: [_recip(b, b.fmul(x[0], _c(b, r, math.log(2.0))))], cost=25),
    "log10": R(1, lambda b, x, r: [_recip(b, b.fmul(x[0], _c(b, r, math.log(10.0))))], cost=25),
    "log1p": R(1, lambda b, x, r: [_recip(b, b.fadd(x[0], _c(b, r, 1.0)))], cost=30),
    # trigonometric and hyperbolic
    "sin": R(1, lambda b, x, r: [b.math("cos", x[0])], cost=40, partner="cos"),
    "cos": R(1, lambda b, x, r: [b.fneg(b.math("sin", x[0]))], cost=40, partner="sin"),
    "tan": R(1, lambda b, x, r: [b.fadd(_c(b, r, 1.0), b.fmul(r, r))], cost=50),
    "asin": R(1, lambda b, x, r: [_recip(b, b.math("sqrt", _one_minus_sq(b, x[0])))], cost=40),
    "acos": R(1, lambda b, x, r: [b.fneg(_recip(b, b.math("sqrt", _one_minus_sq(b, x[0]))))], cost=40),
    "atan": R(1, lambda b, x, r: [_recip(b, b.fadd(_c(b, r, 1.0), b.fmul(x[0], x[0])))], cost=40),
    "atan2": R(2, lambda b, x, r: (lambda d: [b.fdiv(x[1], d), b.fneg(b.fdiv(x[0], d))])(
        b.fadd(b.fmul(x[0], x[0]), b.fmul(x[1], x[1]))), cost=50),
    "sinh": R(1, lambda b, x, r: [b.math("cosh", x[0])], cost=40),
    "cosh": R(1, lambda b, x, r: [b.math("sinh", x[0])], cost=40),
    "tanh": R(1, lambda b, x, r: [b.fsub(_c(b, r, 1.0), b.fmul(r, r))], cost=40),
    "asinh": R(1, lambda b, x, r: [_recip(b, b.math("sqrt", b.fadd(b.fmul(x[0], x[0]), _c(b, r, 1.0))))], cost=50),
    "acosh": R(1, lambda b, x, r: [_recip(b, b.math("sqrt", b.fsub(b.fmul(x[0], x[0]), _c(b, r, 1.0))))], cost=50),
    "atanh": R(1, lambda b, x, r: [_recip(b, _one_minus_sq(b, x[0]))], cost=40),
    # special functions
    "erf": R(1, lambda b, x, r: [_erf_slope(b, x[0])], cost=40),
    "erfc": R(1, lambda b, x, r: [b.fneg(_erf_slope(b, x[0]))], cost=40),
    "lgamma": R(1, lambda b, x, r: [_digamma(b, x[0])], cost=80),
    "tgamma": R(1, lambda b, x, r: [b.fmul(r, _digamma(b, x[0]))], cost=80),
    # piecewise
    "fabs": R(1, lambda b, x, r: [_sign(b, x[0])]),
    "copysign": R(2, lambda b, x, r: [b.fmul(_sign(b, x[0]), b.math("copysign", _c(b, r, 1.0), x[1])), None]),
    "fmod": R(2, lambda b, x, r: _rem(b, x, r)),
    "remainder": R(2, _remainder),
    "fdim": R(2, _fdim, masks=True),
    "minnum": _min_max(),
    "maxnum": _min_max(),
    "floor": R(1, lambda b, x, r: [None]),
    "ceil": R(1, lambda b, x, r: [None]),
    "trunc": R(1, lambda b, x, r: [None]),
    "round": R(1, lambda b, x, r: [None]),
    "roundeven": R(1, lambda b, x, r: [None]),
    "rint": R(1, lambda b, x, r: [None]),
    "nearbyint": R(1, lambda b, x, r: [None]),
    "logb": R(1, lambda b, x, r: [None]),
    "nextafter": R(2, lambda b, x, r: [_c(b, r, 1.0), None]),  # the next number: x's own slope
    # Integer intrinsics, on integers that carry a float's bits where they were loaded from
    # memory holding floats (adgen's own tape, differentiated again): no derivative.
    **{name: R(2, lambda b, x, r: [None, None]) for name in ("umin", "umax", "smin", "smax")},
    **{name: R(1, lambda b, x, r: [None]) for name in ("ctpop", "bswap", "bitreverse")},
    # (and on lengths read beside pointers to floats: Rust's slices' and vectors')
    **{name: R(2, lambda b, x, r: [None, None]) for name in (
        "uadd.sat", "usub.sat", "sadd.sat", "ssub.sat", "ushl.sat", "sshl.sat", "abs", "ctlz", "cttz",
        "uadd.with.overflow", "usub.with.overflow", "sadd.with.overflow", "ssub.with.overflow",
        "umul.with.overflow", "smul.with.overflow")},
    **{name: R(3, lambda b, x, r: [None, None, None]) for name in ("fshl", "fshr")},
}
# Other spellings of the same primitives.
ALIASES = {"fmin": "minnum", "fmax": "maxnum", "minimum": "minnum", "maximum": "maxnum", "minimumnum": "minnum",
           "maximumnum": "maxnum"}


# Rules for the functions of the sources given derivatives by hand (@derivative), by IR name:
# set for the duration of one build (see `written_by_hand`).
_WRITTEN: dict[str, Rule] = {}


@contextmanager
def written_by_hand(rules: dict[str, Rule]):
    _WRITTEN.update(rules)
    try:
        yield
    finally:
        _WRITTEN.clear()


def hand_rule(function: str, partials: str, active: tuple[bool, ...], names: list[str], what: str) -> Rule:
    """The rule of a function with a derivative written by hand: `partials(args…, k)` gives
    the partial with respect to its k-th active parameter."""
    def partials_of(b, x, r):
        out, k = [], 0
        for on in active:
            out.append(b.call(partials, r.type, [*x, V(Type("i32", "int", 32), str(k))]) if on else None)
            k += on
        return out

    def refuse(carrying: list[bool]) -> str | None:
        for on, carries, name in zip(active, carrying, names):
            if carries and not on:
                return (f"a call to '{function.lstrip('@')}', whose derivative written by hand ({what}) takes "
                        f"'{name}' as const, but a derivative flows into it here")
        return None

    return Rule(len(active), partials_of, recompute=False, refuse=refuse)


def rule_for(callee: str) -> Rule | None:
    """The rule for a call target: `@llvm.sin.f64`, `@sin`, `@sinf`, `@llvm.powi.f64.i32`, ..."""
    if callee in _WRITTEN:
        return _WRITTEN[callee]
    return RULES.get(primitive(callee))


def primitive(callee: str) -> str:
    """The name of the primitive a call target computes, as RULES names it: `@llvm.sin.f64`,
    `@sin` and `@sinf` are all `sin`."""
    family = intrinsic_family(callee)
    name = family or callee.lstrip("@").strip('"')
    if family is None and name not in RULES and name not in ALIASES and name.endswith("f"):
        name = name[:-1]  # sinf -> sin, fminf -> fmin
    return ALIASES.get(name, name)
