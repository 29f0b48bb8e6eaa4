#!/usr/bin/env bash
# What TLS costs the tcp data plane: te-bench between two processes, 1 MiB and 4 KiB blocks, READ and WRITE,
# plain then TLS (a fresh P-256 key pair shared by both engines), in one run. Needs a packaged build
# (./mvnw -B -DskipTests package) and openssl. Prints one line per figure, as scripts/perf.sh does.
# Usage: scripts/perf/tls-cost.sh [seconds per run, default 5] [warm-up seconds, default 10]
# The warm-up is long because the JIT compiles the AES-GCM intrinsics' callers late on a loaded machine: at load 4 the
# crypto still ran as plain Java for 2-3 s of TLS traffic, and with a 3 s warm-up at load 7 a 1 MiB READ measured 2x
# lower than with 10 s (docs/perf-notes/tls.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/jdk.sh
D=${1:-5}
W=${2:-10}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$out/key.pem" -out "$out/cert.pem" \
  -days 2 -subj /CN=tent4j-bench >/dev/null 2>&1
TLS=(--set "security.tls.certificate=$out/cert.pem" --set "security.tls.private_key=$out/key.pem")

. scripts/perf/te-bench-lib.sh

for mode in plain tls; do
  if [ $mode = tls ]; then args=("${TLS[@]}"); else args=(); fi
  target "${args[@]}"
  for op in read write; do
    bench "tcp_${mode}_${op}_1MiB" "$W" "$D" --protocol=tcp --batch_size=32 --threads=2 --operation=$op --block_size=1m "${args[@]}"
    bench "tcp_${mode}_${op}_4KiB" "$W" "$D" --protocol=tcp --batch_size=32 --threads=2 --operation=$op --block_size=4k "${args[@]}"
  done
  stop_target
done
