#!/usr/bin/env bash
# zk.sh: a throw-away ZooKeeper for tests and demos (Debian's zookeeper 3.8).
#
#   zk.sh install                    install Debian's zookeeper package if missing
#   zk.sh start DIR [--tick MS] [SASL]  standalone server on a free port; prints 127.0.0.1:PORT
#                                    (restarting an existing DIR reuses its port, data and SASL)
#   zk.sh ensemble DIR [--tick MS]   3-node ensemble on free ports; prints the connect string
#   zk.sh stop DIR                   stop what DIR runs (standalone or ensemble), SIGTERM then SIGKILL
#   zk.sh kill DIR                   SIGKILL what DIR runs (a crash)
#   zk.sh addr DIR                   print DIR's connect string
#   zk.sh curator-classpath          install Debian's Curator 5 (libcurator-recipes-java) if
#                                    missing; print a classpath with Curator and ZooKeeper
#
# SASL options of start (a fresh DIR only):
#   --jaas FILE        the server's JAAS file (a Server section: DigestLoginModule user_NAME="PW"
#                      entries, or a Krb5LoginModule with the server's keytab); turns on
#                      authProvider.1=...SASLAuthenticationProvider
#   --require-sasl     sessionRequireClientSASLAuth=true: clients without SASL are refused
#   --krb5-conf FILE   the Kerberos configuration (-Djava.security.krb5.conf), for GSSAPI
#
# Servers listen on 127.0.0.1 only, with 4lw.commands.whitelist=*, the admin server off,
# and containers checked every 500 ms (znode.container.checkIntervalMs) so tests see
# empty container nodes reaped quickly. Everything lives in DIR (config, data, logs, pids).
# Environment: ZK_WAIT_SECONDS (default 60) bounds the wait for readiness; ZK_LOG_LEVEL
# (default warn) is the server log level in DIR/zk.log.
set -euo pipefail

ZK_JAR=/usr/share/java/zookeeper.jar
SLF4J_JAR=/usr/share/java/slf4j-simple.jar
WAIT_SECONDS=${ZK_WAIT_SECONDS:-60}

die() { echo "zk.sh: $*" >&2; exit 1; }

APT_WHO=zk.sh
# shellcheck source=apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
# shellcheck source=ports.sh
. "$(dirname "${BASH_SOURCE[0]}")/ports.sh"
# shellcheck source=owner.sh
. "$(dirname "${BASH_SOURCE[0]}")/owner.sh"

install_zk() {
	apt_install zookeeper "$ZK_JAR" || exit 1
	command -v java >/dev/null || die "java is not on PATH"
}

# four_letter PORT CMD: send a four-letter word, print the reply.
four_letter() {
	local reply
	reply=$( (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf '%s' "$2" >&3 && timeout 2 cat <&3) 2>/dev/null) || true
	printf '%s' "$reply"
}

# wait_ready PORT PIDFILE LOG [MODE_RE]: until ruok->imok and srvr shows a serving mode
# (ruok answers imok before the server accepts sessions).
wait_ready() {
	local port=$1 pidf=$2 log=$3 want=${4:-standalone|leader|follower}
	local deadline=$((SECONDS + WAIT_SECONDS))
	while [ $SECONDS -lt $deadline ]; do
		if ! kill -0 "$(cat "$pidf")" 2>/dev/null; then
			echo "zk.sh: server on port $port exited; last log lines:" >&2
			tail -n 30 "$log" >&2 || true
			return 2
		fi
		if [ "$(four_letter "$port" ruok)" = imok ]; then
			if four_letter "$port" srvr | grep -Eq "Mode: ($want)"; then
				return 0
			fi
		fi
		sleep 0.1
	done
	echo "zk.sh: server on port $port not ready after ${WAIT_SECONDS}s; last log lines:" >&2
	tail -n 30 "$log" >&2 || true
	return 1
}

# launch NODEDIR MAINCLASS: start java in the background, pid to NODEDIR/pid.
launch() {
	local nd=$1 main=$2
	# setsid: the server survives the caller's process group (go test kills its own).
	local -a extra=()
	if [ -f "$nd/jvm.flags" ]; then mapfile -t extra <"$nd/jvm.flags"; fi
	# NODEDIR/jvm.flags come last: they override the defaults before them
	# (a benchmark's heap and container check interval, SASL settings).
	setsid java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto \
		-Dzookeeper.admin.enableServer=false \
		-Dznode.container.checkIntervalMs=500 \
		-Dzookeeper.jmx.log4j.disable=true \
		-Dorg.slf4j.simpleLogger.defaultLogLevel=${ZK_LOG_LEVEL:-warn} \
		"${extra[@]}" \
		-cp "$ZK_JAR:$SLF4J_JAR" "$main" "$nd/zoo.cfg" \
		>"$nd/zk.log" 2>&1 </dev/null &
	echo $! >"$nd/pid"
	watch_owner $!
}

write_cfg() { # write_cfg NODEDIR PORT TICK [SERVERLINES]
	local nd=$1 port=$2 tick=$3 servers=${4:-}
	mkdir -p "$nd/data"
	{
		echo "tickTime=$tick"
		echo "initLimit=20"
		echo "syncLimit=10"
		echo "dataDir=$nd/data"
		echo "clientPort=$port"
		echo "clientPortAddress=127.0.0.1"
		echo "maxClientCnxns=0"
		echo "4lw.commands.whitelist=*"
		echo "admin.enableServer=false"
		echo "autopurge.purgeInterval=0"
		echo "snapCount=100000"
		echo "preAllocSize=4096"
		if [ -n "$servers" ]; then printf '%s\n' "$servers"; fi
	} >"$nd/zoo.cfg"
}

cfg_port() { sed -n 's/^clientPort=//p' "$1/zoo.cfg"; }

node_dirs() { # standalone: DIR; ensemble: DIR/node1..3
	local d=$1
	if [ -f "$d/zoo.cfg" ]; then echo "$d"; fi
	for n in 1 2 3; do [ -f "$d/node$n/zoo.cfg" ] && echo "$d/node$n"; done
	return 0
}

addr_of() {
	local d=$1 out="" nd
	for nd in $(node_dirs "$d"); do out="$out${out:+,}127.0.0.1:$(cfg_port "$nd")"; done
	[ -n "$out" ] || die "$d holds no ZooKeeper configuration"
	echo "$out"
}

# parse_opts ARGS...: sets TICK, TICK_SET, JAAS, REQUIRE_SASL, KRB5_CONF.
parse_opts() {
	TICK=2000 TICK_SET=0 JAAS="" REQUIRE_SASL=0 KRB5_CONF=""
	while [ $# -gt 0 ]; do
		case $1 in
			--tick) TICK=${2:?--tick needs a value}; TICK_SET=1; shift 2 ;;
			--tick=*) TICK=${1#--tick=}; TICK_SET=1; shift ;;
			--jaas) JAAS=${2:?--jaas needs a file}; shift 2 ;;
			--require-sasl) REQUIRE_SASL=1; shift ;;
			--krb5-conf) KRB5_CONF=${2:?--krb5-conf needs a file}; shift 2 ;;
			*) die "unknown argument $1" ;;
		esac
	done
	[[ $TICK =~ ^[0-9]+$ ]] || die "--tick must be milliseconds"
	[ -z "$JAAS" ] || [ -f "$JAAS" ] || die "--jaas: no file $JAAS"
	[ -z "$KRB5_CONF" ] || [ -f "$KRB5_CONF" ] || die "--krb5-conf: no file $KRB5_CONF"
	if [ "$REQUIRE_SASL" = 1 ] && [ -z "$JAAS" ]; then die "--require-sasl needs --jaas"; fi
	return 0
}

# write_sasl NODEDIR: the SASL settings of parse_opts, into zoo.cfg and jvm.flags.
write_sasl() {
	local nd=$1
	rm -f "$nd/jvm.flags"
	[ -n "$JAAS" ] || return 0
	cp "$JAAS" "$nd/jaas.conf"
	echo "-Djava.security.auth.login.config=$nd/jaas.conf" >>"$nd/jvm.flags"
	if [ -n "$KRB5_CONF" ]; then
		cp "$KRB5_CONF" "$nd/krb5.conf"
		echo "-Djava.security.krb5.conf=$nd/krb5.conf" >>"$nd/jvm.flags"
	fi
	echo "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider" >>"$nd/zoo.cfg"
	if [ "$REQUIRE_SASL" = 1 ]; then echo "sessionRequireClientSASLAuth=true" >>"$nd/zoo.cfg"; fi
}

running() { [ -f "$1/pid" ] && kill -0 "$(cat "$1/pid")" 2>/dev/null; }

cmd_start() {
	local d=${1:?usage: zk.sh start DIR [--tick MS] [--jaas FILE [--require-sasl] [--krb5-conf FILE]]}; shift
	parse_opts "$@"
	local tick=$TICK
	install_zk
	mkdir -p "$d"; d=$(cd "$d" && pwd)
	if running "$d"; then addr_of "$d"; return 0; fi
	local attempt port fresh=1
	[ -f "$d/zoo.cfg" ] && fresh=0 # a restart keeps its port and data
	for attempt in 1 2 3 4 5; do
		if [ -f "$d/zoo.cfg" ]; then
			port=$(cfg_port "$d")  # restart: same port, data and SASL
			if [ "$TICK_SET" = 1 ]; then sed -i "s/^tickTime=.*/tickTime=$tick/" "$d/zoo.cfg"; fi
		else
			port=$(pick_port)
			write_cfg "$d" "$port" "$tick"
			write_sasl "$d"
		fi
		launch "$d" org.apache.zookeeper.server.ZooKeeperServerMain
		if wait_ready "$port" "$d/pid" "$d/zk.log"; then
			echo "127.0.0.1:$port"
			return 0
		fi
		kill -9 "$(cat "$d/pid")" 2>/dev/null || true
		# A fresh directory whose port was taken between the pick and the
		# bind (the server may have created its data directory already):
		# start over on another port.
		if grep -q 'Address already in use' "$d/zk.log" 2>/dev/null && [ "$fresh" = 1 ]; then
			rm -rf "$d/zoo.cfg" "$d/data" "$d/jvm.flags"
			continue
		fi
		if grep -q 'Address already in use' "$d/zk.log" 2>/dev/null; then
			sleep 0.5 # the old server's socket may linger a moment
			continue
		fi
		die "ZooKeeper did not start in $d"
	done
	die "ZooKeeper did not start in $d (ports busy)"
}

cmd_ensemble() {
	local d=${1:?usage: zk.sh ensemble DIR [--tick MS]}; shift
	parse_opts "$@"
	[ -z "$JAAS" ] || die "ensemble: SASL options are for standalone servers"
	local tick=$TICK
	install_zk
	mkdir -p "$d"; d=$(cd "$d" && pwd)
	local n servers nd attempt ok fresh=1
	[ -f "$d/node1/zoo.cfg" ] && fresh=0 # a restart keeps its ports and data
	for attempt in 1 2 3; do
		if [ ! -f "$d/node1/zoo.cfg" ]; then
			local -a cp qp ep
			servers=""
			for n in 1 2 3; do cp[$n]=$(pick_port); qp[$n]=$(pick_port); ep[$n]=$(pick_port); done
			for n in 1 2 3; do servers="${servers}server.$n=127.0.0.1:${qp[$n]}:${ep[$n]}"$'\n'; done
			for n in 1 2 3; do
				write_cfg "$d/node$n" "${cp[$n]}" "$tick" "$servers"
				echo "$n" >"$d/node$n/data/myid"
			done
		fi
		for n in 1 2 3; do
			nd="$d/node$n"
			running "$nd" || launch "$nd" org.apache.zookeeper.server.quorum.QuorumPeerMain
		done
		ok=1
		for n in 1 2 3; do
			nd="$d/node$n"
			wait_ready "$(cfg_port "$nd")" "$nd/pid" "$nd/zk.log" 'leader|follower' || { ok=0; break; }
		done
		if [ "$ok" = 1 ]; then
			addr_of "$d"
			return 0
		fi
		cmd_stop "$d" >/dev/null 2>&1 || true
		# A port picked free was taken before the server bound it (another
		# test's server): a fresh ensemble tries again on new ports.
		if [ "$fresh" = 1 ] && grep -q 'Address already in use' "$d"/node*/zk.log 2>/dev/null; then
			rm -rf "$d"/node1 "$d"/node2 "$d"/node3
			continue
		fi
		die "ensemble node $n did not start"
	done
	die "ensemble did not start in $d (ports busy)"
}

signal_all() { # signal_all DIR SIGNAL
	local d=$1 sig=$2 nd
	for nd in $(node_dirs "$d"); do
		if running "$nd"; then kill "-$sig" "$(cat "$nd/pid")" 2>/dev/null || true; fi
	done
}

cmd_stop() {
	local d=${1:?usage: zk.sh stop DIR}
	[ -d "$d" ] || return 0
	signal_all "$d" TERM
	local deadline=$((SECONDS + 10)) nd alive
	while [ $SECONDS -lt $deadline ]; do
		alive=0
		for nd in $(node_dirs "$d"); do running "$nd" && alive=1; done
		[ $alive -eq 0 ] && break
		sleep 0.1
	done
	signal_all "$d" KILL
	for nd in $(node_dirs "$d"); do
		while running "$nd"; do sleep 0.05; done
		rm -f "$nd/pid"
	done
}

cmd_kill() {
	local d=${1:?usage: zk.sh kill DIR} nd
	signal_all "$d" KILL
	for nd in $(node_dirs "$d"); do
		while running "$nd"; do sleep 0.05; done
		rm -f "$nd/pid"
	done
}

cmd_curator_classpath() {
	install_zk
	apt_install libcurator-recipes-java /usr/share/java/curator-recipes.jar || exit 1
	local cp="" j
	for j in curator-recipes curator-framework curator-client guava failureaccess zookeeper zookeeper-jute slf4j-api slf4j-simple netty-handler netty-transport netty-common netty-buffer netty-resolver netty-codec netty-transport-native-epoll netty-transport-native-unix-common metrics-core snappy-java commons-io commons-cli jline; do
		[ -f "/usr/share/java/$j.jar" ] && cp="$cp${cp:+:}/usr/share/java/$j.jar"
	done
	echo "$cp"
}

case ${1:-} in
	install) install_zk ;;
	start) shift; cmd_start "$@" ;;
	ensemble) shift; cmd_ensemble "$@" ;;
	stop) shift; cmd_stop "$@" ;;
	kill) shift; cmd_kill "$@" ;;
	addr) shift; addr_of "${1:?usage: zk.sh addr DIR}" ;;
	curator-classpath) cmd_curator_classpath ;;
	*) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
