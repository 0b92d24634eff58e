"""Per-core CPU speed of this tree against a named commit, paired in one run (issue 47).

Each side runs in its own process from its own git worktree: this checkout (its working tree, so
uncommitted changes count) and a detached worktree of ``--base`` (created under ``--base-dir`` if it is
not there). A third process runs the independent float32 NumPy program vectorised over seeds
(``benchmarks/throughput.py:_numpy_row`` of this tree). All three are pinned to the same core
(``taskset -c CORE``) and each side's learner is set up by its own ``benchmarks/throughput.py:_oco_setup``
and run by its own ``jaxpriv.sweep`` (1024 seeds, T = 4096, ``checkpoints="log"`` by default).

The processes stay up and are driven one request at a time: a row is first compiled and run once by
each side (not timed), then timed ``--reps`` times with the sides alternated (old, new, NumPy; then
NumPy, new, old; ...), so a shared machine's load hits them alike. Reported per row: the medians, the
speed of this tree relative to the base (``new/old``: base time over this tree's time, > 1 is faster),
the per-rep paired ratios' range, and this tree's speed relative to NumPy.

Between two processes of the same code this machine reads ±3-6%, so ``--inprocess`` measures in one
process instead: for each row, each side exports its engine's one compiled call (``jax.export``, with its
arguments, outputs and its ``ENGINE_COMPILER_OPTIONS``) in its own process from its own tree; then one
process pinned to the core deserializes both, compiles each with its side's options, checks that each
reproduces its side's outputs bit for bit, and times them alternated (process CPU time). Reported: the
median and IQR of the per-rep ratios, and a control: this tree against a second compile of itself.
Rows ``policy:NAME`` (either mode, no NumPy peer) are the finite-armed policies of ``bandits_throughput.py``.
``--inprocess`` needs the ``flatbuffers`` package (jax.export's serialization): ``pip install -e ".[bench]"``.

Usage::

    python benchmarks/cpu_paired.py --base a30ba29                       # PFTAL Gaussian/Gamma at d = 3, 10, 100 ...
    python benchmarks/cpu_paired.py --base a30ba29 --rows pftal-gaussian:10,ogd:10 --reps 5
    python benchmarks/cpu_paired.py --base a30ba29 --all                 # every row of throughput.py's CPU table
    python benchmarks/cpu_paired.py --base a30ba29 --inprocess --core 0 --rows policy:dp_se --horizon 2048 --reps 21
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: The default rows: PFTAL (Gaussian and Gamma trees) at d = 3, 10, 100, the other learners at d = 10.
DEFAULT_ROWS = (
    *((f"pftal-{noise}", d) for noise in ("gaussian", "gamma") for d in (3, 10, 100)),
    ("ogd", 10), ("ftal", 10), ("mi_ogd", 10), ("dp_ftrl", 10), ("private_bandit_ftal", 10), ("adac_ucb", 10),
)  # fmt: skip


# --- a worker: one side, one process ---------------------------------------------------------------


def worker(tree: Path, kind: str) -> None:
    """Answer requests ``{"name", "dim", "seeds", "horizon", "rep"}`` on stdin with ``{"s": seconds}`` on stdout.

    ``kind``: ``"jax"`` (the tree's own sweep) or ``"numpy"`` (this tree's NumPy reference).
    """
    sys.path[:0] = [str(tree), str(tree / "benchmarks")]  # the side's jaxpriv and its benchmarks
    import numpy as np

    if kind == "jax":
        import jax

        import jaxpriv as jp

        setups: dict[tuple[str, int, int], Any] = {}  # one learner object per row: sweep compiles it once

        def run(name: str, dim: int, seeds: int, horizon: int, rep: int) -> None:
            if (name, horizon, dim) not in setups:
                setups[name, horizon, dim] = _setup(name, horizon, dim)
            learner, env, params = setups[name, horizon, dim]
            # params(rep % 5): new traced params each rep, within every learner's accepted budgets (PFTAL's ρ <= 11.6)
            r = jp.sweep(
                learner, env, params(rep % 5), jax.random.key(rep + 1), horizon, seeds=seeds, checkpoints="log"
            )
            jax.block_until_ready(r.regret)

        print(json.dumps({"ready": jp.__file__}), flush=True)
    else:
        import throughput

        def run(name: str, dim: int, seeds: int, horizon: int, rep: int) -> None:
            throughput._numpy_row(np.random.default_rng(rep + 1), seeds, horizon, dim, name)

        print(json.dumps({"ready": "numpy"}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        t0, c0 = time.perf_counter(), time.process_time()
        run(req["name"], req["dim"], req["seeds"], req["horizon"], req["rep"])
        print(json.dumps({"s": time.perf_counter() - t0, "cpu": time.process_time() - c0}), flush=True)


def _setup(name: str, horizon: int, dim: int) -> tuple[Any, Any, Any]:
    """``(learner, env, params(rep))`` of a row, from the side's own benchmark scripts (imported from ``sys.path``).

    ``policy:NAME``: a finite-armed policy of ``bandits_throughput.py --policies`` (its ``_policies``, ε = 1, K = 10,
    Bernoulli means); any other name: a row of ``throughput.py``'s CPU table (``_oco_setup``).
    """
    import jaxpriv as jp

    if name.startswith("policy:"):
        import bandits_throughput as bt

        from jaxpriv.envs.bandits import BernoulliParams, bernoulli_bandit

        policies = {key.split()[0]: value for key, value in bt._policies(horizon).items()}
        if name[7:] not in policies:
            raise SystemExit(f"{name}: not among this tree's bandits_throughput._policies ({', '.join(policies)})")
        learner, lp = policies[name[7:]]
        ep = BernoulliParams(bt.MEANS)
        return learner, bernoulli_bandit(bt.K), lambda rep: jp.SimParams(lp, ep)
    import throughput

    learner, env, ep, vary = throughput._oco_setup(name, horizon, dim)
    return learner, env, lambda rep: jp.SimParams(vary(rep), ep)


# --- in one process (--inprocess) ------------------------------------------------------------------


def export_row(tree: Path, name: str, dim: int, seeds: int, horizon: int, out: str) -> None:
    """In the side's own process: run the row's sweep once and write its compiled call to ``out`` (a pickle).

    The engine's one compiled call (``_sweep_jit`` with the engine's compiler options) is captured with
    its arguments and exported (``jax.export``, serialized); its outputs and the side's
    ``ENGINE_COMPILER_OPTIONS`` go with it, so the timing process can compile it as the side does and
    check that it reproduces the side's own results.
    """
    sys.path[:0] = [str(tree), str(tree / "benchmarks")]
    import pickle

    import jax

    import jaxpriv as jp
    from jaxpriv import _base

    try:
        from jaxpriv.sim import _sweep as engine
    except ImportError:  # before the engine was a package (a30ba29)
        import jaxpriv.sim as engine
    jitted = getattr(engine, "_sweep_jit", None)
    if not hasattr(jitted, "_top") or not hasattr(_base, "ENGINE_COMPILER_OPTIONS"):
        raise SystemExit(f"{tree}: no engine_jit'ed _sweep_jit in jaxpriv.sim, which --inprocess exports")
    learner, env, params = _setup(name, horizon, dim)
    top, calls = jitted._top, []

    def record(*args: Any) -> Any:
        calls.append((args, top(*args)))
        return calls[-1][1]

    jitted._top = record
    jax.block_until_ready(jp.sweep(learner, env, params(0), jax.random.key(1), horizon, seeds=seeds,
                                   checkpoints="log").regret)  # fmt: skip
    jitted._top = top
    if len(calls) != 1:
        raise SystemExit(f"{name}: {len(calls)} compiled calls (chunks or segments); --inprocess needs one")
    args, outputs = calls[0]
    static = args[:-2]  # the last two arguments are traced: the keys and the params
    leaves, treedef = jax.tree.flatten(args[-2:])

    def flat(*leaves: Any) -> Any:
        return jax.tree.leaves(jitted._plain(*static, *jax.tree.unflatten(treedef, leaves)))

    exported = jax.export.export(jax.jit(flat))(*leaves)
    with open(out, "wb") as f:
        pickle.dump({"exported": exported.serialize(), "args": [_host(x) for x in leaves], "tree": str(tree),
                     "outputs": [_host(x) for x in jax.tree.leaves(outputs)],
                     "options": _base.ENGINE_COMPILER_OPTIONS}, f)  # fmt: skip


def _host(x: Any) -> Any:
    """A NumPy copy of an array (a key array as its key data), to pickle or to compare as bytes."""
    import jax
    import numpy as np

    return np.asarray(jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x)


def time_exported(reps: int, files: list[str]) -> None:
    """In one process: compile each exported call, check it reproduces its side's outputs, time them alternated.

    Prints one JSON line: each file's process CPU seconds per rep (the order reversed every other rep).
    The same file may be given twice (a second compile of the same program: the control).
    """
    import pickle

    import jax

    calls = []
    for path in files:
        with open(path, "rb") as f:
            saved = pickle.load(f)
        exported = jax.export.deserialize(saved["exported"])
        args = [jax.random.wrap_key_data(a) if jax.dtypes.issubdtype(aval.dtype, jax.dtypes.prng_key) else a
                for a, aval in zip(saved["args"], exported.in_avals, strict=True)]  # fmt: skip
        fn = jax.jit(exported.call, compiler_options=saved["options"])
        out = jax.block_until_ready(fn(*args))  # compiles
        same = all(_host(o).tobytes() == r.tobytes() for o, r in zip(out, saved["outputs"], strict=True))
        if not same:
            raise SystemExit(f"{path} ({saved['tree']}): the compiled export does not reproduce the tree's outputs")
        calls.append((fn, args))
    times: list[list[float]] = [[] for _ in calls]
    for rep in range(reps):
        for i in range(len(calls)) if rep % 2 == 0 else reversed(range(len(calls))):
            fn, args = calls[i]
            c0 = time.process_time()
            jax.block_until_ready(fn(*args))
            times[i].append(time.process_time() - c0)
    print(json.dumps(times), flush=True)


def inprocess(old_tree: Path, rows: tuple[tuple[str, int], ...], args: argparse.Namespace, head: str) -> None:
    """``--inprocess``: per row, each side exports its compiled sweep; one pinned process times them alternated."""
    import tempfile

    import numpy as np

    try:
        import flatbuffers  # noqa: F401  (jax.export's serialization needs it)
    except ImportError:
        raise SystemExit(
            "--inprocess needs flatbuffers (jax.export serializes with it): pip install -e '.[bench]'"
        ) from None
    script, pin = str(Path(__file__).resolve()), ["taskset", "-c", str(args.core)]
    print(f"in one process: base {args.base} ({old_tree}) against {head} ({ROOT}); pinned to core {args.core}; "
          f"{args.seeds} seeds, T = {args.horizon}, {args.reps} alternated reps; process CPU time")  # fmt: skip
    print("| learner | d | base s | this s | this/base (median of per-rep ratios) | IQR | control: this/this | IQR |")
    print("|---|---|---|---|---|---|---|---|")
    for name, dim in rows:
        with tempfile.TemporaryDirectory() as tmp:
            files = []
            for label, tree in (("base", old_tree), ("this", ROOT)):
                files.append(f"{tmp}/{label}.pkl")
                size = [name, str(dim), str(args.seeds), str(args.horizon), files[-1]]
                env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
                done = subprocess.run([*pin, sys.executable, script, "--export", str(tree), *size], cwd=tree, env=env)
                if done.returncode:
                    raise SystemExit(f"{name}: the export from {tree} failed (above)")
            timer = [*pin, sys.executable, script, "--time-exported", str(args.reps), files[0], files[1], files[1]]
            answer = subprocess.run(timer, capture_output=True, text=True)
            if answer.returncode:
                raise SystemExit(f"{name}: the timing process failed:\n{answer.stderr[-2000:]}")
        old, new, again = (np.array(t) for t in json.loads(answer.stdout.strip().splitlines()[-1]))
        speed, control = np.quantile(old / new, [0.25, 0.5, 0.75]), np.quantile(again / new, [0.25, 0.5, 0.75])
        print(
            f"| {name} | {dim} | {np.median(old):.3f} | {np.median(new):.3f} | {speed[1]:.3f} | "
            f"{speed[0]:.3f}-{speed[2]:.3f} | {control[1]:.3f} | {control[0]:.3f}-{control[2]:.3f} |",
            flush=True,
        )
    print(
        "this/base: each rep's base time over this tree's (> 1: this tree is faster); control: a second compile "
        "of this tree's export against the first, in the same process (the method's noise)."
    )


# --- the driver ------------------------------------------------------------------------------------


class Side:
    """A worker process pinned to ``core``."""

    def __init__(self, label: str, tree: Path, kind: str, core: int) -> None:
        self.label = label
        env = {**os.environ, "PYTHONPATH": str(tree)}
        cmd = ["taskset", "-c", str(core), sys.executable, str(Path(__file__).resolve()), "--worker", str(tree), kind]
        self.proc = subprocess.Popen(cmd, cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ready = json.loads(self._line())["ready"]

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.label}: the worker exited (code {self.proc.wait()})")
        return line

    def time(self, **req) -> tuple[float, float]:
        """``(wall seconds, CPU seconds of the worker process)`` of one request."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self._line())
        return float(answer["s"]), float(answer["cpu"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def describe(tree: Path) -> str:
    """The commit a checkout holds (``git describe --always --dirty``); empty for a tree that is not a checkout of
    its own (an exported tree, even one inside another repository: gpu_check.sh's ``.gpu/a30ba29``)."""
    if not (tree / ".git").exists():
        return ""
    return subprocess.run(["git", "-C", str(tree), "describe", "--always", "--dirty"], capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def base_tree(commit: str, base_dir: Path) -> Path:
    """A detached worktree of ``commit`` (created if absent; left in place for the next run)."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", commit], capture_output=True, text=True,
                         check=True).stdout.strip()  # fmt: skip
    path = base_dir / f"jaxpriv-{sha}"
    if not path.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), sha], check=True)
    return path


def parse_rows(text: str | None, every: bool) -> tuple[tuple[str, int], ...]:
    if every:
        sys.path.insert(0, str(HERE))
        import throughput

        return tuple(throughput.CPU_ROWS)
    if not text:
        return DEFAULT_ROWS
    rows = []
    for item in text.split(","):
        if item.startswith("policy:"):  # a finite-armed policy (K = 10 of bandits_throughput.py)
            rows.append((item, 10))
            continue
        name, _, dim = item.partition(":")
        rows.append((name, int(dim or 10)))
    return tuple(rows)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(Path(sys.argv[2]), sys.argv[3])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--export":
        tree, name, dim, seeds, horizon, out = sys.argv[2:8]
        export_row(Path(tree), name, int(dim), int(seeds), int(horizon), out)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--time-exported":
        time_exported(int(sys.argv[2]), sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--base", default="a30ba29", help="the commit to compare with (default a30ba29)")
    parser.add_argument("--base-dir", default="/tmp", help="where the base commit's worktree is made")
    parser.add_argument("--base-tree", default=None, help="an existing checkout of the base instead")
    parser.add_argument("--rows", default=None, help="name:d,name:d (names of throughput.py's CPU table)")
    parser.add_argument("--all", action="store_true", help="every row of throughput.py's CPU table")
    parser.add_argument("--core", type=int, default=1, help="the core all processes are pinned to")
    parser.add_argument("--seeds", type=int, default=1024)
    parser.add_argument("--horizon", type=int, default=4096)
    parser.add_argument("--reps", type=int, default=3, help="timed runs of each side per row (median; >= 3)")
    parser.add_argument("--no-numpy", action="store_true", help="skip the NumPy peer")
    parser.add_argument(
        "--clock", choices=("cpu", "wall"), default="cpu",
        help="cpu: each process's own CPU time (default; other processes' load does not count); wall",
    )  # fmt: skip
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument(
        "--inprocess", action="store_true",
        help="each side exports its compiled sweep (jax.export); one pinned process times both alternated",
    )  # fmt: skip
    args = parser.parse_args()
    old_tree = Path(args.base_tree).resolve() if args.base_tree else base_tree(args.base, Path(args.base_dir))
    rows = parse_rows(args.rows, args.all)
    head = describe(ROOT)
    if args.base_tree:  # label the base by what its tree holds (a git checkout), not by --base's default
        args.base = describe(old_tree) or args.base
    if args.inprocess:
        inprocess(old_tree, rows, args, head)
        return
    sides = [Side(args.base, old_tree, "jax", args.core), Side(head, ROOT, "jax", args.core)]
    if not args.no_numpy:
        sides.append(Side("numpy", ROOT, "numpy", args.core))
    print(f"base {args.base} ({sides[0].ready}) against {head} ({sides[1].ready}); pinned to core {args.core}; "
          f"{args.seeds} seeds, T = {args.horizon}, medians of {args.reps}")  # fmt: skip
    cols = ["learner", "d", "base s", "this s", "NumPy s", "this/base", "paired range", "this/NumPy", "wall this/base"]
    sep = " | " if args.markdown else "  "
    print(("| " if args.markdown else "") + sep.join(cols) + (" |" if args.markdown else ""))
    if args.markdown:
        print("|" + "|".join("---" for _ in cols) + "|")
    import numpy as np

    clock = 1 if args.clock == "cpu" else 0
    for name, dim in rows:
        size = {"name": name, "dim": dim, "seeds": args.seeds, "horizon": args.horizon}
        # a policy row has no NumPy peer (throughput.py's NumPy references are the CPU table's)
        row_sides = sides[:2] if name.startswith("policy:") else sides
        for side in row_sides:  # compile and run once (not timed)
            side.time(**size, rep=-1)
        times: dict[str, list[tuple[float, float]]] = {side.label: [] for side in row_sides}
        for rep in range(args.reps):
            for side in row_sides if rep % 2 == 0 else row_sides[::-1]:  # alternated: ABC, CBA, ...
                times[side.label].append(side.time(**size, rep=rep))
        old, new = (np.array(times[side.label]) for side in sides[:2])
        paired = old[:, clock] / new[:, clock]
        o, n = np.median(old[:, clock]), np.median(new[:, clock])
        wall = np.median(old[:, 0]) / np.median(new[:, 0])
        num = f"{np.median(np.array(times['numpy'])[:, clock]):.3f}" if "numpy" in times else ""
        peer = f"{float(num) / n:.2f}" if num else ""
        row = [name, dim, f"{o:.3f}", f"{n:.3f}", num, f"{o / n:.2f}", f"{paired.min():.2f}-{paired.max():.2f}"]
        row += [peer, f"{wall:.2f}"]
        print(("| " if args.markdown else "") + sep.join(str(x) for x in row) + (" |" if args.markdown else ""),
              flush=True)  # fmt: skip
    for side in sides:
        side.close()
    print(
        f"times: {args.clock} seconds per sweep (median); speed ratios: the other side's median time over this "
        "tree's (> 1: this tree is faster); paired range: each rep's base time over this tree's time in the same "
        "rep; wall this/base: the same ratio of wall times."
    )


if __name__ == "__main__":
    main()
