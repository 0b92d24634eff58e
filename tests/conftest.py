import os

import pytest

# One CPU device, compiled for the suite's mix of many small programs and a few long runs: XLA:CPU's
# older loop emitters (``--xla_cpu_use_fusion_emitters=false``: the same fused HLO, compiled 1.7x faster)
# at LLVM's optimisation level 1 (its code ~3.7x faster than level 0's). Measured 2026-11-29 (2-core VM,
# no compile cache): seven learners' first sweeps 28.5 -> 24.0 s, a PFTAL run (256 seeds, T = 1024)
# 1.69 -> 0.46 s; tests/oco/test_pftal.py + tests/bandits/test_adac_gope_var.py 164.5 -> 129.3 CPU s. The
# earlier setting (new emitters, level 0) was 1.28x faster than XLA's default on the heaviest tests.
# float32 results can differ from another build's in the last bit (multiply-adds are contracted
# differently), so a subprocess compared bit for bit must get the same flags (below). The older emitters
# at level 0 compile faster still but round AdaC-GOPE-Var's and GOPE's rewards differently (1 ulp):
# not taken. Speed is measured in benchmarks/, never here.
os.environ.setdefault(
    "XLA_FLAGS",
    "--xla_force_host_platform_device_count=1 --xla_backend_optimization_level=1 --xla_cpu_use_fusion_emitters=false",
)

# JAX's persistent compilation cache, shared by every test process of a run (both xdist workers, both pytest
# commands of README's test command, the CLI subprocesses, which inherit the variables): the same program
# compiled in another module (each module's in-memory caches are dropped, below) or on the other worker is read
# back instead of compiled. Measured on the audit and bandit tests: a quarter of the compilations are read back.
# The key covers the program, the compile options and XLA_FLAGS, so nothing compiled differently is shared.
_CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".pytest_cache", "jax")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", _CACHE)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")


def pytest_configure(config: pytest.Config) -> None:
    """The cache above also when a plugin imported JAX before this file set the variables."""
    import jax

    jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
    jax.config.update(
        "jax_persistent_cache_min_compile_time_secs", float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"])
    )


@pytest.fixture
def subprocess_xla_flags() -> str:
    """This process's XLA_FLAGS minus the device count: a subprocess compiles as this process does
    (LLVM's optimisation level changes float32 results in the last bit), on the devices it chooses."""
    return " ".join(f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_code():
    """Drop JAX's compiled executables after each test module.

    Each compiled CPU executable holds about three memory mappings; a worker that compiles tens of
    thousands of them (property tests compile per example) reaches the kernel's 65530-mapping limit
    (vm.max_map_count), and XLA's next compilation segfaults. Measured: 400 compilations add 1270
    mappings, and ``jax.clear_caches()`` returns them.
    """
    yield
    import jax

    jax.clear_caches()


@pytest.fixture
def scratch_declarations():
    """Declarations made in the test (``jaxpriv.declare``, ``registry.register_*``) are undone after it."""
    from jaxpriv import declare

    saved = {kind: dict(table) for kind, table in declare._TABLE.items()}
    yield
    for kind, table in declare._TABLE.items():
        table.clear()
        table.update(saved[kind])
