#!/bin/bash
# Multi-rail tcp over rate-limited links (issue 24's performance): two network namespaces joined by two veth links,
# each sending side limited with `tc tbf`, te-bench WRITE 1 MiB x batch 32 from host a to host b. Three cases:
#   one    one link at RATE_FAST, the engines on that link only        (target: >= 0.9x the link rate)
#   two    both links at RATE_FAST, transports.tcp.interfaces=l0,l1    (target: >= 1.8x one link)
#   mixed  l0 at RATE_FAST, l1 at RATE_SLOW, both rails                (target: >= 0.9x the sum of the two rates)
# The links use 198.51.100.0/24 (a documentation range) inside the namespaces only: no route, bridge or NAT to any
# other interface. Needs root, iproute2 and a built checkout (./mvnw -B -o -DskipTests package). Quiet machine only.
# usage: scripts/perf/rails.sh [ROUNDS]    RATE_FAST (1gbit), RATE_SLOW (100mbit), WARM, DUR (seconds) override
set -eu
cd "$(dirname "$0")/../.."
ROUNDS=${1:-1}
RATE_FAST=${RATE_FAST:-1gbit}; RATE_SLOW=${RATE_SLOW:-100mbit}
WARM=${WARM:-3}; DUR=${DUR:-8}
[ "$(id -u)" = 0 ] || { echo "rails.sh: needs root (network namespaces)" >&2; exit 2; }
command -v ip >/dev/null && command -v tc >/dev/null || { echo "rails.sh: needs iproute2 (ip, tc)" >&2; exit 2; }
run=$$; A=t4jp-$run-a; B=t4jp-$run-b
out=$(mktemp -d)
stop_all() { # every process still in the namespaces: killing the bin/te-bench script leaves its JVM running
  for ns in "$A" "$B"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  done
  wait 2>/dev/null || true
}
cleanup() {
  stop_all
  ip netns del "$A" 2>/dev/null || true; ip netns del "$B" 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT
# namespaces of an earlier run that was killed
for ns in $(ip netns list | awk '/^t4jp-/{print $1}'); do ip netns del "$ns" 2>/dev/null || true; done
ip netns add "$A"; ip netns add "$B"
inA() { ip netns exec "$A" "$@"; }
inB() { ip netns exec "$B" "$@"; }
for l in 0 1; do
  ip link add "t4jp$run$l" type veth peer name "t4jq$run$l"
  ip link set "t4jp$run$l" netns "$A"; ip link set "t4jq$run$l" netns "$B"
  inA ip link set "t4jp$run$l" name "l$l"; inB ip link set "t4jq$run$l" name "l$l"
done
inA ip addr add 198.51.100.1/25 dev l0; inB ip addr add 198.51.100.2/25 dev l0
inA ip addr add 198.51.100.129/25 dev l1; inB ip addr add 198.51.100.130/25 dev l1
for ns in "$A" "$B"; do
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" ip link set l0 up
  ip netns exec "$ns" ip link set l1 up
done
rate() { # link, rate: both sending sides (GSO packets reach tbf whole: the burst holds several of them)
  for ns in "$A" "$B"; do
    ip netns exec "$ns" tc qdisc replace dev "l$1" root tbf rate "$2" burst 1mb latency 100ms
  done
}
bits() { python3 -c "import re,sys; v,u=re.fullmatch(r'([0-9.]+)([kmg]?)bit','$1'.lower()).groups(); print(float(v)*{'':1,'k':1e3,'m':1e6,'g':1e9}[u])"; }
case_() { # name, interfaces ("" = the control.host link only), expected rate in bit/s
  local name=$1 ifs=$2 expect=$3 set=() seg js gbps load
  [ -n "$ifs" ] && set=(--set "transports.tcp.interfaces=$ifs")
  inB bin/te-bench --mode=target --buffer_size=512m --set control.host=198.51.100.2 "${set[@]}" > "$out/target.log" 2>&1 &
  seg=""
  for _ in $(seq 1 300); do
    seg=$(grep -o -- '--segment_id=[^ ]*' "$out/target.log" | head -n1 || true)
    [ -n "$seg" ] && break; sleep 0.1
  done
  [ -n "$seg" ] || { cat "$out/target.log" >&2; exit 1; }
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  js=$(inA bin/te-bench --mode=initiator "$seg" --buffer_size=512m --set control.host=198.51.100.1 "${set[@]}" \
      --operation=write --block_size=1m --batch_size=32 --threads=2 --warmup="$WARM" --duration="$DUR" --json 2>"$out/$name.err" | tail -1)
  stop_all
  gbps=$(sed -n 's/.*"gbps":\([0-9.eE+-]*\).*/\1/p' <<< "$js")
  [ -n "$gbps" ] || { echo "$name: no result"; cat "$out/$name.err" >&2; return; }
  python3 -c "g=$gbps; e=$expect; print(f'$name  {g*8:.3f} Gbit/s = {g*8e9/e:.2f}x of {e/1e9:.2f} Gbit/s  (load $load)')"
}
fast=$(bits "$RATE_FAST"); slow=$(bits "$RATE_SLOW")
echo "# te-bench WRITE 1 MiB x batch 32 x 2 threads, a -> b; $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), commit $(git rev-parse --short HEAD)"
for r in $(seq 1 "$ROUNDS"); do
  rate 0 "$RATE_FAST"; rate 1 "$RATE_FAST"
  case_ "one   (l0 at $RATE_FAST)" "" "$fast"
  case_ "two   (l0, l1 at $RATE_FAST)" "l0,l1" "$fast"
  rate 1 "$RATE_SLOW"
  case_ "mixed (l0 $RATE_FAST, l1 $RATE_SLOW; vs the sum)" "l0,l1" "$(python3 -c "print($fast+$slow)")"
done
