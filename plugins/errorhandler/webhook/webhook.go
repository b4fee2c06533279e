package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
)

// TypeName is the type the handler is registered under.
const TypeName = "WEBHOOK"

// The props WEBHOOK reads.
const (
	// PropURL (required) is the http or https URL the payload is POSTed
	// to. Tokens in it (query values, user info, long path segments) are
	// masked in logs.
	PropURL = "webhook.url"
	// PropSecret, when set, signs each request (HeaderSignature).
	PropSecret = "webhook.secret"
	// PropHeaders is the prefix of extra request headers:
	// webhook.headers.Authorization: Bearer ... (values are secret).
	PropHeaders        = "webhook.headers."
	PropConnectTimeout = "webhook.connectTimeoutMilliseconds"
	PropReadTimeout    = "webhook.readTimeoutMilliseconds"
)

// The headers of every request.
const (
	// HeaderTimestamp is the request's Unix time in seconds, part of
	// what is signed.
	HeaderTimestamp = "X-Ejob-Timestamp"
	// HeaderSignature is "sha256=" and the lower-case hex
	// HMAC-SHA256, keyed with webhook.secret, of the timestamp, ".", and
	// the body: sha256=hex(HMAC(secret, timestamp + "." + body)). Sent
	// only with a secret.
	HeaderSignature = "X-Ejob-Signature"
	// HeaderEvent is the payload's Event.
	HeaderEvent = "X-Ejob-Event"
)

// Version is the payload schema version. Fields may be added within a
// version; a change of meaning or a removal makes a new version.
const Version = 1

// EventJobFailure is the only event so far.
const EventJobFailure = "job.failure"

// Payload is the JSON body (schema version 1).
type Payload struct {
	// Version is the schema version, 1.
	Version int `json:"version"`
	// Event is "job.failure".
	Event string `json:"event"`
	// Test is true for a test alert (ejob alert test).
	Test bool `json:"test"`
	// Summary is the first line: "Job '<job>' exception occur in job
	// processing, caused by <error>".
	Summary string `json:"summary"`
	// Text is the whole alert as plain text (what EMAIL sends).
	Text     string `json:"text"`
	Job      string `json:"job"`
	Instance string `json:"instance"`
	// TaskID is empty for failures outside an execution.
	TaskID string `json:"taskId"`
	// Item is the failed sharding item, null when the failure is not tied
	// to one.
	Item  *int         `json:"item"`
	Error PayloadError `json:"error"`
	// Time is when the failure was reported (RFC 3339).
	Time time.Time `json:"time"`
	// Suppressed counts the job's failures not sent since the previous
	// alert (alert.suppressSeconds), PreviousAlert is when that was (null
	// if none), and Digest says this alert reports the end of a
	// suppression window: the failure shown is the latest suppressed one.
	Suppressed    int        `json:"suppressed"`
	PreviousAlert *time.Time `json:"previousAlert"`
	Digest        bool       `json:"digest"`
	// SuppressSeconds is the window in force.
	SuppressSeconds int `json:"suppressSeconds"`
}

// PayloadError is the job's error.
type PayloadError struct {
	Message string `json:"message"`
	// Detail is the error chain or output tail; may be empty.
	Detail string `json:"detail"`
}

// NewPayload returns the payload for m.
func NewPayload(m alert.Message) Payload {
	p := Payload{
		Version: Version, Event: EventJobFailure, Test: m.Test, Summary: m.FirstLine(), Text: m.Text(),
		Job: m.JobName, Instance: m.InstanceID, TaskID: m.TaskID,
		Error: PayloadError{Message: m.Error.Message, Detail: m.Error.Detail},
		Time:  m.Time, Suppressed: m.Suppressed, Digest: m.Digest, SuppressSeconds: int(m.Window / time.Second),
	}
	if m.Item >= 0 {
		item := m.Item
		p.Item = &item
	}
	if !m.Previous.IsZero() {
		prev := m.Previous
		p.PreviousAlert = &prev
	}
	return p
}

// Sign returns the HeaderSignature value for body sent at timestamp.
func Sign(secret string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte("."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether a request's body, HeaderTimestamp and
// HeaderSignature values were signed with secret, in constant time.
// Receivers should also refuse timestamps far from their clock (replays).
func Verify(secret, timestamp, signature string, body []byte) bool {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	return hmac.Equal([]byte(Sign(secret, ts, body)), []byte(signature))
}

// New returns the WEBHOOK handler; opts.Now also stamps HeaderTimestamp.
func New(opts alert.Options) *alert.Handler { return alert.New(Channel(), opts) }

// Channel describes WEBHOOK for package alert.
func Channel() alert.Channel {
	return alert.Channel{
		Type:        TypeName,
		Noun:        "webhook request",
		SecretProps: []string{PropSecret, PropHeaders},
		URLProps:    []string{PropURL},
		Parse:       parse,
	}
}

// reserved are headers webhook.headers cannot set.
var reserved = []string{"Host", "Content-Length", "Transfer-Encoding", HeaderTimestamp, HeaderSignature, HeaderEvent}

func parse(props map[string]string, env alert.Env) (alert.Sender, error) {
	e, err := alert.ParseEndpoint(props, PropURL, "webhook")
	if err != nil {
		return nil, err
	}
	header := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"ejob-alert/" + strconv.Itoa(Version)}}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		name, ok := strings.CutPrefix(k, PropHeaders)
		if !ok {
			continue
		}
		if !validName(name) {
			return nil, alert.Invalid("The property `%s` should name an HTTP header.", k)
		}
		canon := textproto.CanonicalMIMEHeaderKey(name)
		if slices.Contains(reserved, canon) {
			return nil, alert.Invalid("The property `%s` sets a header ejob sets itself.", k)
		}
		if !validValue(props[k]) {
			return nil, alert.Invalid("The property `%s` should be a header value (no control characters).", k)
		}
		header[canon] = []string{props[k]}
	}
	return &sender{ep: e, secret: props[PropSecret], header: header, now: env.Now}, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func validValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

type sender struct {
	ep     alert.Endpoint
	secret string
	header http.Header
	now    func() time.Time
}

func (s *sender) Target() string { return s.ep.Target }

// Send posts the payload; any 2xx is success.
func (s *sender) Send(ctx context.Context, m alert.Message) error {
	body, err := json.Marshal(NewPayload(m))
	if err != nil {
		return fmt.Errorf("encode the payload: %w", err)
	}
	header := s.header.Clone()
	ts := s.now().Unix()
	header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	header.Set(HeaderEvent, EventJobFailure)
	if s.secret != "" {
		header.Set(HeaderSignature, Sign(s.secret, ts, body))
	}
	status, resp, err := alert.Post(ctx, s.ep.Client, s.ep.URL, s.ep.Target, header, body)
	if err != nil {
		return err
	}
	if status < 200 || status > 299 {
		return alert.StatusError(status, resp)
	}
	return nil
}
