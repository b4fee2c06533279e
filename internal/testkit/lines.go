package testkit

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
)

// CompleteLines returns data up to and including its last newline: the
// lines a reader may parse of a file that other processes append lines to.
// Linux does not make a read(2) of a regular file atomic with a concurrent
// write(2): a line written with one write that crosses a page boundary
// becomes visible a page at a time, so the last line read can be the first
// part of one. The rest is read again once it is complete.
func CompleteLines(data []byte) []byte {
	end := bytes.LastIndexByte(data, '\n')
	return data[:end+1]
}

// ReadLines reads the complete lines of a file that processes append lines
// to (see CompleteLines). A file that does not exist yet has none.
func ReadLines(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return CompleteLines(data), nil
}
