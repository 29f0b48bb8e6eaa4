#!/usr/bin/env bash
# The warm start, side by side: an unpacked distribution's commands with its ahead-of-time caches (lib/tent4j*.aot)
# and without (TENT4J_AOT=off), interleaved: ROUNDS of the bench, then a master and node and ROUNDS of the store. Per
# round and mode it prints
#   - bench-first-transfer: seconds from starting a loopback `tent4j bench` that ends after its first transfer to its
#     result line (the transfer completed and counted), and its exit in brackets (the engines' close included);
#   - store-first-put: the same for a `tent4j store bench` that puts one 4 KiB value into a running master + node;
#   - put1m-first-3s: MiB/s of 1 MiB puts over the first 3 s (--warmup 0s --duration 3s).
#   scripts/perf/warm-start.sh DIST_DIR [ROUNDS]     (DIST_DIR: an unpacked tent4j-<version>.tar.gz, built by verify)
set -euo pipefail
DIST=$(cd "$1" && pwd); ROUNDS=${2:-5}
[ -f "$DIST/lib/tent4j.aot" ] || { echo "$DIST/lib/tent4j.aot is missing: build the tarball with ./mvnw verify" >&2; exit 1; }
work=$(mktemp -d)
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
pids=()
trap cleanup EXIT
# first_result CMD...: runs CMD and prints "S (E)": seconds from its start to its first stdout line that begins with
# "{" (the JSON result, printed once the measured work is done) and to its exit; the clock starts before the fork
first_result() {
  python3 -c '
import subprocess, sys, time
t0 = time.monotonic(); first = None
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
for line in p.stdout:
    if first is None and line.startswith(b"{"):
        first = time.monotonic() - t0
rc = p.wait(); end = time.monotonic() - t0
if rc != 0 or first is None:
    sys.exit("%s exited %d%s" % (sys.argv[1], rc, "" if first is not None else " before its result line"))
print("%.2f s (exit %.2f s)" % (first, end))' "$@"
}
echo "load $(cut -d' ' -f1 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
# the bench first, before the store is started, so it is not measured beside a store still settling from the last
# round's 1 MiB puts
for r in $(seq 1 "$ROUNDS"); do
  for mode in on off; do
    took=$(TENT4J_AOT=$mode first_result "$DIST/bin/tent4j" bench --mode=loopback --protocol=tcp --block-size=4k \
      --batch-size=1 --threads=1 --buffer-size=16m --warmup=0 --duration=0.001 --json)
    printf 'round %s aot=%-3s bench-first-transfer %s  load %s\n' "$r" "$mode" "$took" "$(cut -d' ' -f1 /proc/loadavg)" | \
      tee -a "$work/rounds"
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
    took=$(TENT4J_AOT=$mode first_result "$DIST/bin/tent4j" store bench --master "$MASTER" --control-host 127.0.0.1 \
      --mode put --size 4k --threads 1 --count 1 --warmup 0s --prefix "ws$r$mode" --json)
    rate=$(TENT4J_AOT=$mode "$DIST/bin/tent4j" store bench --master "$MASTER" --control-host 127.0.0.1 --mode put \
      --size 1m --threads 2 --warmup 0s --duration 3s --prefix "w3$r$mode" --json 2>/dev/null | grep '^{' | \
      python3 -c 'import json,sys; print(round(json.load(sys.stdin)["mibPerSecond"]))')
    printf 'round %s aot=%-3s store-first-put %s  put1m-first-3s %s MiB/s  load %s\n' \
      "$r" "$mode" "$took" "$rate" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$work/rounds"
  done
done
warm=$("$DIST/bin/tent4j" store bench --master "$MASTER" --control-host 127.0.0.1 --mode put --size 1m --threads 2 \
  --warmup 10s --duration 3s --prefix warm --json 2>/dev/null | grep '^{' | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["mibPerSecond"]))')
echo "put1m after a 10 s warm-up (with the cache): $warm MiB/s"
# medians of the rounds, and each round's ratio (without / with the cache)
python3 - "$work/rounds" "$warm" <<'PY'
import re, statistics, sys
rounds = {}
for line in open(sys.argv[1]):
    r, mode = re.search(r"round (\d+) aot=(\w+)", line).groups()
    for name, value in re.findall(r"(bench-first-transfer|store-first-put|put1m-first-3s) ([\d.]+)", line):
        rounds.setdefault(name, {}).setdefault(r, {})[mode] = float(value)
for name in ("bench-first-transfer", "store-first-put"):
    pairs = [v for v in rounds[name].values() if len(v) == 2]
    ratios = [v["off"] / v["on"] for v in pairs]
    print("%s: median %.2f s with the cache, %.2f s without: %.2fx; rounds at 2x or more: %d of %d"
          % (name, statistics.median(v["on"] for v in pairs), statistics.median(v["off"] for v in pairs),
             statistics.median(v["off"] for v in pairs) / statistics.median(v["on"] for v in pairs),
             sum(x >= 2 for x in ratios), len(ratios)))
on = [v["on"] for v in rounds["put1m-first-3s"].values() if "on" in v]
print("put1m-first-3s with the cache: median %.0f MiB/s, %.2fx of the warm rate" % (statistics.median(on), statistics.median(on) / float(sys.argv[2])))
PY
