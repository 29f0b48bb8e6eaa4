#!/usr/bin/env bash
# The warm start, side by side: an unpacked distribution's commands with its ahead-of-time caches (lib/tent4j*.aot)
# and without (TENT4J_AOT=off), interleaved: ROUNDS of the bench, then a master and node and ROUNDS of the store. Per
# round and mode it prints
#   - bench: wall time of a loopback `tent4j bench` that ends after its first transfer (process start to exit, an
#     upper bound on start to first completed transfer), and
#   - put: wall time of a `tent4j store bench` that puts one 4 KiB value into a running master + node, and
#   - put1m-3s: MiB/s of 1 MiB puts over the first 3 s (--warmup 0s --duration 3s).
#   scripts/perf/warm-start.sh DIST_DIR [ROUNDS]     (DIST_DIR: an unpacked tent4j-<version>.tar.gz, built by verify)
set -euo pipefail
DIST=$(cd "$1" && pwd); ROUNDS=${2:-5}
[ -f "$DIST/lib/tent4j.aot" ] || { echo "$DIST/lib/tent4j.aot is missing: build the tarball with ./mvnw verify" >&2; exit 1; }
work=$(mktemp -d)
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
pids=()
trap cleanup EXIT
secs() { date +%s.%N; }  # no interpreter's start inside the measured time
echo "load $(cut -d' ' -f1 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
# the bench first, before the store is started, so it is not measured beside a store still settling from the last
# round's 1 MiB puts
for r in $(seq 1 "$ROUNDS"); do
  for mode in on off; do
    t0=$(secs)
    TENT4J_AOT=$mode "$DIST/bin/tent4j" bench --mode=loopback --protocol=tcp --block-size=4k --batch-size=1 --threads=1 \
      --buffer-size=16m --warmup=0 --duration=0.001 > /dev/null 2>&1
    t1=$(secs)
    printf 'round %s aot=%-3s bench-first-transfer %.2f s  load %s\n' "$r" "$mode" "$(python3 -c "print($t1-$t0)")" \
      "$(cut -d' ' -f1 /proc/loadavg)"
  done
done
"$DIST/bin/tent4j" store master --host 127.0.0.1 --port 0 --admin-port -1 > "$work/master" 2>&1 & pids+=($!)
until grep -q '^LISTENING' "$work/master"; do sleep 0.2; done
MASTER=127.0.0.1:$(grep '^LISTENING' "$work/master" | cut -d' ' -f2)
"$DIST/bin/tent4j" store node --master "$MASTER" --segment-size 2g --control-host 127.0.0.1 > "$work/node" 2>&1 & pids+=($!)
until grep -q '^READY' "$work/node"; do sleep 0.2; done
# one put first, untimed: the first round's first client would otherwise also pay for the fresh master's and node's
# first put (which the cached client, going first, always met)
"$DIST/bin/tent4j" store bench --master "$MASTER" --control-host 127.0.0.1 --mode put --size 4k --threads 1 --count 1 \
  --warmup 0s --prefix ws0 > /dev/null 2>&1
for r in $(seq 1 "$ROUNDS"); do
  for mode in on off; do
    t1=$(secs)
    TENT4J_AOT=$mode "$DIST/bin/tent4j" store bench --master "$MASTER" --control-host 127.0.0.1 --mode put --size 4k \
      --threads 1 --count 1 --warmup 0s --prefix "ws$r$mode" > /dev/null 2>&1
    t2=$(secs)
    rate=$(TENT4J_AOT=$mode "$DIST/bin/tent4j" store bench --master "$MASTER" --control-host 127.0.0.1 --mode put \
      --size 1m --threads 2 --warmup 0s --duration 3s --prefix "w3$r$mode" --json 2>/dev/null | grep '^{' | \
      python3 -c 'import json,sys; print(round(json.load(sys.stdin)["mibPerSecond"]))')
    printf 'round %s aot=%-3s store-first-put %.2f s  put1m-first-3s %s MiB/s  load %s\n' \
      "$r" "$mode" "$(python3 -c "print($t2-$t1)")" "$rate" "$(cut -d' ' -f1 /proc/loadavg)"
  done
done
warm=$("$DIST/bin/tent4j" store bench --master "$MASTER" --control-host 127.0.0.1 --mode put --size 1m --threads 2 \
  --warmup 10s --duration 3s --prefix warm --json 2>/dev/null | grep '^{' | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["mibPerSecond"]))')
echo "put1m after a 10 s warm-up (with the cache): $warm MiB/s"
