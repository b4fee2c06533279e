#!/usr/bin/env bash
# db.sh: throw-away PostgreSQL and MariaDB servers for tests and demos (Debian packages).
#
#   db.sh install pg|mariadb         install the Debian package if missing
#   db.sh start pg|mariadb DIR       a server on a free port, data in DIR; prints a Go DSN
#                                    (restarting an existing DIR reuses its port and data)
#   db.sh stop DIR                   stop DIR's server (SIGTERM, then SIGKILL)
#   db.sh kill DIR                   SIGKILL DIR's server (a crash)
#   db.sh dsn DIR                    print DIR's DSN
#
# PostgreSQL: Debian's postgresql (15 on bookworm) refuses to run as root, so initdb and the
# server run as the postgres user (runuser) on DIR/data, owned by postgres; user postgres,
# trust authentication, database ejob. MariaDB: mariadb-install-db into DIR/data, mariadbd
# --no-defaults as the invoking user; user root without password, database ejob. Both listen
# on 127.0.0.1 only, sockets and logs in DIR. DB_WAIT_SECONDS (default 60) bounds the wait
# for readiness.
set -euo pipefail

WAIT_SECONDS=${DB_WAIT_SECONDS:-60}

die() { echo "db.sh: $*" >&2; exit 1; }

APT_WHO=db.sh
# shellcheck source=apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
# shellcheck source=ports.sh
. "$(dirname "${BASH_SOURCE[0]}")/ports.sh"
# shellcheck source=owner.sh
. "$(dirname "${BASH_SOURCE[0]}")/owner.sh"

pg_bin() { # the newest installed PostgreSQL's bin directory
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -n "$d" ] && echo "$d"
}

install_pg() {
	if [ -z "$(pg_bin)" ]; then
		apt_install postgresql /usr/share/postgresql-common || exit 1
	fi
	[ -n "$(pg_bin)" ] || die "postgresql installed but no /usr/lib/postgresql/*/bin"
}

install_mariadb() { apt_install mariadb-server /usr/sbin/mariadbd || exit 1; }

# as_pg CMD...: run as the postgres user (PostgreSQL refuses root).
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

wait_port() { # wait_port PORT PIDFILE LOG
	local deadline=$((SECONDS + WAIT_SECONDS))
	while [ $SECONDS -lt $deadline ]; do
		if [ -s "$2" ] && ! kill -0 "$(cat "$2")" 2>/dev/null; then
			echo "db.sh: server exited; last log lines:" >&2
			tail -n 30 "$3" >&2 || true
			return 2
		fi
		if ! port_free "$1"; then return 0; fi
		sleep 0.1
	done
	echo "db.sh: server not ready on port $1 after ${WAIT_SECONDS}s; last log lines:" >&2
	tail -n 30 "$3" >&2 || true
	return 1
}

start_pg() {
	local dir=$1 bin port
	install_pg
	bin=$(pg_bin)
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; chmod 0755 "$dir"; fi
	if [ ! -s "$dir/data/PG_VERSION" ]; then
		as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 ||
			{ cat "$dir/initdb.log" >&2; die "initdb failed"; }
	fi
	port=$(cat "$dir/port" 2>/dev/null || pick_port)
	echo "$port" >"$dir/port"
	echo pg >"$dir/kind"
	as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/pg.log" -w -t "$WAIT_SECONDS" \
		-o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
		start >/dev/null || { tail -n 30 "$dir/pg.log" >&2; die "pg_ctl start failed"; }
	head -n 1 "$dir/data/postmaster.pid" >"$dir/pid"
	watch_owner "$(cat "$dir/pid")"
	as_pg "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -tAc \
		"SELECT 1 FROM pg_database WHERE datname = 'ejob'" | grep -q 1 ||
		as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres ejob
	dsn "$dir"
}

start_mariadb() {
	local dir=$1 port
	install_mariadb
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	if [ ! -d "$dir/data/mysql" ]; then
		mariadb-install-db --no-defaults --datadir="$dir/data" --user="$(id -un)" \
			--auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 ||
			{ cat "$dir/install.log" >&2; die "mariadb-install-db failed"; }
	fi
	port=$(cat "$dir/port" 2>/dev/null || pick_port)
	echo "$port" >"$dir/port"
	echo mariadb >"$dir/kind"
	rm -f "$dir/pid"
	nohup mariadbd --no-defaults --datadir="$dir/data" --user="$(id -un)" --bind-address=127.0.0.1 \
		--port="$port" --socket="$dir/mysql.sock" --pid-file="$dir/pid" --log-error="$dir/mariadb.log" \
		--skip-name-resolve --innodb-flush-log-at-trx-commit=0 --innodb-buffer-pool-size=64M \
		--skip-log-bin >/dev/null 2>&1 &
	echo $! >"$dir/pid"
	watch_owner $!
	wait_port "$port" "$dir/pid" "$dir/mariadb.log" || die "mariadbd did not start"
	local deadline=$((SECONDS + WAIT_SECONDS))
	until mariadb --no-defaults -uroot -h127.0.0.1 -P"$port" -e "CREATE DATABASE IF NOT EXISTS ejob" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || die "mariadbd does not accept connections on port $port"
		sleep 0.1
	done
	dsn "$dir"
}

dsn() {
	local dir=$1
	[ -f "$dir/kind" ] || die "$dir runs no server"
	case $(cat "$dir/kind") in
	pg) echo "postgres://postgres@127.0.0.1:$(cat "$dir/port")/ejob?sslmode=disable" ;;
	mariadb) echo "root@tcp(127.0.0.1:$(cat "$dir/port"))/ejob" ;;
	esac
}

stop() { # stop DIR SIGNAL
	local dir=$1 sig=$2 pid
	[ -f "$dir/pid" ] || return 0
	pid=$(cat "$dir/pid")
	kill -0 "$pid" 2>/dev/null || return 0
	kill "-$sig" "$pid" 2>/dev/null || true
	local deadline=$((SECONDS + 20))
	while kill -0 "$pid" 2>/dev/null; do
		if [ $SECONDS -ge $deadline ]; then kill -KILL "$pid" 2>/dev/null || true; fi
		sleep 0.05
	done
	# A killed PostgreSQL leaves children (backends) that exit on their own
	# when the postmaster is gone; wait until the port is free.
	deadline=$((SECONDS + 20))
	while ! port_free "$(cat "$dir/port")" && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
}

cmd=${1:-}
case $cmd in
install)
	case ${2:-} in
	pg) install_pg ;; mariadb) install_mariadb ;; *) die "usage: db.sh install pg|mariadb" ;;
	esac ;;
start)
	[ $# -eq 3 ] || die "usage: db.sh start pg|mariadb DIR"
	case $2 in
	pg) start_pg "$3" ;; mariadb) start_mariadb "$3" ;; *) die "unknown server $2 (pg or mariadb)" ;;
	esac ;;
stop)
	[ $# -eq 2 ] || die "usage: db.sh stop DIR"
	# PostgreSQL's SIGTERM waits for clients to leave; SIGINT is its fast shutdown.
	if [ "$(cat "$2/kind" 2>/dev/null)" = pg ]; then stop "$2" INT; else stop "$2" TERM; fi ;;
kill) [ $# -eq 2 ] || die "usage: db.sh kill DIR"; stop "$2" KILL ;;
dsn) [ $# -eq 2 ] || die "usage: db.sh dsn DIR"; dsn "$2" ;;
*) die "usage: db.sh install|start|stop|kill|dsn ..." ;;
esac
