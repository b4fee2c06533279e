//go:build !unix

package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// errLocked: another process holds the lock.
var errLocked = errors.New("locked by another process")

// tryLock cannot lock here: a standalone host serves no control socket on
// this system.
func tryLock(*os.File) error {
	return fmt.Errorf("a control socket needs a Unix system: %w", errors.ErrUnsupported)
}

// owner cannot tell a file's owner here.
func owner(fs.FileInfo) (int, bool) { return 0, false }
