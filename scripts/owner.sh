# owner.sh: sourced by the scripts that start servers (zk.sh, db.sh, kdc.sh).
#
# Servers are started with setsid so that they survive the caller's process
# group, which also lets them outlive a test binary that is killed (go test's
# timeout, SIGKILL): orphaned ZooKeepers piled up that way. When
# EJOB_OWNER_PID is set (internal/testkit sets it to the test process), each
# server gets a watchdog that stops it once that process is gone.

# watch_owner SERVERPID: stop SERVERPID (TERM, then KILL after 5 s) when the
# process EJOB_OWNER_PID ends; the watchdog ends with the server. No-op
# without EJOB_OWNER_PID.
watch_owner() {
	local server=$1
	[ -n "${EJOB_OWNER_PID:-}" ] || return 0
	setsid bash -c '
		owner=$1 server=$2
		while kill -0 "$server" 2>/dev/null; do
			if ! kill -0 "$owner" 2>/dev/null; then
				kill -TERM "$server" 2>/dev/null
				for _ in $(seq 1 50); do kill -0 "$server" 2>/dev/null || exit 0; sleep 0.1; done
				kill -KILL "$server" 2>/dev/null
				exit 0
			fi
			sleep 1
		done' ejob-owner-watch "$EJOB_OWNER_PID" "$server" >/dev/null 2>&1 </dev/null &
}
