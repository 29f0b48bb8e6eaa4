#!/usr/bin/env bash
# Installs the Debian packages tent4j's tests use, when any is missing:
#   real servers for the metadata backends (etcd-server, redis-server) and openssl for their TLS test keys,
#   native libraries the FFM transports bind at run time, and their headers (struct layouts are checked against them),
#   iperf3, fio and redis-tools (redis-benchmark) for the baselines in docs/PERFORMANCE.md,
#   linux-libc-dev (linux/io_uring.h) for the nvmeof transport's io_uring layout check,
#   chromium and chromium-driver for the store master's status page test,
#   iproute2 and nftables for te-testkit's TestNetwork (namespaces, veths, tc tbf; drops and loss),
#   mmdebstrap for the container image's base (scripts/image-base.sh).
set -euo pipefail
packages=(etcd-server redis-server openssl
          libibverbs1 libibverbs-dev ibverbs-providers ibverbs-utils rdma-core
          libfabric1 libfabric-dev libfabric-bin
          libamdhip64-5 libamdhip64-dev
          iperf3 fio linux-libc-dev
          redis-tools chromium chromium-driver
          iproute2 nftables mmdebstrap)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
