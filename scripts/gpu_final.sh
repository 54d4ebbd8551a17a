#!/usr/bin/env bash
# The session's GPU run, on the device machine: GPU tests, the benchmark suite through
# prism.superoptimize (search + verification loaded from the carried cache: the GPU image has no
# z3/egglog; programs not in the cache fall back to the tuner over hand plans, recorded per config),
# and the kernel library build. Everything lands in $OUT. Each step has a time limit.
#   usage: bash scripts/gpu_final.sh [tests] [bench] [library]
set -uo pipefail
export PYTHONPATH=. PRISM_CACHE_DIR="$PWD/.prism-cache" PRISM_GPU_SEARCH_CACHE="$PWD/.prism-cache" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv > "$OUT/gpu.txt"
steps=${*:-tests bench library}
for step in $steps; do
  start=$(date +%s)
  case $step in
    tests)
      timeout "${T_TESTS:-120}" python3 -m pytest -q -m gpu -p no:cacheprovider --continue-on-collection-errors \
        tests/ > "$OUT/gpu_tests.log" 2>&1; tail -8 "$OUT/gpu_tests.log" ;;
    bench)
      timeout "${T_BENCH:-450}" python3 -m bench --prism searched-or-hand --samples "${SAMPLES:-64}" --out "$OUT" \
        --note "prism: superoptimize from the carried search cache (else tuner over hand plans); ${SAMPLES:-64} uniform samples + half as many around the fastest templates" \
        > "$OUT/bench.log" 2>&1; tail -22 "$OUT/bench.log" ;;
    library)
      timeout "${T_LIB:-540}" python3 -m prism library build --samples "${LIB_SAMPLES:-32}" > "$OUT/library.log" 2>&1
      tail -30 "$OUT/library.log"; tar czf "$OUT/kernels.tgz" kernels/ ;;
  esac
  echo "== $step took $(( $(date +%s) - start )) s"
done
tar czf "$OUT/cache.tgz" .prism-cache/tuned 2>/dev/null || true
(cd "$OUT" && tar czf logs.tgz gpu.txt ./*.log && rm -f gpu.txt ./*.log)
