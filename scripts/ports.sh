# ports.sh: sourced by the scripts that start servers on free ports (zk.sh,
# db.sh, kdc.sh). The caller defines die.

# port_free PORT: nothing accepts connections on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_port: a random port in 20000-31999 nobody listens on: below Linux's
# ephemeral range (32768-60999), so an outgoing connection of another test
# cannot take it between this check and the server's bind (seen: PostgreSQL
# failing with "Address already in use" while ZooKeeper tests ran).
pick_port() {
	local p i
	for i in $(seq 1 200); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		if port_free "$p"; then echo "$p"; return 0; fi
	done
	die "no free port found"
}
