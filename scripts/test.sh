#!/usr/bin/env bash
# The whole test suite: installs what the tests need, then builds and runs every module's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
. scripts/jdk.sh
# One module per core at a time (-T 1C): most of the suite's time is tests waiting on other processes (servers,
# child JVMs, timeouts), so modules that do not depend on each other share the cores. `scripts/test.sh -T 1` runs
# them one after another.
# -Pimage adds the container image module (image/: Jib to a tar, checked and run by ImageTest).
exec ./mvnw -B -ntp -T 1C -Pimage verify "$@"
