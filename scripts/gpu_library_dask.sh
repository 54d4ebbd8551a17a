#!/usr/bin/env bash
# Library build time on the 2-GPU device machine (issue 19, docs/distributed.md): the library of
# scripts/gpu_library_dask.toml built in one process (no Dask), on a local Dask cluster with 1 GPU
# worker, and with 2 GPU workers (CUDA_VISIBLE_DEVICES=0 and 1); each build into its own temporary
# root, from its own copy of the carried search cache (so each tunes from scratch and no search runs:
# the device has no z3/egglog). Times and statuses go to $OUT/library_dask.json, logs beside it.
#
#   here, once (fills .prism-cache-dask with the spec's searches):  bash scripts/gpu_library_dask.sh warm
#   there (carry .whl and .prism-cache-dask):                        bash scripts/gpu_library_dask.sh
set -uo pipefail
SPEC=scripts/gpu_library_dask.toml
CACHE="$PWD/.prism-cache-dask"
if [ "${1:-}" = warm ]; then
  PRISM_CACHE_DIR="$CACHE" PYTHONPATH=. .venv/bin/python -c "
from pathlib import Path
from prism import library
spec = library.load_spec(Path('$SPEC'))
for e in spec.entries:  # the search superoptimize runs (cached by structure: one per program)
    print(e.name, library.search_entry(e, spec.base)['seconds'])"
  exit
fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
SAMPLES=${SAMPLES:-16}
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/gpus.txt" 2>&1
build() {  # build NAME [cluster flags...]: prints the wall seconds
  local name=$1; shift
  rm -rf "/tmp/cache-$name" "/tmp/lib-$name"; cp -r "$CACHE" "/tmp/cache-$name"
  local t0; t0=$(date +%s.%N)
  PRISM_CACHE_DIR="/tmp/cache-$name" timeout "${T:-140}" python3 -m prism library build --spec "$SPEC" \
    --root "/tmp/lib-$name" --samples "$SAMPLES" "$@" > "$OUT/$name.log" 2>&1
  echo "$? $(python3 -c "import time; print(round(time.time() - $t0, 1))")"
}
read -r rc0 s0 < <(build single)
read -r rc1 s1 < <(build gpu1 --local-cluster --workers 1 --gpus 0)
read -r rc2 s2 < <(build gpu2 --local-cluster --workers 2 --gpus 0,1)
python3 - "$OUT" <<EOF
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
def result(name, rc, s):
    man = Path(f"/tmp/lib-{name}/manifest.json")
    entries = json.loads(man.read_text())["entries"] if man.exists() else {}
    return {"exit": rc, "wall_s": s, "built": len(entries),
            "time_us": {k: v.get("time_us") for k, v in sorted(entries.items())},
            "tuned_on": sorted({str(v.get("tuned_on")) for v in entries.values()})}
doc = {"spec": "$SPEC", "samples": $SAMPLES, "gpus": (out / "gpus.txt").read_text().split("\n")[:-1],
       "single_process": result("single", $rc0, $s0), "dask_1_gpu_worker": result("gpu1", $rc1, $s1),
       "dask_2_gpu_workers": result("gpu2", $rc2, $s2)}
(out / "library_dask.json").write_text(json.dumps(doc, indent=1) + "\n")
print(json.dumps({k: (v["exit"], v["wall_s"], v["built"]) if isinstance(v, dict) else v for k, v in doc.items()}))
EOF
for n in single gpu1 gpu2; do echo "== $n"; grep -vE "^INFO|distributed\.|^\s*$" "$OUT/$n.log" | tail -12; done
