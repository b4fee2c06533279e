// Package control is a standalone host's control socket: the Unix socket
// on which a host without a regCenter serves its operations to the
// operator commands run on the same machine by the same user, so that
// `ejob jobs|trigger|... -c FILE` steer the host running on FILE.
//
// The path comes from the config file: its ejob.controlSocket, else a
// name derived from the file's absolute path in a directory of the user's
// own ($XDG_RUNTIME_DIR/ejob, or $TMPDIR/ejob-UID), so that the host and
// the commands find the same socket from the same file without a setting
// (the commands look in each default directory, for a host started with
// another environment), and the path stays short (a Unix socket path is
// limited to 107 bytes).
// Only the user the host runs as gets in: the socket is created mode 0600
// in a directory that no other user may write (checked), and every
// connection's peer user id (SO_PEERCRED, on Linux) must be the host's.
// A lock file next to the socket, held (flock) while the host runs, tells
// a second host on the same file that the first is running, and tells a
// host that finds a socket left by a crashed one that it is stale.
package control
