#!/usr/bin/env bash
# The base of tent4j's container image, as a `docker save` tarball that Jib builds on (tar://...):
#   Debian bookworm ("essential" packages only) from the Debian archive with mmdebstrap, no registry needed,
#   the native libraries tent4j's transports bind (libfabric1, libibverbs1 and ibverbs-providers for RDMA devices),
#   a Java runtime jlinked from the JDK building it at /opt/java (JAVA_HOME, on PATH),
#   and the unprivileged user tent4j (uid and gid 10001, home /var/lib/tent4j) the image runs as.
# Usage: scripts/image-base.sh OUT.tar
# The result is cached under ${XDG_CACHE_HOME:-~/.cache}/tent4j/ by this script's content and the JDK's version;
# delete that file to take newer Debian packages. Needs root (mmdebstrap --mode=root) and mmdebstrap
# (scripts/install-deps.sh installs it).
set -euo pipefail
out=${1:?usage: scripts/image-base.sh OUT.tar}
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/scripts/jdk.sh"

# what the command line needs of the JDK: java.se, plus jdk.httpserver (metrics and admin pages), jdk.unsupported
# (Netty, gRPC), jdk.net (keep-alive options), jdk.security.auth (shm's uid check), jdk.management (the doctor),
# jdk.crypto.ec and jdk.crypto.cryptoki (TLS), jdk.charsets, jdk.naming.dns, jdk.zipfs and jdk.jfr; the image's
# training run (scripts/image-root.sh) and ImageTest run every command in it, so a missing one fails the build
modules=java.se,jdk.httpserver,jdk.unsupported,jdk.net,jdk.security.auth,jdk.management,jdk.crypto.ec
modules=$modules,jdk.crypto.cryptoki,jdk.charsets,jdk.naming.dns,jdk.zipfs,jdk.jfr
packages=libfabric1,libibverbs1,ibverbs-providers

key=$( { cat "$0"; "$JAVA_HOME/bin/java" -version 2>&1; } | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tent4j/image-base-$key.tar
mkdir -p "$(dirname "$out")"
if [ -s "$cache" ]; then
  cp "$cache" "$out"
  echo "image base: $out (cached $cache)"
  exit 0
fi
command -v mmdebstrap >/dev/null || { echo "image base: mmdebstrap not found (scripts/install-deps.sh installs it)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "image base: jlinking a Java runtime ($modules)"
"$JAVA_HOME/bin/jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages \
  --output "$work/java"
echo "image base: Debian bookworm with $packages (mmdebstrap; about a minute)"
mmdebstrap --quiet --variant=essential --mode=root --include="$packages" \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook="copy-in $work/java /opt" \
  --customize-hook='echo "tent4j:x:10001:10001:tent4j:/var/lib/tent4j:/usr/sbin/nologin" >> "$1/etc/passwd"' \
  --customize-hook='echo "tent4j:x:10001:" >> "$1/etc/group"' \
  --customize-hook='mkdir -p "$1/var/lib/tent4j" && chown 10001:10001 "$1/var/lib/tent4j"' \
  bookworm "$work/layer.tar"

# a `docker save` tarball: one layer, its config (environment), and the manifest naming both
diff_id=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
cat > "$work/config.json" <<EOF
{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z",
 "config":{"Env":["PATH=/opt/java/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","JAVA_HOME=/opt/java"]},
 "rootfs":{"type":"layers","diff_ids":["sha256:$diff_id"]}}
EOF
echo '[{"Config":"config.json","RepoTags":["tent4j-base:local"],"Layers":["layer.tar"]}]' > "$work/manifest.json"
mkdir -p "$(dirname "$cache")"
tar -cf "$cache.tmp" -C "$work" manifest.json config.json layer.tar
mv "$cache.tmp" "$cache"
# bases of other versions of this script or of the JDK are not used again
find "$(dirname "$cache")" -maxdepth 1 -name 'image-base-*.tar' ! -name "$(basename "$cache")" -delete
cp "$cache" "$out"
echo "image base: $out ($(du -h "$out" | cut -f1))"
