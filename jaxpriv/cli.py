"""Command line: ``jaxpriv demo`` and ``jaxpriv bandits`` (also ``python -m jaxpriv ...``)."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np


def _fmt_eps(e: float) -> str:
    return "inf" if np.isinf(e) else f"{e:g}"


def demo(args: argparse.Namespace) -> int:
    """PFTAL vs FTAL vs OGD on a strongly convex quadratic stream, over several ε."""
    import jax
    import jax.numpy as jnp

    import jaxpriv as jp
    from jaxpriv import envs, oco, plot, sets, theory

    out = Path(args.out) if args.out else Path("jaxpriv-out") / time.strftime("demo-%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    T, d, S = args.horizon, args.dim, args.seeds
    eps = np.array(args.epsilons, np.float32)
    H, spread = 1.0, 0.3
    center = np.full(d, 0.4 / np.sqrt(d), np.float32)
    ball = sets.l2_ball(d)
    env = envs.quadratic_stream(ball)
    env_p = envs.QuadraticParams(H, center, spread)
    lipschitz = H * (ball.radius + ball.radius)  # ||H(w - z)|| <= H(||C|| + ||z||), ||z|| <= 1
    ckpts = jp.log_checkpoints(T, 120)
    key = jax.random.key(args.seed)
    print(
        f"jaxpriv {jp.__version__} demo: d={d}, T={T}, {S} seeds, eps={[_fmt_eps(e) for e in eps]}, "
        f"noise={args.noise}, backend={jax.default_backend()}"
    )
    print(f"  loss stream: f_t(w) = (H/2)||w - z_t||^2, H={H}, z_t ~ N(c, {spread}^2 I) clipped to the unit ball")

    runs = {
        "OGD (eta=1/(Ht))": (oco.ogd(ball), oco.OGDParams(H)),
        "FTAL": (oco.ftal(ball), oco.FTALParams(H)),
        "PFTAL": (oco.pftal(T, ball, args.noise), oco.PFTALParams(eps, eps, lipschitz, H)),
    }
    results, timings, warnings_seen = {}, {}, {}
    for i, (name, (learner, params)) in enumerate(runs.items(), 1):
        grid = len(eps) if name == "PFTAL" else 1
        print(f"[{i}/{len(runs)}] {name}: {grid} x {S} seeds x T={T} ...", end=" ", flush=True)
        t0 = time.perf_counter()
        r = jp.sweep(learner, env, jp.SimParams(params, env_p), key, T, seeds=S, checkpoints=ckpts, chunk=args.chunk)
        regret = np.asarray(jax.block_until_ready(r.regret))
        timings[name] = time.perf_counter() - t0
        results[name] = regret if name == "PFTAL" else regret[None]
        print(f"{timings[name]:.1f} s ({grid * S * T / timings[name]:.2e} seed-steps/s incl. compile)")
        warning = r.nonfinite_warning()
        if warning:
            warnings_seen[name] = warning
            print(f"    {name}: {warning}", file=sys.stderr)

    bound = np.asarray(theory.pftal_gamma_regret_bound(T, d, lipschitz, H, ball.radius, jnp.asarray(eps)))
    rows = []
    for name, regret in results.items():
        for g in range(regret.shape[0]):
            e = eps[g] if name == "PFTAL" else np.inf
            final = regret[g, :, -1].astype(np.float64)
            row = {
                "algorithm": name,
                "epsilon": _fmt_eps(e) if name == "PFTAL" else "- (non-private)",
                "mean": float(final.mean()),
                "se": float(final.std(ddof=1) / np.sqrt(S)),
            }
            if name == "PFTAL" and args.noise == "gamma":
                row["theorem4_bound"] = float(bound[g])
            rows.append(row)

    print(f"\nFinal regret at T={T} (mean +- standard error over {S} seeds)")
    print(f"{'algorithm':<18} {'epsilon':>16} {'regret':>22} {'Thm 4 bound':>14}")
    for row in rows:
        b = f"{row['theorem4_bound']:.4g}" if "theorem4_bound" in row else ""
        print(f"{row['algorithm']:<18} {row['epsilon']:>16} {row['mean']:>12.4g} +- {row['se']:<7.2g} {b:>14}")

    steps = np.asarray(ckpts)
    np.savez_compressed(
        out / "results.npz", steps=steps, epsilon=eps, **{name.split(" ")[0].lower(): v for name, v in results.items()}
    )
    settings = {
        "command": "demo",
        "seed": args.seed,
        "horizon": T,
        "dim": d,
        "seeds": S,
        "epsilon": [float(e) for e in eps],
        "noise": args.noise,
        "strong_convexity": H,
        "center": center.tolist(),
        "spread": spread,
        "lipschitz": lipschitz,
        "constraint": "l2_ball(radius=1)",
        "checkpoints": len(ckpts),
        "jaxpriv": jp.__version__,
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "python": platform.python_version(),
        "seconds": timings,
        "nonfinite_warnings": warnings_seen,
        "table": rows,
        "arrays": "results.npz: steps[m], epsilon[E], ogd[1,S,m], ftal[1,S,m], pftal[E,S,m] (regret at steps)",
    }
    (out / "settings.json").write_text(json.dumps(settings, indent=2))
    curves = {"OGD": (steps, results["OGD (eta=1/(Ht))"][0]), "FTAL": (steps, results["FTAL"][0])}
    for g, e in enumerate(eps):
        curves[f"PFTAL eps={_fmt_eps(e)}"] = (steps, results["PFTAL"][g])
    plot.regret_curves(curves, out / "regret.png", title=f"Quadratic stream, d={d}, {S} seeds (mean, 95% band)")
    print(f"\nwrote {out}/results.npz, {out}/settings.json, {out}/regret.png")
    return 0


def bandits(args: argparse.Namespace) -> int:
    """The zCDP bandit experiments of Azize & Basu (Section VII): figures and raw results per setting."""
    from jaxpriv.bandits import experiment

    out = Path(args.out) if args.out else Path("jaxpriv-out") / time.strftime("bandits-%Y%m%d-%H%M%S")
    names = sorted(experiment.SETTINGS) if args.setting == "all" else [args.setting]
    scale = "full (the paper's)" if args.full_scale else "reduced"
    for i, name in enumerate(names, 1):
        print(f"[{i}/{len(names)}] setting {name!r}, {scale} scale ...", flush=True)
        t0 = time.perf_counter()
        rep = experiment.reproduce(name, out, full_scale=args.full_scale, seeds=args.seeds, key=args.seed)
        print(f"    {time.perf_counter() - t0:.1f} s: " + ", ".join(str(p) for p in rep.files.values()), flush=True)
    return 0


def window(args: argparse.Namespace) -> int:
    """Window privacy: WDP-COCOP / WDP-COCOL regret against W and ln T, with PFTAL and non-private baselines."""
    from jaxpriv.experiments import window as experiment

    out = Path(args.out) if args.out else Path("jaxpriv-out") / time.strftime("window-%Y%m%d-%H%M%S")
    print(f"window sweep: T={args.horizon}, d={args.dim}, W={args.windows}, eps={args.epsilon}, noise={args.noise} ...")
    t0 = time.perf_counter()
    summary = experiment.run(
        out, args.horizon, args.dim, tuple(args.windows), args.epsilon, args.noise, args.delta, args.seeds, args.seed
    )
    for name, row in summary.items():
        print(f"  {name:>22}: regret at T {row['mean_final_regret']:9.2f} +- {row['stderr']:.2f}")
    print(f"{time.perf_counter() - t0:.1f} s; wrote {out}/results.npz, {out}/settings.json, {out}/window.png")
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
    from jaxpriv.bandits import experiment

    b = sub.add_parser("bandits", help="zCDP bandits (Azize & Basu, Section VII): regret gap vs rho, price of privacy")
    b.add_argument("--setting", choices=[*sorted(experiment.SETTINGS), "all"], default="all")
    b.add_argument("--full-scale", action="store_true", help="the paper's scale: 100 runs, T up to 1e7")
    b.add_argument("--seeds", type=int, default=None, help="override the number of runs")
    b.add_argument("--out", default=None, help="output folder (default: jaxpriv-out/bandits-<time>)")
    b.add_argument("--seed", type=int, default=0)
    b.set_defaults(func=bandits)
    w = sub.add_parser("window", help="window privacy: WDP-COCOP / WDP-COCOL regret against the window W and ln T")
    w.add_argument("--out", default=None, help="output folder (default: jaxpriv-out/window-<time>)")
    w.add_argument("--horizon", type=int, default=2048)
    w.add_argument("--dim", type=int, default=5)
    w.add_argument("--windows", type=int, nargs="+", default=[2, 16, 128], help="powers of two")
    w.add_argument("--epsilon", type=float, default=1.0)
    w.add_argument("--noise", choices=["gamma", "gaussian"], default="gamma")
    w.add_argument("--delta", type=float, default=1e-5)
    w.add_argument("--seeds", type=int, default=16)
    w.add_argument("--seed", type=int, default=0)
    w.set_defaults(func=window)
    args = parser.parse_args(argv)
    for name in ("horizon", "seeds", "dim"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            parser.error(f"--{name} must be >= 1")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
