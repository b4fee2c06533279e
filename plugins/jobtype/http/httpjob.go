package httpjob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/gson"
	"github.com/ejob-io/ejob/spi/redact"
)

// TypeName is the job type this package implements. Lookups are
// case-insensitive (spi.NormalizeType); this is the canonical spelling.
const TypeName = "HTTP"

// HeaderFencingToken is the request header carrying the item's fencing
// token (spi.ShardingContext.FencingToken), in decimal; absent when the
// run has none (0).
const HeaderFencingToken = "X-Ejob-Fencing-Token"

// HeaderShardingContext is the request header carrying the item's
// ShardingContext JSON. It is sent with exactly this spelling.
const HeaderShardingContext = "shardingContext"

// FormContentType is the Content-Type the JDK adds when POST or DELETE
// sends a body and http.content.type is not set (PUT gets none); Execute
// does the same, so endpoints written for upstream parse the body alike.
const FormContentType = "application/x-www-form-urlencoded"

// MaxRedirects is how many redirects a request follows, the JDK's default
// (http.maxRedirects).
const MaxRedirects = 20

// maxBodySnippet bounds the response body kept for the log and for
// StatusError; the rest is read and discarded.
const maxBodySnippet = 4 << 10

// OutputBodyBytes bounds the start of the response body an item's output
// keeps (after the status line); the output says how many bytes followed.
const OutputBodyBytes = 16 << 10

// Logger receives the response of each item: at Debug for a 2xx status,
// at Warn otherwise, with the fields job, item, status and body (the start
// of the body, newlines removed as upstream joins lines). hclog.Logger
// (sdk.Logger()) and *slog.Logger satisfy it.
type Logger interface {
	Debug(msg string, args ...any)
	Warn(msg string, args ...any)
}

// Executor is the HTTP job type. The zero value is ready to use; set
// Logger before the first Execute. It is safe for concurrent use if its
// Logger is.
type Executor struct {
	// Logger receives the responses; nil means slog.Default().
	Logger Logger
}

var _ spi.JobExecutor = (*Executor)(nil)

// New returns the HTTP executor logging responses to logger (nil means
// slog.Default()).
func New(logger Logger) *Executor { return &Executor{Logger: logger} }

// Validate implements spi.JobExecutor with ParseProps.
func (e *Executor) Validate(ctx context.Context, req spi.ValidatePropsRequest) error {
	_, err := ParseProps(req.Props)
	return err
}

// StatusError reports a response whose status is not 2xx.
type StatusError struct {
	// Code is the status code, Status the status line's text ("404 Not
	// Found").
	Code   int
	Status string
	// Location is the Location header of a 3xx response that was not
	// followed (a redirect to another protocol, which the JDK does not
	// follow either), masked as redact.URLString masks it.
	Location string
	// Body is the start of the response body (at most 4 KiB, newlines
	// removed).
	Body string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("response status %s", e.Status)
	if e.Location != "" {
		msg += fmt.Sprintf(" (redirect to %s not followed: not the same protocol)", e.Location)
	}
	if e.Body != "" {
		msg += fmt.Sprintf("; response body: %q", e.Body)
	}
	return msg
}

// Execute implements spi.JobExecutor: one request per item, on a new
// connection that is closed afterwards.
//
// The request has the method and URL of the props, the header
// shardingContext with the Gson JSON of the item's context, Content-Type
// from http.content.type, and http.data as its body for POST, PUT and
// DELETE when non-empty (GET never sends one). When POST or DELETE sends a
// body without http.content.type, Content-Type is FormContentType, as the
// JDK sets it. Redirects are followed up to MaxRedirects within the same
// protocol, as the JDK follows them. The connect timeout bounds the TCP
// connect; the read timeout bounds every single read (headers and body),
// as the JDK's does; ctx bounds the whole call. The whole body is read.
//
// It returns nil for a 2xx status; an error wrapping *StatusError for any
// other (a deliberate difference from upstream, which only logs 4xx and
// 5xx and counts an unfollowed 3xx as success); an error wrapping
// spi.ErrInvalidConfig for bad props; an error wrapping ctx.Err() when ctx
// ended first; otherwise an error saying whether connecting, a timeout or
// the transfer failed. Once a response arrived, the response carries it
// as the item's output (see responseOutput), whatever the outcome.
func (e *Executor) Execute(ctx context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	p, err := ParseProps(req.Props)
	if err != nil {
		return spi.ExecuteResponse{}, err
	}
	sc := req.Context
	// The URL's user info and query values are secrets as often as not
	// (tokens, signatures): they never reach a log or an error.
	where := fmt.Sprintf("httpjob: %s %s", p.Method, redact.URL(p.URL)) // the host adds job and item
	if err := ctx.Err(); err != nil {
		return spi.ExecuteResponse{}, fmt.Errorf("%s: not sent: %w", where, err)
	}
	var logger Logger = slog.Default()
	if e.Logger != nil {
		logger = e.Logger
	}

	var body io.Reader
	if p.WriteMethod() && p.Data != "" {
		body = strings.NewReader(p.Data)
	}
	hreq, err := http.NewRequestWithContext(ctx, p.Method, p.URL.String(), body)
	if err != nil {
		return spi.ExecuteResponse{}, fmt.Errorf("%s: %w", where, err)
	}
	// Set directly, not with Header.Set, to keep upstream's spelling on
	// the wire (Set would send "Shardingcontext").
	hreq.Header[HeaderShardingContext] = []string{string(gson.ShardingContext(sc))}
	if sc.FencingToken != 0 {
		hreq.Header.Set(HeaderFencingToken, strconv.FormatInt(sc.FencingToken, 10))
	}
	switch {
	case p.ContentType != "":
		hreq.Header.Set("Content-Type", p.ContentType)
	case body != nil && p.Method != "PUT":
		hreq.Header.Set("Content-Type", FormContentType)
	}

	transport := newTransport(p)
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, CheckRedirect: checkRedirect}
	resp, err := client.Do(hreq)
	if err != nil {
		return spi.ExecuteResponse{}, fmt.Errorf("%s: %w", where, classify(ctx, p, err))
	}
	head, total, err := readBody(resp.Body)
	_ = resp.Body.Close()
	out := spi.ExecuteResponse{Output: responseOutput(resp, head, total)}
	if err != nil {
		return out, fmt.Errorf("%s: response %s: reading body: %w", where, resp.Status, classify(ctx, p, err))
	}
	snippet := bodySnippet(head)

	fields := []any{"job", sc.JobName, "item", sc.ShardingItem, "status", resp.StatusCode, "body", snippet}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		logger.Debug("HTTP job execute result", fields...)
		return out, nil
	}
	logger.Warn("HTTP job executed with response code "+fmt.Sprint(resp.StatusCode), fields...)
	se := &StatusError{Code: resp.StatusCode, Status: resp.Status, Body: snippet}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		se.Location = redact.URLString(resp.Header.Get("Location"))
	}
	return out, fmt.Errorf("%s: %w", where, se)
}

// responseOutput is an item's output: the status line ("HTTP/1.1 200
// OK"), then the start of the body as received, at most OutputBodyBytes,
// and a line saying how many bytes of the body followed, if any did.
func responseOutput(resp *http.Response, head []byte, total int64) spi.Output {
	var b strings.Builder
	b.WriteString(resp.Proto + " " + resp.Status + "\n")
	b.Write(head)
	if rest := total - int64(len(head)); rest > 0 {
		fmt.Fprintf(&b, "\n[… %d more bytes of body]", rest)
	}
	return spi.TailOutput(b.String(), spi.MaxOutputBytes)
}

// newTransport returns a transport for one request: HTTP/1.1 as the JDK
// speaks it, proxies from the environment (HTTP_PROXY, HTTPS_PROXY,
// NO_PROXY), the connect timeout on the dial and the read timeout on every
// read of the connection.
func newTransport(p Params) *http.Transport {
	dialer := &net.Dialer{Timeout: p.ConnectTimeout}
	return &http.Transport{
		Proxy:             http.ProxyFromEnvironment,
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, &connectError{err: err}
			}
			if p.ReadTimeout > 0 {
				c = &readTimeoutConn{Conn: c, timeout: p.ReadTimeout}
			}
			return c, nil
		},
	}
}

// checkRedirect follows redirects as the JDK does: same protocol only (a
// redirect from http to https, or back, ends with the 3xx response) and
// at most MaxRedirects.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxRedirects)
	}
	if !strings.EqualFold(req.URL.Scheme, via[len(via)-1].URL.Scheme) {
		return http.ErrUseLastResponse
	}
	return nil
}

// readBody reads the whole body and returns its first OutputBodyBytes
// bytes and the body's length.
func readBody(r io.Reader) ([]byte, int64, error) {
	var b bytes.Buffer
	n, err := io.Copy(&b, io.LimitReader(r, OutputBodyBytes))
	if err == nil {
		var m int64
		m, err = io.Copy(io.Discard, r)
		n += m
	}
	return b.Bytes(), n, err
}

// bodySnippet is the start of the body for the log and StatusError,
// newlines removed.
func bodySnippet(head []byte) string {
	s := string(head[:min(len(head), maxBodySnippet)])
	return strings.NewReplacer("\r", "", "\n", "").Replace(s)
}

// connectError marks a failure to connect (as opposed to one later in the
// exchange).
type connectError struct {
	err error
}

func (e *connectError) Error() string { return e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

// readTimeoutConn gives every Read a deadline of timeout from its start:
// the JDK's read timeout (SO_TIMEOUT), which bounds each wait for data,
// not the whole response.
type readTimeoutConn struct {
	net.Conn
	timeout time.Duration
}

func (c *readTimeoutConn) Read(b []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

// classify turns a request or body error into one that says what failed:
// ctx's error when ctx ended, a connect failure or timeout, a read
// timeout, or err as it is. A connect or read timeout does not wrap the
// network error: Go's timeout errors match context.DeadlineExceeded, which
// would make the item look as if the job's own timeout had ended it.
func classify(ctx context.Context, p Params, err error) error {
	// The caller's message already names the method and URL.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(err, ctxErr) {
			return err
		}
		return fmt.Errorf("%w (%v)", ctxErr, err)
	}
	var ce *connectError
	var ne net.Error
	isTimeout := errors.As(err, &ne) && ne.Timeout()
	switch {
	case errors.As(err, &ce) && isTimeout:
		return fmt.Errorf("connect timed out after %v (%s): %v", p.ConnectTimeout, PropConnectTimeout, err)
	case errors.As(err, &ce):
		return fmt.Errorf("connect failed: %w", err)
	case isTimeout || errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("read timed out after %v (%s): %v", p.ReadTimeout, PropReadTimeout, err)
	}
	return err
}
