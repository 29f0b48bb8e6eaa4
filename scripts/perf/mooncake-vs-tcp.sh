#!/bin/bash
# tent4j's tcp transport and the Mooncake wire (mooncake-tcp) between the same two engines, interleaved, for issue 25's
# "at least 0.8x of tcp": one te-bench target, one initiator run per case and protocol, the protocols' order swapped
# every round. Needs a built checkout (./mvnw -B -o -DskipTests package). Run it on a quiet machine.
# usage: scripts/perf/mooncake-vs-tcp.sh [ROUNDS] ["op:block ..."]   WARM and DUR (seconds) set --warmup/--duration
set -u
cd "$(dirname "$0")/../.."
ROUNDS=${1:-2}; CASES=${2:-"read:1m write:1m read:64k write:64k"}
WARM=${WARM:-3}; DUR=${DUR:-4}
OUT=${OUT_DIR:-/tmp}/mooncake-vs-tcp.$(date +%H%M%S).jsonl
tfile=$(mktemp)
bin/te-bench --mode=target --buffer_size=512m > "$tfile" 2>&1 &
TPID=$!
trap 'kill $TPID 2>/dev/null; rm -f "$tfile"' EXIT
for i in $(seq 1 300); do grep -q -- '--segment_id=' "$tfile" && break; sleep 0.1; done
SEG=$(grep -o -- '--segment_id=[^ ]*' "$tfile" | head -1)
[ -n "$SEG" ] || { echo "the target did not start: $(cat "$tfile")" >&2; exit 1; }
one() {
  local r=$1 proto=$2 op=$3 block=$4 l js
  l=$(cut -d' ' -f1-3 /proc/loadavg)
  js=$(bin/te-bench --mode=initiator $SEG --buffer_size=512m --warmup=$WARM --duration=$DUR --json --protocol=$proto \
      --operation=$op --block_size=$block --batch_size=32 --threads=2 2>/dev/null | tail -1)
  case "$js" in "{"*) ;; *) js=null ;; esac
  echo "{\"round\":$r,\"protocol\":\"$proto\",\"case\":\"$op:$block\",\"load\":\"$l\",\"res\":$js}" >> "$OUT"
}
for r in $(seq 1 "$ROUNDS"); do
  for c in $CASES; do
    IFS=: read -r op block <<< "$c"
    if [ $((r % 2)) = 1 ]; then one $r tcp $op $block; one $r mooncake-tcp $op $block
    else one $r mooncake-tcp $op $block; one $r tcp $op $block; fi
  done
done
python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    if r["res"]:
        by.setdefault((r["case"], r["protocol"]), []).append((r["res"]["gbps"], r["load"]))
for case in sorted({c for c, _ in by}):
    t = by.get((case, "tcp"), []); m = by.get((case, "mooncake-tcp"), [])
    if t and m:
        ratio = (sum(x for x, _ in m) / len(m)) / (sum(x for x, _ in t) / len(t))
        print(f"{case:10} tcp {[round(x, 2) for x, _ in t]} GB/s  mooncake-tcp {[round(x, 2) for x, _ in m]} GB/s  "
              f"ratio {ratio:.2f}  load {[l for _, l in t + m]}")
PY
echo "$OUT"
