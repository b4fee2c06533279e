package lifecycle

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
)

// DumpCommand starts the one line a dump request is: "dump@{jobName}".
const DumpCommand = "dump@"

// maxDump bounds the reply Dump reads (a job's tree with its config and
// every item is a few KiB; this leaves room for thousands of items).
const maxDump = 64 << 20

// Dump is upstream's JobOperateAPI.dump (SnapshotService.dumpJob): it asks
// the dump port of a host (executors spec §9) for its view of the job's
// tree and returns the reply as upstream's client does, every line ended
// by "\n" (a "\r" or "\r\n" line end becomes "\n"). A host closes the
// connection without a word for a job it does not run, which Dump returns
// as "" and no error, as upstream. ctx bounds the whole exchange.
func Dump(ctx context.Context, jobName, host string, port int) (string, error) {
	if jobName == "" || strings.ContainsAny(jobName, "@\r\n") {
		return "", invalidf("job name %q cannot be asked for over the dump port (it must be non-empty, without '@' or a line break)", jobName)
	}
	if port < 1 || port > 65535 {
		return "", invalidf("dump port %d is out of range (1 to 65535)", port)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("dump %q: %w", jobName, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if _, err := io.WriteString(conn, DumpCommand+jobName+"\n"); err != nil {
		return "", fmt.Errorf("dump %q from %s: %w", jobName, addr, ctxErr(ctx, err))
	}
	var out strings.Builder
	r := bufio.NewReader(io.LimitReader(conn, maxDump+1))
	for {
		line, err := readJavaLine(r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("dump %q from %s: %w", jobName, addr, ctxErr(ctx, err))
		}
		out.WriteString(line)
		out.WriteByte('\n')
		if out.Len() > maxDump {
			return "", fmt.Errorf("dump %q from %s: reply larger than %d bytes", jobName, addr, maxDump)
		}
	}
	return out.String(), nil
}

// ReadDumpRequest reads the one line of a dump request from r and returns
// the job it names, as upstream's SnapshotService: ok only when the line
// starts with "dump@" and splits on '@' (Java's String.split, which drops
// trailing empty parts) into exactly two parts, so "dump@a@" names "a" and
// "dump@a@b" or "dump@" name nothing. The line ends at "\n", "\r", "\r\n"
// or the end of input; a line longer than max bytes is not a request.
func ReadDumpRequest(r io.Reader, max int) (jobName string, ok bool, err error) {
	line, err := readJavaLine(bufio.NewReader(io.LimitReader(r, int64(max)+1)))
	if err != nil || len(line) > max || !strings.HasPrefix(line, DumpCommand) {
		return "", false, err
	}
	parts := strings.Split(line, "@")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) != 2 {
		return "", false, nil
	}
	return parts[1], true, nil
}

// readJavaLine reads a line as Java's BufferedReader.readLine: ended by
// "\n", "\r" or "\r\n", or by the end of input after at least one byte.
func readJavaLine(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		c, err := r.ReadByte()
		if err == io.EOF && b.Len() > 0 {
			return b.String(), nil
		}
		if err != nil {
			return "", err
		}
		switch c {
		case '\n':
			return b.String(), nil
		case '\r':
			if next, err := r.Peek(1); err == nil && next[0] == '\n' {
				_, _ = r.ReadByte()
			}
			return b.String(), nil
		}
		b.WriteByte(c)
	}
}

func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
