#!/usr/bin/env bash
# What tent4j's container image adds to its base (scripts/image-base.sh): the distribution at /opt/tent4j, with an
# ahead-of-time cache trained by the image's own Java runtime at the image's own paths (a cache only fits the JVM
# build and class path it was trained with, so the distribution's, from the building JDK, would be ignored there).
# The training runs in the base's file system (chroot, in a mount and pid namespace of its own with /proc and /dev,
# as a container runtime would give it), as root, so it needs root. The image module's build calls this.
#   scripts/image-root.sh tent4j-<version>.tar.gz image-base.tar OUT_DIR
set -euo pipefail
tarball=$1
base=$2
out=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rm -rf "$out"
mkdir -p "$out/opt" "$work/dist" "$work/root"
tar -xzf "$tarball" -C "$work/dist"
mv "$work"/dist/tent4j-* "$out/opt/tent4j"
rm -f "$out"/opt/tent4j/lib/tent4j*.aot

tar -xOf "$base" layer.tar | tar -x -C "$work/root"
cp -a "$out/opt/tent4j" "$work/root/opt/tent4j"
start=$(date +%s)
if ! unshare --mount --pid --fork sh -c '
      root=$1
      mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" &&
      exec chroot "$root" env -i PATH=/opt/java/bin:/usr/sbin:/usr/bin:/sbin:/bin JAVA_HOME=/opt/java HOME=/root sh -c "
        TENT4J_AOT_TRAIN=/opt/tent4j/lib/tent4j.aot /opt/tent4j/bin/tent4j aot-train &&
        TENT4J_AOT_TRAIN=/opt/tent4j/lib/tent4j-bench.aot /opt/tent4j/bin/tent4j aot-train --only bench"' \
    sh "$work/root" >"$work/train.log" 2>&1; then
  echo "image root: the training run in the image's runtime failed. The runs that failed, then its last lines:" >&2
  grep "^aot-train: failed" "$work/train.log" >&2 || true
  grep -v "\[warning\]\[aot\]" "$work/train.log" | tail -30 >&2
  exit 1
fi
# a run that failed once and passed again is named, not hidden
grep "^aot-train: " "$work/train.log" | sed 's/^/image root: /' >&2 || true
cp "$work"/root/opt/tent4j/lib/tent4j*.aot "$out/opt/tent4j/lib/"
echo "image root: /opt/tent4j, $(cd "$out/opt/tent4j" && du -h lib/tent4j*.aot | tr '\t\n' ' ')trained in the image's runtime in $(( $(date +%s) - start )) s"
