import os

# One CPU device. The tests are compile-bound (small horizons and seed counts), so XLA's backend
# (LLVM) optimisation passes are skipped: the same HLO and IEEE arithmetic, measured 1.28x faster on
# the five heaviest tests; speed is measured in benchmarks/, never here.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1 --xla_backend_optimization_level=0")
