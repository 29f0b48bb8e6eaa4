#!/usr/bin/env bash
# run-gpu-tests.sh: run tent4j's GPU tests (CUDA platform, nvlink transport) on a machine with an NVIDIA GPU, even
# one without Java or Maven.
#
# Usage:
#   scripts/gpu/run-gpu-tests.sh bundle [DIR]   on a build machine (JDK 25, Maven through ./mvnw, network for the
#                                               first build): builds the modules, and writes DIR (default
#                                               target/gpu-bundle) holding
#                                                 jre/      a jlinked Java 25 runtime with only the modules the tests use
#                                                 lib/      the test class path: tent4j jars, test classes, slf4j, logback
#                                                 junit/    junit-platform-console-standalone 1.14.4
#                                                 native/   libcudart.so.13 from /usr/local/cuda, when present, used only
#                                                           if the GPU machine has no CUDA runtime of its own
#                                                 run-gpu-tests.sh   this script
#   DIR/run-gpu-tests.sh run [DIR]              on the GPU machine (needs only the NVIDIA driver): runs
#                                               org.tent4j.platform.cuda.CudaGpuTest and
#                                               org.tent4j.transport.nvlink.NvlinkCudaGpuTest with JUnit's
#                                               ConsoleLauncher; writes DIR/results/ (console.txt, nvidia-smi.txt,
#                                               TEST-junit-jupiter.xml) and exits non-zero on any failure
#   scripts/gpu/run-gpu-tests.sh all [DIR]      both, on a machine that has a JDK and a GPU
#
# Environment:
#   ALLOW_SKIPS=1      do not fail when tests were skipped (they skip, naming the cause, when no GPU is usable)
#   TENT4J_TEST_JAVA_OPTS  extra JVM options for the test JVM (default: -Xmx4g)
#   TESTS="a.B c.D"    test classes to run instead of the two above
#   BUNDLE_MODULES     modules 'bundle' builds (default te-api,transports/faulty,te-testkit,platforms/cuda,platforms/rocm,
#                      platforms/ascend,transports/nvlink); MVN_ARGS adds Maven options, e.g. -o
#
# The bundle is a plain folder: copy it (for example with the device tool's carry of target/gpu-bundle, under 64 MiB)
# to the GPU machine and run DIR/run-gpu-tests.sh run. A GPU is what the tests need; this script never changes GPU
# settings.
set -euo pipefail

JUNIT_CONSOLE_VERSION=1.14.4
DEFAULT_TESTS="org.tent4j.platform.cuda.CudaGpuTest org.tent4j.transport.nvlink.NvlinkCudaGpuTest"

die() { echo "run-gpu-tests: $*" >&2; exit 1; }

bundle() {
  local dir=$1 repo modules
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  [ -f "$repo/pom.xml" ] || die "bundle must run from a tent4j checkout (no pom.xml at $repo)"
  dir=$(realpath -m "${dir:-$repo/target/gpu-bundle}")
  cd "$repo"
  # shellcheck disable=SC1091
  . scripts/jdk.sh
  modules=${BUNDLE_MODULES:-te-api,transports/faulty,te-testkit,platforms/cuda,platforms/rocm,platforms/ascend,transports/nvlink}
  echo "== building $modules (tests compiled, not run)"
  # shellcheck disable=SC2086
  ./mvnw -B -q ${MVN_ARGS:-} install -DskipTests -pl "$modules"

  rm -rf "$dir"
  mkdir -p "$dir/lib" "$dir/junit" "$dir/native"
  echo "== copying the nvlink test class path into $dir/lib"
  # JUnit itself comes from the console launcher jar; a second copy of the engine would be discovered twice
  # shellcheck disable=SC2086
  ./mvnw -B -q ${MVN_ARGS:-} -pl transports/nvlink dependency:copy-dependencies -DincludeScope=test -DoutputDirectory="$dir/lib" \
    -DexcludeGroupIds=org.junit.jupiter,org.junit.platform,org.opentest4j,org.apiguardian
  cp transports/nvlink/target/transport-nvlink-*.jar "$dir/lib/"
  "$JAVA_HOME/bin/jar" cf "$dir/lib/transport-nvlink-tests.jar" -C transports/nvlink/target/test-classes .
  ls "$dir/lib" | grep -q 'platform-cuda-.*-tests.jar' || die "platform-cuda test jar missing from $dir/lib"

  echo "== fetching junit-platform-console-standalone $JUNIT_CONSOLE_VERSION"
  local m2="$HOME/.m2/repository/org/junit/platform/junit-platform-console-standalone/$JUNIT_CONSOLE_VERSION"
  if [ ! -f "$m2/junit-platform-console-standalone-$JUNIT_CONSOLE_VERSION.jar" ]; then
    # shellcheck disable=SC2086
    ./mvnw -B -q ${MVN_ARGS:-} -N dependency:get -Dartifact="org.junit.platform:junit-platform-console-standalone:$JUNIT_CONSOLE_VERSION"
  fi
  cp "$m2/junit-platform-console-standalone-$JUNIT_CONSOLE_VERSION.jar" "$dir/junit/"

  if [ -f /usr/local/cuda/lib64/libcudart.so.13 ]; then
    cp /usr/local/cuda/lib64/libcudart.so.13 "$dir/native/"
  fi

  echo "== jlinking a Java runtime"
  modules=$("$JAVA_HOME/bin/jdeps" --ignore-missing-deps --print-module-deps --multi-release 25 \
      --class-path "$dir/lib/*:$dir/junit/*" "$dir"/lib/*.jar "$dir"/junit/*.jar 2>/dev/null \
      | grep -E '^[a-z][a-z0-9.]*(,[a-z][a-z0-9.]*)*$' | tail -n1 || true)
  # java.logging and java.xml for JUnit's logging and XML reports, jdk.unsupported for libraries probing sun.misc
  modules="java.base,java.logging,java.xml,jdk.unsupported${modules:+,$modules}"
  echo "   modules: $modules"
  "$JAVA_HOME/bin/jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages \
    --compress zip-9 --output "$dir/jre"
  cp "$repo/scripts/gpu/run-gpu-tests.sh" "$dir/run-gpu-tests.sh"
  chmod +x "$dir/run-gpu-tests.sh"
  echo "== bundle ready: $dir ($(du -sh "$dir" | cut -f1)); on the GPU machine run: $dir/run-gpu-tests.sh run $dir"
  BUNDLE_DIR=$dir
}

run() {
  local dir=$1 results java cp tests select=() status=0 here
  if [ -z "$dir" ]; then
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    if [ -d "$here/jre" ]; then dir=$here; else dir="$here/../../target/gpu-bundle"; fi
  fi
  [ -d "$dir" ] || die "no bundle at $dir (run '$0 bundle' on a build machine first)"
  dir=$(cd "$dir" && pwd)
  java="$dir/jre/bin/java"
  [ -x "$java" ] || die "no bundled runtime at $dir/jre (run '$0 bundle $dir' on a build machine first)"
  results="$dir/results"
  rm -rf "$results"
  mkdir -p "$results"
  {
    echo "host: $(uname -a)"
    if command -v nvidia-smi > /dev/null; then nvidia-smi; else echo "nvidia-smi: not found"; fi
  } > "$results/nvidia-smi.txt" 2>&1 || true

  local opts=(--enable-native-access=ALL-UNNAMED ${TENT4J_TEST_JAVA_OPTS:--Xmx4g})
  if ! /sbin/ldconfig -p 2>/dev/null | grep -q 'libcudart\.so\.1[123]' && [ -f "$dir/native/libcudart.so.13" ]; then
    # no CUDA runtime installed here: use the bundled one (it needs a driver for CUDA 13, r580 or newer)
    opts+=("-Dtent4j.cuda.library=$dir/native/libcudart.so.13")
  fi

  # everything on the JVM class path, so the tests' second JVM (IPC peer) gets it through java.class.path
  cp="$dir/junit/junit-platform-console-standalone-$JUNIT_CONSOLE_VERSION.jar:$dir/lib/*"
  tests=${TESTS:-$DEFAULT_TESTS}
  for t in $tests; do select+=(--select-class "$t"); done
  echo "== running: $tests"
  set +e
  "$java" "${opts[@]}" -cp "$cp" org.junit.platform.console.ConsoleLauncher execute \
    --disable-banner --disable-ansi-colors --details=tree --reports-dir "$results" "${select[@]}" 2>&1 | tee "$results/console.txt"
  status=${PIPESTATUS[0]}
  set -e
  # an assumption that fails (no usable GPU) aborts or skips tests without failing the run: count those as failure
  count() { sed -n "s/.*\[ *\([0-9][0-9]*\) $1 *\].*/\1/p" "$results/console.txt" | tail -n1; }
  local found ok aborted
  found=$(count "tests found")
  ok=$(count "tests successful")
  aborted=$(count "containers aborted")
  if [ "$status" -eq 0 ] && { [ "${ok:-0}" != "${found:-0}" ] || [ "${found:-0}" = 0 ] || [ "${aborted:-0}" != 0 ]; } \
      && [ "${ALLOW_SKIPS:-0}" != 1 ]; then
    echo "run-gpu-tests: only ${ok:-0} of ${found:-0} tests ran and passed (${aborted:-0} classes aborted): no usable" \
      "GPU? See the reasons above and $results/nvidia-smi.txt; ALLOW_SKIPS=1 accepts this" >&2
    status=3
  fi
  echo "== results in $results (exit $status)"
  return "$status"
}

mode=${1:-}
case "$mode" in
  bundle) bundle "${2:-}" ;;
  run) run "${2:-}" ;;
  all) bundle "${2:-}"; run "$BUNDLE_DIR" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2 ;;
esac
