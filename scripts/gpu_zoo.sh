#!/usr/bin/env bash
# The program zoo on the device machine (no z3/egglog there): the GPU tests of predefined and stitched
# plans, then bench.zoo_bench through prism.superoptimize with the search cache carried in
# .prism-cache (made here by scripts/zoo_search.py). Everything lands in $OUT.
#   usage: bash scripts/gpu_zoo.sh WHICH SYSTEMS [ONLY]     e.g. decode prism,eager,compile
set -uo pipefail
export PYTHONPATH=. PRISM_CACHE_DIR="$PWD/.prism-cache" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ "${TESTS:-1}" = 1 ]; then
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_predefined_gpu.py > "$OUT/gpu_tests.log" 2>&1
  tail -5 "$OUT/gpu_tests.log"
fi
timeout "${T:-480}" python3 -m bench.zoo_bench --which "$1" --systems "$2" --only "${3:-}" --samples "${SAMPLES:-8}" \
  --out "$OUT/zoo-$1.json" > "$OUT/zoo-$1.log" 2>&1
grep -v "^INFO" "$OUT/zoo-$1.log" | tail -50
