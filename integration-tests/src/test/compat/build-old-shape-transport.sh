#!/bin/sh
# Rebuilds the jars CompatibilityTest (and japicmp in integration-tests/pom.xml) use, from source:
#   src/test/resources/compat/te-api-0.1.jar              te-api as of commit 68b5e3a, the last before the SPI changed
#   src/test/resources/compat/old-shape-transport.jar     old-shape-transport/ compiled against that jar only
#   src/test/resources/compat/te-api-builders.jar         te-api as of a2dd85c, when the SPI's values got builders
#   src/test/resources/compat/builder-shape-transport.jar builder-shape-transport/ compiled against that jar only
# te-api needs nothing but the JDK, so plain javac builds it; no Maven, no ~/.m2. Run from anywhere:
#   integration-tests/src/test/compat/build-old-shape-transport.sh
set -eu
OLD_API_COMMIT=68b5e3a
BUILDER_API_COMMIT=a2dd85c
HERE=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
ROOT=$(CDPATH= cd -- "$HERE/../../../.." && pwd)
. "$ROOT/scripts/jdk.sh"
OUT=$ROOT/integration-tests/src/test/resources/compat
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# a fixed timestamp makes the jars byte-identical from one rebuild to the next
DATE=2026-01-01T00:00:00Z

git -C "$ROOT" archive "$OLD_API_COMMIT" te-api/src/main/java | tar -x -C "$WORK"
find "$WORK/te-api/src/main/java" -name '*.java' > "$WORK/api-sources"
"$JAVA_HOME/bin/javac" --release 25 -nowarn -d "$WORK/api" @"$WORK/api-sources"
mkdir -p "$OUT"
"$JAVA_HOME/bin/jar" --create --date="$DATE" --file "$OUT/te-api-0.1.jar" -C "$WORK/api" .

find "$HERE/old-shape-transport" -name '*.java' > "$WORK/plugin-sources"
"$JAVA_HOME/bin/javac" --release 25 -Xlint:-options -cp "$OUT/te-api-0.1.jar" -d "$WORK/plugin" @"$WORK/plugin-sources"
cp -R "$HERE/old-shape-transport/META-INF" "$WORK/plugin/"
"$JAVA_HOME/bin/jar" --create --date="$DATE" --file "$OUT/old-shape-transport.jar" -C "$WORK/plugin" .
mkdir -p "$WORK/b"
git -C "$ROOT" archive "$BUILDER_API_COMMIT" te-api/src/main/java | tar -x -C "$WORK/b"
find "$WORK/b/te-api/src/main/java" -name '*.java' > "$WORK/b-api-sources"
"$JAVA_HOME/bin/javac" --release 25 -nowarn -d "$WORK/b-api" @"$WORK/b-api-sources"
"$JAVA_HOME/bin/jar" --create --date="$DATE" --file "$OUT/te-api-builders.jar" -C "$WORK/b-api" .
find "$HERE/builder-shape-transport" -name '*.java' > "$WORK/b-plugin-sources"
"$JAVA_HOME/bin/javac" --release 25 -Xlint:-options -cp "$OUT/te-api-builders.jar" -d "$WORK/b-plugin" @"$WORK/b-plugin-sources"
cp -R "$HERE/builder-shape-transport/META-INF" "$WORK/b-plugin/"
"$JAVA_HOME/bin/jar" --create --date="$DATE" --file "$OUT/builder-shape-transport.jar" -C "$WORK/b-plugin" .
ls -l "$OUT/te-api-0.1.jar" "$OUT/old-shape-transport.jar" "$OUT/te-api-builders.jar" "$OUT/builder-shape-transport.jar"
