#!/usr/bin/env bash
# Adds the JDK's ahead-of-time cache (JEPs 483, 514, 515) to a distribution tarball: unpacks it, runs the training
# run (`tent4j aot-train`: doctor, loopback benches, a store in one JVM) under -XX:AOTCacheOutput with the same flags
# bin/ uses, and packs it again with lib/tent4j.aot inside. bin/classpath.sh uses the cache when it is there and the
# JVM ignores it (falling back to a plain start) when it does not fit. The cli module's build calls this.
#   scripts/aot-cache.sh cli/target/tent4j-<version>.tar.gz
set -euo pipefail
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
home=$(echo "$work"/tent4j-*)
start=$(date +%s)
# the training run's own output is not the build's business; its exit status is
if ! TENT4J_AOT_TRAIN="$home/lib/tent4j.aot" "$home/bin/tent4j" aot-train >"$work/train.log" 2>&1; then
  echo "aot-cache: the training run failed (a command it runs is broken). Its last lines:" >&2
  tail -20 "$work/train.log" >&2
  exit 1
fi
echo "aot-cache: lib/tent4j.aot, $(du -h "$home/lib/tent4j.aot" | cut -f1), trained in $(( $(date +%s) - start )) s"
tar -czf "$tarball.tmp" -C "$work" "$(basename "$home")"
mv "$tarball.tmp" "$tarball"
