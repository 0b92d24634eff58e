"""Progress: compiling is a phase of its own, reported before the first segment, and the rate and time left count
running only (``jaxpriv.sim._driver``, ``jaxpriv.experiments._progress``)."""

import io

import jax
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, oco, sets, sim
from jaxpriv.experiments._progress import StudyProgress, duration

_PIECES = ("_init_jit", "_advance_jit", "_outputs_jit")


class _Recorder:
    """A progress callable with the driver's optional methods, recording what it is told, in order."""

    def __init__(self, events: list):
        self.events = events

    def compiling(self) -> None:
        self.events.append("compiling")

    def compiled(self, seconds: float) -> None:
        self.events.append("compiled")

    def __call__(self, done: int, total: int) -> None:
        self.events.append(done)


def test_the_driver_compiles_every_piece_once_before_the_first_segment():
    events: list = []

    def on_compile(name: str, seconds: float, **kw) -> None:  # XLA compilations of the driver's pieces
        if name == "/jax/core/compile/backend_compile_duration" and any(p in kw.get("fun_name", "") for p in _PIECES):
            events.append("xla")

    ball = sets.l2_ball(2)
    params = jp.SimParams(oco.OGDParams(1.0, 2.0), envs.QuadraticParams(center=np.array([0.3, 0.3])))
    args = (oco.ogd(ball), envs.quadratic_stream(ball), params, 0, 48, 3, [16, 48])
    before = sim.compile_count("driver")
    jax.monitoring.register_event_duration_secs_listener(on_compile)
    try:  # 2 chunks (2 + 1 seeds) x segments of 32 and 16 steps
        result = jp.sweep(*args, chunk=2, segment=32, progress=_Recorder(events))
    finally:
        jax.monitoring.unregister_event_duration_listener(on_compile)
    # the start, the two segment lengths and the outputs: traced and compiled once each, all in the compile phase
    assert sim.compile_count("driver") - before == 4
    assert events == ["compiling", "xla", "xla", "xla", "xla", "compiled", 64, 96, 128, 144], events
    # the same numbers as the sweep without progress (the driver's, bit for bit)
    np.testing.assert_array_equal(result.regret, jp.sweep(*args, chunk=2, segment=32).regret)


def test_the_rate_counts_running_only_and_the_estimate_comes_after_the_first_segment():
    now = [0.0]
    out = io.StringIO()
    bar = StudyProgress("study", total=4000, clock=lambda: now[0], file=out)
    bar.start_sweep()
    bar.compiling()
    now[0] = 100.0  # 100 s of compiling
    bar.compiled(100.0)
    assert "compiling ..." in out.getvalue() and "seed-steps/s" not in out.getvalue()
    now[0] = 102.0  # the first segment: 1000 seed-steps in 2 s of running
    bar(1000, 4000)
    assert bar.rate() == 500.0 and bar.left() == 6.0  # not 1000 / 102 s
    assert bar.estimate == 8.0 and "estimated" not in out.getvalue()  # 6 s left: below ESTIMATE_AFTER, no line
    now[0] = 104.0
    bar(2000, 4000)
    assert (bar.run_seconds, bar.compile_seconds) == (4.0, 100.0)
    text = out.getvalue()
    assert text.index("compiling ...") < text.index("500 seed-steps/s") and "compiling 1 min 40 s" in text
    # a long run: the estimate after its first segment, compiling not included
    long = io.StringIO()
    slow = StudyProgress("big", total=10**6, clock=lambda: now[0], file=long)
    slow.start_sweep()
    slow.compiling()
    now[0] = 116.4
    slow.compiled(12.4)
    now[0] = 118.4
    slow(10**4, 10**6)  # 5000 seed-steps/s: 198 s left
    assert "big: estimated running time 3 min 20 s at the first segment's rate" in long.getvalue()
    assert "compiling 12.4 s so far, not included" in long.getvalue()
    assert slow.estimate == pytest.approx(200.0)


def test_durations_read_as_minutes_and_hours():
    assert [duration(s) for s in (12.44, 190.0, 7500.0)] == ["12.4 s", "3 min 10 s", "2 h 05 min"]
