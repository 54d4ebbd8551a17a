#!/usr/bin/env bash
# compute-sanitizer memcheck on kernel-graph JSON files (CONFIG__N__tT.json) in DIR.
set -u
DIR=$1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
echo "sanitizer: $CS"
CHILD=$(python3 -c "import sys; sys.path.insert(0,'scripts'); from gpu_fault_scan import CHILD; print(CHILD)")
for f in "$DIR"/*.json; do
  cid=$(basename "$f" | sed 's/__.*//')
  echo "== $f"
  timeout 120 "$CS" --tool memcheck --show-backtrace no python3 -c "$CHILD" "$cid" "$f" 2>&1 | grep -v "^=========     \|^$" | head -14
done
