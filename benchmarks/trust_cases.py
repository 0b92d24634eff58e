"""Trust cases: bad and edge-case inputs against jaxpriv's API, command line and study files, classified.

Each case is a small function that feeds one bad or edge-case input (issue 23, "Trust", and more of
the same kinds) to the public API, the ``jaxpriv`` command or a study file, and the outcome is put in
one class:

* ``clear ValueError``: a ``ValueError`` raised by jaxpriv before the engine compiled anything, whose
  message names the argument (for the command line: exit code 2, one ``error:`` line, no traceback);
* ``handled correctly``: a valid edge input that gives the right number (checked against a reference);
* ``silently wrong``: a number returned that is wrong for what was asked (a private run equal to the
  non-private one, a resumed run that mixes two configurations, a truncated checkpoint, ...);
* ``NaN/inf``: a NaN or inf result and no error;
* ``deep failure``: any other exception (``TypeError``, a JAX/XLA error, ``BadZipFile``, a
  ``ValueError`` from inside JAX or not naming the argument, a traceback from the command line);
* ``n/a (API absent)``: a case that calls an API that the checkout under test lacks (an
  ``AttributeError`` / ``TypeError`` / unknown-option ``ValueError`` for a call that is valid now).

Horizons are at most 64 and seeds at most 8: the whole catalogue runs in a few minutes on 2 cores.
The script prints a table (``--markdown`` for a markdown table) with one row per case (case,
expected class, outcome class, the first line of the error or the value) and a count per class.

Run it on the current tree and on an older checkout (the same script; the cases use calls that exist
in both where possible, and classify a missing API as ``n/a``)::

    cd /work/main && .venv/bin/python benchmarks/trust_cases.py --markdown
    git -C /work/main worktree add /tmp/probe_old b713e7b
    cd /tmp/probe_old && PYTHONPATH=/tmp/probe_old /work/main/.venv/bin/python \\
        /work/main/benchmarks/trust_cases.py --markdown
    git -C /work/main worktree remove --force /tmp/probe_old

The command-line cases run ``python -m jaxpriv`` in a subprocess with the imported jaxpriv's folder
first on ``PYTHONPATH``, so they test the same checkout. ``--only WORD`` runs the cases whose name
contains WORD; ``--json FILE`` writes the rows for comparing two checkouts.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("JAX_TRACEBACK_FILTERING", "off")  # keep JAX's frames: where an error was raised matters

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

import jaxpriv as jp
from jaxpriv import bandits, envs, mechanisms, oco, sets

CLEAR = "clear ValueError"
HANDLED = "handled correctly"
WRONG = "silently wrong"
NONFINITE = "NaN/inf"
DEEP = "deep failure"
ABSENT = "n/a (API absent)"
CLASSES = (CLEAR, HANDLED, WRONG, NONFINITE, DEEP, ABSENT)

T = 32
BALL = sets.l2_ball(3)
CENTER = np.array([0.3, 0.2, -0.1], np.float32)


def _env_params(**kw) -> envs.QuadraticParams:
    return envs.QuadraticParams(**({"strong_convexity": 1.0, "center": CENTER, "spread": 0.3} | kw))


# --- the catalogue ----------------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    expected: str
    fn: Callable[[], tuple[str, str]]
    names: tuple[str, ...]  # a clear ValueError's message contains one of these (case-insensitive)
    new_api: bool  # the call exists only in newer checkouts: an absent API is "n/a"


CASES: list[Case] = []


def case(name: str, expected: str, names: tuple[str, ...] = (), new_api: bool = False):
    def register(fn: Callable[[], tuple[str, str]]) -> Callable[[], tuple[str, str]]:
        CASES.append(Case(name, expected, fn, names, new_api))
        return fn

    return register


# --- helpers ------------------------------------------------------------------------------------------------


def _engine_cache() -> int:
    """Compiled entries of every jitted function jaxpriv's modules hold (the engine's, the mechanisms')."""
    total = 0
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("jaxpriv") or mod is None:
            continue
        for value in list(vars(mod).values()):
            size = getattr(value, "_cache_size", None)
            if callable(size):
                with contextlib.suppress(Exception):
                    total += int(size())
    return total


_BASELINE = [0]


def arm() -> None:
    """The call under test comes next: compiles before this point (set-up, references) do not count."""
    _BASELINE[0] = _engine_cache()


def _fmt(x) -> str:
    a = np.asarray(x)
    if a.size == 1:
        v = a.item()
        return f"{v:.6g}" if isinstance(v, float) else repr(v)
    shape = f" (shape {a.shape})" if a.ndim > 1 else ""
    with np.printoptions(precision=4, threshold=6, edgeitems=2):
        return np.array2string(a.ravel(), separator=", ").replace("\n", " ") + shape


def _nonfinite(*xs) -> bool:
    return any(not np.all(np.isfinite(np.asarray(x, np.float64))) for x in xs if x is not None)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    line = text.splitlines()[0] if text else ""
    return f"{type(err).__name__}: {line}" if line else type(err).__name__


def _raised_in_jaxpriv(err: BaseException) -> bool:
    tb = err.__traceback__
    last = None
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return last is not None and f"{os.sep}jaxpriv{os.sep}" in last


def _run(learner, env, lp, ep, key=0, horizon=T, checkpoints=None):
    return jp.run(learner, env, jp.SimParams(lp, ep), key, horizon, checkpoints)


def _sweep(learner, env, lp, ep, key=0, horizon=T, seeds=4, **kw):
    return jp.sweep(learner, env, jp.SimParams(lp, ep), key, horizon, seeds=seeds, **kw)


def _final(res) -> np.ndarray:
    return np.asarray(res.regret, np.float64)[..., -1]


def _value(x, expected, what: str = "", atol: float = 1e-6, rtol: float = 1e-6) -> tuple[str, str]:
    """A number returned for a valid input: right (``expected``), NaN/inf, or wrong."""
    got = np.asarray(x, np.float64)
    want = np.asarray(expected, np.float64)
    detail = f"{what}{_fmt(got)}"
    if got.shape == want.shape and np.allclose(got, want, atol=atol, rtol=rtol, equal_nan=False):
        return HANDLED, detail
    if _nonfinite(got) and not _nonfinite(want):
        return NONFINITE, detail
    return WRONG, f"{detail} (expected {_fmt(want)})"


def _returned(x, why: str) -> tuple[str, str]:
    """A number returned for an input that should have been refused: NaN/inf, or silently wrong (``why``)."""
    if _nonfinite(x):
        return NONFINITE, f"returned {_fmt(x)}"
    return WRONG, f"returned {_fmt(x)}: {why}"


def _pftal_params(**kw):
    return oco.PFTALParams(**({"epsilon": 1.0, "lipschitz": 2.0, "strong_convexity": 1.0} | kw))


def _gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """Balle & Wang 2018, Thm 8: δ(ε) = Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ), in float64 (log space)."""
    a = sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
    b = -sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
    la, lb = scipy.special.log_ndtr(a), scipy.special.log_ndtr(b)
    return float(math.exp(la) * -math.expm1(min(epsilon + lb - la, 0.0)))


# --- 1. a budget of another family, or none: privacy silently off ---------------------------------------------


@case("pftal gaussian + PFTALParams(epsilon=1)", CLEAR, ("rho",))
def _():
    learner, env = oco.pftal(T, BALL, noise="gaussian"), envs.quadratic_stream(BALL)
    ftal = _final(_sweep(oco.ftal(BALL, T), env, oco.FTALParams(1.0), _env_params()))
    arm()
    got = _final(_sweep(learner, env, _pftal_params(epsilon=1.0), _env_params()))
    if np.array_equal(got, ftal):
        return WRONG, f"regret equals FTAL's bit for bit (mean {got.mean():.4g}): no noise at all"
    return _returned(got.mean(), "a Gaussian tree run at a budget it does not use")


@case("pftal gamma + PFTALParams(rho=1)", CLEAR, ("epsilon",))
def _():
    learner, env = oco.pftal(T, BALL, noise="gamma"), envs.quadratic_stream(BALL)
    ftal = _final(_sweep(oco.ftal(BALL, T), env, oco.FTALParams(1.0), _env_params()))
    arm()
    got = _final(_sweep(learner, env, oco.PFTALParams(rho=1.0, lipschitz=2.0), _env_params()))
    if np.array_equal(got, ftal):
        return WRONG, f"regret equals FTAL's bit for bit (mean {got.mean():.4g}): no noise at all"
    return _returned(got.mean(), "a gamma tree run at a budget it does not use")


@case("pftal gamma + PFTALParams() (no budget)", CLEAR, ("epsilon",))
def _():
    learner, env = oco.pftal(T, BALL), envs.quadratic_stream(BALL)
    ftal = _final(_sweep(oco.ftal(BALL, T), env, oco.FTALParams(1.0), _env_params()))
    arm()
    got = _final(_sweep(learner, env, oco.PFTALParams(lipschitz=2.0), _env_params()))
    if np.array_equal(got, ftal):
        return WRONG, f"regret equals FTAL's bit for bit (mean {got.mean():.4g}): a default that means no privacy"
    return _returned(got.mean(), "a private learner run at a budget nobody gave")


def _prefix_case(noise: str, params) -> tuple[str, str]:
    xs = np.asarray(jax.random.uniform(jax.random.key(1), (8, 2)), np.float32) * 0.5
    tree = mechanisms.binary_tree(8, 2, noise)
    arm()
    got = np.asarray(mechanisms.prefix_sums(tree, params, xs, jax.random.key(0)))
    if np.allclose(got, np.cumsum(xs, 0), atol=1e-5):
        return WRONG, f"releases equal the exact cumsum (last {_fmt(got[-1])}): no noise"
    return _returned(got[-1], "noise at a budget the family does not use")


@case("prefix_sums gaussian tree + TreeParams(epsilon=1)", CLEAR, ("rho",))
def _():
    return _prefix_case("gaussian", mechanisms.TreeParams(epsilon=1.0))


@case("prefix_sums gamma tree + TreeParams(rho=1)", CLEAR, ("epsilon",))
def _():
    return _prefix_case("gamma", mechanisms.TreeParams(rho=1.0))


@case("prefix_sums laplace tree + TreeParams() (no budget)", CLEAR, ("epsilon",))
def _():
    return _prefix_case("laplace", mechanisms.TreeParams())


@case("window_tree gamma + WindowTreeParams() (no budget)", CLEAR, ("epsilon",))
def _():
    xs = np.full((16, 2), 0.25, np.float32)
    tree = mechanisms.window_tree(16, 2, 4, "gamma")
    arm()
    got = np.asarray(mechanisms.prefix_sums(tree, mechanisms.WindowTreeParams(), xs, jax.random.key(0)))
    if np.allclose(got, np.cumsum(xs, 0), atol=1e-5):
        return WRONG, f"releases equal the exact cumsum (last {_fmt(got[-1])}): a default that means no privacy"
    return _returned(got[-1], "a budget nobody gave")


@case("window_tree gaussian + WindowTreeParams(epsilon=1) (no delta)", CLEAR, ("delta",))
def _():
    xs = np.full((16, 2), 0.25, np.float32)
    tree = mechanisms.window_tree(16, 2, 4, "gaussian")
    arm()
    state = tree.init(jax.random.key(0), mechanisms.WindowTreeParams(epsilon=1.0))
    got = np.asarray(mechanisms.prefix_sums(tree, mechanisms.WindowTreeParams(epsilon=1.0), xs, jax.random.key(0)))
    if np.allclose(got, np.cumsum(xs, 0), atol=1e-5):
        return WRONG, "releases equal the exact cumsum: no noise"
    if _nonfinite(got):
        return NONFINITE, f"returned {_fmt(got[-1])}"
    return WRONG, f"ran (node sigma {float(state.scale):.4g}) at a delta the call never gave (the params default)"


@case("wdp_cocop gamma + WDPParams() (no budget)", CLEAR, ("epsilon",))
def _():
    learner, env = oco.wdp_cocop(T, BALL, 8), envs.quadratic_stream(BALL)
    ref = _final(_sweep(learner, env, oco.WDPParams(epsilon=float("inf")), _env_params()))
    arm()
    got = _final(_sweep(learner, env, oco.WDPParams(), _env_params()))
    if np.array_equal(got, ref):
        return WRONG, f"regret equals the explicit epsilon=inf run bit for bit (mean {got.mean():.4g})"
    return _returned(got.mean(), "a budget nobody gave")


@case("mi_ogd + MIOGDParams() (no budget)", CLEAR, ("mutual_information",))
def _():
    learner, env = oco.mi_ogd(BALL, T), envs.quadratic_stream(BALL)
    ref = _final(_sweep(learner, env, oco.MIOGDParams(mutual_information=float("inf")), _env_params()))
    arm()
    got = _final(_sweep(learner, env, oco.MIOGDParams(), _env_params()))
    if np.array_equal(got, ref):
        return WRONG, f"regret equals the explicit mutual_information=inf run bit for bit (mean {got.mean():.4g})"
    return _returned(got.mean(), "a budget nobody gave")


@case("adac_ucb + AdaCUCBParams() (no budget)", CLEAR, ("rho",))
def _():
    means = (0.9, 0.5, 0.1)
    arm()
    res = _run(bandits.adac_ucb(3, T), envs.bernoulli_bandit(3), bandits.AdaCUCBParams(), envs.BernoulliParams(means))
    got = _final(res)
    if _nonfinite(got):
        return NONFINITE, f"returned {_fmt(got)}"
    return WRONG, f"ran (regret {_fmt(got)}) at rho={bandits.AdaCUCBParams().rho!r}, a budget the call never gave"


# --- 2. study files and the command line with a Gaussian tree and an epsilon grid --------------------------------

STUDY = """
name = "trust"
horizon = {horizon}
seeds = 8
chunk = 4
checkpoints = [8, 16]
{extra}
[set]
kind = "l2_ball"
dim = 2

[learner]
name = "{learner}"
{noise}
[learner.params]
{budget}
lipschitz = 2.0

[env]
name = "quadratic_stream"
[env.params]
center = [0.3, 0.3]
"""


def _study(folder: Path, name: str = "trust.toml", budget: str = "epsilon = [0.3, 1.0]", **kw) -> Path:
    path = folder / name
    text = STUDY.format(
        horizon=kw.get("horizon", T),
        extra=kw.get("extra", ""),
        noise=kw.get("noise", ""),
        budget=budget,
        learner=kw.get("learner", "pftal"),
    )
    path.write_text(text)
    return path


@case("study: gaussian pftal, epsilon grid (run_study)", CLEAR, ("epsilon", "rho"))
def _():
    from jaxpriv.experiments import study

    with tempfile.TemporaryDirectory() as d:
        path = _study(Path(d), noise='noise = "gaussian"')
        arm()
        with contextlib.redirect_stdout(io.StringIO()):
            res = study.run_study(path, Path(d) / "out", progress=False)
        regret = np.asarray(res.regret)
    if np.array_equal(regret[0], regret[1]):
        return WRONG, "ran; both epsilon grid points give the same regret bit for bit: no noise at either"
    return _returned(regret[:, :, -1].mean(1), "an epsilon grid on a Gaussian tree")


def _cli(args: list[str], cwd: str) -> subprocess.CompletedProcess:
    root = str(Path(jp.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.setdefault("JAX_PLATFORMS", "cpu")
    cmd = [sys.executable, "-m", "jaxpriv", *args, "--no-compile-cache", "--cpu-devices", "1"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=cwd, env=env)


def _cli_outcome(out: subprocess.CompletedProcess, names: tuple[str, ...]) -> tuple[str, str] | None:
    """Exit 2 with one ``error:`` line naming the argument is clear; 0 is ``None`` (the case decides)."""
    err = out.stderr
    lines = [line for line in err.splitlines() if line.strip()]
    if out.returncode == 0:
        return None
    errors = [line for line in lines if "error:" in line]
    last = lines[-1].strip() if lines else "(no stderr)"
    if out.returncode == 2 and "Traceback" not in err and len(errors) == 1:
        if any(n.lower() in errors[0].lower() for n in names):
            return CLEAR, errors[0].strip()
        return DEEP, f"exit 2, but the error does not name the argument: {errors[0].strip()}"
    return DEEP, f"exit {out.returncode}: {last}" + (" (traceback)" if "Traceback" in err else "")


@case("CLI: jaxpriv sweep gaussian-pftal epsilon-grid study", CLEAR, ("epsilon", "rho"))
def _():
    with tempfile.TemporaryDirectory() as d:
        path = _study(Path(d), noise='noise = "gaussian"')
        out = _cli(["sweep", str(path), "--out", str(Path(d) / "out"), "--no-progress"], d)
        outcome = _cli_outcome(out, ("epsilon", "rho"))
        if outcome is not None:
            return outcome
        with np.load(Path(d) / "out" / "results.npz") as z:
            regret = np.asarray(z["regret"])
    if np.array_equal(regret[0], regret[1]):
        return WRONG, "exit 0; both epsilon grid points give the same regret bit for bit: no noise at either"
    return _returned(regret[:, :, -1].mean(1), "an epsilon grid on a Gaussian tree")


# --- 3. calibration and sensitivity: the claimed guarantee ----------------------------------------------------


@case("window_tree gaussian composition, eps=10, delta=1e-5: true delta", HANDLED, ("calibration", "epsilon"))
def _():
    horizon, window, eps, delta = 64, 8, 10.0, 1e-5
    k_w = mechanisms.window_depth(window, horizon)
    tree = mechanisms.window_tree(horizon, 1, window, "gaussian", calibration="composition")
    arm()
    state = tree.init(jax.random.key(0), mechanisms.WindowTreeParams(epsilon=eps, delta=delta, sensitivity=1.0))
    sigma = float(state.scale)
    true = _gaussian_delta(sigma, math.sqrt(k_w), eps)
    detail = f"sigma={sigma:.5g}, k_W={k_w}: exact delta(eps=10) = {true:.3g}"
    if not math.isfinite(sigma):
        return NONFINITE, detail
    return (HANDLED, detail + " <= 1e-5") if true <= delta * (1 + 1e-9) else (WRONG, detail + " > 1e-5 claimed")


@case("window_tree gaussian composition, eps=1, delta=1e-5: true delta", HANDLED, ("calibration",))
def _():
    horizon, window, eps, delta = 64, 8, 1.0, 1e-5
    k_w = mechanisms.window_depth(window, horizon)
    tree = mechanisms.window_tree(horizon, 1, window, "gaussian", calibration="composition")
    arm()
    state = tree.init(jax.random.key(0), mechanisms.WindowTreeParams(epsilon=eps, delta=delta, sensitivity=1.0))
    sigma = float(state.scale)
    true = _gaussian_delta(sigma, math.sqrt(k_w), eps)
    detail = f"sigma={sigma:.5g}, k_W={k_w}: exact delta(eps=1) = {true:.3g}"
    return (HANDLED, detail + " <= 1e-5") if true <= delta * (1 + 1e-9) else (WRONG, detail + " > 1e-5 claimed")


@case("window_tree gaussian paper calibration, eps=5000, delta=1e-5 (W=1)", CLEAR, ("calibration",))
def _():
    horizon, window, eps, delta = 64, 1, 5000.0, 1e-5
    k_w = mechanisms.window_depth(window, horizon)
    tree = mechanisms.window_tree(horizon, 1, window, "gaussian", calibration="paper")
    params = mechanisms.WindowTreeParams(epsilon=eps, delta=delta, sensitivity=1.0)
    arm()
    tree.check(params)
    state = tree.init(jax.random.key(0), params)
    sigma = float(state.scale)
    true = _gaussian_delta(sigma, math.sqrt(k_w), eps)
    detail = f"accepted: sigma={sigma:.4g}, k_W={k_w}: exact delta(eps) = {true:.3g}"
    return (HANDLED, detail) if true <= delta else (WRONG, detail + " > 1e-5 claimed")


def _wdp_scale(build, constraint, tree_of) -> tuple[str, str]:
    """The default sensitivity rule of a WDP learner against the replace-one calibration 2L·k_W/ε (gamma)."""
    horizon, window, eps, lip, mu = T, 8, 1.0, 1.0, 0.1
    k_w = mechanisms.window_depth(window, horizon)
    learner = build(horizon, constraint, window)
    arm()
    state = learner.init(jax.random.key(0), oco.WDPParams(epsilon=eps, lipschitz=lip, strong_convexity=mu))
    scale = float(tree_of(state).scale)
    want = 2 * lip * k_w / eps
    add_remove = (lip + mu * float(constraint.diameter)) * k_w / eps
    if scale >= want * (1 - 1e-6):
        return HANDLED, f"tree scale {scale:.4g} = 2L*k_W/eps (replace-one)"
    loss = 2 * lip / (lip + mu * float(constraint.diameter)) * eps
    what = "k_W(L+muD)/eps (add/remove)" if math.isclose(scale, add_remove, rel_tol=1e-5) else "below 2L*k_W/eps"
    return WRONG, f"tree scale {scale:.4g} = {what}, not {want:.4g}: replace-one privacy loss {loss:.3g} > eps={eps}"


@case("wdp_cocop default sensitivity vs replace-one (Def. 4)", HANDLED, ("sensitivity",))
def _():
    return _wdp_scale(oco.wdp_cocop, sets.l2_ball(3), lambda s: s.tree)


@case("wdp_cocol default sensitivity vs replace-one (Def. 4)", HANDLED, ("sensitivity",))
def _():
    return _wdp_scale(oco.wdp_cocol, sets.l1_ball(3), lambda s: s.grads)


@case("wdp_cocop sensitivity='paper_add_remove': add/remove scale", HANDLED, ("sensitivity",), new_api=True)
def _():
    horizon, window, eps, lip, mu = T, 8, 1.0, 1.0, 0.1
    k_w = mechanisms.window_depth(window, horizon)
    learner = oco.wdp_cocop(horizon, BALL, window, sensitivity="paper_add_remove")
    state = learner.init(jax.random.key(0), oco.WDPParams(epsilon=eps, lipschitz=lip, strong_convexity=mu))
    return _value(float(state.tree.scale), (lip + mu * 2.0) * k_w / eps, "tree scale ")


# --- 4. accounting --------------------------------------------------------------------------------------------


@case("dp_to_zcdp(-1.0)", CLEAR, ("epsilon",))
def _():
    return _returned(mechanisms.dp_to_zcdp(-1.0), "a negative epsilon has no zCDP")


@case("dp_to_zcdp(nan)", CLEAR, ("epsilon",))
def _():
    return _returned(mechanisms.dp_to_zcdp(float("nan")), "NaN is no budget")


@case("dp_to_zcdp('1.0')", CLEAR, ("epsilon",))
def _():
    return _returned(mechanisms.dp_to_zcdp("1.0"), "a string is no budget")


@case("dp_to_zcdp(inf) = inf (explicit limit)", HANDLED, ("epsilon",))
def _():
    got = float(mechanisms.dp_to_zcdp(float("inf")))
    return (HANDLED, "inf") if got == float("inf") else (WRONG, f"returned {got}")


@case("zcdp_to_dp(1, delta=1)", CLEAR, ("delta",))
def _():
    return _returned(mechanisms.zcdp_to_dp(1.0, 1.0), "delta=1 is no guarantee")


@case("zcdp_to_dp(1, delta=0)", CLEAR, ("delta",))
def _():
    return _returned(mechanisms.zcdp_to_dp(1.0, 0.0), "delta=0 is not reachable from zCDP")


@case("zcdp_to_dp(1, delta=1.5)", CLEAR, ("delta",))
def _():
    return _returned(mechanisms.zcdp_to_dp(1.0, 1.5), "delta > 1")


@case("zcdp_to_dp(1, delta=-0.1)", CLEAR, ("delta",))
def _():
    return _returned(mechanisms.zcdp_to_dp(1.0, -0.1), "delta < 0")


@case("zcdp_to_dp(1, delta=nan)", CLEAR, ("delta",))
def _():
    return _returned(mechanisms.zcdp_to_dp(1.0, float("nan")), "NaN delta")


@case("zcdp_to_dp(rho=-1, delta=1e-5)", CLEAR, ("rho",))
def _():
    return _returned(mechanisms.zcdp_to_dp(-1.0, 1e-5), "a negative rho")


@case("zcdp_to_dp(0.5, 1e-5) (valid)", HANDLED, ("rho",))
def _():
    want = 0.5 + 2 * math.sqrt(0.5 * math.log(1e5))
    return _value(mechanisms.zcdp_to_dp(0.5, 1e-5), want, rtol=1e-5)


@case("gaussian_stddev(rho=-1, 1.0)", CLEAR, ("rho",))
def _():
    return _returned(mechanisms.gaussian_stddev(-1.0, 1.0), "a negative rho")


@case("zcdp_to_dp_tight(0.5, 1e-5) < closed form", HANDLED, ("rho",), new_api=True)
def _():
    tight = float(mechanisms.zcdp_to_dp_tight(0.5, 1e-5))
    closed = float(mechanisms.zcdp_to_dp(0.5, 1e-5))
    if 0 < tight < closed:
        return HANDLED, f"{tight:.5g} < {closed:.5g}"
    return _returned(tight, f"not below the closed form {closed:.5g}")


@case("analytic_gaussian_sigma(10, 1e-5): exact delta", HANDLED, ("epsilon",), new_api=True)
def _():
    sigma = float(mechanisms.analytic_gaussian_sigma(10.0, 1e-5))
    true = _gaussian_delta(sigma, 1.0, 10.0)
    detail = f"sigma={sigma:.5g}, exact delta {true:.3g}"
    return (HANDLED, detail) if 0.5e-5 <= true <= 1e-5 * (1 + 1e-9) else (WRONG, detail)


@case("mechanisms.budget_field('gaussian')", HANDLED, ("noise",), new_api=True)
def _():
    got = mechanisms.budget_field("gaussian")
    return (HANDLED, repr(got)) if got == "rho" else (WRONG, repr(got))


# --- 5. edges ---------------------------------------------------------------------------------------------------


@case("pftal gamma eps=1e-25 vs eps=1e-10: mean regret", HANDLED, ("epsilon",))
def _():
    learner, env = oco.pftal(T, BALL, "gamma"), envs.quadratic_stream(BALL)
    arm()
    regret = _final(_sweep(learner, env, _pftal_params(epsilon=np.array([1e-25, 1e-10])), _env_params(), seeds=8))
    tiny, small = regret.mean(1)
    detail = f"mean regret {tiny:.4g} (1e-25) vs {small:.4g} (1e-10)"
    if _nonfinite(regret):
        return NONFINITE, detail
    return (WRONG, detail + ": more noise, far less regret") if tiny < 0.5 * small else (HANDLED, detail)


@case("pftal gamma eps=1e-50", CLEAR, ("epsilon",))
def _():
    learner, env = oco.pftal(T, BALL, "gamma"), envs.quadratic_stream(BALL)
    ref = _final(_sweep(learner, env, _pftal_params(epsilon=1e-10), _env_params(), seeds=8)).mean()
    arm()
    got = _final(_sweep(learner, env, _pftal_params(epsilon=1e-50), _env_params(), seeds=8))
    if _nonfinite(got):
        return NONFINITE, f"returned mean regret {got.mean():.4g}"
    detail = f"mean regret {got.mean():.4g} vs {ref:.4g} at 1e-10"
    return (WRONG, detail + " (1e-50 is 0 in float32)") if got.mean() < 0.5 * ref else (HANDLED, detail)


@case("l2_ball(3).project([1e20, 0, 0])", HANDLED, ())
def _():
    return _value(BALL.project(jnp.array([1e20, 0.0, 0.0])), [1.0, 0.0, 0.0])


@case("l2_ball(3, 3).project([3.4e38]*3)", HANDLED, ())
def _():
    want = np.full(3, 3.0 / math.sqrt(3.0))
    return _value(sets.l2_ball(3, 3.0).project(jnp.full(3, 3.4e38)), want, rtol=2e-6)


@case("l2_ball(3).linear_oracle([1e-30, 0, 0])", HANDLED, ())
def _():
    return _value(BALL.linear_oracle(jnp.array([1e-30, 0.0, 0.0])), [-1.0, 0.0, 0.0])


@case("simplex(3).project([1e20, 0, 0])", HANDLED, ())
def _():
    return _value(sets.simplex(3).project(jnp.array([1e20, 0.0, 0.0])), [1.0, 0.0, 0.0])


@case("l1_ball(3).project([1e20, 0, 0])", HANDLED, ())
def _():
    return _value(sets.l1_ball(3).project(jnp.array([1e20, 0.0, 0.0])), [1.0, 0.0, 0.0])


@case("mechanisms.clip_l2([1e20, 0, 0], 1)", HANDLED, ())
def _():
    return _value(mechanisms.clip_l2(jnp.array([1e20, 0.0, 0.0]), jnp.float32(1.0)), [1.0, 0.0, 0.0])


@case("l2_ball(3, radius=1e39)", CLEAR, ("radius",))
def _():
    ball = sets.l2_ball(3, 1e39)
    return _returned(np.float32(ball.diameter), "the radius is inf in the engine's float32")


@case("key 2**32 vs key 0 (ogd run)", HANDLED, ("key",))
def _():
    learner, env = oco.ogd(BALL), envs.quadratic_stream(BALL)
    a = np.asarray(_run(learner, env, oco.OGDParams(), _env_params(), key=2**32, horizon=8).loss)
    b = np.asarray(_run(learner, env, oco.OGDParams(), _env_params(), key=0, horizon=8).loss)
    if np.array_equal(a, b):
        return WRONG, "seed 2**32 gives seed 0's numbers bit for bit"
    return HANDLED, "different streams"


@case("key 2**64 (out of range)", CLEAR, ("key",))
def _():
    res = _run(oco.ogd(BALL), envs.quadratic_stream(BALL), oco.OGDParams(), _env_params(), key=2**64, horizon=8)
    return _returned(_final(res), "a seed outside [0, 2**64)")


@case("key '7' (a string)", CLEAR, ("key",))
def _():
    res = _run(oco.ogd(BALL), envs.quadratic_stream(BALL), oco.OGDParams(), _env_params(), key="7", horizon=8)
    return _returned(_final(res), "a string seed")


def _ckpt_run(checkpoints):
    arm()
    return _run(oco.ogd(BALL), envs.quadratic_stream(BALL), oco.OGDParams(), _env_params(), 0, 10, checkpoints)


@case("checkpoints [5.7, 10]", CLEAR, ("checkpoints",))
def _():
    steps = np.asarray(_ckpt_run([5.7, 10]).steps)
    return WRONG, f"ran at steps {steps.tolist()}: 5.7 truncated"


@case("checkpoints 5 (an int)", CLEAR, ("checkpoints",))
def _():
    steps = np.asarray(_ckpt_run(5).steps)
    return WRONG, f"ran at steps {steps.tolist()}"


@case("checkpoints [nan, 10]", CLEAR, ("checkpoints",))
def _():
    steps = np.asarray(_ckpt_run([float("nan"), 10]).steps)
    return WRONG, f"ran at steps {steps.tolist()}"


@case("checkpoints [5, 3, 10] (unsorted)", CLEAR, ("checkpoints",))
def _():
    steps = np.asarray(_ckpt_run([5, 3, 10]).steps)
    return WRONG, f"ran at steps {steps.tolist()}: reordered, column 0 is not step 5"


@case("checkpoints [3, 3, 10] (repeated)", CLEAR, ("checkpoints",))
def _():
    steps = np.asarray(_ckpt_run([3, 3, 10]).steps)
    return WRONG, f"ran at steps {steps.tolist()}: three columns asked"


@case("checkpoints [0, 10] (step 0)", CLEAR, ("checkpoints",))
def _():
    res = _ckpt_run([0, 10])
    return _returned(np.asarray(res.regret), f"ran at steps {np.asarray(res.steps).tolist()}")


@case("checkpoints np.array([2, 5]) (valid)", HANDLED, ("checkpoints",))
def _():
    res = _ckpt_run(np.array([2, 5]))
    steps = np.asarray(res.steps).tolist()
    if steps != [2, 5, 10]:
        return WRONG, f"steps {steps}"
    full = _run(oco.ogd(BALL), envs.quadratic_stream(BALL), oco.OGDParams(), _env_params(), 0, 10)
    return _value(np.asarray(res.regret), np.asarray(full.regret)[[1, 4, 9]], "regret ", atol=1e-5)


@case("QuadraticParams(center=[nan, 0, 0])", CLEAR, ("center",))
def _():
    arm()
    res = _run(oco.ogd(BALL), envs.quadratic_stream(BALL), oco.OGDParams(), _env_params(center=[np.nan, 0.0, 0.0]))
    return _returned(_final(res), "NaN center")


@case("QuadraticParams(spread=nan)", CLEAR, ("spread",))
def _():
    arm()
    res = _run(oco.ogd(BALL), envs.quadratic_stream(BALL), oco.OGDParams(), _env_params(spread=float("nan")))
    return _returned(_final(res), "NaN spread")


@case("QuadraticParams(center=[inf, 0, 0])", CLEAR, ("center",))
def _():
    arm()
    res = _run(oco.ogd(BALL), envs.quadratic_stream(BALL), oco.OGDParams(), _env_params(center=[np.inf, 0.0, 0.0]))
    return _returned(_final(res), "inf center")


def _arms_case(policy_arms: int, env_arms: int) -> tuple[str, str]:
    means = tuple(float(m) for m in np.linspace(0.1, 0.9, env_arms))  # the best arm last
    arm()
    res = _run(
        bandits.ucb(policy_arms), envs.bernoulli_bandit(env_arms), bandits.UCBParams(), envs.BernoulliParams(means)
    )
    regret = _final(res)
    if _nonfinite(regret):
        return NONFINITE, f"regret {_fmt(regret)}"
    bad = int(np.asarray(res.nonfinite_steps)) if res.nonfinite_steps is not None else 0
    if bad:
        return WRONG, f"ran: {bad} of {T} steps played a missing arm and were left out of the regret {regret:.4g}"
    return WRONG, f"ran: regret {regret:.4g} of a {policy_arms}-arm policy on {env_arms} arms"


@case("ucb(5) on a 3-arm bernoulli bandit", CLEAR, ("arm",))
def _():
    return _arms_case(5, 3)


@case("ucb(3) on a 5-arm bernoulli bandit", CLEAR, ("arm",))
def _():
    return _arms_case(3, 5)


XS = np.asarray(jax.random.uniform(jax.random.key(1), (8, 2)), np.float32) * 0.5  # norms <= 0.71: never clipped


def _prefix(xs, horizon: int = 8, dim: int = 2, **kw):
    tree = mechanisms.binary_tree(horizon, dim, "gamma")
    arm()
    return mechanisms.prefix_sums(tree, mechanisms.TreeParams(epsilon=float("inf")), xs, jax.random.key(0), **kw)


@case("prefix_sums xs of dim 3 on a dim-2 tree", CLEAR, ("xs", "dim"))
def _():
    got = np.asarray(_prefix(np.ones((8, 3), np.float32)))
    return _returned(got[-1], f"a [8, 3] stream released as shape {got.shape}")


@case("prefix_sums xs with zero rows", CLEAR, ("xs", "T >= 1"))
def _():
    got = np.asarray(_prefix(np.zeros((0, 2), np.float32)))
    return WRONG, f"returned an array of shape {got.shape} for an empty stream"


@case("prefix_sums xs of strings", CLEAR, ("xs",))
def _():
    return _returned(np.asarray(_prefix(np.full((8, 2), "a"))), "a string stream")


@case("prefix_sums xs longer than the horizon", CLEAR, ("horizon", "stream length"))
def _():
    return _returned(np.asarray(_prefix(np.ones((16, 2), np.float32))), "16 inputs to an 8-step tree")


@case("prefix_sums with a NaN input (eps=inf)", HANDLED, ("xs",))
def _():
    xs = XS.copy()
    xs[3, 0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = np.asarray(_prefix(xs))
    zeroed = XS.copy()
    zeroed[3] = 0.0
    return _value(got, np.cumsum(zeroed, 0), "releases (the stream with the NaN input zeroed) ", atol=1e-5)


@case("prefix_sums with an inf input (eps=inf)", HANDLED, ("xs",))
def _():
    xs = XS.copy()
    xs[2, 1] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = np.asarray(_prefix(xs))
    zeroed = XS.copy()
    zeroed[2] = 0.0
    return _value(got, np.cumsum(zeroed, 0), "releases ", atol=1e-5)


@case("prefix_sums(..., with_nonfinite=True)", HANDLED, ("xs",), new_api=True)
def _():
    xs = XS.copy()
    xs[3, 0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _prefix(xs, with_nonfinite=True)
    n = int(got.nonfinite_inputs)
    return (HANDLED, "nonfinite_inputs = 1") if n == 1 else (WRONG, f"nonfinite_inputs = {n}")


@case("binary_tree TreeParams(sensitivity=-1)", CLEAR, ("sensitivity",))
def _():
    tree = mechanisms.binary_tree(8, 2, "gamma")
    arm()
    got = mechanisms.prefix_sums(tree, mechanisms.TreeParams(epsilon=1.0, sensitivity=-1.0), XS, 0)
    return _returned(np.asarray(got)[-1], "a negative clip bound")


@case("binary_tree(8, 2, noise='gausian') (typo)", CLEAR, ("noise",))
def _():
    mechanisms.binary_tree(8, 2, "gausian")
    return WRONG, "built a tree with an unknown noise family"


@case("window_tree gaussian WindowTreeParams(delta=1.5)", CLEAR, ("delta",))
def _():
    tree = mechanisms.window_tree(16, 2, 4, "gaussian")
    arm()
    xs = np.full((16, 2), 0.25, np.float32)
    got = mechanisms.prefix_sums(tree, mechanisms.WindowTreeParams(epsilon=1.0, delta=1.5), xs, 0)
    return _returned(np.asarray(got)[-1], "delta >= 1")


@case("window_tree W=6 < T=16 (not a power of two)", CLEAR, ("window",))
def _():
    mechanisms.window_tree(16, 2, 6)
    return WRONG, "built with a window that is not a power of two"


@case("pftal eps=inf equals ftal (explicit limit)", HANDLED, ("epsilon",))
def _():
    env = envs.quadratic_stream(BALL)
    ftal = _final(_sweep(oco.ftal(BALL, T), env, oco.FTALParams(1.0), _env_params()))
    got = _final(_sweep(oco.pftal(T, BALL), env, _pftal_params(epsilon=float("inf")), _env_params()))
    if np.array_equal(got, ftal):
        return HANDLED, f"bit for bit (mean regret {got.mean():.4g})"
    return _value(got, ftal, "regret ")


@case("run with T=1", HANDLED, ("horizon",))
def _():
    res = _run(oco.pftal(T, BALL), envs.quadratic_stream(BALL), _pftal_params(), _env_params(), horizon=1)
    regret = np.asarray(res.regret)
    if regret.shape != (1,) or _nonfinite(regret) or regret[0] < -1e-6:
        return WRONG if not _nonfinite(regret) else NONFINITE, f"regret {_fmt(regret)} shape {regret.shape}"
    return HANDLED, f"regret {_fmt(regret)}"


# --- 6. bad inputs -------------------------------------------------------------------------------------------------


@case("pftal epsilon=0", CLEAR, ("epsilon",))
def _():
    arm()
    return _returned(_final(_sweep(oco.pftal(T, BALL), envs.quadratic_stream(BALL), _pftal_params(epsilon=0.0),
                                   _env_params())).mean(), "epsilon=0")  # fmt: skip


@case("pftal epsilon=-1", CLEAR, ("epsilon",))
def _():
    arm()
    return _returned(_final(_sweep(oco.pftal(T, BALL), envs.quadratic_stream(BALL), _pftal_params(epsilon=-1.0),
                                   _env_params())).mean(), "a negative epsilon")  # fmt: skip


@case("pftal epsilon=nan", CLEAR, ("epsilon",))
def _():
    arm()
    return _returned(_final(_sweep(oco.pftal(T, BALL), envs.quadratic_stream(BALL), _pftal_params(epsilon=np.nan),
                                   _env_params())).mean(), "NaN epsilon")  # fmt: skip


@case("pftal epsilon='1.0' (a string)", CLEAR, ("epsilon",))
def _():
    arm()
    got = _final(_sweep(oco.pftal(T, BALL), envs.quadratic_stream(BALL), _pftal_params(epsilon="1.0"), _env_params()))
    return _returned(got.mean(), "a string budget")


@case("pftal strong_convexity=0", CLEAR, ("strong_convexity",))
def _():
    arm()
    got = _final(_sweep(oco.pftal(T, BALL), envs.quadratic_stream(BALL), _pftal_params(strong_convexity=0.0),
                        _env_params()))  # fmt: skip
    return _returned(got.mean(), "H = 0")


@case("pftal lipschitz=1e39 (beyond float32)", CLEAR, ("lipschitz",))
def _():
    arm()
    got = _final(_sweep(oco.pftal(T, BALL), envs.quadratic_stream(BALL), _pftal_params(lipschitz=1e39), _env_params()))
    return _returned(got.mean(), "1e39 is inf in float32")


@case("pftal lipschitz=2**40 (a Python int)", CLEAR, ("lipschitz",))
def _():
    learner, env = oco.pftal(T, BALL), envs.quadratic_stream(BALL)
    ref = _final(_sweep(learner, env, _pftal_params(lipschitz=float(2**40)), _env_params()))
    arm()
    got = _final(_sweep(learner, env, _pftal_params(lipschitz=2**40), _env_params()))
    if np.allclose(got, ref, rtol=1e-5):
        return HANDLED, f"as the float 2**40 (mean {got.mean():.4g})"
    return _returned(got.mean(), f"differs from lipschitz=2.0**40 (mean {ref.mean():.4g}): wrapped in int32")


@case("sweep epsilon=[0.1, 1.0] (a Python list grid leaf)", HANDLED, ("epsilon",))
def _():
    learner, env = oco.pftal(T, BALL), envs.quadratic_stream(BALL)
    ref = _final(_sweep(learner, env, _pftal_params(epsilon=np.array([0.1, 1.0], np.float32)), _env_params()))
    got = _final(_sweep(learner, env, _pftal_params(epsilon=[0.1, 1.0]), _env_params()))
    if got.shape == ref.shape and np.array_equal(got, ref):
        return HANDLED, f"equal to the array grid (shape {got.shape})"
    return _returned(got.mean(), f"differs from the array grid (shape {got.shape} vs {ref.shape})")


@case("run epsilon=[0.1, 1.0] (a grid given to run)", CLEAR, ("epsilon",))
def _():
    arm()
    res = _run(oco.pftal(T, BALL), envs.quadratic_stream(BALL), _pftal_params(epsilon=[0.1, 1.0]), _env_params())
    return _returned(_final(res), f"run returned regret of shape {np.shape(res.regret)}")


@case("sweep seeds=0", CLEAR, ("seeds",))
def _():
    got = _final(_sweep(oco.pftal(T, BALL), envs.quadratic_stream(BALL), _pftal_params(), _env_params(), seeds=0))
    return WRONG, f"returned regret of shape {got.shape}"


@case("run horizon 32 with pftal built for 16", CLEAR, ("horizon",))
def _():
    arm()
    res = _run(oco.pftal(16, BALL), envs.quadratic_stream(BALL), _pftal_params(), _env_params(), horizon=32)
    return _returned(_final(res), "a horizon beyond the tree's")


@case("learner on l2_ball(3), env on l2_ball(2)", CLEAR, ("shape", "dim"))
def _():
    arm()
    res = _run(oco.ogd(BALL), envs.quadratic_stream(sets.l2_ball(2)), oco.OGDParams(),
               envs.QuadraticParams(center=np.array([0.1, 0.1], np.float32)))  # fmt: skip
    return _returned(_final(res), "a 3-d learner against a 2-d stream")


@case("OGDParams given to pftal", CLEAR, ("PFTALParams", "OGDParams"))
def _():
    arm()
    res = _run(oco.pftal(T, BALL), envs.quadratic_stream(BALL), oco.OGDParams(), _env_params())
    return _returned(_final(res), "another learner's params")


@case("PFTALParams given to ogd", CLEAR, ("PFTALParams", "OGDParams"))
def _():
    learner, env = oco.ogd(BALL), envs.quadratic_stream(BALL)
    ref = _final(_run(learner, env, oco.OGDParams(strong_convexity=1.0, lipschitz=2.0), _env_params()))
    arm()
    got = _final(_run(learner, env, _pftal_params(), _env_params()))
    if np.array_equal(got, ref):
        return HANDLED, "ran, reading the same-named fields (equal to OGDParams(1.0, 2.0))"
    return _returned(got, "another learner's params, read with another meaning")


@case("ExpertsParams given to quadratic_stream", CLEAR, ("ExpertsParams", "QuadraticParams"))
def _():
    arm()
    res = _run(oco.ogd(BALL), envs.quadratic_stream(BALL), oco.OGDParams(), envs.ExpertsParams())
    return _returned(_final(res), "another environment's params")


# --- 7. resume: sweep(save=) and study chunk files ---------------------------------------------------------


class _Killed(Exception):
    pass


def _kill(done, total):
    raise _Killed


def _resume_base():
    lp = _pftal_params(epsilon=np.array([0.5, 5.0], np.float32))
    return oco.pftal(T, BALL), envs.quadratic_stream(BALL), lp, _env_params()


def _interrupted(path: Path) -> None:
    learner, env, lp, ep = _resume_base()
    with contextlib.suppress(_Killed):
        _sweep(learner, env, lp, ep, 3, seeds=4, chunk=2, segment=8, save=path, progress=_kill)
    if not path.exists():
        raise RuntimeError(f"set-up: the interrupted sweep left no save file at {path}")


def _resume_case(changed) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "sweep.npz"
        _interrupted(path)
        learner, env, lp, ep = changed()
        fresh = _final(_sweep(learner, env, lp, ep, 3, seeds=4, chunk=2, segment=8, progress=lambda d, t: None))
        arm()
        got = _final(
            _sweep(learner, env, lp, ep, 3, seeds=4, chunk=2, segment=8, save=path, progress=lambda d, t: None)
        )
    if np.array_equal(got, fresh):
        return HANDLED, "equal to a fresh run bit for bit"
    diff = float(np.max(np.abs(got - fresh)))
    return _returned(got.mean(), f"resumed from another configuration's carry: differs from a fresh run by {diff:.3g}")


@case("resume: same configuration", HANDLED, ("sweep.npz",))
def _():
    return _resume_case(_resume_base)


@case("resume: noise gamma -> laplace", CLEAR, ("noise", "sweep.npz"))
def _():
    def changed():
        _, env, lp, ep = _resume_base()
        return oco.pftal(T, BALL, "laplace"), env, lp, ep

    return _resume_case(changed)


@case("resume: l2_ball radius 1 -> 2", CLEAR, ("radius", "sweep.npz"))
def _():
    def changed():
        _, _, lp, ep = _resume_base()
        ball = sets.l2_ball(3, 2.0)
        return oco.pftal(T, ball), envs.quadratic_stream(ball), lp, ep

    return _resume_case(changed)


@case("resume: env z_dist iid -> drift", CLEAR, ("z_dist", "sweep.npz"))
def _():
    def changed():
        learner, _, lp, ep = _resume_base()
        return learner, envs.quadratic_stream(BALL, z_dist="drift"), lp, ep

    return _resume_case(changed)


@case("resume: truncated save file", CLEAR, ("sweep.npz",))
def _():
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "sweep.npz"
        _interrupted(path)
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        learner, env, lp, ep = _resume_base()
        arm()
        got = _final(
            _sweep(learner, env, lp, ep, 3, seeds=4, chunk=2, segment=8, save=path, progress=lambda d, t: None)
        )
    return _returned(got.mean(), "resumed from a truncated file")


@case("save= a path under a file", CLEAR, ("save",))
def _():
    with tempfile.TemporaryDirectory() as d:
        afile = Path(d) / "afile"
        afile.write_text("x")
        learner, env, lp, ep = _resume_base()
        arm()
        got = _final(_sweep(learner, env, lp, ep, 3, seeds=4, chunk=2, segment=8, save=afile / "run.npz"))
    return WRONG, f"returned (mean {got.mean():.4g}) without saving anywhere"


@case("save= a folder", CLEAR, ("save",))
def _():
    with tempfile.TemporaryDirectory() as d:
        learner, env, lp, ep = _resume_base()
        arm()
        got = _final(_sweep(learner, env, lp, ep, 3, seeds=4, chunk=2, segment=8, save=Path(d)))
    return WRONG, f"returned (mean {got.mean():.4g}) with a folder as the save file"


@case("study: changed grid into the same folder", CLEAR, ("another sweep configuration",))
def _():
    from jaxpriv.experiments import study

    with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
        d = Path(d)
        out = d / "out"
        study.run_study(_study(d, extra="grid_chunk = 1"), out, progress=False)
        fresh = study.run_study(
            _study(d, "fresh.toml", budget="epsilon = [0.5, 1.0]", extra="grid_chunk = 1"), d / "fresh", progress=False
        )
        arm()
        res = study.run_study(_study(d, budget="epsilon = [0.5, 1.0]", extra="grid_chunk = 1"), out, progress=False)
    if np.array_equal(np.asarray(res.regret), np.asarray(fresh.regret)):
        return HANDLED, f"equal to a fresh run ({res.resumed} sweeps reused, {res.computed} computed)"
    return WRONG, f"{res.resumed} sweeps of epsilon=0.3 reused as epsilon=0.5 ({res.computed} computed): relabelled"


@case("study: truncated sweep file", CLEAR, ("g0000",))
def _():
    from jaxpriv.experiments import study

    with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
        d = Path(d)
        path = _study(d)
        study.run_study(path, d / "out", progress=False)
        chunk = d / "out" / "sweeps" / "g0000.sweep.npz"
        chunk.write_bytes(chunk.read_bytes()[:-50])
        arm()
        res = study.run_study(path, d / "out", progress=False)
    return _returned(np.asarray(res.regret)[:, :, -1].mean(1), "read a truncated chunk")


# --- 8. study paths and the command line ---------------------------------------------------------------------


@case("load_study(a folder)", CLEAR, ("study", "folder"))
def _():
    from jaxpriv.experiments import study

    with tempfile.TemporaryDirectory() as d:
        study.load_study(d)
    return WRONG, "loaded a folder as a study"


@case("load_study(a missing file)", CLEAR, ("study", "nope.toml"))
def _():
    from jaxpriv.experiments import study

    with tempfile.TemporaryDirectory() as d:
        study.load_study(Path(d) / "nope.toml")
    return WRONG, "loaded a missing file"


@case("load_study: learner name typo 'pftl'", CLEAR, ("pftl", "learner"))
def _():
    from jaxpriv.experiments import study

    with tempfile.TemporaryDirectory() as d:
        study.load_study(_study(Path(d), learner="pftl"))
    return WRONG, "loaded an unknown learner"


@case('load_study: epsilon = "1.0" (a TOML string)', CLEAR, ("epsilon",))
def _():
    from jaxpriv.experiments import study

    with tempfile.TemporaryDirectory() as d:
        s = study.load_study(_study(Path(d), budget='epsilon = "1.0"'))
    return WRONG, f"loaded ({s.size} grid point(s)) a string budget"


@case("study: run_study(out= a file)", CLEAR, ("out",))
def _():
    from jaxpriv.experiments import study

    with tempfile.TemporaryDirectory() as d:
        afile = Path(d) / "afile"
        afile.write_text("x")
        with contextlib.redirect_stdout(io.StringIO()):
            study.run_study(_study(Path(d)), afile, progress=False)
    return WRONG, "ran into a file as the output folder"


def _cli_case(args_of, names: tuple[str, ...]) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as d:
        afile = Path(d) / "afile"
        afile.write_text("x")
        out = _cli(args_of(Path(d), afile), d)
    outcome = _cli_outcome(out, names)
    return outcome if outcome is not None else (WRONG, "exit 0")


@case("CLI: sweep STUDY --out under a file", CLEAR, ("--out", "out"))
def _():
    return _cli_case(lambda d, f: ["sweep", str(_study(d)), "--out", str(f / "sub"), "--no-progress"], ("out",))


@case("CLI: sweep STUDY --out a file", CLEAR, ("--out", "out"))
def _():
    return _cli_case(lambda d, f: ["sweep", str(_study(d)), "--out", str(f), "--no-progress"], ("out",))


@case("CLI: sweep a folder", CLEAR, ("study", "folder"))
def _():
    return _cli_case(lambda d, f: ["sweep", str(d), "--no-progress"], ("study", "folder"))


@case("CLI: sweep a missing file", CLEAR, ("study", "missing.toml"))
def _():
    return _cli_case(lambda d, f: ["sweep", str(d / "missing.toml"), "--no-progress"], ("study", "missing.toml"))


@case("CLI: sweep a study with learner 'pftl'", CLEAR, ("pftl", "learner"))
def _():
    return _cli_case(
        lambda d, f: ["sweep", str(_study(d, learner="pftl")), "--out", str(d / "o"), "--no-progress"],
        ("pftl", "learner"),
    )


@case("CLI: demo --out under a file", CLEAR, ("--out", "out"))
def _():
    args = ["--horizon", "8", "--seeds", "2", "--epsilons", "1.0", "inf"]
    return _cli_case(lambda d, f: ["demo", "--out", str(f / "sub"), *args], ("out",))


@case("CLI: demo --horizon 0", CLEAR, ("--horizon",))
def _():
    return _cli_case(lambda d, f: ["demo", "--out", str(d / "o"), "--horizon", "0", "--seeds", "2"], ("--horizon",))


# --- the runner ---------------------------------------------------------------------------------------------------


def _api_absent(err: BaseException) -> bool:
    if isinstance(err, (AttributeError, ImportError, TypeError)):
        return True
    return isinstance(err, ValueError) and "must be one of" in str(err)


def run_case(c: Case) -> tuple[str, str, float]:
    t0 = time.perf_counter()
    _BASELINE[0] = _engine_cache()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cls, detail = c.fn()
    except Exception as err:
        compiled = _engine_cache() > _BASELINE[0]
        msg = _first_line(err)
        if c.new_api and _api_absent(err):
            cls, detail = ABSENT, msg
        elif isinstance(err, ValueError) and _raised_in_jaxpriv(err):
            named = not c.names or any(n.lower() in str(err).lower() for n in c.names)
            if named and not compiled:
                cls, detail = CLEAR, msg
            else:
                why = "after compiling" if compiled else f"does not name {' / '.join(c.names)}"
                cls, detail = DEEP, f"{msg} ({why})"
        else:
            where = (
                "" if _raised_in_jaxpriv(err) or isinstance(err, subprocess.SubprocessError) else " (outside jaxpriv)"
            )
            cls, detail = DEEP, msg + where
        if os.environ.get("TRUST_CASES_DEBUG"):
            traceback.print_exc()
    return cls, detail, time.perf_counter() - t0


def _cell(text: str, width: int = 160) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--markdown", action="store_true", help="print a markdown table (default: aligned text)")
    parser.add_argument("--only", default=None, help="run only the cases whose name contains this text")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.only is None or args.only.lower() in c.name.lower()]
    start = time.perf_counter()
    rows = []
    for i, c in enumerate(cases, 1):
        cls, detail, seconds = run_case(c)
        rows.append({"case": c.name, "expected": c.expected, "outcome": cls, "detail": detail, "seconds": seconds})
        print(f"[{i}/{len(cases)}] {cls:<18} {seconds:6.1f} s  {c.name}", file=sys.stderr, flush=True)
    total = time.perf_counter() - start
    source = Path(jp.__file__).resolve().parent
    head = (
        f"jaxpriv from {source}; JAX {jax.__version__} on {jax.default_backend()}; {len(rows)} cases in {total:.0f} s"
    )
    counts = {k: sum(r["outcome"] == k for r in rows) for k in CLASSES}
    matched = sum(r["outcome"] == r["expected"] for r in rows)
    if args.markdown:
        print(head + "\n")
        print("| # | case | expected | outcome | error / value |")
        print("| ---: | --- | --- | --- | --- |")
        for i, r in enumerate(rows, 1):
            mark = "" if r["outcome"] == r["expected"] else " ⚠" if r["outcome"] in (WRONG, NONFINITE, DEEP) else ""
            print(f"| {i} | {_cell(r['case'])} | {r['expected']} | {r['outcome']}{mark} | {_cell(r['detail'])} |")
        print("\n| class | cases |\n| --- | ---: |")
        for k in CLASSES:
            print(f"| {k} | {counts[k]} |")
        print(f"\n{matched} of {len(rows)} cases have the expected outcome.")
    else:
        print(head)
        w = max(len(r["case"]) for r in rows)
        for i, r in enumerate(rows, 1):
            print(f"{i:3d} {r['case']:<{w}}  {r['expected']:<18} {r['outcome']:<18} {_cell(r['detail'], 140)}")
        print("summary: " + ", ".join(f"{k}: {counts[k]}" for k in CLASSES))
        print(f"{matched} of {len(rows)} cases have the expected outcome")
    if args.json:
        Path(args.json).write_text(json.dumps({"source": str(source), "seconds": total, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
