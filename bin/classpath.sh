# Sourced by every bin/ command (POSIX sh), after it sets TENT4J_MODULE (cli unless set; samples for bin/te-jmh).
# Selects a JDK >= 25 and sets TENT4J_CP: in an unpacked distribution, every jar in lib/; in a source checkout, that
# module's jar plus its run-time dependencies, which `./mvnw -B -DskipTests package` copies to <module>/target/lib.
# It does not build: a benchmark script that starts a multi-minute Maven build on its own would be a surprise, and a
# stale build would be measured silently.
TENT4J_ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
TENT4J_MODULE=${TENT4J_MODULE:-cli}
. "$TENT4J_ROOT/scripts/jdk.sh"

TENT4J_CP=
if [ -d "$TENT4J_ROOT/lib" ]; then
  # an unpacked distribution (tent4j-<version>.tar.gz): lib/ holds the command line and everything it runs with
  tent4j_lib=$TENT4J_ROOT/lib
else
  # a source checkout: the module's jar, then its run-time dependencies in <module>/target/lib
  tent4j_lib=$TENT4J_ROOT/$TENT4J_MODULE/target/lib
  for tent4j_jar in "$TENT4J_ROOT"/$TENT4J_MODULE/target/*.jar; do
    case "$tent4j_jar" in
      *-sources.jar|*-javadoc.jar|*-tests.jar) continue ;;
    esac
    [ -f "$tent4j_jar" ] && TENT4J_CP=$tent4j_jar
  done
  if [ -z "$TENT4J_CP" ]; then
    echo "$(basename -- "$0"): $TENT4J_MODULE/target has no jar: run ./mvnw -B -DskipTests package first (in $TENT4J_ROOT)" >&2
    exit 1
  fi
fi
if ! ls "$tent4j_lib"/te-api-*.jar >/dev/null 2>&1; then
  echo "$(basename -- "$0"): $tent4j_lib holds no te-api jar." >&2
  echo "run ./mvnw -B -DskipTests package first (in $TENT4J_ROOT)" >&2
  exit 1
fi
for tent4j_jar in "$tent4j_lib"/*.jar; do
  TENT4J_CP=${TENT4J_CP:+$TENT4J_CP:}$tent4j_jar
done
unset tent4j_jar tent4j_lib

# libpsm2 and libinfinipath, which libfabric loads while probing providers (the efa transport's availability check),
# install SIGSEGV handlers on load. HotSpot raises SIGSEGV on purpose (implicit null checks, safepoint polls), so with
# those handlers any JVM thread may die with "terminated with signal 11 ... Backtrace:". These variables switch the
# handlers off; seen here as 2 crashed runs out of 3 without them, none in 3 with them.
export IPATH_NO_BACKTRACE="${IPATH_NO_BACKTRACE:-1}" HFI_NO_BACKTRACE="${HFI_NO_BACKTRACE:-1}"

# G1 (the default) rather than ZGC: the data lives off-heap and the steady state allocates little, so G1 pauses are
# rare and short, while ZGC's concurrent threads would compete with the data path for the 2 cores of a small box.
# --enable-native-access: transports call native code through FFM (no warnings, and ready for a deny default).
# --sun-misc-unsafe-memory-access=allow: silences JDK 25 warnings from libraries (protobuf via jetcd, JMH).
# -Dio.netty.recycler.chunkSize=1024: Netty recycles the entry of each queued outbound buffer; an event loop keeps 32
#   of them at hand by default and pushes the rest through a queue that allocates a new chunk every 32, which is
#   garbage per slice once a lane has more than 16 slices in flight (two buffers each). See docs/PERFORMANCE.md, "Zero garbage".
# -Xmx: TENT4J_HEAP, 1g unless the command set it (bin/tent4j gives the store's commands 2g: the master keeps every
#   object's metadata on the heap).
# -XX:UserThreadWaitAttemptsAtExit=0: at exit the JVM waits up to 300 ms (30 attempts of 10 ms) for threads running
#   native code to return, and once a virtual thread blocked on a socket (the mooncake-tcp transport's) the JDK's
#   poller thread sits in epoll_wait until the end: every engine command ended 0.31 s after its work. The process's
#   exit stops such threads either way; JDK-8314243 added the flag for this.
# -Dio.netty.jfr.enabled=false: Netty 4.2 registers JFR events for its buffer allocator, which starts the JDK's
#   flight recorder classes in every process on its first connection: 65 ms of a cached bench start, 110 ms of an
#   uncached one. A recording of them needs TENT4J_JAVA_OPTS=-Dio.netty.jfr.enabled=true.
# TENT4J_JAVA_OPTS adds to or overrides these, e.g. TENT4J_JAVA_OPTS='-XX:+UseZGC -Xmx4g'.
TENT4J_JAVA_FLAGS="--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Dio.netty.recycler.chunkSize=1024 -Dio.netty.jfr.enabled=false -XX:UserThreadWaitAttemptsAtExit=0 -Xms256m -Xmx${TENT4J_HEAP:-1g}"

# The JDK's ahead-of-time cache (JEPs 483, 514, 515): classes loaded and linked, and method profiles, from a training
# run, so a command starts warm. A distribution built by `./mvnw verify` ships lib/tent4j.aot, trained on every
# command, and lib/tent4j-<command>.aot for a command with a cache of its own (`tent4j aot-train --only`), which that
# command starts with (scripts/aot-cache.sh); the JVM uses a cache when it fits this JVM and these flags and starts
# without it otherwise. TENT4J_AOT=off leaves it out; TENT4J_AOT_TRAIN=FILE makes this run the training run that
# writes FILE. Its messages go to stderr: stdout carries the lines scripts wait on.
tent4j_aot=$TENT4J_ROOT/lib/tent4j-${1:-}.aot
[ -n "${1:-}" ] && [ -f "$tent4j_aot" ] || tent4j_aot=$TENT4J_ROOT/lib/tent4j.aot
if [ -n "${TENT4J_AOT_TRAIN:-}" ]; then
  TENT4J_JAVA_FLAGS="$TENT4J_JAVA_FLAGS -XX:AOTCacheOutput=$TENT4J_AOT_TRAIN -Xlog:aot=warning:stderr -Xlog:aot=off:stdout"
elif [ -f "$tent4j_aot" ] && [ "${TENT4J_AOT:-on}" != off ]; then
  TENT4J_JAVA_FLAGS="$TENT4J_JAVA_FLAGS -XX:AOTCache=$tent4j_aot -Xlog:aot=warning:stderr -Xlog:aot=off:stdout"
fi
unset tent4j_aot
