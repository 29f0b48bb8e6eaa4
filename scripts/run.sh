#!/usr/bin/env bash
# The main job: builds tent4j, starts a te-bench target engine in one process and runs te-bench initiators against it
# from another (embedded peer-to-peer metadata, nothing to install), over tcp and shm, READ and WRITE, verifying every
# byte; prints what moved and how fast.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/jdk.sh
./mvnw -B -q -ntp -DskipTests package
DURATION=${DURATION:-5}
log=$(mktemp)
bin/te-bench --mode=target --buffer_size=256m >"$log" 2>&1 &
target=$!
trap 'kill "$target" 2>/dev/null; wait "$target" 2>/dev/null; rm -f "$log"' EXIT
seg=""
for _ in $(seq 1 150); do
  seg=$(grep -o -- '--segment_id=[^ ]*' "$log" | head -n1 || true)
  [ -n "$seg" ] && break
  kill -0 "$target" 2>/dev/null || break
  sleep 0.2
done
if [ -z "$seg" ]; then echo "the target did not start:" >&2; cat "$log" >&2; exit 1; fi
echo "target engine up: $seg"
for protocol in tcp shm; do
  for op in write read; do
    echo "== $protocol $op: 1 MiB blocks, batch 32, 2 threads, ${DURATION}s, every byte checked"
    bin/te-bench --mode=initiator "$seg" --protocol="$protocol" --operation="$op" --block_size=1m --batch_size=32 \
      --threads=2 --duration="$DURATION" --buffer_size=256m --check_consistency
  done
done
