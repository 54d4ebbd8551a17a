#!/usr/bin/env bash
# PyTorch capture on the device machine (no z3/egglog there): optionally the GPU tests, then
# scripts/gpu_capture.py over CASES with SYSTEMS, reading the search cache carried in .prism-cache
# (made here by scripts/capture_search.py) and the tuned cache when a tuned.tgz from an earlier
# call is given. Results, the log and the tuned cache (for the next call) land in $OUT.
# CACHE_TGZ: the search cache as a tgz (a .prism-cache of JSON is ~60 MB; carried packed it is ~1 MB).
# NOCOMPARE=1: every region Prism can runs in Prism (not timed against PyTorch).
# PROFILE=1: each system's GPU kernels per forward (torch.profiler) in the JSON.
#   usage: TESTS=1 BUDGET=25 SAMPLES=16 [CACHE_TGZ=out/cache.tgz] [FALLBACK=inductor|eager]
#          bash scripts/gpu_capture.sh CASES SYSTEMS [TAG] [TUNED_TGZ]
set -uo pipefail
export PYTHONPATH=. PRISM_CACHE_DIR="$PWD/.prism-cache" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
TAG=${3:-capture}
[ -n "${CACHE_TGZ:-}" ] && tar xzf "$CACHE_TGZ"
[ -n "${4:-}" ] && tar xzf "$4"
if [ "${TESTS:-0}" = 1 ]; then
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -o addopts="" > "$OUT/gpu_tests.log" 2>&1
  tail -4 "$OUT/gpu_tests.log"
fi
timeout "${T:-420}" python3 scripts/gpu_capture.py --out "$OUT/$TAG.json" --cases "$1" --systems "$2" \
  --samples "${SAMPLES:-16}" --time-budget "${BUDGET:-25}" --reps "${REPS:-20}" \
  --fallback "${FALLBACK:-inductor}" --log "${LOG:-WARNING}" ${PROFILE:+--profile} ${NOCOMPARE:+--no-compare} > "$OUT/$TAG.log" 2>&1
grep -v "^INFO\|^DEBUG\|^  \|^Traceback" "$OUT/$TAG.log" | tail -40
tar czf "$OUT/tuned-$TAG.tgz" .prism-cache/tuned 2>/dev/null
