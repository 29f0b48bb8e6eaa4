#!/bin/bash
# Interleaved A/B of two builds (base, new) with te-bench between two processes, one target per build, each case
# run base/new back to back (order swapped every round), Redis in the same run.
# usage: scripts/ab-te-bench.sh BASE_CHECKOUT NEW_CHECKOUT ROUNDS ["case ..."]   case = proto:op:block:batch:threads
#   both checkouts built with ./mvnw -B -o -DskipTests package; wrap it in flock /tmp/tent4j-bench.lock on a shared box.
#   WARM and DUR (seconds) set --warmup and --duration. Writes one JSON line per run to $OUT_DIR (default /tmp).
set -u
BASE=$1; NEW=$2; shift 2
ROUNDS=${1:-2}; CASES=${2:-"tcp:read:4k:32:2 tcp:write:4k:32:2 tcp:read:4k:1:1 tcp:write:4k:1:1 shm:read:4k:32:2 shm:write:4k:32:2 tcp:read:1m:32:2 tcp:write:1m:32:2 shm:read:1m:32:2"}
WARM=${WARM:-4}; DUR=${DUR:-4}
OUT=${OUT_DIR:-/tmp}/ab-te-bench.$(date +%H%M%S).jsonl
echo "results in $OUT" >&2
declare -A DIR=([base]=$BASE [new]=$NEW) SEG TPID
redis-server --port 16409 --save '' --appendonly no --daemonize no >/dev/null 2>&1 &
RPID=$!
for b in base new; do
  tfile=${OUT_DIR:-/tmp}/ab-te-bench.target.$b.out
  "${DIR[$b]}/bin/te-bench" --mode=target --buffer_size=512m > $tfile 2>&1 &
  TPID[$b]=$!
  for i in $(seq 1 300); do grep -q -- '--segment_id=' $tfile && break; sleep 0.1; done
  SEG[$b]=$(grep -o -- '--segment_id=[^ ]*' $tfile | head -1)
done
csvjson() { python3 -c 'import json,sys;print(json.dumps(sys.stdin.read().strip()))'; }
redis_round() {
  local r=$1 l; l=$(uptime | sed 's/.*average: //')
  redis-benchmark -p 16409 -t set,get -d 4096 -P 32 -c 2 -n 300000 --csv 2>/dev/null | sed -n '2,3p' | while read -r line; do
    echo "{\"round\":$r,\"build\":\"redis\",\"case\":\"P32c2\",\"load\":\"$l\",\"csv\":$(printf '%s' "$line" | csvjson)}"; done >> $OUT
  redis-benchmark -p 16409 -t get -d 4096 -P 1 -c 1 -n 40000 --csv 2>/dev/null | sed -n '2p' | while read -r line; do
    echo "{\"round\":$r,\"build\":\"redis\",\"case\":\"P1c1\",\"load\":\"$l\",\"csv\":$(printf '%s' "$line" | csvjson)}"; done >> $OUT
}
one() {
  local r=$1 b=$2 c=$3 l js
  IFS=: read -r proto op block batch threads <<< "$c"
  l=$(uptime | sed 's/.*average: //')
  js=$("${DIR[$b]}/bin/te-bench" --mode=initiator ${SEG[$b]} --buffer_size=512m --warmup=$WARM --duration=$DUR --json \
      --protocol=$proto --operation=$op --block_size=$block --batch_size=$batch --threads=$threads 2>/dev/null | tail -1)
  case "$js" in "{"*) ;; *) js=null ;; esac
  echo "{\"round\":$r,\"build\":\"$b\",\"case\":\"$c\",\"load\":\"$l\",\"res\":$js}" >> $OUT
}
for r in $(seq 1 $ROUNDS); do
  redis_round $r
  for c in $CASES; do
    if [ $((r % 2)) = 1 ]; then one $r base $c; one $r new $c; else one $r new $c; one $r base $c; fi
  done
done
redis_round $((ROUNDS + 1))
kill ${TPID[base]} ${TPID[new]} $RPID
wait 2>/dev/null
echo "$OUT"
