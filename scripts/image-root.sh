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
scripts=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rm -rf "$out"
mkdir -p "$out/opt" "$work/dist" "$work/root"
tar -xzf "$tarball" -C "$work/dist"
mv "$work"/dist/tent4j-* "$out/opt/tent4j"
rm -f "$out"/opt/tent4j/lib/tent4j*.aot

tar -xOf "$base" layer.tar | tar -x -C "$work/root"
cp -a "$out/opt/tent4j" "$work/root/opt/tent4j"
cp "$scripts/aot-train.sh" "$work/root/aot-train.sh"
# the training's own output is not the build's business; its exit status, and what it names, are
unshare --mount --pid --fork sh -c '
      root=$1
      mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" &&
      exec chroot "$root" env -i PATH=/opt/java/bin:/usr/sbin:/usr/bin:/sbin:/bin JAVA_HOME=/opt/java HOME=/root \
        sh /aot-train.sh /opt/tent4j /aot-train.log' \
    sh "$work/root" 2>&1 | sed "s|^|image root: in the image's runtime: |"
cp "$work"/root/opt/tent4j/lib/tent4j*.aot "$out/opt/tent4j/lib/"
