//go:build !unix

package daemon_test

import "syscall"

func hostProcAttr() *syscall.SysProcAttr { return nil }
