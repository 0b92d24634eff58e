"""The study runner's progress bar: compiling shown as a phase of its own, then a bar whose rate and time left count
running only, and an estimate of the running time before a long run goes on.

``jaxpriv.sweep``'s driver compiles every piece of a sweep ahead of time and reports it
(``progress.compiling()``, ``progress.compiled(seconds)``) before the first segment runs, then calls
``progress(done, total)`` after each segment. ``StudyProgress`` keeps two clocks from these events: the
seconds spent compiling (what the driver measured) and the seconds spent running (the time from the end of a
compile phase, or from the last segment, to the end of a segment). The bar shows the seed-steps done, the
rate over running time only, the running time left at that rate, and the compile time so far; after the
first segment of a run whose rest is estimated at ``ESTIMATE_AFTER`` seconds or more it prints one line,
``<study>: estimated running time 3 min 10 s ...``. A sweep read back from its save file (nothing runs)
advances the bar without touching the rate.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["ESTIMATE_AFTER", "StudyProgress", "duration"]

#: A run whose rest is estimated at this many seconds or more gets the one-line estimate.
ESTIMATE_AFTER = 10.0


def duration(seconds: float) -> str:
    """``seconds`` for a reader: ``"12.4 s"``, ``"3 min 10 s"``, ``"2 h 05 min"``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


class StudyProgress:
    """The progress of one study run (every sweep of it) on a tqdm bar; ``jaxpriv.sweep``'s ``progress`` callable.

    Args:
      name: the study's name (the bar's label).
      total: the seed-steps of every sweep of the run.
      enabled: show the bar and the estimate (``False``: count only; ``after_segment`` is still called).
      after_segment: called after each segment with the number run so far by this call (a hook for tests).
      clock: the running clock (seconds); a test passes a fake one.
      file: where the bar and the estimate go.
    """

    def __init__(
        self, name: str, total: int, enabled: bool = True, after_segment: Callable[[int], None] | None = None,
        clock: Callable[[], float] = time.perf_counter, file: TextIO | None = None,
    ) -> None:  # fmt: skip
        from tqdm.auto import tqdm

        self.name, self.total, self.enabled, self.after_segment, self.clock = name, total, enabled, after_segment, clock
        self.file = file if file is not None else sys.stderr
        self.bar: Any = tqdm(
            total=total, desc=name, unit="seed-step", unit_scale=True, disable=not enabled, file=self.file,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}{postfix}",
        )  # fmt: skip
        self.compile_seconds = 0.0  # spent compiling (the driver's measure)
        self.run_seconds = 0.0  # spent running segments
        self.ran = 0  # seed-steps run by this call (not read back from save files)
        self.done = 0  # seed-steps done, read back ones included (the bar's position)
        self.segments = 0
        self.estimate: float | None = None  # the running time estimated after the first segment
        self._seen = 0  # seed-steps of the current sweep already counted
        self._mark = clock()  # the end of the last compile phase or segment

    def start_sweep(self) -> None:
        """A new sweep of the run starts (``jaxpriv.sweep`` counts its seed-steps from 0)."""
        self._seen = 0

    def compiling(self) -> None:
        """The driver starts compiling: the bar says so."""
        before = f" (compiled {duration(self.compile_seconds)} before)" if self.compile_seconds else ""
        self.bar.set_postfix_str(f"compiling ...{before}")

    def compiled(self, seconds: float) -> None:
        """The driver compiled in ``seconds``; the running clock restarts now."""
        self.compile_seconds += seconds
        self._mark = self.clock()
        self.bar.set_postfix_str(f"compiled in {duration(seconds)}, running")

    def __call__(self, now: int, total: int) -> None:
        """``jaxpriv.sweep``'s progress: ``now`` seed-steps of this sweep done (of ``total``)."""
        t = self.clock()
        step, self._seen = now - self._seen, now
        self.run_seconds += t - self._mark
        self._mark = t
        self.ran += step
        self.done += step
        self.segments += 1
        self.bar.update(step)
        self.bar.set_postfix_str(self._status())
        if self.estimate is None and self.rate() > 0:
            self.estimate = self.run_seconds + (self.total - self.done) / self.rate()
            if self.enabled and self.estimate - self.run_seconds >= ESTIMATE_AFTER:
                self.bar.write(
                    f"{self.name}: estimated running time {duration(self.estimate)} at the first segment's rate "
                    f"({self.rate():.3g} seed-steps/s; compiling {duration(self.compile_seconds)} so far, not "
                    "included)",
                    file=self.file,
                )
        if self.after_segment is not None:
            self.after_segment(self.segments)

    def resumed(self, done: int) -> None:
        """The sweep resumes from its save file with ``done`` seed-steps done: they advance the bar, not the rate."""
        self._seen = done
        self.skip(done)

    def skip(self, steps: int) -> None:
        """``steps`` seed-steps read back from a finished sweep's save file: the bar advances, the rate does not."""
        self.done += steps
        self.bar.update(steps)

    def rate(self) -> float:
        """Seed-steps per second of running time (compiling excluded); 0 before the first segment."""
        return self.ran / self.run_seconds if self.run_seconds > 0 else 0.0

    def left(self) -> float:
        """The running time left at the rate so far (seconds)."""
        rate = self.rate()
        return (self.total - self.done) / rate if rate > 0 else float("nan")

    def close(self) -> None:
        self.bar.set_postfix_str(self._status(final=True))
        self.bar.close()

    def _status(self, final: bool = False) -> str:
        """The bar's text: the running rate, the running time left (ran, at the end), the compile time."""
        parts = []
        if self.rate() > 0:
            parts.append(f"{self.rate():.3g} seed-steps/s")
            parts.append(f"ran {duration(self.run_seconds)}" if final else f"{duration(self.left())} left")
        parts.append(f"compiling {duration(self.compile_seconds)}")
        return ", ".join(parts)
