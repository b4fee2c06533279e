package control

import (
	"fmt"
	"net"
	"syscall"
)

// peer returns the user and process ids of c's peer (SO_PEERCRED); ok is
// false where the system cannot tell.
func peer(c net.Conn) (uid, pid int, ok bool, err error) {
	uc, isUnix := c.(*net.UnixConn)
	if !isUnix {
		return 0, 0, false, fmt.Errorf("not a Unix socket connection: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, 0, false, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, 0, false, err
	}
	if credErr != nil {
		return 0, 0, false, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	return int(cred.Uid), int(cred.Pid), true, nil
}
