# Sourced by tent4j's scripts: exports JAVA_HOME pointing at a JDK >= 25.
# Order: $JAVA_HOME if it is >= 25, then /usr/lib/jvm/*25*, then any newer JDK under /usr/lib/jvm.
tent4j_java_version() { # prints the feature version of the JDK at $1, or nothing
  [ -x "$1/bin/java" ] || return 0
  # the JDK's release file names its version: reading it costs nothing, where asking the JVM starts one (60 ms, on
  # every command); a JDK without the file, or without the line in it, is asked
  tent4j_v=
  [ -f "$1/release" ] && tent4j_v=$(sed -n 's/^JAVA_VERSION="\([0-9][0-9]*\).*/\1/p' "$1/release" | head -n1)
  if [ -n "$tent4j_v" ]; then
    echo "$tent4j_v"
    return 0
  fi
  "$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' | head -n1
}
tent4j_find_jdk() {
  local v cand
  if [ -n "${JAVA_HOME:-}" ]; then
    v=$(tent4j_java_version "$JAVA_HOME")
    if [ -n "$v" ] && [ "$v" -ge 25 ]; then echo "$JAVA_HOME"; return 0; fi
  fi
  for cand in /usr/lib/jvm/*25* /usr/lib/jvm/*; do
    [ -d "$cand" ] || continue
    v=$(tent4j_java_version "$cand")
    if [ -n "$v" ] && [ "$v" -ge 25 ]; then echo "$cand"; return 0; fi
  done
  return 1
}
if ! TENT4J_JDK=$(tent4j_find_jdk); then
  echo "tent4j needs a JDK 25 or newer. Set JAVA_HOME to one, or install one, e.g.:" >&2
  echo "  apt-get install temurin-25-jdk   (Adoptium repository)   or download from https://adoptium.net" >&2
  exit 1
fi
export JAVA_HOME="$TENT4J_JDK"
export PATH="$JAVA_HOME/bin:$PATH"
