"""Command line: ``jaxpriv demo`` and ``jaxpriv bandits`` (also ``python -m jaxpriv ...``).

Argument parsing only: every command calls a function of ``jaxpriv.experiments``.
"""

from __future__ import annotations

import argparse
import sys


def demo(args: argparse.Namespace) -> int:
    """PFTAL vs FTAL vs OGD on a strongly convex quadratic stream, over several ε."""
    from jaxpriv.experiments.demo import run_demo

    run_demo(args.out, args.horizon, args.seeds, args.dim, args.epsilons, args.noise, args.chunk, args.seed)
    return 0


def bandits(args: argparse.Namespace) -> int:
    """The zCDP bandit experiments of Azize & Basu (Section VII): figures and raw results per setting."""
    from jaxpriv.experiments.zcdp_bandits import reproduce_settings

    reproduce_settings(args.setting, args.out, full_scale=args.full_scale, seeds=args.seeds, key=args.seed)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jaxpriv", description="Private online learning and bandits in JAX.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="PFTAL vs FTAL vs OGD over privacy levels on a quadratic stream")
    p.add_argument("--out", default=None, help="output folder (default: jaxpriv-out/demo-<time>)")
    p.add_argument("--horizon", type=int, default=2**14)
    p.add_argument("--seeds", type=int, default=100)
    p.add_argument("--dim", type=int, default=3)
    p.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0, 10.0, float("inf")])
    p.add_argument(
        "--noise",
        choices=["gamma", "laplace", "gaussian"],
        default="gamma",
        help="tree noise; for 'gaussian' the --epsilons values are used as rho",
    )
    p.add_argument("--chunk", type=int, default=None, help="run seeds in batches of this size")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=demo)
    from jaxpriv.experiments import zcdp_bandits

    b = sub.add_parser("bandits", help="zCDP bandits (Azize & Basu, Section VII): regret gap vs rho, price of privacy")
    b.add_argument("--setting", choices=[*sorted(zcdp_bandits.SETTINGS), "all"], default="all")
    b.add_argument("--full-scale", action="store_true", help="the paper's scale: 100 runs, T up to 1e7")
    b.add_argument("--seeds", type=int, default=None, help="override the number of runs")
    b.add_argument("--out", default=None, help="output folder (default: jaxpriv-out/bandits-<time>)")
    b.add_argument("--seed", type=int, default=0)
    b.set_defaults(func=bandits)
    args = parser.parse_args(argv)
    for name in ("horizon", "seeds", "dim"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            parser.error(f"--{name} must be >= 1")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
