package alerttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Mail is one message as an SMTPServer got it.
type Mail struct {
	User string   // the AUTH PLAIN user, "" without AUTH
	TLS  bool     // the session was encrypted (implicit TLS or STARTTLS)
	From string   // MAIL FROM
	To   []string // RCPT TO, in order
	Data []byte
}

// SMTPServer is a real SMTP server (emersion/go-smtp) on 127.0.0.1, with
// AUTH PLAIN for one user when user is set.
type SMTPServer struct {
	Host, Port string
	user, pass string
	mu         sync.Mutex
	msgs       []Mail
	authReply  func(user, pass string) string
}

// SetAuthReply makes a wrong password get the 535 text reply(user, pass)
// (a server that quotes what it was sent).
func (s *SMTPServer) SetAuthReply(reply func(user, pass string) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authReply = reply
}

// SMTPMode is how an SMTPServer offers TLS.
type SMTPMode int

const (
	SMTPPlain    SMTPMode = iota // no TLS offered
	SMTPStartTLS                 // STARTTLS offered
	SMTPImplicit                 // TLS from the first byte
)

// NewSMTPServer starts a server in mode, requiring AUTH as user/pass when user
// is not empty. It stops at the end of the test.
func NewSMTPServer(t testing.TB, mode SMTPMode, user, pass string) *SMTPServer {
	t.Helper()
	s := &SMTPServer{user: user, pass: pass}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		_, isTLS := c.TLSConnectionState()
		return &smtpSession{srv: s, tls: isTLS, conn: c}, nil
	}))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.ErrorLog = discardLog{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{SelfSigned(t)}}
	switch mode {
	case SMTPStartTLS:
		srv.TLSConfig = cfg
	case SMTPImplicit:
		l = tls.NewListener(l, cfg)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	s.Host, s.Port, _ = net.SplitHostPort(l.Addr().String())
	return s
}

func (s *SMTPServer) Messages() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.msgs...)
}

type smtpSession struct {
	srv  *SMTPServer
	conn *smtp.Conn
	tls  bool
	user string
	cur  Mail
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *smtpSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != s.srv.user || password != s.srv.pass {
			s.srv.mu.Lock()
			reply := s.srv.authReply
			s.srv.mu.Unlock()
			if reply != nil {
				return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: reply(username, password)}
			}
			return smtp.ErrAuthFailed
		}
		s.user = username
		return nil
	}), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.srv.user != "" && s.user == "" {
		return smtp.ErrAuthRequired
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.cur = Mail{User: s.user, TLS: s.tls || isTLS, From: from}
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.To = append(s.cur.To, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.Data = data
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	s.srv.msgs = append(s.srv.msgs, s.cur)
	return nil
}

func (s *smtpSession) Reset()        { s.cur = Mail{} }
func (s *smtpSession) Logout() error { return nil }

type discardLog struct{}

func (discardLog) Printf(string, ...any) {}
func (discardLog) Println(...any)        {}

// SelfSigned returns a certificate for 127.0.0.1 and localhost that no
// system trusts.
func SelfSigned(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "ejob test SMTP"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// HangingServer accepts connections and never answers: an SMTP server
// that hangs before its greeting.
func HangingServer(t testing.TB) (host, port string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	host, port, _ = net.SplitHostPort(l.Addr().String())
	return host, port
}

// ClosedPort returns a port on 127.0.0.1 that nobody listens on.
func ClosedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	return port
}
