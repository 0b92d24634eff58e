"""Every built-in component at a few configurations, and its ``Spec`` as plain data (for ``test_declare.py``).

``spec_table()`` builds each case and records what its ``Spec`` says (name, params class, privacy, arms,
ndims, and ``static`` as ``(key, value)`` pairs, a nested component's spec recursively). The frozen copy,
``declare_static_expected.json``, was captured from the code before the declaration (``jaxpriv.declare``)
filled the specs; regenerate it only for a deliberate change: ``python -m tests.engine._static_cases``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from jaxpriv import Spec, bandits, envs, mechanisms, oco, sets

EXPECTED = Path(__file__).with_name("declare_static_expected.json")


def _plain(value: Any) -> Any:
    if isinstance(value, Spec):
        return {"spec": describe(value)}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return [type(value).__name__, repr(value) if not isinstance(value, float) else float.hex(value)]


def describe(spec: Spec) -> dict[str, Any]:
    """What ``spec`` says, as JSON-able data; ``static`` keeps its order (a list of pairs)."""
    return {
        "name": spec.name,
        "params": None if spec.params is None else spec.params.__name__,
        "private": spec.private,
        "num_arms": spec.num_arms,
        "action_shape": None if spec.action_shape is None else list(spec.action_shape),
        "ndims": [list(p) for p in spec.ndims],
        "static": [[k, _plain(v)] for k, v in spec.static],
    }


def cases() -> dict[str, Callable[[], Any]]:
    """Label -> a thunk building one component (every registered factory, several non-default options)."""
    t, d, k = 64, 3, 4
    ball, simplex, box, l1 = sets.l2_ball(d), sets.simplex(d), sets.box(d), sets.l1_ball(d, 2.0)
    out: dict[str, Callable[[], Any]] = {
        # mechanisms
        "binary_tree": lambda: mechanisms.binary_tree(t, d),
        "binary_tree/gaussian/replace/f64": lambda: mechanisms.binary_tree(t, d, "gaussian", "replace", np.float64),
        "binary_tree/laplace": lambda: mechanisms.binary_tree(t, d, mechanisms.noise_family("laplace")),
        "honaker_tree": lambda: mechanisms.honaker_tree(t, d),
        "honaker_tree/gaussian": lambda: mechanisms.honaker_tree(t, d, "gaussian", "replace"),
        "sqrt_factorization": lambda: mechanisms.sqrt_factorization(t, d),
        "sqrt_factorization/replace": lambda: mechanisms.sqrt_factorization(t, d, neighbouring="replace"),
        "blt": lambda: mechanisms.blt(t, d),
        "blt/3": lambda: mechanisms.blt(t, d, buffers=3, neighbouring="replace"),
        "window_tree": lambda: mechanisms.window_tree(t, d, 16),
        "window_tree/gaussian": lambda: mechanisms.window_tree(t, d, 16, "gaussian", calibration="composition"),
        # environments
        "quadratic_stream": lambda: envs.quadratic_stream(ball),
        "quadratic_stream/box": lambda: envs.quadratic_stream(box, z_radius=0.5, z_dist="iid"),
        "adaptive_quadratic": lambda: envs.adaptive_quadratic(ball),
        "adaptive_quadratic/z": lambda: envs.adaptive_quadratic(ball, 0.5),
        "experts_stream": lambda: envs.experts_stream(d),
        "regression_stream": lambda: envs.regression_stream(ball),
        "classification_stream": lambda: envs.classification_stream(ball, t),
        "bernoulli_bandit": lambda: envs.bernoulli_bandit(k),
        "linear_bandit": lambda: envs.linear_bandit(k, d),
        "linear_bandit/random": lambda: envs.linear_bandit(k, d, True),
        "contextual_linear_bandit": lambda: envs.contextual_linear_bandit(k, d),
        "bandit_feedback(quadratic_stream)": lambda: envs.bandit_feedback(envs.quadratic_stream(ball)),
        # full-information and bandit-feedback learners
        "pftal": lambda: oco.pftal(t, ball),
        "pftal/gaussian": lambda: oco.pftal(t, ball, "gaussian"),
        "pftal/honaker": lambda: oco.pftal(t, ball, mechanism=mechanisms.honaker_tree(t, d, neighbouring="replace")),
        "pftal/blt": lambda: oco.pftal(t, ball, mechanism=mechanisms.blt(t, d, neighbouring="replace")),
        "regularized_pftal": lambda: oco.regularized_pftal(t, ball),
        "regularized_pftal/gaussian": lambda: oco.regularized_pftal(t, ball, "gaussian"),
        "regularized_pftal/honaker": lambda: oco.regularized_pftal(
            t, ball, mechanism=mechanisms.honaker_tree(t, d, neighbouring="replace")
        ),
        "private_experts": lambda: oco.private_experts(t, d),
        "private_experts/laplace": lambda: oco.private_experts(t, d, "laplace"),
        "ftal": lambda: oco.ftal(ball, t),
        "ftal/no-horizon": lambda: oco.ftal(ball),
        "ogd": lambda: oco.ogd(ball),
        "ogd/sqrt": lambda: oco.ogd(ball, "sqrt"),
        "mi_ogd": lambda: oco.mi_ogd(ball, t),
        "mi_ogd/no-horizon": lambda: oco.mi_ogd(ball),
        "private_bandit_ftal": lambda: oco.private_bandit_ftal(t, ball),
        "private_bandit_ftal/adaptive": lambda: oco.private_bandit_ftal(t, ball, "gaussian", "adaptive"),
        "bandit_ftal": lambda: oco.bandit_ftal(t, ball),
        "bandit_ftal/adaptive": lambda: oco.bandit_ftal(t, ball, "adaptive"),
        "fkm": lambda: oco.fkm(t, ball),
        "mi_bandit_ogd": lambda: oco.mi_bandit_ogd(t, ball),
        "dp_ftrl": lambda: oco.dp_ftrl(t, ball),
        "dp_ftrl/gaussian": lambda: oco.dp_ftrl(t, ball, "gaussian"),
        "dp_ftrl/sqrt": lambda: oco.dp_ftrl(
            t, ball, mechanism=mechanisms.sqrt_factorization(t, d, neighbouring="replace")
        ),
        "wdp_cocop": lambda: oco.wdp_cocop(t, simplex, 16),
        "wdp_cocop/gaussian": lambda: oco.wdp_cocop(t, simplex, 16, "gaussian", calibration="composition"),
        "wdp_cocol": lambda: oco.wdp_cocol(t, simplex, 16),
        "wdp_cocol/l1": lambda: oco.wdp_cocol(t, l1, 16, constants="paper", round_window=True),
        "online_frank_wolfe": lambda: oco.online_frank_wolfe(simplex, t),
        "online_frank_wolfe/no-horizon": lambda: oco.online_frank_wolfe(simplex),
        "garber_hazan": lambda: oco.garber_hazan(t, simplex),
        "garber_hazan/paper": lambda: oco.garber_hazan(t, simplex, "paper"),
        "pocp": lambda: oco.pocp(t, ball),
        "dnpr_experts": lambda: oco.dnpr_experts(t, d),
        "pqftl": lambda: oco.pqftl(t, ball),
        # bandit policies
        "ucb": lambda: bandits.ucb(k, t),
        "ucb/options": lambda: bandits.ucb(k, clip_rewards=False, init_count="half", tie_break="first"),
        "adac_ucb": lambda: bandits.adac_ucb(k, t),
        "adac_ucb/nonprivate": lambda: bandits.adac_ucb(k, t, private=False, clip_rewards=False),
        "adap_ucb": lambda: bandits.adap_ucb(k, t),
        "adap_klucb": lambda: bandits.adap_klucb(k, t, tie_break="first"),
        "gope": lambda: bandits.gope(k, d, t),
        "adac_gope": lambda: bandits.adac_gope(k, d, t),
        "adac_gope/options": lambda: bandits.adac_gope(k, d, t, calibration="paper", private=False),
        "adac_gope_var": lambda: bandits.adac_gope_var(k, d, t),
        "hanna_gope": lambda: bandits.hanna_gope(k, d, t),
        "hanna_gope/options": lambda: bandits.hanna_gope(k, d, t, clip=False, small_support=False, private=False),
        "li_zhou_ji_gope": lambda: bandits.li_zhou_ji_gope(k, d, t),
        "linpriv": lambda: bandits.linpriv(k, d, t),
        "linpriv/nonprivate": lambda: bandits.linpriv(k, d, t, clip=False, private=False),
        "rs_oful": lambda: bandits.rs_oful(k, d, t),
        "adac_oful": lambda: bandits.adac_oful(k, d, t),
        "adac_oful/nonprivate": lambda: bandits.adac_oful(k, d, t, clip=False, private=False),
        "private_linucb": lambda: bandits.private_linucb(k, d, t),
        "private_linucb/wishart": lambda: bandits.private_linucb(k, d, t, "wishart"),
        "dp_ucb": lambda: bandits.dp_ucb(k, t),
        "dp_ucb/gaussian": lambda: bandits.dp_ucb(k, t, noise="gaussian"),
        "dp_ucb/honaker": lambda: bandits.dp_ucb(
            k, t, mechanism=mechanisms.honaker_tree(t, 1, neighbouring="replace"), tie_break="first"
        ),
        "ldp_ucb": lambda: bandits.ldp_ucb(k, t),
        "ldp_ucb/no-horizon": lambda: bandits.ldp_ucb(k),
        "dp_se": lambda: bandits.dp_se(k, t),
        "dp_se/nonprivate": lambda: bandits.dp_se(k, t, clip_rewards=False, private=False),
        "dp_ts": lambda: bandits.dp_ts(k, t),
        "dp_ts/nonprivate": lambda: bandits.dp_ts(k, private=False),
        "lazy_dp_ts": lambda: bandits.lazy_dp_ts(k, t),
        "anytime_lazy_ucb": lambda: bandits.anytime_lazy_ucb(k, t),
        "anytime_lazy_ucb/nonprivate": lambda: bandits.anytime_lazy_ucb(k, tie_break="first", private=False),
    }
    return out


def spec_table() -> dict[str, Any]:
    """Label -> ``describe`` of the built component's spec (``None`` for a component without one)."""
    table = {}
    for label, build in cases().items():
        spec = build().spec
        table[label] = None if spec is None else describe(spec)
    return table


if __name__ == "__main__":
    rows = [f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in spec_table().items()]
    EXPECTED.write_text("{\n" + ",\n".join(rows) + "\n}\n")
    print(f"wrote {EXPECTED}")
