#!/usr/bin/env bash
# The store's disk tier against the engine's own file paths, side by side in one run (issue 23):
#   - 1 MiB puts into a store with room, then into a full memory tier (store-bench --mode overflow: the rate from the
#     first offload on);
#   - reading offloaded 1 MiB objects from the node's disk on this host (nvmeof, the bench given peer_roots) against
#     `file-bench --rw=read --bs=1m --via=local` on the same file system, and over tcp file serving (the bench limited to
#     tcp) against `file-bench --via=tcp`. The bench reads BATCH keys per call (getBatchInto) on THREADS threads, so
#     THREADS x BATCH reads are in flight, and file-bench's iodepth is that product. The store's rate is the warm one
#     (its disk keys read again, WARM unmeasured, then DUR), as file-bench's comes after its warm-up. A virtual disk's
#     rate swings by 2x from one minute to the next, so the store and file-bench alternate for ROUNDS rounds, the order
#     swapped each round, and the ratio is of the means.
#   WARM is 10 s, as for the store's other figures: the store is three fresh JVMs (master, node, bench), and with 2 s
#   their C2 threads still took two thirds of a core while the reads were measured (docs/perf-notes/store.md).
#   scripts/perf/disk-tier.sh [DIR]   (after ./mvnw -B -o -DskipTests package; DIR: on the disk to measure, not tmpfs;
#                                      default a fresh directory under /var/tmp; MEM, TOTAL, THREADS, BATCH, WARM,
#                                      DUR, ROUNDS override)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OWN_BASE=no
[ -n "${1:-}" ] || OWN_BASE=yes
BASE=${1:-$(mktemp -d /var/tmp/tent4j-disk-tier.XXXXXX)}
MEM=${MEM:-256m} TOTAL=${TOTAL:-4x} THREADS=${THREADS:-4} BATCH=${BATCH:-8} PORT=${PORT:-50761} WARM=${WARM:-10s} DUR=${DUR:-5s}
ROUNDS=${ROUNDS:-3}
T=$(mktemp -d)
pids=()
cleanup() { # a directory this script made goes whole; in one it was given, only what it wrote
  kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true
  if [ "$OWN_BASE" = yes ]; then rm -rf "$T" "$BASE"; else rm -rf "$T" "$BASE"/run-* "$BASE/file-bench.bin"; fi
}
trap cleanup EXIT
load() { cut -d' ' -f1 /proc/loadavg; }
field() { grep '^{' "$1" | tail -1 | python3 -c "import json,sys; d=json.load(sys.stdin); print(round(d['$2'], 1))"; }
echo "$(date -u +%FT%TZ) $(git -C "$ROOT" rev-parse --short HEAD) load $(load), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(df -T "$BASE" | awk 'NR==2{print $2}') at $BASE"

store() { # NAME DISK(yes|no) MEMORY: a master and one node; sets MASTER, ADMIN, DISK
  local name=$1 withdisk=$2 memory=$3 dir="$BASE/run-$1"
  mkdir -p "$dir"
  "$ROOT/bin/tent4j" store master --host 127.0.0.1 --port "$PORT" --admin-port $((PORT + 1)) > "$T/$name.master" 2>&1 &
  pids+=($!)
  until grep -q '^LISTENING' "$T/$name.master" 2>/dev/null; do sleep 0.2; done
  MASTER=127.0.0.1:$PORT ADMIN=127.0.0.1:$((PORT + 1)) DISK="$dir/disk"
  local args=(--master "$MASTER" --segment-size "$memory" --control-host 127.0.0.1)
  [ "$withdisk" = yes ] && args+=(--disk-dir "$DISK" --disk-size 8g)
  mkdir -p "$DISK"
  "$ROOT/bin/tent4j" store node "${args[@]}" > "$T/$name.node" 2>&1 &
  pids+=($!)
  until grep -q '^READY' "$T/$name.node" 2>/dev/null; do sleep 0.2; done
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

DEPTH=$((THREADS * BATCH))
FB="$BASE/file-bench.bin" # laid out once, before the rounds, and synced as the offloads are
"$ROOT/bin/tent4j" file-bench --file="$FB" --size=1g --rw=read --bs=1m --iodepth=1 --runtime=1s --warmup=0s > /dev/null 2>&1
sync

overflow() { # VIA(local|tcp) ROUND: a fresh store written past its memory, then its disk keys read back
  local via=$1 out="$T/$1-$2"
  store "$via-$2" yes "$MEM"
  if [ "$via" = local ]; then
    printf '{"transports.nvmeof.peer_roots": "%s"}\n' "$DISK" > "$T/engine.json"
    "$ROOT/bin/tent4j" store bench --master "$MASTER" --admin "$ADMIN" --control-host 127.0.0.1 --config "$T/engine.json" \
      --mode overflow --size 1m --total "$TOTAL" --threads "$THREADS" --batch "$BATCH" --verify --warmup "$WARM" \
      --duration "$DUR" --json > "$out" 2>&1 || { cat "$out"; exit 1; }
  else # the bench may use tcp only
    TENT4J_TRANSPORTS_ENABLED=tcp "$ROOT/bin/tent4j" store bench --master "$MASTER" --admin "$ADMIN" --control-host 127.0.0.1 \
      --mode overflow --size 1m --total "$TOTAL" --threads "$THREADS" --batch "$BATCH" --verify --warmup "$WARM" \
      --duration "$DUR" --json > "$out" 2>&1 || { cat "$out"; exit 1; }
  fi
  stop
  rm -rf "$BASE/run-$via-$2"
  echo "round $2 store disk reads, $via: $(field "$out" warmDiskReadMibPerSecond) MiB/s warm ($(field "$out" warmDiskReads) reads; first pass $(field "$out" diskReadMibPerSecond) MiB/s)   load $(load)"
}
filebench() { # VIA ROUND
  "$ROOT/bin/tent4j" file-bench --file="$FB" --size=1g --rw=read --bs=1m --iodepth="$DEPTH" --runtime="$DUR" \
    --warmup="$WARM" --via="$1" --json > "$T/fb-$1-$2" 2>&1
  echo "round $2 file-bench --via=$1 --iodepth=$DEPTH: $(field "$T/fb-$1-$2" mib_per_sec) MiB/s   load $(load)"
}
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then
    overflow local "$r"; filebench local "$r"; overflow tcp "$r"; filebench tcp "$r"
  else
    filebench local "$r"; overflow local "$r"; filebench tcp "$r"; overflow tcp "$r"
  fi
done
echo "puts, full memory tier (round 1): $(field "$T/local-1" fullPutsPerSecond) puts/s (1 MiB), all puts $(field "$T/local-1" putMibPerSecond) MiB/s; reads from memory $(field "$T/local-1" memoryReadsPerSecond)/s"
python3 - "$T" "$ROUNDS" <<'PY'
import json, sys
t, rounds = sys.argv[1], int(sys.argv[2])
def last(path, key):
    return [json.loads(l) for l in open(path) if l.startswith('{')][-1][key]
for via in ('local', 'tcp'):
    st = [last(f'{t}/{via}-{r}', 'warmDiskReadMibPerSecond') for r in range(1, rounds + 1)]
    fb = [last(f'{t}/fb-{via}-{r}', 'mib_per_sec') for r in range(1, rounds + 1)]
    print(f"{via}: store {', '.join(f'{v:,.0f}' for v in st)} MiB/s; file-bench {', '.join(f'{v:,.0f}' for v in fb)} MiB/s; "
          f"ratio of means {sum(st) / sum(fb):.2f}x (issue 23: 0.8x)")
PY
