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
# the training's own output is not the build's business; its exit status, and what it names, are
"$scripts/aot-train.sh" "$home" "$work/train.log" 2>&1 | sed 's/^/aot-cache: /'
tar -czf "$tarball.tmp" -C "$work" "$(basename "$home")"
mv "$tarball.tmp" "$tarball"
