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

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/spi/redact"
)

// DumpCommand starts the one line a dump request is: "dump@{jobName}".
const DumpCommand = "dump@"

// maxDump bounds the reply Dump reads (a job's tree with its config and
// every item is a few KiB; this leaves room for thousands of items).
const maxDump = 64 << 20

// Dump is upstream's JobOperateAPI.dump (SnapshotService.dumpJob): it asks
// the dump port of a host for its view of the job's tree and returns the
// reply as upstream's client does, every line ended by "\n" (a "\r" or
// "\r\n" line end becomes "\n"), with every secret masked (RedactDump:
// a Java host's dump holds them in clear). A host closes the connection
// without a word for a job it does not run, which Dump returns as "" and
// no error, as upstream. ctx bounds the whole exchange. Dump dials any
// address it is given: a server that dials for others uses DumpInstance.
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
	return RedactDump(jobName, out.String()), nil
}

// DumpError is DumpInstance's error when a known host's port gave no
// dump. Its message is the same whatever happened (refused, reset, timed
// out, closed without a reply, a reply that is not a dump), so that a
// caller can neither tell an open port from a closed one nor read what
// another service answers; Unwrap gives the cause, for the server's own
// log.
type DumpError struct {
	Job, Addr string
	Err       error
}

func (e *DumpError) Error() string {
	return fmt.Sprintf("no dump of %q from %s: it is not that host's dump port, the host does not run the job, or it did not answer", e.Job, e.Addr)
}

func (e *DumpError) Unwrap() error { return e.Err }

// DumpInstance is Dump for a server that dials on someone else's behalf
// (the REST API's dump endpoint): it dials ip only when the registry
// knows a live instance of the job on that IP (an instances/{ip}@-@{pid}
// node), and refuses any other address before dialing, with an error
// (ErrServerNotFound) that names no port. A failed exchange with a known
// host is a *DumpError, and so is a reply that is not a dump of the job
// (an empty one included: upstream's client returns it as "").
func DumpInstance(ctx context.Context, c Reader, jobName, ip string, port int) (string, error) {
	if jobName == "" || strings.ContainsAny(jobName, "@\r\n/") {
		return "", invalidf("job name %q cannot be asked for over the dump port (it must be non-empty, without '@', '/' or a line break)", jobName)
	}
	if port < 1 || port > 65535 {
		return "", invalidf("dump port %d is out of range (1 to 65535)", port)
	}
	j := node.New(jobName)
	if err := mustExist(ctx, c, j); err != nil {
		return "", err
	}
	ids, err := children(ctx, c, j.Instances())
	if err != nil {
		return "", fmt.Errorf("job %q: list instances: %w", jobName, err)
	}
	known := false
	for _, id := range ids {
		if ip != "" && serverOf(id) == ip {
			known = true
			break
		}
	}
	if !known {
		return "", fmt.Errorf("%w: job %q has no live instance on %q: a dump is asked only of a host the registry knows", ErrServerNotFound, jobName, ip)
	}
	text, err := Dump(ctx, jobName, ip, port)
	switch {
	case errors.Is(err, ErrInvalid):
		return "", err
	case err != nil:
	case text == "":
		err = errors.New("the connection closed without a reply: the host does not run the job, or this is not a dump port")
	case text != "\n" && !strings.HasPrefix(text, "/"+jobName+"/"):
		err = fmt.Errorf("the reply (%d bytes) is not a dump", len(text))
	default:
		return text, nil
	}
	return "", &DumpError{Job: jobName, Addr: net.JoinHostPort(ip, strconv.Itoa(port)), Err: err}
}

// RedactNode returns the value of a node of a job's tree as a dump shows
// it: the config node's YAML with its secrets masked (config.Redact),
// any other value through redact.Text. A dump masks each value before
// anything else changes it (IP aliases), so that every secret is found.
func RedactNode(jobName, path, value string) string {
	if path != node.New(jobName).Config() {
		return redact.Text(value)
	}
	body := strings.TrimRight(value, "\n")
	masked := config.Redact([]byte(body))
	if string(masked) == body {
		return value
	}
	return strings.TrimRight(string(masked), "\n") + value[len(body):]
}

// RedactDump masks the secrets of a dump's text as a host sent it: it
// finds each node's record (a line "/{job}/... | value", the value's
// further lines up to the next record) and masks its value as RedactNode
// does, so that the config node's YAML is masked by structure even in
// the dump of a host that does not mask (a Java ElasticJob), whose IP
// aliases would defeat a search for the stored values.
func RedactDump(jobName, text string) string {
	prefix := "/" + jobName + "/"
	lines := strings.SplitAfter(text, "\n")
	var out strings.Builder
	flush := func(path, value string) {
		// A node the host's cache lacks: "path | value |  | ".
		const uncached = " |  | "
		tail := value[len(strings.TrimRight(value, "\n")):]
		v := strings.TrimSuffix(value[:len(value)-len(tail)], uncached)
		out.WriteString(RedactNode(jobName, path, v))
		out.WriteString(value[len(v):])
	}
	var path string
	var value strings.Builder
	inRecord := false
	for _, line := range lines {
		if p, v, ok := strings.Cut(line, " | "); ok && strings.HasPrefix(p, prefix) && !strings.ContainsAny(p, " \n") {
			if inRecord {
				flush(path, value.String())
			}
			out.WriteString(p + " | ")
			path, inRecord = p, true
			value.Reset()
			value.WriteString(v)
			continue
		}
		if inRecord {
			value.WriteString(line)
		} else {
			out.WriteString(redact.Text(line))
		}
	}
	if inRecord {
		flush(path, value.String())
	}
	return out.String()
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
