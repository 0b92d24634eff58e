#!/usr/bin/env bash
# Issue 47's GPU measurements in one call of a lent GPU machine (about 5 minutes on an H200; each part has its own timeout, 9 minutes at most).
#
# What it prints (and writes under $OUT, or ./gpu_out without one):
#   1. the device and jax's version;
#   2. step_cost.py --time for PFTAL, OGD, AdaC-UCB and WDP-COCOP: conditionals, kernels and bytes of the GPU
#      program, µs per step at 1 and 100 seeds, seed-steps/s at 1e4 and 1e6 seeds, compile time at 1e6 seeds;
#   3. WDP-COCOP's throughput and compile time at 3e5 seeds (where its compile used to take 49 s);
#   4. this tree against a30ba29 in the same call (cpu_paired.py on the GPU: wall clock, 1e6 seeds, T = 1024),
#      OGD, PFTAL Gaussian d = 10 and AdaC-UCB;
#   5. PFTAL's kernels at 1e6 seeds, ranked by time per seed-step (profile_kernels.py).
#
# Before the call, on the development machine, in the repository root (the base tree travels as an ignored
# folder; the device machine has jax, optax, chex and matplotlib but no git history):
#   grep -qx '/.gpu/' .git/info/exclude || echo '/.gpu/' >> .git/info/exclude
#   rm -rf .gpu && mkdir -p .gpu/a30ba29 && git archive a30ba29 jaxpriv benchmarks | tar -x -C .gpu/a30ba29
# then run `bash benchmarks/gpu_check.sh` with `.gpu` carried. SMALL=1 runs every part at toy sizes (a check of
# the script on a CPU, not a measurement).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu_out}"
mkdir -p "$out"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
py="${PYTHON:-python3}"
if [[ "${SMALL:-0}" == 1 ]]; then
    big=4096 mid=2048 seeds=2048 horizon=64 reps=3 short=(--short 64 --long 64)
else
    big=1000000 mid=300000 seeds=1000000 horizon=1024 reps=3 short=()
fi
part() { echo; echo "=== $1 ($(date -u +%T))"; }

part "device"
nvidia-smi -L 2>/dev/null
"$py" -c "import jax; print('jax', jax.__version__, jax.devices())"

part "step cost and time: PFTAL, OGD, AdaC-UCB, WDP-COCOP"
timeout 270 "$py" benchmarks/step_cost.py --time --markdown --big "$big" "${short[@]}" pftal ogd adac_ucb wdp_cocop \
    2>&1 | tee "$out/step_cost.md"

part "WDP-COCOP at $mid seeds"
timeout 90 "$py" benchmarks/step_cost.py --time --markdown --big "$mid" "${short[@]}" wdp_cocop 2>&1 | tee "$out/wdp_mid.md"

part "against a30ba29 in this call"
if [[ -d .gpu/a30ba29/jaxpriv ]]; then
    timeout 150 "$py" benchmarks/cpu_paired.py --base a30ba29 --base-tree "$PWD/.gpu/a30ba29" --core 0 --clock wall --no-numpy \
        --seeds "$seeds" --horizon "$horizon" --reps "$reps" --rows ogd:10,pftal-gaussian:10,adac_ucb:10 --markdown \
        2>&1 | tee "$out/paired.md"
else
    echo "no .gpu/a30ba29 (see the header): skipped"
fi

part "PFTAL's kernels at $seeds seeds"
timeout 60 "$py" benchmarks/profile_kernels.py pftal-gaussian 10 --seeds "$seeds" --horizon 256 --top 30 2>&1 \
    | tee "$out/kernels.txt"
part "done"
