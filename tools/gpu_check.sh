#!/usr/bin/env bash
# One run on a lent GPU machine (see docs/backends.md#cuda): versions, the CUDA suites on the
# device, benchmarks/cuda_bench.py, `graphc bench` with the cuda backend, and (when time is
# left) the Dask scaling benchmark on more cores than CI has. Logs and JSON go to $OUT.
#   tools/gpu_check.sh [all|cudabench|tests|bench|dask ...]   (default: all)
# GPU_CHECK_BUDGET (s, default 480) bounds the whole run; CUDABENCH_S, TESTS_S cap parts;
# BENCH_MIN_TIME is graphc bench's --min-time (default 0.3); CUDABENCH_MODES the launch
# paths cuda_bench runs under (default: direct).
# Packages the device image lacks travel as wheels in .whl/ (installed under /tmp/site).
set -u
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
OUT=${OUT:-/tmp/graphc-gpu-out}; mkdir -p "$OUT"
START=$SECONDS
BUDGET=${GPU_CHECK_BUDGET:-480}          # seconds this script may take in all
left() { echo $(( BUDGET - (SECONDS - START) )); }
want() { [ $# -eq 0 ] && return 0; for p in $PARTS; do [ "$p" = all ] || [ "$p" = "$1" ] && return 0; done; return 1; }
PARTS=${*:-all}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl 2>&1 | tail -2
fi
export PYTHONPATH=/tmp/site:$PWD
[ -z "${CUDA_HOME:-}" ] && [ -d /usr/local/cuda ] && export CUDA_HOME=/usr/local/cuda
{
  date -u; nproc; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
    --format=csv
  python3 - <<'EOF'
import importlib.metadata as m, sys
def v(d):
    try:
        return m.version(d)
    except m.PackageNotFoundError:
        return None
print(sys.version.split()[0], {d: v(d) for d in ("numpy", "numba", "numba-cuda", "llvmlite",
      "cupy-cuda13x", "cupy-cuda12x", "cuda-bindings", "gast", "pytest", "pytest-xdist",
      "hypothesis", "jax", "dask", "distributed")})
from numba import cuda
print("cuda available:", cuda.is_available(), cuda.get_current_device().name,
      cuda.get_current_device().compute_capability)
EOF
} 2>&1 | tee "$OUT/versions.log"

if want cudabench && [ "$(left)" -gt 40 ]; then
  # GRAPHC_CUDA_LAUNCH modes side by side (launch.py); the first is profiled
  EXTRA="--profile --json $OUT/cuda_bench.json"   # $OUT takes 8 files back: one JSON
  for MODE in ${CUDABENCH_MODES:-direct}; do
    [ "$(left)" -gt 40 ] || break
    echo "== cuda_bench, GRAPHC_CUDA_LAUNCH=$MODE ($(left) s left)"
    GRAPHC_CUDA_LAUNCH=$MODE timeout $(( $(left) < ${CUDABENCH_S:-150} ? $(left) : ${CUDABENCH_S:-150} )) \
      python3 benchmarks/cuda_bench.py $EXTRA 2>&1 \
      | tee "$OUT/cuda_bench_$MODE.log" | grep -v "^ \|^$\|Warning\|warn(" | head -40
    EXTRA=
  done
fi
if want tests && [ "$(left)" -gt 40 ]; then
  echo "== CUDA suites on the device ($(left) s left)"
  GRAPHC_TEST_CUDA=real timeout $(( $(left) < ${TESTS_S:-220} ? $(left) : ${TESTS_S:-220} )) python3 -m pytest -v -rfE --durations=10 \
    -p no:cacheprovider -n 14 --timeout 170 -W ignore::pytest.PytestAssertRewriteWarning \
    tests/cuda tests/cuda_kernels > "$OUT/tests.log" 2>&1
  echo "pytest rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed|^[0-9.]+s call" "$OUT/tests.log" | tail -50
fi
if want bench && [ "$(left)" -gt 40 ]; then
  echo "== graphc bench ($(left) s left)"
  timeout $(( $(left) < 150 ? $(left) : 150 )) python3 -m graphc bench --backend numpy \
    --backend numba --backend cuda --min-time ${BENCH_MIN_TIME:-0.3} --json "$OUT/bench.json" --markdown \
    > "$OUT/bench.log" 2>&1
  echo "bench rc=$?"; grep -v "^\[" "$OUT/bench.log" | tail -45
fi
if want dask && [ "$(left)" -gt 70 ]; then
  echo "== dask_bench ($(left) s left)"
  # --breakdown/--ceiling: per-worker blocks, busy and idle time, and the plain-process
  # scaling of the per-block work (issue 17: is a shortfall dask's, graphc's or the box's?)
  timeout $(( $(left) - 10 )) python3 benchmarks/dask_bench.py --rounds 3 --breakdown \
    --ceiling 2>&1 | grep -v "distributed\.\|^\s*$\|Warning\|warn" \
    | tee "$OUT/dask_bench.log" | tail -12
fi
echo "== done in $(( SECONDS - START )) s"
