"""The engine: one ``lax.scan`` over the horizon, ``vmap`` over seeds and a params grid.

One file per job, each importing only the ones above it:

* ``_params``: ``SimParams``, the checkpoint steps, a params tree's grid axes and dtypes.
* ``_check``: the eager checks before anything is compiled (``check_compatible``, ``_prepare``).
* ``_scan``: one seed's run: the carry, the one per-step transition (``_transition``), the
  step's bookkeeping, the scan, ``run``, ``Result``, the compile counter, and ``rollout`` (one
  seed through the same keys and transition, recording what a ``record`` hook asks for).
* ``_seeds``: seed keys, padding and sharding over devices, batching over seeds (``map_seeds``,
  ``map_seeds_and_grid``), several processes.
* ``_resume``: the fingerprint of a configuration and atomic, checked save files.
* ``_driver``: seed chunks × horizon segments, save and resume (a finished sweep's file is its result).
* ``_sweep``: ``sweep`` (step by step, or by a learner's exact episode simulator) and ``summarize``.

The public names are re-exported here (``jaxpriv.sim.X``); the private ones are used from their own
files (``from jaxpriv.sim import _scan``; ``_scan._run``), by the package and its tests alike.
"""

from jaxpriv.sim._check import check_compatible
from jaxpriv.sim._params import (
    SimParams,
    canonical_params,
    grid_axes,
    log_checkpoints,
    normalize_checkpoints,
    spec_ndims,
)
from jaxpriv.sim._scan import (
    COMPILED_KINDS,
    Carry,
    CheckpointRows,
    Result,
    Rollout,
    StepRecord,
    compile_count,
    counts_compiles,
    default_record,
    rollout,
    run,
)
from jaxpriv.sim._seeds import map_seeds, map_seeds_and_grid, padded_seed_keys, take_seeds, use_cpu_cores
from jaxpriv.sim._sweep import summarize, sweep

__all__ = [
    "COMPILED_KINDS",
    "Carry",
    "CheckpointRows",
    "Result",
    "Rollout",
    "SimParams",
    "StepRecord",
    "canonical_params",
    "check_compatible",
    "compile_count",
    "counts_compiles",
    "default_record",
    "grid_axes",
    "log_checkpoints",
    "map_seeds",
    "map_seeds_and_grid",
    "normalize_checkpoints",
    "padded_seed_keys",
    "rollout",
    "run",
    "spec_ndims",
    "summarize",
    "sweep",
    "take_seeds",
    "use_cpu_cores",
]
