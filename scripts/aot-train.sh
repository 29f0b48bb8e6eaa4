#!/bin/sh
# Trains the ahead-of-time caches of the distribution at HOME, which bin/classpath.sh picks: lib/tent4j.aot on every
# command, lib/tent4j-bench.aot on `tent4j bench` alone (`tent4j aot-train`, `aot-train --only bench`). scripts/
# aot-cache.sh runs it on the tarball, scripts/image-root.sh in the image's own runtime (POSIX sh: the base has no
# bash guarantee). A training's output goes to LOG; a run that passed on its second try is named on stderr, and a
# failed training names its failed runs and the log's last lines there and exits 1.
#   scripts/aot-train.sh HOME LOG
set -eu
home=$1
log=$2
for only in "" bench; do
  cache=$home/lib/tent4j${only:+-$only}.aot
  start=$(date +%s)
  if ! TENT4J_AOT_TRAIN="$cache" "$home/bin/tent4j" aot-train ${only:+--only "$only"} >"$log" 2>&1; then
    echo "the training run${only:+ of $only} failed (a command it runs is broken). The runs that failed, then its last lines:" >&2
    grep "^aot-train: failed" "$log" >&2 || true
    grep -v "\[warning\]\[aot\]" "$log" | tail -30 >&2
    exit 1
  fi
  grep "^aot-train: " "$log" >&2 || true
  echo "lib/$(basename "$cache"), $(du -h "$cache" | cut -f1), trained in $(( $(date +%s) - start )) s"
done
