package pluginhost

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// LockFileName is the lock file's name inside the plugins directory. Its
// format is that of sha256sum(1), so `sha256sum -c ejob-plugins.lock` run in
// the directory verifies it too.
const LockFileName = "ejob-plugins.lock"

// ErrChecksum means a plugin binary does not match its pinned SHA-256, or is
// not listed in the lock file.
var ErrChecksum = errors.New("plugin checksum mismatch")

// Lock maps a binary's file name to its pinned lower-case hex SHA-256.
type Lock map[string]string

// ReadLock parses a lock file. A missing file is reported with an error
// wrapping fs.ErrNotExist.
func ReadLock(path string) (Lock, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plugin lock file: %w", err)
	}
	lock := Lock{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimSpace(name), "*")
		if !ok || name == "" || len(sum) != sha256.Size*2 {
			return nil, fmt.Errorf("plugin lock file %s line %d: want %q, got %q", path, n, "<sha256>  <file name>", line)
		}
		if _, err := hex.DecodeString(sum); err != nil {
			return nil, fmt.Errorf("plugin lock file %s line %d: checksum is not hex: %q", path, n, sum)
		}
		if strings.ContainsRune(name, filepath.Separator) {
			return nil, fmt.Errorf("plugin lock file %s line %d: %q must be a file name in the plugins directory, not a path", path, n, name)
		}
		if _, dup := lock[name]; dup {
			return nil, fmt.Errorf("plugin lock file %s line %d: %q is listed twice", path, n, name)
		}
		lock[name] = strings.ToLower(sum)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read plugin lock file %s: %w", path, err)
	}
	return lock, nil
}

// Write writes the lock file atomically (temp file + rename), with mode 0644
// less the umask.
func (l Lock) Write(path string) error {
	names := make([]string, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	buf.WriteString("# ejob plugin lock: SHA-256 of each plugin binary; verify with `sha256sum -c`.\n")
	for _, name := range names {
		fmt.Fprintf(&buf, "%s  %s\n", l[name], name)
	}
	// Mode 0644 less the umask (os.CreateTemp would make it 0600, and a
	// Chmod would ignore the umask), never group- or world-writable.
	var rnd [8]byte
	_, _ = rand.Read(rnd[:]) // never fails (crypto/rand doc)
	tmp, err := os.OpenFile(filepath.Join(filepath.Dir(path), ".ejob-plugins.lock."+hex.EncodeToString(rnd[:])),
		os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("write plugin lock file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("write plugin lock file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write plugin lock file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write plugin lock file: %w", err)
	}
	return nil
}

// Verify checks the binary at path against its pinned checksum.
func (l Lock) Verify(path string) error {
	name := filepath.Base(path)
	want, ok := l[name]
	if !ok {
		return fmt.Errorf("%w: %s is not listed in the lock file (run `ejob plugins lock` to pin it)", ErrChecksum, path)
	}
	got, err := FileSHA256(path)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%w: %s has sha256 %s, the lock file pins %s", ErrChecksum, path, got, want)
	}
	return nil
}

// FileSHA256 returns the lower-case hex SHA-256 of a file.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("checksum %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checksum %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
