#!/usr/bin/env bash
# Measurements for docs/PERFORMANCE.md, each pair side by side in one run. Builds first. Prints one line per figure:
#   figure-name value [unit]
# Usage: scripts/perf.sh [seconds per run, default 5]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/jdk.sh
D=${1:-5}
./mvnw -B -q -ntp -DskipTests package
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT

. scripts/perf/te-bench-lib.sh
# 3 s warm-up: in the first seconds of a JVM the JIT compilers take a third of a core of this 2-core machine
W=3

iperf() { # name: one loopback TCP stream for D seconds
  local port
  port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  iperf3 -s -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
  local pid=$!
  sleep 0.5
  echo "$1 gbps=$(iperf3 -c 127.0.0.1 -p "$port" -t "$D" -J | python3 -c 'import json,sys;print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e9,3))')"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

echo "# issue 2: baselines"
iperf iperf3_1stream
gcc -O2 -o "$out/memcpy" scripts/perf/memcpy.c
echo "memcpy_1MiB_1thread gbps=$("$out/memcpy" $((1<<20)) "$D")"

echo "# issue 2: two processes, 1 MiB blocks, batch 32, 2 threads"
target
for p in tcp shm; do
  for op in read write; do
    bench "${p}_${op}_1MiB" "$W" "$D" --protocol=$p --operation=$op --block_size=1m --batch_size=32 --threads=2
  done
done
iperf iperf3_1stream_after_tcp_shm
echo "# issue 2: 4 KiB requests, batch 32, 2 threads"
for p in tcp shm; do
  for op in read write; do
    bench "${p}_${op}_4KiB" "$W" "$D" --protocol=$p --operation=$op --block_size=4k --batch_size=32 --threads=2
  done
done
stop_target

if [ "${FI_PROVIDER:-tcp;ofi_rxm}" != none ]; then
  echo "# issue 5: efa transport over libfabric provider ${FI_PROVIDER:-tcp;ofi_rxm}, two processes, 1 MiB, batch 32, 2 threads"
  export FI_PROVIDER="${FI_PROVIDER:-tcp;ofi_rxm}"
  target
  for op in read write; do
    bench "efa_${op}_1MiB" "$W" "$D" --protocol=efa --operation=$op --block_size=1m --batch_size=32 --threads=2
    bench "tcp_${op}_1MiB_same_run" "$W" "$D" --protocol=tcp --operation=$op --block_size=1m --batch_size=32 --threads=2
  done
  stop_target
fi

echo "# issue 3: metadata publish and open times (medians), side by side"
data=$out/md; mkdir -p "$data"
ep=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
pp=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
rp=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
hp=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
etcd --name n1 --data-dir "$data/etcd" --listen-client-urls "http://127.0.0.1:$ep" --advertise-client-urls "http://127.0.0.1:$ep" \
  --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
  --initial-cluster "n1=http://127.0.0.1:$pp" --initial-cluster-state new --logger=zap --log-level=error >/dev/null 2>&1 &
redis-server --bind 127.0.0.1 --port "$rp" --save '' --appendonly no --dir "$data" >/dev/null 2>&1 &
bin/tent4j metadata-server --host 127.0.0.1 --port "$hp" >/dev/null 2>&1 &
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$ep/health" >/dev/null && redis-cli -p "$rp" ping >/dev/null 2>&1 \
    && curl -s -o /dev/null "http://127.0.0.1:$hp/metadata?key=x" && break
  sleep 0.2
done
TENT4J_MODULE=samples
. bin/classpath.sh
"$JAVA_HOME/bin/java" $TENT4J_JAVA_FLAGS -cp "$TENT4J_CP" org.tent4j.samples.bench.MetadataBench \
  p2p "etcd://127.0.0.1:$ep" "redis://127.0.0.1:$rp" "http://127.0.0.1:$hp/metadata" 2>/dev/null
