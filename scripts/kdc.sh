#!/usr/bin/env bash
# kdc.sh: a throw-away MIT Kerberos KDC for tests and demos (Debian's krb5-kdc 1.20).
#
#   kdc.sh install                           install krb5-kdc, krb5-admin-server (kadmin.local)
#                                            and krb5-user (kinit) if missing
#   kdc.sh start DIR [--realm REALM]         a KDC for REALM (default EJOB.TEST) on a free port of
#                                            127.0.0.1 (UDP and TCP); prints DIR/krb5.conf, the
#                                            client configuration (restarting DIR reuses its port
#                                            and database)
#   kdc.sh addprinc DIR PRINCIPAL KEYTAB     a principal with a random key, exported to KEYTAB
#   kdc.sh kinit DIR PRINCIPAL KEYTAB CACHE  a credential cache for PRINCIPAL, from its keytab
#   kdc.sh stop DIR                          stop DIR's KDC
#
# Exit status 3: the packages cannot be installed here. Everything lives in DIR: kdc.conf, krb5.conf, the database, the stash, kdc.log, pid.
# PRINCIPAL without @REALM is in DIR's realm. Environment: KDC_WAIT_SECONDS (default 30)
# bounds the wait for the KDC to listen.
set -euo pipefail

WAIT_SECONDS=${KDC_WAIT_SECONDS:-30}

die() { echo "kdc.sh: $*" >&2; exit 1; }

APT_WHO=kdc.sh
# shellcheck source=apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
# shellcheck source=owner.sh
. "$(dirname "${BASH_SOURCE[0]}")/owner.sh"
# shellcheck source=ports.sh
. "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

# The packages ask for a default realm and try to start their services: neither
# matters here (no init system; our KDC runs from DIR). Exit status 3: cannot install.
install_kdc() {
	apt_install krb5-kdc /usr/sbin/krb5kdc || exit 3
	apt_install krb5-admin-server /usr/sbin/kadmin.local || exit 3
	apt_install krb5-user /usr/bin/kinit || exit 3
}

running() { [ -f "$1/pid" ] && kill -0 "$(cat "$1/pid")" 2>/dev/null; }

realm_of() { sed -n 's/^ *default_realm = //p' "$1/krb5.conf"; }

# env_for DIR: the variables MIT's tools read, pointing at DIR.
kenv() {
	local d=$1
	export KRB5_CONFIG="$d/krb5.conf" KRB5_KDC_PROFILE="$d/kdc.conf"
}

write_conf() { # write_conf DIR REALM PORT
	local d=$1 realm=$2 port=$3
	cat >"$d/kdc.conf" <<EOF
[kdcdefaults]
  kdc_ports = $port
  kdc_tcp_ports = $port
  kdc_listen = 127.0.0.1:$port
  kdc_tcp_listen = 127.0.0.1:$port

[realms]
  $realm = {
    database_name = $d/principal
    key_stash_file = $d/stash
    acl_file = $d/kadm5.acl
    max_life = 10h 0m 0s
    max_renewable_life = 7d 0h 0m 0s
    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
  }

[logging]
  kdc = FILE:$d/kdc.log
EOF
	cat >"$d/krb5.conf" <<EOF
[libdefaults]
  default_realm = $realm
  dns_lookup_kdc = false
  dns_lookup_realm = false
  rdns = false
  udp_preference_limit = 1
  default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
  default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
  permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96

[realms]
  $realm = {
    kdc = 127.0.0.1:$port
  }

[domain_realm]
  localhost = $realm
  127.0.0.1 = $realm
EOF
	: >"$d/kadm5.acl"
}

cmd_start() {
	local d=${1:?usage: kdc.sh start DIR [--realm REALM]}; shift
	local realm=EJOB.TEST
	while [ $# -gt 0 ]; do
		case $1 in
			--realm) realm=${2:?--realm needs a value}; shift 2 ;;
			*) die "unknown argument $1" ;;
		esac
	done
	install_kdc
	mkdir -p "$d"; d=$(cd "$d" && pwd)
	if running "$d"; then echo "$d/krb5.conf"; return 0; fi
	local port
	if [ -f "$d/kdc.conf" ]; then
		port=$(sed -n 's/^ *kdc_ports = //p' "$d/kdc.conf")
		realm=$(realm_of "$d")
	else
		port=$(pick_port)
		write_conf "$d" "$realm" "$port"
	fi
	kenv "$d"
	if [ ! -f "$d/principal" ]; then
		kdb5_util create -s -r "$realm" -P "kdc-master-$RANDOM$RANDOM" >"$d/kdb5_util.log" 2>&1 ||
			{ cat "$d/kdb5_util.log" >&2; die "kdb5_util create failed"; }
	fi
	# -n: stay in the foreground, so the pid is ours; setsid: survive the caller's group.
	setsid krb5kdc -n -r "$realm" >>"$d/kdc.out" 2>&1 </dev/null &
	echo $! >"$d/pid"
	watch_owner $!
	local deadline=$((SECONDS + WAIT_SECONDS))
	while [ $SECONDS -lt $deadline ]; do
		if ! running "$d"; then
			tail -n 20 "$d/kdc.out" "$d/kdc.log" >&2 2>/dev/null || true
			die "krb5kdc exited"
		fi
		if ! port_free "$port"; then echo "$d/krb5.conf"; return 0; fi
		sleep 0.1
	done
	die "krb5kdc not listening on 127.0.0.1:$port after ${WAIT_SECONDS}s"
}

cmd_addprinc() {
	local d=${1:?usage: kdc.sh addprinc DIR PRINCIPAL KEYTAB} p=${2:?principal} kt=${3:?keytab}
	d=$(cd "$d" && pwd)
	kenv "$d"
	local realm; realm=$(realm_of "$d")
	case $p in *@*) ;; *) p="$p@$realm" ;; esac
	kadmin.local -r "$realm" -q "addprinc -randkey $p" >>"$d/kadmin.log" 2>&1 || die "addprinc $p failed (see $d/kadmin.log)"
	kadmin.local -r "$realm" -q "ktadd -k $kt $p" >>"$d/kadmin.log" 2>&1 || die "ktadd $p failed (see $d/kadmin.log)"
	[ -s "$kt" ] || die "no keytab written for $p (see $d/kadmin.log)"
}

cmd_kinit() {
	local d=${1:?usage: kdc.sh kinit DIR PRINCIPAL KEYTAB CACHE} p=${2:?principal} kt=${3:?keytab} cc=${4:?cache}
	d=$(cd "$d" && pwd)
	kenv "$d"
	case $p in *@*) ;; *) p="$p@$(realm_of "$d")" ;; esac
	kinit -k -t "$kt" -c "FILE:$cc" "$p" >&2 || die "kinit $p failed"
}

cmd_stop() {
	local d=${1:?usage: kdc.sh stop DIR}
	[ -f "$d/pid" ] || return 0
	if running "$d"; then
		kill "$(cat "$d/pid")" 2>/dev/null || true
		local deadline=$((SECONDS + 10))
		while running "$d" && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
		if running "$d"; then kill -9 "$(cat "$d/pid")" 2>/dev/null || true; fi
	fi
	rm -f "$d/pid"
}

case ${1:-} in
	install) install_kdc ;;
	start) shift; cmd_start "$@" ;;
	addprinc) shift; cmd_addprinc "$@" ;;
	kinit) shift; cmd_kinit "$@" ;;
	stop) shift; cmd_stop "$@" ;;
	*) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
