#!/bin/bash
# Interleaved A/B of store-bench between builds, Redis in the same run (docs/PERFORMANCE.md, "The store").
#   scripts/perf/store-ab.sh ROUNDS CASES BUILD...   e.g.  scripts/perf/store-ab.sh 2 "put4k get4k put1m get1m" /tmp/base .
# Cases: put4k get4k put1m get1m, and sget4k sget1m (get4k / get1m through --mode get-session: one replica-list
# fetch per thread, then reads without the master; a build without that mode prints n/a).
# Every build must have run `./mvnw -B -ntp -o -pl cli -am -DskipTests package` (bin/store-* run from cli/target).
# Per build and case: a fresh master, two store-nodes of 1 GiB, two store-bench processes at once (2 threads each);
# the figure is their sum. The build order is reversed every round. Holds /tmp/tent4j-bench.lock for the whole run.
# Prints one line per figure.
set -u
ROUNDS=$1 CASES=$2; shift 2
BUILDS=("$@")
# 10 s of warm-up: with five JVMs on 2 cores, C2 is still compiling 5-8 s in (docs/perf-notes/store.md, "Session 7, lead")
WARM=${WARM:-10s} DUR=${DUR:-5s} PORT=${PORT:-50561}
exec 9>/tmp/tent4j-bench.lock
flock 9

load() { cut -d' ' -f1 /proc/loadavg; }

sum_field() { # sum of a numeric JSON field over the given files
  python3 - "$@" <<'PY'
import json, sys
field = sys.argv[1]; tot = 0.0; p50 = []; bad = 0
for f in sys.argv[2:]:
    line = [l for l in open(f) if l.startswith('{')][-1]
    d = json.loads(line); tot += d[field]; p50.append(d.get('callP50Us', 0))
    bad += d.get('errors', 0) + d.get('mismatches', 0)
print(f"{tot:.0f} (p50 per call {'/'.join(str(round(x)) for x in p50)} us){f' ERRORS/MISMATCHES {bad}' if bad else ''}")
PY
}

one_case() { # build case
  local R=$1 C=$2 tmp
  case $C in sget*) if ! grep -q get-session "$R"/*/src/main/java/org/tent4j/*/*/StoreBench.java; then
    echo "$(date -u +%H:%M:%S) $C $(basename "$(cd "$R" && pwd)") n/a (no --mode get-session)"; return 0; fi ;; esac
  tmp=$(mktemp -d)
  "$R/bin/store-master" --host 127.0.0.1 --port "$PORT" --admin-port $((PORT + 100)) > "$tmp/master" 2>&1 &
  local mpid=$!
  until grep -q LISTENING "$tmp/master" 2>/dev/null; do kill -0 $mpid 2>/dev/null || { cat "$tmp/master"; return 1; }; sleep 0.2; done
  local npids=()
  for n in 1 2; do
    "$R/bin/store-node" --master 127.0.0.1:$PORT --segment-size 1g --control-host 127.0.0.1 > "$tmp/node$n" 2>&1 &
    npids+=($!)
  done
  for n in 1 2; do until grep -q READY "$tmp/node$n" 2>/dev/null; do sleep 0.2; done; done
  local B=("$R/bin/store-bench" --master 127.0.0.1:$PORT --control-host 127.0.0.1 --json --threads 2)
  local pre=() args field=opsPerSecond
  case $C in
    put4k) args=(--mode put --size 4k --batch 32 --warmup $WARM --duration $DUR) ;;
    get4k) pre=(--mode put --size 4k --batch 32 --count 16384 --warmup 0s)
           args=(--mode get --size 4k --batch 32 --count 16384 --warmup $WARM --duration $DUR --verify) ;;
    put1m) args=(--mode put --size 1m --warmup $WARM --duration $DUR); field=mibPerSecond ;;
    get1m) pre=(--mode put --size 1m --count 100 --warmup 0s)
           args=(--mode get --size 1m --count 100 --warmup $WARM --duration $DUR); field=mibPerSecond ;;
    sget4k) pre=(--mode put --size 4k --batch 32 --count 16384 --warmup 0s)
           args=(--mode get-session --size 4k --batch 32 --count 16384 --warmup $WARM --duration $DUR --verify) ;;
    sget1m) pre=(--mode put --size 1m --count 100 --warmup 0s)
           args=(--mode get-session --size 1m --count 100 --warmup $WARM --duration $DUR); field=mibPerSecond ;;
  esac
  if [ ${#pre[@]} -gt 0 ]; then
    "${B[@]}" "${pre[@]}" --prefix a > /dev/null 2>&1 & local p1=$!
    "${B[@]}" "${pre[@]}" --prefix b > /dev/null 2>&1 & local p2=$!
    wait $p1 $p2
  fi
  local l0; l0=$(load)
  "${B[@]}" "${args[@]}" --prefix a > "$tmp/a" 2>"$tmp/a.err" & local b1=$!
  "${B[@]}" "${args[@]}" --prefix b > "$tmp/b" 2>"$tmp/b.err" & local b2=$!
  wait $b1 $b2
  echo "$(date -u +%H:%M:%S) $C $(basename "$(cd "$R" && pwd)") $field $(sum_field $field "$tmp/a" "$tmp/b") load $l0-$(load)"
  kill "${npids[@]}" $mpid 2>/dev/null
  wait "${npids[@]}" $mpid 2>/dev/null
  rm -rf "$tmp"
}

redis() {
  redis-server --port 16399 --save '' --appendonly no > /dev/null 2>&1 & local rp=$!
  until redis-cli -p 16399 ping > /dev/null 2>&1; do sleep 0.1; done
  echo "$(date -u +%H:%M:%S) redis load $(load): $(redis-benchmark -p 16399 -d 1048576 -c 4 -n 4000 -t set,get --csv | tail -n +2 | cut -d, -f1,2 | tr '\n' ' ')"
  kill $rp; wait $rp 2>/dev/null
}

redis
for ((r = 0; r < ROUNDS; r++)); do
  order=("${BUILDS[@]}")
  if ((r % 2 == 1)); then order=(); for ((i = ${#BUILDS[@]} - 1; i >= 0; i--)); do order+=("${BUILDS[i]}"); done; fi
  for c in $CASES; do for b in "${order[@]}"; do one_case "$b" "$c"; done; done
  redis
done
