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

Usage::

    python benchmarks/cpu_paired.py --base a30ba29                       # PFTAL Gaussian/Gamma at d = 3, 10, 100 ...
    python benchmarks/cpu_paired.py --base a30ba29 --rows pftal-gaussian:10,ogd:10 --reps 5
    python benchmarks/cpu_paired.py --base a30ba29 --all                 # every row of throughput.py's CPU table
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
        import throughput  # the side's own script: its learners' setup

        import jaxpriv as jp

        setups: dict[tuple[str, int, int], Any] = {}  # one learner object per row: sweep compiles it once

        def run(name: str, dim: int, seeds: int, horizon: int, rep: int) -> None:
            if (name, horizon, dim) not in setups:
                setups[name, horizon, dim] = throughput._oco_setup(name, horizon, dim)
            learner, env, ep, vary = setups[name, horizon, dim]
            # vary(rep % 5): new traced params each rep, within every learner's accepted budgets (PFTAL's ρ <= 11.6)
            r = jp.sweep(learner, env, jp.SimParams(vary(rep % 5), ep), jax.random.key(rep + 1), horizon, seeds=seeds,
                         checkpoints="log")  # fmt: skip
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
        name, _, dim = item.partition(":")
        rows.append((name, int(dim or 10)))
    return tuple(rows)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(Path(sys.argv[2]), sys.argv[3])
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
    args = parser.parse_args()
    old_tree = Path(args.base_tree).resolve() if args.base_tree else base_tree(args.base, Path(args.base_dir))
    rows = parse_rows(args.rows, args.all)
    head = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                          text=True).stdout.strip()  # fmt: skip
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
        for side in sides:  # compile and run once (not timed)
            side.time(**size, rep=-1)
        times: dict[str, list[tuple[float, float]]] = {side.label: [] for side in sides}
        for rep in range(args.reps):
            for side in sides if rep % 2 == 0 else sides[::-1]:  # alternated: ABC, CBA, ...
                times[side.label].append(side.time(**size, rep=rep))
        old, new = (np.array(times[side.label]) for side in sides[:2])
        paired = old[:, clock] / new[:, clock]
        o, n = np.median(old[:, clock]), np.median(new[:, clock])
        wall = np.median(old[:, 0]) / np.median(new[:, 0])
        num = f"{np.median(np.array(times['numpy'])[:, clock]):.3f}" if not args.no_numpy else ""
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
