#!/usr/bin/env bash
# Regenerates core/cron/testdata/quartz_golden.txt by running the hand-written
# cases (cases.txt) and a fixed-seed random sample through the real Quartz.
#
# Needs Java 17 (java, javac) and Debian's Quartz 2.3.2 jar:
#   apt-get install -y libquartz2-java      # /usr/share/java/quartz2.jar
# or EJOB_QUARTZ_JAR=/path/to/quartz-2.3.2.jar.
#
# Run from anywhere, or `go generate ./core/cron`. Takes about a minute.
# Note: Quartz's search horizon (CronExpression.MAX_YEAR) is the current year
# + 100; the golden file records it and the tests use the recorded value.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec go test -count=1 -run '^TestQuartzGolden$' . -args -update
