"""Command line: ``jaxpriv demo``, ``bandits``, ``baselines``, ``sweep``, ``window`` and ``audit``.

Also ``python -m jaxpriv ...``.

Argument parsing only: every command runs a shipped study file (``jaxpriv.experiments.study.run_study``,
its options over the file's keys) or the audit table (``jaxpriv.experiments.audit_table``).
Every command turns on JAX's persistent compilation cache (``--no-compile-cache``
turns it off), so a second run of the same command reuses the compiled code, and
makes one JAX CPU device per core (``--cpu-devices``; ``jaxpriv.use_cpu_cores``), so
a sweep on a CPU splits its seeds over every core.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from jaxpriv._validate import HORIZON_LIMIT
from jaxpriv.sim import use_cpu_cores


def compile_cache_dir() -> Path:
    """The per-user cache folder: ``$JAXPRIV_CACHE_DIR``, else ``$XDG_CACHE_HOME/jaxpriv/jax`` (``~/.cache/...``)."""
    if os.environ.get("JAXPRIV_CACHE_DIR"):
        return Path(os.environ["JAXPRIV_CACHE_DIR"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return base / "jaxpriv" / "jax"


def enable_compile_cache(folder: str | Path | None = None) -> Path:
    """Turn on JAX's persistent compilation cache in ``folder`` (default ``compile_cache_dir()``)."""
    import jax

    path = Path(folder).expanduser() if folder else compile_cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)  # cache every compilation that matters
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


def check_out(value: str | None, flag: str = "--out") -> str | None:
    """An output folder argument: ``None``, or a path that is a folder or can be made one.

    Raises:
      ValueError: naming ``flag``: the path is a file, lies under a file, or its nearest
        existing folder is not writable.
    """
    if value is None:
        return None
    if not value.strip():
        raise ValueError(f"{flag} must be a folder path, got an empty string")
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"{flag} must be a folder, got the file {path}")
    parent = path
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{flag} {path} lies under the file {parent}: expected a folder path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path}: the folder {parent} is not writable")
    return value


def _override(raw: dict, args: argparse.Namespace, keys: tuple[str, ...]) -> dict:
    """A study file's top-level ``keys`` replaced by the command's options that were given (not ``None``)."""
    return raw | {key: getattr(args, key) for key in keys if getattr(args, key) is not None}


def demo(args: argparse.Namespace) -> int:
    """The shipped study ``demo`` (PFTAL vs FTAL vs OGD over ε on a quadratic stream), its options over the file's."""
    import math

    from jaxpriv.experiments.study import run_study

    def edit(raw: dict) -> dict:
        raw = _override(raw, args, ("horizon", "seeds", "chunk", "seed"))
        if args.epsilons is not None:
            raw["grid"] = {"epsilon": list(args.epsilons)}
        if args.dim is not None:
            raw["set"] = raw["set"] | {"dim": args.dim}
            raw["env"] = raw["env"] | {
                "params": raw["env"]["params"] | {"center": [0.4 / math.sqrt(args.dim)] * args.dim}
            }
        if args.noise is not None:  # PFTAL's tree noise; the Gaussian's budget is rho (the same numbers)
            pftal = raw["learners"][0] | {"noise": args.noise}
            raw["learners"] = [pftal | ({"axes": {"epsilon": "rho"}} if args.noise == "gaussian" else {}),
                               *raw["learners"][1:]]  # fmt: skip
        return raw

    out = args.out or str(Path("jaxpriv-out") / time.strftime("demo-%Y%m%d-%H%M%S"))
    _report(run_study("demo", out, progress=not args.no_progress, smoke=args.smoke, edit=edit))
    return 0


#: ``jaxpriv bandits --setting X``: the shipped study of each setting of Azize & Basu's Section VII.
BANDIT_SETTINGS = {
    "finite": "zcdp_bandits_finite",
    "linear": "zcdp_bandits_linear",
    "contextual": "zcdp_bandits_contextual",
}


def bandits(args: argparse.Namespace) -> int:
    """The zCDP bandit experiments of Azize & Basu (Section VII): the shipped study of each setting."""
    from jaxpriv.experiments.study import run_study

    def edit(raw: dict) -> dict:
        return _override(raw, args, ("seeds", "seed"))

    out = Path(args.out) if args.out else Path("jaxpriv-out") / time.strftime("bandits-%Y%m%d-%H%M%S")
    names = sorted(BANDIT_SETTINGS) if args.setting == "all" else [args.setting]
    for name in names:
        print(f"setting {name!r}: jaxpriv sweep {BANDIT_SETTINGS[name]}{'' if args.full_scale else ' --smoke'}")
        res = run_study(BANDIT_SETTINGS[name], out / name, progress=not args.no_progress, smoke=not args.full_scale,
                        edit=edit)  # fmt: skip
        _report(res)
    return 0


#: The experiments that became shipped study files: ``baselines --experiment X`` says which to run.
MOVED = {
    "epsilon": "adap_klucb_epsilon",
    "oco": "dp_ftrl_vs_pftal_quadratic and dp_ftrl_vs_pftal_logistic",
    "gope": "adac_gope_vs_var",
}


def baselines(args: argparse.Namespace) -> int:
    """The pure-DP bandit baselines ([N22] Fig. 2): the shipped study ``pure_dp_bandits``, its options over the file's.

    ``[smoke]`` scale (``T = 10⁴``, 20 runs) unless ``--full-scale`` (``T = 10⁷``, 20 runs); ``--seeds``,
    ``--horizon`` and ``--seed`` override the file's keys. DP-UCB with Honaker's estimator is in
    ``pure_dp_bandits_1e6`` (``jaxpriv sweep pure_dp_bandits_1e6``).
    """
    from jaxpriv.experiments.study import run_study

    if args.experiment in MOVED:
        raise ValueError(
            f"--experiment {args.experiment} is the shipped study {MOVED[args.experiment]}: jaxpriv sweep NAME "
            "[--smoke] (jaxpriv sweep --list)"
        )

    def edit(raw: dict) -> dict:
        return _override(raw, args, ("horizon", "seeds", "seed"))

    out = args.out or str(Path("jaxpriv-out") / time.strftime("baselines-%Y%m%d-%H%M%S"))
    print(f"jaxpriv sweep pure_dp_bandits{'' if args.full_scale else ' --smoke'}", flush=True)
    res = run_study("pure_dp_bandits", out, progress=not args.no_progress, smoke=not args.full_scale, edit=edit)
    _report(res)
    return 0


def sweep(args: argparse.Namespace) -> int:
    """Any sweep from a TOML study file; resumes an interrupted run into the same folder."""
    from jaxpriv.experiments.study import describe_shipped, run_study, shipped_studies

    if getattr(args, "list", False):
        shipped = shipped_studies()
        width = max(map(len, shipped), default=0)
        for name, path in shipped.items():
            print(f"{name:<{width}}  {describe_shipped(path)}")
        print(f"({len(shipped)} shipped study files in {next(iter(shipped.values())).parent if shipped else '-'}; "
              "run one with jaxpriv sweep NAME [--smoke], or copy it and edit)")  # fmt: skip
        return 0
    if args.study is None:
        raise ValueError("give a study file or a shipped study's name (jaxpriv sweep --list lists them)")
    if getattr(args, "imports", None):  # the modules that register the user's components, before the file is read
        from jaxpriv.experiments.imports import import_component_module

        for spec in args.imports:
            try:
                import_component_module(spec)
            except ValueError as err:
                raise ValueError(f"--import {spec}: {err}") from None
    _report(run_study(args.study, args.out, progress=not args.no_progress, smoke=getattr(args, "smoke", False)))
    return 0


def _report(res: Any) -> None:
    """Print a study's table (``StudyResult.table``: final regret, bound, paired differences with round-off
    flagged, recipe tables) and the files it wrote (``results.nc`` among them: ``jaxpriv.open_results``)."""
    print(res.table())
    files = list(res.files.values())
    for run in (res.horizons or res.sizes or {}).values():  # a file over horizons or sizes: each run's dataset
        files += [run.files["nc"], run.files["long"]]
    print(f"wrote {', '.join(str(p) for p in files)}")


def window(args: argparse.Namespace) -> int:
    """The shipped study ``window_privacy`` (WDP-COCOP / WDP-COCOL against W and ln t), its options over the file's."""
    from jaxpriv.experiments.study import run_study

    def edit(raw: dict) -> dict:
        raw = _override(raw, args, ("horizon", "seeds", "seed"))
        if args.epsilon is not None:
            for table in raw["learners"]:
                if "epsilon" in table.get("params", {}):
                    table["params"]["epsilon"] = args.epsilon
        return raw

    out = args.out or str(Path("jaxpriv-out") / time.strftime("window-%Y%m%d-%H%M%S"))
    _report(run_study("window_privacy", out, progress=not args.no_progress, smoke=args.smoke, edit=edit))
    return 0


def audit(args: argparse.Namespace) -> int:
    """Privacy audits: every audited component's claim beside its empirical lower bound."""
    from jaxpriv.experiments.audit_table import print_table

    if args.runs < 10:
        print("jaxpriv audit: error: --runs must be >= 10", file=sys.stderr)
        return 2
    print_table(args.runs, args.seed, args.alpha)
    return 0


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that never abbreviates options (``--smok`` is an error, not ``--smoke``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def _unknown_options(parser: argparse.ArgumentParser, sub: Any, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, an unknown option refused by its command's parser with a did-you-mean
    (``--horizn``: "did you mean --horizon?"), as for a study file's keys."""
    import difflib

    args, extra = parser.parse_known_args(argv)
    if extra:
        command = sub.choices[args.command]
        known = [o for action in command._actions for o in action.option_strings if o.startswith("--")]
        hints = []
        for arg in extra:
            close = difflib.get_close_matches(arg.split("=", 1)[0], known, n=1) if arg.startswith("-") else []
            hints.append(f"{arg} (did you mean {close[0]}?)" if close else arg)
        command.error(f"unrecognized arguments: {' '.join(hints)}")
    return args


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="jaxpriv", description="Private online learning and bandits in JAX.")
    common = _Parser(add_help=False)
    common.add_argument("--no-compile-cache", action="store_true", help="do not use JAX's persistent compilation cache")
    common.add_argument(
        "--compile-cache-dir",
        default=None,
        help="the compilation cache folder (default: $JAXPRIV_CACHE_DIR or ~/.cache/jaxpriv/jax)",
    )
    common.add_argument(
        "--cpu-devices",
        type=int,
        default=None,
        help="JAX CPU devices to split the seeds over (default: one per core; see jaxpriv.use_cpu_cores)",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser(
        "demo", parents=[common], help="PFTAL vs FTAL vs OGD over privacy levels (the shipped study 'demo')"
    )
    p.add_argument("--out", default=None, help="output folder (default: jaxpriv-out/demo-<time>)")
    p.add_argument("--horizon", type=int, default=None, help="T (the file's: 2^14)")
    p.add_argument("--seeds", type=int, default=None, help="runs (the file's: 100)")
    p.add_argument("--dim", type=int, default=None, help="d (the file's: 3)")
    p.add_argument("--epsilons", type=float, nargs="+", default=None, help="PFTAL's budgets (the file's: 0.1 1 10 inf)")
    p.add_argument(
        "--noise",
        choices=["gamma", "laplace", "gaussian"],
        default=None,
        help="tree noise (the file's: gamma); for 'gaussian' the --epsilons values are used as rho",
    )
    p.add_argument("--chunk", type=int, default=None, help="run seeds in batches of this size")
    p.add_argument("--seed", type=int, default=None, help="the integer seed (the file's: 0)")
    p.add_argument("--smoke", action="store_true", help="the file's [smoke] scale")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=demo)
    b = sub.add_parser(
        "bandits",
        parents=[common],
        help="zCDP bandits (Azize & Basu, Section VII): regret gap vs rho, price of privacy",
    )
    b.add_argument("--setting", choices=[*sorted(BANDIT_SETTINGS), "all"], default="all")
    b.add_argument(
        "--full-scale", action="store_true", help="the paper's scale (the study files'); default their [smoke] scale"
    )
    b.add_argument("--seeds", type=int, default=None, help="override the number of runs")
    b.add_argument("--out", default=None, help="output folder (default: jaxpriv-out/bandits-<time>/<setting>)")
    b.add_argument("--seed", type=int, default=None, help="the integer seed (the files': 0)")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    b.set_defaults(func=bandits)
    c = sub.add_parser(
        "baselines",
        parents=[common],
        help="pure-DP bandit baselines (Azize & Basu 2022, Fig. 2; the shipped study 'pure_dp_bandits'): AdaP-(KL)UCB, "
        "DP-UCB, DP-SE, LDP-UCB, AdaC-UCB",
    )
    c.add_argument(
        "--experiment",
        choices=["pure-dp", "epsilon", "gope", "oco"],
        default="pure-dp",
        help="pure-dp: Azize & Basu 2022, Fig. 2, the study pure_dp_bandits (default); epsilon, gope and oco are "
        "shipped study files now "
        "(jaxpriv sweep adap_klucb_epsilon, adac_gope_vs_var, dp_ftrl_vs_pftal_quadratic; jaxpriv sweep --list)",
    )
    c.add_argument("--out", default=None, help="output folder (default: jaxpriv-out/baselines-<time>)")
    c.add_argument(
        "--full-scale",
        action="store_true",
        help="the file's scale, T = 1e7, 20 runs (DP-UCB with Honaker's estimator: jaxpriv sweep pure_dp_bandits_1e6); "
        "default its [smoke] scale, T = 1e4",
    )
    c.add_argument("--seeds", type=int, default=None, help="override the number of runs (the file's: 20)")
    c.add_argument("--horizon", type=int, default=None, help="override T")
    c.add_argument("--seed", type=int, default=None, help="the integer seed (the file's: 0)")
    c.add_argument("--no-progress", action="store_true", help="no progress bar")
    c.set_defaults(func=baselines)
    s = sub.add_parser("sweep", parents=[common], help="run the sweep a TOML study file describes (resumable)")
    s.add_argument("study", nargs="?", default=None, help="a study file, or a shipped study's name (--list)")
    s.add_argument("--list", action="store_true", help="list the shipped study files (the papers' reproductions)")
    s.add_argument("--smoke", action="store_true", help="the file's [smoke] scale (a quick check of the pipeline)")
    s.add_argument("--out", default=None, help="output folder (default: jaxpriv-out/<study file stem>[-smoke])")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=None,
        metavar="MODULE",
        help="import a module that registers components of your own (a module name importable from the working "
        "directory, or a .py path); repeatable; a study file's imports = [...] does the same",
    )
    s.set_defaults(func=sweep)
    w = sub.add_parser(
        "window", parents=[common], help="window privacy against W and ln t (the shipped study 'window_privacy')"
    )
    w.add_argument("--out", default=None, help="output folder (default: jaxpriv-out/window-<time>)")
    w.add_argument("--horizon", type=int, default=None, help="T (the file's: 2048)")
    w.add_argument("--epsilon", type=float, default=None, help="every private learner's epsilon (the file's: 1)")
    w.add_argument("--seeds", type=int, default=None, help="runs (the file's: 16)")
    w.add_argument("--seed", type=int, default=None, help="the integer seed (the file's: 0)")
    w.add_argument("--smoke", action="store_true", help="the file's [smoke] scale")
    w.add_argument("--no-progress", action="store_true", help="no progress bar")
    w.set_defaults(func=window)
    a = sub.add_parser("audit", parents=[common], help="privacy audits: empirical lower bounds beside the claims")
    a.add_argument("--runs", type=int, default=20000, help="runs per side (neighbouring input) per component")
    a.add_argument("--alpha", type=float, default=0.05, help="1 - confidence")
    a.add_argument("--seed", type=int, default=0)
    a.set_defaults(func=audit)
    args = _unknown_options(parser, sub, argv)
    if args.cpu_devices is not None and args.cpu_devices < 1:
        parser.error("--cpu-devices must be >= 1")
    try:
        use_cpu_cores(args.cpu_devices)
    except RuntimeError as err:  # JAX already running in this process (jaxpriv.cli.main called from Python)
        if args.cpu_devices is not None:
            parser.error(str(err))
    if not args.no_compile_cache:
        try:
            enable_compile_cache(args.compile_cache_dir)
        except OSError as err:
            return _error(args.command, f"--compile-cache-dir: cannot use {err.filename or ''} ({err.strerror or err})")
    for name in ("horizon", "seeds", "dim"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            parser.error(f"--{name} must be >= 1")
    # One line each (exit code 2): a horizon the int32 clock cannot count, a seed as_key would refuse.
    if getattr(args, "horizon", None) is not None and args.horizon >= HORIZON_LIMIT:
        return _error(args.command, f"--horizon must be < 2**31 - 1 (int32 clock and counters), got {args.horizon}")
    seed = getattr(args, "seed", None)
    if seed is not None and not 0 <= seed < 2**64:  # jaxpriv._base.as_key's range: every bit of the seed counts
        return _error(args.command, f"--seed must be an integer in [0, 2**64), got {seed}")
    # Bad input is a ValueError naming the argument (the library's convention): one line, exit code 2.
    try:
        check_out(getattr(args, "out", None))
        return args.func(args)
    except ValueError as err:
        return _error(args.command, str(err))


def _error(command: str, message: str) -> int:
    """Print ``jaxpriv <command>: error: <message>`` (one line) to stderr; return the exit code 2."""
    print(f"jaxpriv {command}: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
