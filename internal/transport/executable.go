package transport

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// checkExecutable refuses, before running it, a native executable that
// cannot be an ejob plugin: every ejob plugin carries the handshake's
// magic cookie value (go-plugin's Serve compares the host's environment
// with it), so a binary without it would only be found out when the start
// timeout ends (a program that waits or runs forever) or after it ran (it
// may do anything it does when run without arguments). Scripts and other
// files are not checked: a script may exec a plugin. A compressed
// executable (UPX) does not show the string either; run it from a script.
func checkExecutable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // running it reports why
	}
	defer f.Close()
	var head [4]byte
	if n, _ := io.ReadFull(f, head[:]); !native(head[:n]) {
		return nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil
	}
	found, err := contains(f, []byte(magicCookieValue))
	if err != nil || found {
		return nil
	}
	return fmt.Errorf("%w: it is a native executable that does not contain the ejob plugin handshake "+
		"(it was not built with github.com/ejob-io/ejob/sdk's Serve); it was not run", ErrNotPlugin)
}

// native reports whether head starts an ELF, Mach-O or PE executable.
func native(head []byte) bool {
	for _, magic := range [][]byte{
		[]byte("\x7fELF"),
		{0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf}, // Mach-O, big endian
		{0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe}, // Mach-O, little endian
		[]byte("MZ"), // PE
	} {
		if bytes.HasPrefix(head, magic) {
			return true
		}
	}
	return false
}

// contains reports whether r holds s, reading it in chunks.
func contains(r io.Reader, s []byte) (bool, error) {
	buf := make([]byte, 1<<20)
	keep := 0 // bytes carried over from the previous chunk
	for {
		n, err := r.Read(buf[keep:])
		total := keep + n
		if bytes.Contains(buf[:total], s) {
			return true, nil
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		keep = min(total, len(s)-1)
		copy(buf, buf[total-keep:total])
	}
}
