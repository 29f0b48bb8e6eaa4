#!/usr/bin/env bash
# The whole test suite: installs what the tests need, then builds and runs every module's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
. scripts/jdk.sh
exec ./mvnw -B -ntp verify "$@"
