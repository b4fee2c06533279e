package pluginhost

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Trust: the host runs whatever the plugins directory holds, so the
// directory, the lock file and every binary must be writable only by this
// user or root, as OpenSSH's StrictModes demands of ~/.ssh. Each refusal
// says how to fix it.

// checkTrusted refuses a file or directory that a user other than root
// and this process's user could change: group- or world-writable, or owned
// by another non-root user. what names it in messages ("plugins
// directory", "lock file", "plugin").
func checkTrusted(what, path string, fi os.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("refused: %s %s is group- or world-writable (mode %v), so others could make ejob run their code; run chmod go-w %s",
			what, path, perm, path)
	}
	if uid, ok := fileOwner(fi); ok && uid != 0 && uid != os.Getuid() {
		return fmt.Errorf("refused: %s %s is owned by uid %d, neither root nor this user (uid %d); run chown %d %s, or use one of your own",
			what, path, uid, os.Getuid(), os.Getuid(), path)
	}
	return nil
}

// checkDir refuses a plugins directory others could write to.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("plugins directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("plugins directory %s is not a directory", dir)
	}
	return checkTrusted("plugins directory", dir, fi)
}

// checkLink refuses a symlink in dir whose target lies outside dir: the
// directory's trust would not cover it.
func checkLink(dir, path string) error {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("broken symlink: %w", err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("plugins directory: %w", err)
	}
	if rel, err := filepath.Rel(realDir, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("refused: a symlink to %s, outside the plugins directory; copy the binary into %s instead", target, dir)
	}
	return nil
}
