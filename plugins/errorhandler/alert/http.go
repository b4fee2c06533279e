package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ejob-io/ejob/spi/gson"
)

// Upstream's HTTP timeouts (WeCom and DingTalk).
const (
	DefaultConnectTimeout = 3000 * time.Millisecond
	DefaultReadTimeout    = 5000 * time.Millisecond
)

// maxResponse bounds how much of a response body is read.
const maxResponse = 64 << 10

// HTTPClient returns a client for alert requests: connect bounds dialing
// and the TLS handshake, read the wait for the response once the request
// is written. Redirects are not followed: a 3xx answer to a POST is a
// failed send, as with upstream's HttpClient. Proxies come from the
// environment.
func HTTPClient(connect, read time.Duration) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: connect}).DialContext,
			TLSHandshakeTimeout:   connect,
			ResponseHeaderTimeout: read,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Post sends body to rawURL and returns the status and up to 64 KiB of the
// response body. A transport failure (connection refused, timeout, reset)
// is Transient; target, the redacted URL, stands in for the URL in its
// text.
func Post(ctx context.Context, c *http.Client, rawURL, target string, header http.Header, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		// Its text would quote the URL.
		return 0, nil, fmt.Errorf("build the request for %s: invalid URL", target)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = fmt.Errorf("%s %s: %w", ue.Op, target, ue.Err)
		}
		return 0, nil, Transient(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return resp.StatusCode, data, Transient(fmt.Errorf("read the response of %s: %w", target, err))
	}
	return resp.StatusCode, data, nil
}

// StatusError describes an unexpected HTTP status with the start of the
// body the server sent: "unexpected http response status: 404 Not Found:
// <body>". 5xx, 429 and 408 are Transient.
func StatusError(status int, body []byte) error {
	err := fmt.Errorf("unexpected http response status: %d %s%s", status, http.StatusText(status), bodySnippet(body))
	if status >= 500 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout {
		return Transient(err)
	}
	return err
}

func bodySnippet(body []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(body), "\uFFFD"))
	if s == "" {
		return ""
	}
	if len(s) > 512 {
		s = s[:512] + "..."
	}
	return ": " + s
}

// Endpoint is an HTTP destination read from a channel's props.
type Endpoint struct {
	// URL is the URL prop's value as written.
	URL string
	// Target is URL with its tokens masked (RedactURL), for logs.
	Target string
	// Client has the channel's connect and read timeouts.
	Client *http.Client
}

// ParseEndpoint reads the required http or https URL prop urlProp
// (HTTPURL) and the channel's timeouts (Timeouts with prefix). Its errors
// never quote the URL.
func ParseEndpoint(props map[string]string, urlProp, prefix string) (Endpoint, error) {
	if _, err := HTTPURL(props, urlProp); err != nil {
		return Endpoint{}, err
	}
	connect, read, err := Timeouts(props, prefix)
	if err != nil {
		return Endpoint{}, err
	}
	u := props[urlProp]
	return Endpoint{URL: u, Target: RedactURL(u), Client: HTTPClient(connect, read)}, nil
}

// PostRobot sends content to a WeCom or DingTalk robot at rawURL as
// upstream does (RobotPayload, with upstream's headers) and checks the
// answer (CheckRobotResponse). target stands in for the URL in errors.
func PostRobot(ctx context.Context, c *http.Client, rawURL, target, content string) error {
	header := http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"UTF-8"}}
	status, body, err := Post(ctx, c, rawURL, target, header, RobotPayload(content))
	if err != nil {
		return err
	}
	return CheckRobotResponse(status, body)
}

// RobotPayload is the body upstream sends to a WeCom or DingTalk robot,
// byte for byte as Gson writes it: {"msgtype":"text","text":{"content":...}}.
func RobotPayload(content string) []byte {
	b := make([]byte, 0, len(content)+48)
	b = append(b, `{"msgtype":"text","text":{"content":`...)
	b = append(b, gson.String(content)...)
	return append(b, "}}"...)
}

// robotBusy are the errcodes WeCom and DingTalk answer when they want the
// sender to slow down: -1 (system busy), 45009 (WeCom: frequency limit),
// 130101 (DingTalk: sending too fast). They are Transient.
var robotBusy = []string{"-1", "45009", "130101"}

// CheckRobotResponse checks a WeCom or DingTalk robot's answer: HTTP 200
// with a JSON object whose errcode (read as a string, as upstream) is "0".
// Anything else is an error: the errcode and errmsg the robot sent, an
// unexpected status, a body that is not a JSON object or has no errcode
// (upstream lets these escape as an exception; here they are send
// failures like the others).
func CheckRobotResponse(status int, body []byte) error {
	if status != http.StatusOK {
		return StatusError(status, body)
	}
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("response is not a JSON object%s", bodySnippet(body))
	}
	raw, ok := resp["errcode"]
	if !ok {
		return fmt.Errorf("response has no errcode%s", bodySnippet(body))
	}
	code := jsonScalar(raw)
	if code == "0" {
		return nil
	}
	err := fmt.Errorf("errcode %s: %s", code, jsonScalar(resp["errmsg"]))
	if slices.Contains(robotBusy, code) {
		return Transient(err)
	}
	return err
}

// jsonScalar returns a JSON string's value, or any other JSON value's text.
func jsonScalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
