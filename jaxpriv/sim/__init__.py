"""The engine: one ``lax.scan`` over the horizon, ``vmap`` over seeds and a params grid.

One file per job, each importing only the ones above it:

* ``_params``: ``SimParams``, the checkpoint steps, a params tree's grid axes and dtypes.
* ``_check``: the eager checks before anything is compiled (``check_compatible``, ``_prepare``).
* ``_scan``: one seed's run: the carry, the one per-step transition (``_transition``), the
  step's bookkeeping, the scan, ``run``, ``Result``, the compile counter, and ``rollout`` (one
  seed through the same keys and transition, recording what a ``record`` hook asks for).
* ``_seeds``: seed keys, padding and sharding over devices, batching over seeds (``map_seeds``,
  ``map_seeds_and_grid``), several processes.
* ``_resume``: the fingerprint of a configuration and atomic, checked save files (also used by
  the study runner, ``jaxpriv.experiments.study``).
* ``_driver``: seed chunks × horizon segments, save and resume.
* ``_sweep``: ``sweep`` and ``summarize``.

Everything is re-exported here: ``jaxpriv.sim.X`` is the name to use, private names included.
"""

# The private names are re-exported for the tests and jaxpriv.testing (``sim._run``, ``sim._init_carry``, ...).
# ruff: noqa: F401

from jaxpriv.sim._check import (
    _call_check,
    _changed,
    _check_leaves,
    _describe,
    _prepare,
    _shapes,
    check_compatible,
)
from jaxpriv.sim._driver import (
    _advance_jit,
    _Driver,
    _fingerprint,
    _init_jit,
    _key_leaf,
    _load,
    _outputs_jit,
    _over_seeds_and_grid,
    _restore,
    _save,
    _summary_jit,
)
from jaxpriv.sim._params import (
    SimParams,
    _is_params_node,
    _leaf_axis,
    _one_point,
    _params_leaves,
    canonical_params,
    grid_axes,
    log_checkpoints,
    normalize_checkpoints,
    spec_ndims,
)
from jaxpriv.sim._scan import (
    _COMPILES,
    COMPILED_KINDS,
    Carry,
    CheckpointRows,
    Result,
    Rollout,
    StepRecord,
    _advance,
    _checkpoint_form,
    _init_carry,
    _outputs,
    _reports_gap,
    _rollout,
    _rollout_jit,
    _run,
    _run_jit,
    _start,
    _step,
    _transition,
    compile_count,
    counts_compiles,
    default_record,
    rollout,
    run,
)
from jaxpriv.sim._seeds import (
    _device_width,
    _gather_accumulator,
    _gather_result,
    _pad_seeds,
    _shard_seeds,
    _take_seeds,
    map_seeds,
    map_seeds_and_grid,
    padded_seed_keys,
    take_seeds,
    use_cpu_cores,
)
from jaxpriv.sim._sweep import _sweep_jit, summarize, sweep

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
