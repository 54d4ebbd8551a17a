#!/usr/bin/env bash
# The session's GPU run, on the device machine: GPU tests, the benchmark suite through
# prism.superoptimize (search + verification loaded from the carried cache: the GPU image has no
# z3/egglog), and the kernel library build. Everything lands in $OUT.
#   usage: bash scripts/gpu_final.sh [tests] [bench] [library]
set -uo pipefail
export PYTHONPATH=. PRISM_CACHE_DIR="$PWD/.prism-cache" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv | tee "$OUT/gpu.txt"
steps=${*:-tests bench library}
for step in $steps; do
  start=$(date +%s)
  case $step in
    tests)
      python3 -m pytest -q -m gpu -p no:cacheprovider tests/ 2>&1 | tee "$OUT/gpu_tests.log" | tail -25 ;;
    bench)
      python3 -m bench --samples "${SAMPLES:-24}" --out "$OUT" --note "superoptimize, ${SAMPLES:-24} samples/config" \
        2>&1 | tee "$OUT/bench.log" | tail -30 ;;
    library)
      python3 -m prism library build --samples "${LIB_SAMPLES:-16}" 2>&1 | tee "$OUT/library.log" | tail -40
      tar czf "$OUT/kernels.tgz" kernels/ ;;
  esac
  echo "== $step took $(( $(date +%s) - start )) s"
done
tar czf "$OUT/cache.tgz" .prism-cache/tuned 2>/dev/null || true
(cd "$OUT" && tar czf logs.tgz gpu.txt ./*.log && rm -f gpu.txt ./*.log)
