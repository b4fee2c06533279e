package email_test

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

// received is one message as the SMTP server got it.
type received struct {
	User string   // the AUTH PLAIN user, "" without AUTH
	TLS  bool     // the session was encrypted (implicit TLS or STARTTLS)
	From string   // MAIL FROM
	To   []string // RCPT TO, in order
	Data []byte
}

// smtpServer is a real SMTP server (emersion/go-smtp) on 127.0.0.1, with
// AUTH PLAIN for one user when user is set.
type smtpServer struct {
	Host, Port string
	user, pass string
	// authReply, when set, is the 535 text a wrong password gets.
	authReply func(user, pass string) string

	mu   sync.Mutex
	msgs []received
}

type smtpMode int

const (
	smtpPlain    smtpMode = iota // no TLS offered
	smtpStartTLS                 // STARTTLS offered
	smtpImplicit                 // TLS from the first byte
)

// startSMTP starts a server in mode, requiring AUTH as user/pass when user
// is not empty. It stops at the end of the test.
func startSMTP(t *testing.T, mode smtpMode, user, pass string) *smtpServer {
	t.Helper()
	s := &smtpServer{user: user, pass: pass}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		_, isTLS := c.TLSConnectionState()
		return &session{srv: s, tls: isTLS, conn: c}, nil
	}))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.ErrorLog = discardLog{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}
	switch mode {
	case smtpStartTLS:
		srv.TLSConfig = cfg
	case smtpImplicit:
		l = tls.NewListener(l, cfg)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	s.Host, s.Port, _ = net.SplitHostPort(l.Addr().String())
	return s
}

func (s *smtpServer) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.msgs...)
}

type session struct {
	srv  *smtpServer
	conn *smtp.Conn
	tls  bool
	user string
	cur  received
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != s.srv.user || password != s.srv.pass {
			if s.srv.authReply != nil {
				return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: s.srv.authReply(username, password)}
			}
			return smtp.ErrAuthFailed
		}
		s.user = username
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.srv.user != "" && s.user == "" {
		return smtp.ErrAuthRequired
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.cur = received{User: s.user, TLS: s.tls || isTLS, From: from}
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.To = append(s.cur.To, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
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

func (s *session) Reset()        { s.cur = received{} }
func (s *session) Logout() error { return nil }

type discardLog struct{}

func (discardLog) Printf(string, ...any) {}
func (discardLog) Println(...any)        {}

// selfSigned returns a certificate for 127.0.0.1 and localhost that no
// system trusts.
func selfSigned(t *testing.T) tls.Certificate {
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

// hangingServer accepts connections and never answers: an SMTP server
// that hangs before its greeting.
func hangingServer(t *testing.T) (host, port string) {
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

// closedPort returns a port on 127.0.0.1 that nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	return port
}
