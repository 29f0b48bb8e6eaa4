# Sourced by bin/store-master, bin/store-node and bin/store-bench (POSIX sh): a JDK >= 25, and TENT4J_CP set to the
# store jar plus its run-time dependencies, which `./mvnw -B -DskipTests package` copies to store/target/lib.
TENT4J_ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
. "$TENT4J_ROOT/scripts/jdk.sh"

TENT4J_CP=
for tent4j_jar in "$TENT4J_ROOT"/store/target/store-*.jar; do
  case "$tent4j_jar" in
    *-sources.jar|*-javadoc.jar|*-tests.jar) continue ;;
  esac
  [ -f "$tent4j_jar" ] && TENT4J_CP=$tent4j_jar
done
if [ -z "$TENT4J_CP" ] || ! ls "$TENT4J_ROOT"/store/target/lib/te-api-*.jar >/dev/null 2>&1; then
  echo "$(basename -- "$0"): store/target has no store jar or no lib/ folder." >&2
  echo "run ./mvnw -B -DskipTests package first (in $TENT4J_ROOT)" >&2
  exit 1
fi
for tent4j_jar in "$TENT4J_ROOT"/store/target/lib/*.jar; do
  TENT4J_CP=$TENT4J_CP:$tent4j_jar
done
unset tent4j_jar
# the same flags as bin/samples-classpath.sh (see there for why each)
TENT4J_JAVA_FLAGS="--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Dio.netty.recycler.chunkSize=1024 -Xms256m -Xmx2g"
