#!/usr/bin/env bash
# Adds the JDK's ahead-of-time cache (JEPs 483, 514, 515) to a distribution tarball: unpacks it, runs the training
# runs (`tent4j aot-train`: doctor, loopback benches, a store in one JVM; `aot-train --only bench`) under
# -XX:AOTCacheOutput with the same flags bin/ uses, and packs it again with lib/tent4j.aot and lib/tent4j-bench.aot.
# bin/classpath.sh uses a cache when it is there and the JVM ignores it (falling back to a plain start) when it does
# not fit. The cli module's build calls this.
#   scripts/aot-cache.sh cli/target/tent4j-<version>.tar.gz
set -euo pipefail
scripts=$(cd "$(dirname "$0")" && pwd)
. "$scripts/jdk.sh"
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
home=$(echo "$work"/tent4j-*)
# JDK 25's cache holds no class file older than Java 6, and picocli's are (scripts/OldClassFiles.java)
"$JAVA_HOME/bin/java" "$scripts/OldClassFiles.java" "$home/lib"
# lib/tent4j.aot, trained on every command, and lib/tent4j-bench.aot for `tent4j bench` (bin/classpath.sh picks)
for only in "" bench; do
  cache=$home/lib/tent4j${only:+-$only}.aot
  start=$(date +%s)
  # the training run's own output is not the build's business; its exit status is
  if ! TENT4J_AOT_TRAIN="$cache" "$home/bin/tent4j" aot-train ${only:+--only "$only"} >"$work/train.log" 2>&1; then
    echo "aot-cache: the training run${only:+ of $only} failed (a command it runs is broken). The runs that failed, then its last lines:" >&2
    grep "^aot-train: failed" "$work/train.log" >&2 || true
    tail -20 "$work/train.log" >&2
    exit 1
  fi
  # a run that failed once and passed again is named, not hidden
  grep "^aot-train: " "$work/train.log" | sed 's/^/aot-cache: /' >&2 || true
  echo "aot-cache: lib/$(basename "$cache"), $(du -h "$cache" | cut -f1), trained in $(( $(date +%s) - start )) s"
done
tar -czf "$tarball.tmp" -C "$work" "$(basename "$home")"
mv "$tarball.tmp" "$tarball"
