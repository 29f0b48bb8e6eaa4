#!/bin/bash
# Interleaved A/B of store-bench between builds, Redis in the same run (docs/PERFORMANCE.md, "The store").
#   scripts/perf/store-ab.sh ROUNDS CASES BUILD...   e.g.  scripts/perf/store-ab.sh 2 "put4k get4k put1m get1m" BASE_CHECKOUT .
# A BUILD may end in :durable (one master with its durable log, --data-dir) or :group3 (three durable masters, each
# with its own log, on this machine), e.g. ". .:durable .:group3" compares the in-memory master with both (issue 22);
# :durable-tmpfs is :durable with its data directory on /dev/shm, to tell the log's disk from the rest.
# Cases: put4k get4k put1m get1m, and sget4k sget1m (get4k / get1m through --mode get-session: one replica-list
# fetch per thread, then reads without the master; a build without that mode prints n/a).
# Every build must have run `./mvnw -B -ntp -o -DskipTests package` (bin/store-* run from cli/target/lib, or from
# store/target/lib in builds before the cli module). Per build and case: a fresh master,
# two store-nodes of 1 GiB, BENCHES store-bench processes at once (default 2) of THREADS threads each (default 2); the
# figure is their sum. BENCHES=1 is issue 28's shape: one client process. The build order is reversed every round.
# STORE_WARM=15s first runs one client process of the case for that long against the fresh master and nodes and ends
# it, so the measured client (still fresh, WARM of its own) meets a store whose JIT has compiled its paths, as a store
# that has served a while has; without it the fresh master's C2 threads still take about half a core 10 s in.
# Holds /tmp/tent4j-bench.lock for the whole run. Prints one line per figure.
set -u
ROUNDS=$1 CASES=$2; shift 2
BUILDS=("$@")
# 10 s of warm-up: with five JVMs on 2 cores, C2 is still compiling 5-8 s in (docs/perf-notes/store.md, session 7)
WARM=${WARM:-10s} DUR=${DUR:-5s} PORT=${PORT:-50561} BENCHES=${BENCHES:-2} THREADS=${THREADS:-2} STORE_WARM=${STORE_WARM:-}
((BENCHES >= 1 && BENCHES <= 2)) || { echo "BENCHES must be 1 or 2" >&2; exit 2; }
exec 9>/tmp/tent4j-bench.lock
flock 9

load() { cut -d' ' -f1 /proc/loadavg; }

sum_field() { # sum of a numeric JSON field over the given files
  python3 - "$@" <<'PY'
import json, sys
field = sys.argv[1]; tot = 0.0; p50 = []; bad = 0; first = []
for f in sys.argv[2:]:
    lines = [l for l in open(f) if l.startswith('{')]
    if not lines:
        print(f"NO RESULT from {f}: " + open(f + '.err').read()[-300:].replace('\n', ' | ')); sys.exit()
    d = json.loads(lines[-1]); tot += d[field]; p50.append(d.get('callP50Us', 0))
    bad += d.get('errors', 0) + d.get('mismatches', 0)
    if d.get('errors', 0):  # the bench names its first error on stderr: a figure with errors must say which
        first += [l.strip() for l in open(f + '.err') if l.startswith('first error')][:1]
print(f"{tot:.0f} (p50 per call {'/'.join(str(round(x)) for x in p50)} us){f' ERRORS/MISMATCHES {bad}' if bad else ''}"
      + ''.join(f' [{e}]' for e in first))
PY
}

start_masters() { # build mode tmp: starts the master(s); sets mpids and MASTERS
  local R=$1 MODE=$2 tmp=$3
  mpids=()
  local mlogs=("$tmp/master")
  case $MODE in
    memory) "$R/bin/store-master" --host 127.0.0.1 --port "$PORT" --admin-port $((PORT + 100)) > "$tmp/master" 2>&1 &
            mpids+=($!); MASTERS=127.0.0.1:$PORT ;;
    durable|durable-tmpfs) local data=$tmp
            if [ "$MODE" = durable-tmpfs ]; then # the log on tmpfs: the difference is what its disk costs
              data=$(mktemp -d -p /dev/shm tent4j-ab.XXXXXX) && echo "$data" > "$tmp/shm" || return 1
            fi
            "$R/bin/store-master" --host 127.0.0.1 --port "$PORT" --admin-port $((PORT + 100)) \
               --data-dir "$data/m0" > "$tmp/master" 2>&1 &
            mpids+=($!); MASTERS=127.0.0.1:$PORT ;;
    group3) local peers="" i
            MASTERS="" mlogs=()
            for i in 0 1 2; do
              peers+="${peers:+,}m$i=127.0.0.1:$((PORT + 200 + i))/$((PORT + i * 10))"
              MASTERS+="${MASTERS:+,}127.0.0.1:$((PORT + i * 10))"
            done
            for i in 0 1 2; do
              "$R/bin/store-master" --host 127.0.0.1 --port $((PORT + i * 10)) --admin-port $((PORT + 100 + i)) \
                --data-dir "$tmp/m$i" --id m$i --peers "$peers" > "$tmp/master$i" 2>&1 &
              mpids+=($!) mlogs+=("$tmp/master$i")
            done ;;
    *) echo "unknown master mode '$MODE' (memory, durable, durable-tmpfs, group3)" >&2; return 1 ;;
  esac
  local f
  for f in "${mlogs[@]}"; do
    until grep -q LISTENING "$f" 2>/dev/null; do
      for p in "${mpids[@]}"; do kill -0 "$p" 2>/dev/null || { cat "$f"; return 1; }; done; sleep 0.2
    done
  done
}

one_case() { # build[:mode] case
  local R=${1%%:*} MODE=memory C=$2 tmp
  [[ $1 == *:* ]] && MODE=${1#*:}
  case $C in sget*) if ! grep -q get-session "$R"/*/src/main/java/org/tent4j/*/*/StoreBench.java; then
    echo "$(date -u +%H:%M:%S) $C $(basename "$(cd "$R" && pwd)") n/a (no --mode get-session)"; return 0; fi ;; esac
  tmp=$(mktemp -d)
  local mpids MASTERS
  start_masters "$R" "$MODE" "$tmp" || return 1
  local npids=()
  for n in 1 2; do
    "$R/bin/store-node" --master "$MASTERS" --segment-size 1g --control-host 127.0.0.1 > "$tmp/node$n" 2>&1 &
    npids+=($!)
  done
  for n in 1 2; do until grep -q READY "$tmp/node$n" 2>/dev/null; do sleep 0.2; done; done
  local B=("$R/bin/store-bench" --master "$MASTERS" --control-host 127.0.0.1 --json --threads "$THREADS")
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
  local prefixes=(a b) p pids=() outs=()
  prefixes=("${prefixes[@]:0:$BENCHES}")
  if [ ${#pre[@]} -gt 0 ]; then
    for p in "${prefixes[@]}"; do "${B[@]}" "${pre[@]}" --prefix "$p" > /dev/null 2>&1 & pids+=($!); done
    wait "${pids[@]}"; pids=()
  fi
  if [ -n "$STORE_WARM" ]; then # an earlier client of the same case, ended before the measured one starts
    local warmargs=("${args[@]}")
    for i in "${!warmargs[@]}"; do
      case ${warmargs[i]} in --warmup) warmargs[i + 1]=0s ;; --duration) warmargs[i + 1]=$STORE_WARM ;; esac
    done
    local wp=w; [ ${#pre[@]} -gt 0 ] && wp=a # a get reads what was put under a; a put writes keys of its own
    "${B[@]}" "${warmargs[@]}" --prefix "$wp" > /dev/null 2>&1
  fi
  local l0; l0=$(load)
  for p in "${prefixes[@]}"; do
    "${B[@]}" "${args[@]}" --prefix "$p" > "$tmp/$p" 2>"$tmp/$p.err" & pids+=($!); outs+=("$tmp/$p")
  done
  wait "${pids[@]}"
  echo "$(date -u +%H:%M:%S) $C $(basename "$(cd "$R" && pwd)")${1#"$R"} $field $(sum_field $field "${outs[@]}") load $l0-$(load)"
  kill "${npids[@]}" "${mpids[@]}" 2>/dev/null
  wait "${npids[@]}" "${mpids[@]}" 2>/dev/null
  [ -f "$tmp/shm" ] && rm -rf "$(cat "$tmp/shm")"
  rm -rf "$tmp"
}

redis() {
  redis-server --port 16399 --save '' --appendonly no > /dev/null 2>&1 & local rp=$!
  until redis-cli -p 16399 ping > /dev/null 2>&1; do sleep 0.1; done
  echo "$(date -u +%H:%M:%S) redis load $(load): $(redis-benchmark -p 16399 -d 1048576 -c 4 -n 4000 -t set,get --csv | tail -n +2 | cut -d, -f1,2 | tr '\n' ' ')"
  kill $rp; wait $rp 2>/dev/null
}

shm_pages() { # the huge= option of the mount /dev/shm is on (the last listed), "never" without one
  awk '$2 == "/dev/shm" {o = $4} END {n = split(o, a, ","); h = "never"; for (i = 1; i <= n; i++) if (a[i] ~ /^huge=/) h = substr(a[i], 6); print h}' /proc/mounts
}
echo "$(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), BENCHES=$BENCHES THREADS=$THREADS STORE_WARM=${STORE_WARM:-none}, /dev/shm huge=$(shm_pages)"
redis
for ((r = 0; r < ROUNDS; r++)); do
  order=("${BUILDS[@]}")
  if ((r % 2 == 1)); then order=(); for ((i = ${#BUILDS[@]} - 1; i >= 0; i--)); do order+=("${BUILDS[i]}"); done; fi
  for c in $CASES; do for b in "${order[@]}"; do one_case "$b" "$c"; done; done
  redis
done
