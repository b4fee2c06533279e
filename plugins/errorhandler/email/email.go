package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
	gomaillog "github.com/wneessen/go-mail/log"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
)

// TypeName is the type the handler is registered under.
const TypeName = "EMAIL"

// The props EMAIL reads: upstream's keys, plus PropStartTLS.
const (
	PropHost     = "email.host"     // required
	PropPort     = "email.port"     // required, positive integer
	PropUsername = "email.username" // required (may be empty, with PropPassword: no SMTP AUTH)
	PropPassword = "email.password" // required, secret
	PropFrom     = "email.from"     // required, one address
	PropTo       = "email.to"       // required, comma-separated addresses
	PropUseSSL   = "email.useSsl"   // implicit TLS; default true
	PropSSLTrust = "email.ssl.trust"
	PropSubject  = "email.subject"
	PropCc       = "email.cc"  // comma-separated
	PropBcc      = "email.bcc" // comma-separated
	PropDebug    = "email.debug"
	// PropStartTLS is ejob's: off (default, upstream's plain SMTP),
	// opportunistic (STARTTLS when offered) or mandatory (fail without
	// it). It applies only when email.useSsl is false.
	PropStartTLS = "email.startTls"
)

// DefaultSubject is upstream's subject.
const DefaultSubject = "ElasticJob error message"

// The email.startTls modes.
const (
	StartTLSOff           = "off"
	StartTLSOpportunistic = "opportunistic"
	StartTLSMandatory     = "mandatory"
)

// New returns the EMAIL handler.
func New(opts alert.Options) *alert.Handler { return alert.New(Channel(), opts) }

// Channel describes EMAIL for package alert.
func Channel() alert.Channel {
	return alert.Channel{
		Type:        TypeName,
		Noun:        "email",
		SecretProps: []string{PropPassword},
		Parse:       parse,
	}
}

type config struct {
	host        string
	port        int
	username    string
	password    string
	from        string
	to, cc, bcc []string
	useSSL      bool
	trust       []string
	subject     string
	debug       bool
	startTLS    string
	log         alert.Logger
}

func parse(props map[string]string, env alert.Env) (alert.Sender, error) {
	c := config{log: env.Log}
	var err error
	if c.host, err = alert.Required(props, PropHost); err != nil {
		return nil, err
	}
	if _, ok := props[PropPort]; !ok {
		return nil, alert.Invalid("The property `%s` is required.", PropPort)
	}
	if c.port, err = alert.Int(props, PropPort, 0, 1); err != nil {
		return nil, err
	}
	if c.port > 65535 {
		return nil, alert.Invalid("The property `%s` should be a port number (1-65535).", PropPort)
	}
	for _, k := range []string{PropUsername, PropPassword} {
		if _, ok := props[k]; !ok {
			return nil, alert.Invalid("The property `%s` is required.", k)
		}
	}
	c.username, c.password = props[PropUsername], props[PropPassword]
	if (c.username == "") != (c.password == "") {
		return nil, alert.Invalid("The properties `%s` and `%s` should both be set, or both be empty for no SMTP AUTH.", PropUsername, PropPassword)
	}
	from, err := alert.Required(props, PropFrom)
	if err != nil {
		return nil, err
	}
	if _, err := mail.ParseAddress(from); err != nil {
		return nil, alert.Invalid("The property `%s` should be an email address: %v.", PropFrom, err)
	}
	c.from = from
	if _, err := alert.Required(props, PropTo); err != nil {
		return nil, err
	}
	if c.to, err = addresses(props, PropTo); err != nil {
		return nil, err
	}
	if c.cc, err = addresses(props, PropCc); err != nil {
		return nil, err
	}
	if c.bcc, err = addresses(props, PropBcc); err != nil {
		return nil, err
	}
	if c.useSSL, err = alert.Bool(props, PropUseSSL, true); err != nil {
		return nil, err
	}
	if c.debug, err = alert.Bool(props, PropDebug, false); err != nil {
		return nil, err
	}
	c.trust = strings.Fields(props[PropSSLTrust])
	c.subject = DefaultSubject
	if s, ok := props[PropSubject]; ok {
		c.subject = s
	}
	c.startTLS = StartTLSOff
	if v, ok := props[PropStartTLS]; ok {
		c.startTLS = strings.ToLower(strings.TrimSpace(v))
	}
	switch c.startTLS {
	case StartTLSOff:
	case StartTLSOpportunistic, StartTLSMandatory:
		if c.useSSL {
			return nil, alert.Invalid("The property `%s` applies only when `%s` is false (implicit TLS already encrypts).", PropStartTLS, PropUseSSL)
		}
	default:
		return nil, alert.Invalid("The property `%s` should be one of %s, %s, %s.", PropStartTLS, StartTLSOff, StartTLSOpportunistic, StartTLSMandatory)
	}
	return &sender{c}, nil
}

// addresses splits a comma-separated address list; absent or empty gives
// none.
func addresses(props map[string]string, key string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(props[key], ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if _, err := mail.ParseAddress(a); err != nil {
			return nil, alert.Invalid("The property `%s` should be a comma-separated list of email addresses: %q: %v.", key, a, err)
		}
		out = append(out, a)
	}
	return out, nil
}

type sender struct{ c config }

func (s *sender) Target() string {
	return net.JoinHostPort(s.c.host, strconv.Itoa(s.c.port))
}

// Subject is the subject of m: email.subject, with "[test] " in front for
// a test alert.
func (s *sender) subject(m alert.Message) string {
	if m.Test {
		return "[test] " + s.c.subject
	}
	return s.c.subject
}

func (s *sender) Send(ctx context.Context, m alert.Message) error {
	msg := gomail.NewMsg()
	if err := msg.From(s.c.from); err != nil {
		return fmt.Errorf("from: %w", err)
	}
	if err := msg.To(s.c.to...); err != nil {
		return fmt.Errorf("to: %w", err)
	}
	if len(s.c.cc) > 0 {
		if err := msg.Cc(s.c.cc...); err != nil {
			return fmt.Errorf("cc: %w", err)
		}
	}
	if len(s.c.bcc) > 0 {
		if err := msg.Bcc(s.c.bcc...); err != nil {
			return fmt.Errorf("bcc: %w", err)
		}
	}
	msg.Subject(s.subject(m))
	msg.SetDate()
	msg.SetMessageID()
	msg.SetUserAgent("ejob")
	msg.SetGenHeader("X-Ejob-Job", m.JobName)
	msg.SetBodyString(gomail.TypeTextPlain, m.Text())
	msg.AddAlternativeString(gomail.TypeTextHTML, HTML(m))

	client, err := gomail.NewClient(s.c.host, s.options(ctx)...)
	if err != nil {
		return fmt.Errorf("smtp client: %w", err)
	}
	return classify(client.DialAndSendWithContext(ctx, msg))
}

func (s *sender) options(ctx context.Context) []gomail.Option {
	tlsConfig := &tls.Config{ServerName: s.c.host, MinVersion: tls.VersionTLS12}
	if slices.Contains(s.c.trust, "*") || slices.Contains(s.c.trust, s.c.host) {
		// email.ssl.trust as JavaMail's mail.smtp.ssl.trust: the server's
		// certificate is not verified.
		tlsConfig.InsecureSkipVerify = true
	}
	// go-mail's own per-command deadline stays behind the alert's, which
	// closes the connection (see dialer) and so names the real cause.
	timeout := alert.DefaultTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl) + time.Second
	}
	policy := gomail.NoTLS
	switch s.c.startTLS {
	case StartTLSOpportunistic:
		policy = gomail.TLSOpportunistic
	case StartTLSMandatory:
		policy = gomail.TLSMandatory
	}
	opts := []gomail.Option{
		gomail.WithPort(s.c.port),
		gomail.WithTimeout(timeout),
		gomail.WithTLSConfig(tlsConfig),
		gomail.WithTLSPolicy(policy),
		gomail.WithDialContextFunc(s.dialer(ctx, tlsConfig)),
	}
	if s.c.username != "" {
		// As JavaMail with mail.smtp.auth: PLAIN or LOGIN, on plain
		// connections too (upstream does); CRAM-MD5 when that is all.
		opts = append(opts, gomail.WithUsername(s.c.username), gomail.WithPassword(s.c.password),
			gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthPlainNoEnc, gomail.SMTPAuthLoginNoEnc, gomail.SMTPAuthCramMD5))
	}
	if s.c.debug {
		opts = append(opts, gomail.WithDebugLog(), gomail.WithLogger(debugLog{s.c.log}))
	}
	return opts
}

// dialer connects (with implicit TLS when email.useSsl) and closes the
// connection when ctx, the alert's deadline, ends: a server that stops
// answering mid-conversation costs no more than the deadline.
func (s *sender) dialer(ctx context.Context, tlsConfig *tls.Config) gomail.DialContextFunc {
	return func(_ context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, func() { conn.Close() })
		if !s.c.useSSL {
			return conn, nil
		}
		tc := tls.Client(conn, tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}

// classify marks the failures a later attempt may cure: network errors
// and SMTP 4xx replies.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	var te *textproto.Error
	var se *gomail.SendError
	switch {
	case errors.As(err, &te):
		if te.Code >= 400 && te.Code < 500 {
			return alert.Transient(err)
		}
	case errors.As(err, &se):
		if se.IsTemp() {
			return alert.Transient(err)
		}
	case errors.As(err, &ne):
		return alert.Transient(err)
	}
	return err
}

// debugLog passes go-mail's protocol log (email.debug) to the handler's
// logger at DEBUG. go-mail leaves out the AUTH exchange; the logger masks
// the password anyway.
type debugLog struct{ l alert.Logger }

func (d debugLog) Debugf(l gomaillog.Log) { d.l.Debug("smtp", "line", logLine(l)) }
func (d debugLog) Infof(l gomaillog.Log)  { d.l.Debug("smtp", "line", logLine(l)) }
func (d debugLog) Warnf(l gomaillog.Log)  { d.l.Debug("smtp", "line", logLine(l)) }
func (d debugLog) Errorf(l gomaillog.Log) { d.l.Debug("smtp", "line", logLine(l)) }

func logLine(l gomaillog.Log) string {
	dir := "C --> S:"
	if l.Direction == gomaillog.DirServerToClient {
		dir = "C <-- S:"
	}
	return dir + " " + strings.TrimSpace(fmt.Sprintf(l.Format, l.Messages...))
}
