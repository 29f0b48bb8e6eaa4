#!/usr/bin/env bash
# The store's disk tier against the engine's own file paths, side by side in one run (issue 23):
#   - 1 MiB puts into a store with room, then into a full memory tier (store-bench --mode overflow: the rate from the
#     first offload on);
#   - reading offloaded 1 MiB objects from the node's disk on this host (nvmeof, the bench given peer_roots) against
#     `file-bench --rw=read --bs=1m --via=local` on the same file system, and over tcp file serving (the bench limited to
#     tcp) against `file-bench --via=tcp`; file-bench's iodepth is the bench's thread count, one get in flight per thread.
#   scripts/perf/disk-tier.sh [DIR]   (after ./mvnw -B -o -DskipTests package; DIR: on the disk to measure, not tmpfs;
#                                      default a fresh directory under /var/tmp; MEM, TOTAL, THREADS override)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BASE=${1:-$(mktemp -d /var/tmp/tent4j-disk-tier.XXXXXX)}
MEM=${MEM:-256m} TOTAL=${TOTAL:-4x} THREADS=${THREADS:-4} PORT=${PORT:-50761}
T=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$T" "$BASE"/run-*; }
trap cleanup EXIT
load() { cut -d' ' -f1 /proc/loadavg; }
field() { grep '^{' "$1" | tail -1 | python3 -c "import json,sys; d=json.load(sys.stdin); print(round(d['$2'], 1))"; }
echo "$(date -u +%FT%TZ) $(git -C "$ROOT" rev-parse --short HEAD) load $(load), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(df -T "$BASE" | awk 'NR==2{print $2}') at $BASE"

store() { # NAME DISK(yes|no) MEMORY: a master and one node; sets MASTER, ADMIN, DISK
  local name=$1 withdisk=$2 memory=$3 dir="$BASE/run-$1"
  mkdir -p "$dir"
  "$ROOT/bin/tent4j" store master --host 127.0.0.1 --port "$PORT" --admin-port $((PORT + 1)) > "$T/$name.master" 2>&1 &
  pids+=($!)
  until grep -q '^LISTENING' "$T/$name.master"; do sleep 0.2; done
  MASTER=127.0.0.1:$PORT ADMIN=127.0.0.1:$((PORT + 1)) DISK="$dir/disk"
  local args=(--master "$MASTER" --segment-size "$memory" --control-host 127.0.0.1)
  [ "$withdisk" = yes ] && args+=(--disk-dir "$DISK" --disk-size 8g)
  mkdir -p "$DISK"
  "$ROOT/bin/tent4j" store node "${args[@]}" > "$T/$name.node" 2>&1 &
  pids+=($!)
  until grep -q '^READY' "$T/$name.node"; do sleep 0.2; done
}
stop() { kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; pids=(); }

# puts into a store with room, as the overflow below puts them (from a fresh process, no warm-up): as many MiB as
# the overflow writes, into a memory tier twice that
TOTAL_MIB=$(python3 -c "u={'k':1/1024,'m':1,'g':1024}; m='$MEM'; t='$TOTAL'; mem=float(m[:-1])*u[m[-1].lower()]; print(int(float(t[:-1])*mem if t[-1]=='x' else float(t[:-1])*u[t[-1].lower()]))")
store room no $((TOTAL_MIB * 2))m
"$ROOT/bin/tent4j" store bench --master "$MASTER" --control-host 127.0.0.1 --mode put --size 1m --threads "$THREADS" \
  --count $((TOTAL_MIB / THREADS)) --warmup 0s --json > "$T/room" 2>&1
echo "puts, memory with room:          $(field "$T/room" opsPerSecond) puts/s (1 MiB, $TOTAL_MIB puts)   load $(load)"
stop

# the overflow: local disk reads (nvmeof through peer_roots)
store local yes "$MEM"
printf '{"transports.nvmeof.peer_roots": "%s"}\n' "$DISK" > "$T/engine.json"
"$ROOT/bin/tent4j" store bench --master "$MASTER" --admin "$ADMIN" --control-host 127.0.0.1 --config "$T/engine.json" \
  --mode overflow --size 1m --total "$TOTAL" --threads "$THREADS" --verify --json > "$T/local" 2>&1 || { cat "$T/local"; exit 1; }
echo "puts, full memory tier:          $(field "$T/local" fullPutsPerSecond) puts/s (1 MiB), all puts $(field "$T/local" putMibPerSecond) MiB/s   load $(load)"
echo "store reads from local disk:     $(field "$T/local" diskReadMibPerSecond) MiB/s ($(field "$T/local" diskReads) reads), from memory $(field "$T/local" memoryReadsPerSecond) reads/s"
"$ROOT/bin/tent4j" file-bench --file="$DISK/file-bench.bin" --size=1g --rw=read --bs=1m --iodepth="$THREADS" --runtime=4 \
  --warmup=1 --via=local --json > "$T/fb-local" 2>&1
echo "file-bench --via=local:          $(field "$T/fb-local" mib_per_sec) MiB/s   load $(load)"
stop

# the same over tcp file serving: the bench may use tcp only
store tcp yes "$MEM"
TENT4J_TRANSPORTS_ENABLED=tcp "$ROOT/bin/tent4j" store bench --master "$MASTER" --admin "$ADMIN" --control-host 127.0.0.1 \
  --mode overflow --size 1m --total "$TOTAL" --threads "$THREADS" --verify --json > "$T/tcp" 2>&1 || { cat "$T/tcp"; exit 1; }
echo "store reads from disk over tcp:  $(field "$T/tcp" diskReadMibPerSecond) MiB/s ($(field "$T/tcp" diskReads) reads)   load $(load)"
"$ROOT/bin/tent4j" file-bench --file="$DISK/file-bench.bin" --size=1g --rw=read --bs=1m --iodepth="$THREADS" --runtime=4 \
  --warmup=1 --via=tcp --json > "$T/fb-tcp" 2>&1
echo "file-bench --via=tcp:            $(field "$T/fb-tcp" mib_per_sec) MiB/s   load $(load)"
stop
