# Sourced (bash) by scripts/perf.sh and scripts/perf/tls-cost.sh from the repository root, after they set $out (a
# scratch folder): te-bench targets and initiator runs, one result line each.

json() { # file, key: extracts "key":value from te-bench's JSON line
  sed -n 's/.*"'"$2"'":\([0-9.eE+-]*\).*/\1/p' "$1" | tail -n1
}
target() { # starts a te-bench target with these extra args; sets TARGET_PID and SEG
  bin/te-bench --mode=target --buffer_size=512m "$@" >"$out/target.log" 2>&1 &
  TARGET_PID=$!
  SEG=""
  for _ in $(seq 1 150); do
    SEG=$(grep -o -- '--segment_id=[^ ]*' "$out/target.log" | head -n1 || true)
    [ -n "$SEG" ] && return 0
    sleep 0.2
  done
  cat "$out/target.log" >&2
  return 1
}
stop_target() { kill "$TARGET_PID"; wait "$TARGET_PID" 2>/dev/null || true; }
bench() { # name, warm-up seconds, measured seconds, te-bench initiator args...
  local name=$1 warmup=$2 duration=$3; shift 3
  bin/te-bench --mode=initiator "$SEG" --buffer_size=512m --warmup="$warmup" --duration="$duration" --json "$@" \
    >"$out/$name.json" 2>"$out/$name.err" || { cat "$out/$name.err" >&2; return 1; }
  echo "$name gbps=$(json "$out/$name.json" gbps) ops_per_sec=$(json "$out/$name.json" ops_per_sec) p50_us=$(json "$out/$name.json" p50_us) p99_us=$(json "$out/$name.json" p99_us) p999_us=$(json "$out/$name.json" p999_us) errors=$(json "$out/$name.json" errors)"
}
