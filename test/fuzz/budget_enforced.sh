#!/bin/sh
# Usage: budget_enforced.sh CORPUS_BINARY CORPUS_DIR
# The corpus driver's per-input budget is enforced: run with no budget
# (0 ms), it must fail and name an input that went over.
out=$("$1" --budget-ms 0 "$2" 2>&1)
code=$?
echo "$out"
if [ "$code" -eq 0 ]; then
  echo "FAIL: exit 0 with a 0 ms budget"
  exit 1
fi
echo "$out" | grep -Eq '^corpus input .* (over its budget of 0 ms|still running after)' || {
  echo "FAIL: no input named as over its budget"
  exit 1
}
