package httpjob

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// The props HTTP reads, upstream's keys.
const (
	// PropURI (required) is the absolute http or https URL to call.
	PropURI = "http.uri"
	// PropMethod (required) is the request method, upper case: GET, POST,
	// HEAD, OPTIONS, PUT, DELETE or TRACE.
	PropMethod = "http.method"
	// PropData is the request body, sent by POST, PUT and DELETE only and
	// only when non-empty.
	PropData = "http.data"
	// PropConnectTimeout is the TCP connect timeout in milliseconds;
	// default 3000, 0 means none.
	PropConnectTimeout = "http.connect.timeout.milliseconds"
	// PropReadTimeout is the read timeout in milliseconds: the longest
	// wait for any one read from the connection (the JDK's SO_TIMEOUT);
	// default 5000, 0 means none.
	PropReadTimeout = "http.read.timeout.milliseconds"
	// PropContentType, when non-empty, is the Content-Type header.
	PropContentType = "http.content.type"
)

// Upstream's defaults and messages.
const (
	DefaultConnectTimeout = 3000 * time.Millisecond
	DefaultReadTimeout    = 5000 * time.Millisecond

	MsgNoURL    = "Cannot find HTTP URL, job is not executed."
	MsgNoMethod = "Cannot find HTTP method, job is not executed."
)

// Methods lists the methods the JDK's HttpURLConnection accepts, and so
// the only values of http.method that upstream can run.
func Methods() []string {
	return []string{"GET", "POST", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"}
}

// Params are a job's http.* props, parsed.
type Params struct {
	URL    *url.URL
	Method string
	// Data is the body for a write method (WriteMethod); empty means none.
	Data           string
	ConnectTimeout time.Duration // 0: none
	ReadTimeout    time.Duration // 0: none
	ContentType    string        // empty: not set (but see Execute)
}

// ParseProps parses props as upstream's HttpParam does, and checks what
// upstream would only find out when the request fails: the method must be
// one of Methods (exact case), the URL absolute http or https, the
// timeouts int32 milliseconds (Java's Integer.parseInt: an optional sign
// and decimal digits) and not negative, the content type a valid header
// value. Errors wrap spi.ErrInvalidConfig and name the property; a missing
// URL or method gives upstream's message.
func ParseProps(props map[string]string) (Params, error) {
	var p Params
	raw := props[PropURI]
	if raw == "" {
		return Params{}, invalid(MsgNoURL+" (property `%s` is required)", PropURI)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Params{}, invalid("property `%s` is %q: %v", PropURI, raw, err)
	}
	if scheme := strings.ToLower(u.Scheme); (scheme != "http" && scheme != "https") || u.Host == "" {
		return Params{}, invalid("property `%s` is %q: want an absolute http or https URL", PropURI, raw)
	}
	p.URL = u

	p.Method = props[PropMethod]
	if p.Method == "" {
		return Params{}, invalid(MsgNoMethod+" (property `%s` is required)", PropMethod)
	}
	if !slices.Contains(Methods(), p.Method) {
		return Params{}, invalid("property `%s` is %q: want one of %s (upper case, as the JDK accepts)",
			PropMethod, p.Method, strings.Join(Methods(), " "))
	}
	p.Data = props[PropData]
	if p.ConnectTimeout, err = millis(props, PropConnectTimeout, DefaultConnectTimeout); err != nil {
		return Params{}, err
	}
	if p.ReadTimeout, err = millis(props, PropReadTimeout, DefaultReadTimeout); err != nil {
		return Params{}, err
	}
	p.ContentType = props[PropContentType]
	if !validHeaderValue(p.ContentType) {
		return Params{}, invalid("property `%s` is %q: not a valid header value", PropContentType, p.ContentType)
	}
	return p, nil
}

// WriteMethod reports whether the method sends http.data: POST, PUT or
// DELETE (upstream's isWriteMethod).
func (p Params) WriteMethod() bool {
	switch p.Method {
	case "POST", "PUT", "DELETE":
		return true
	}
	return false
}

// millis reads an int32 millisecond prop; absent means def. Present but
// empty is an error, as Integer.parseInt("") is upstream.
func millis(props map[string]string, key string, def time.Duration) (time.Duration, error) {
	v, ok := props[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, invalid("property `%s` is %q: not an integer (milliseconds)", key, v)
	}
	if n < 0 {
		return 0, invalid("property `%s` is %d: timeouts can't be negative", key, n)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// validHeaderValue reports whether v can be sent as a header value: no
// control characters other than tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// invalid returns a config error; the message names the property.
func invalid(format string, args ...any) error {
	return fmt.Errorf("httpjob: %s: %w", fmt.Sprintf(format, args...), spi.ErrInvalidConfig)
}
