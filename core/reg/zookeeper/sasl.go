package zookeeper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/ejob-io/ejob/core/reg/zookeeper/internal/sasl"
	"github.com/ejob-io/ejob/core/reg/zookeeper/internal/zkwire"
)

// ZooKeeper sends SASL tokens as ordinary requests: RequestHeader{xid,
// type=OpCode.sasl} and GetSASLRequest{buffer token}; the server answers
// ReplyHeader{xid, zxid, err} and SetSASLResponse{buffer token}
// (zookeeper.jute). The server handles them before its authentication
// check, so they may precede every other request, which is where ejob
// sends them: on each new connection, between the connect response and
// go-zookeeper's first request.
const (
	// saslXid is the xid of SASL requests: negative, so it is none of
	// go-zookeeper's (1 and up) and none of the ones ZooKeeper reserves
	// (-1 watch events, -2 pings, -4 auth, -8 set watches).
	saslXid int32 = -16
	// saslMaxRounds bounds one exchange (DIGEST-MD5 takes 2, GSSAPI 3).
	saslMaxRounds = 8
)

// ErrAuthFailed is in the chain of every final SASL failure (an
// *AuthError): the server refused the credentials, or the client refused
// the server's proof or could not obtain credentials. Retrying cannot
// change it: the client gives up (see Client.Failed).
var ErrAuthFailed = errors.New("authentication failed")

// AuthError is a final SASL authentication failure.
type AuthError struct {
	Mechanism string // DIGEST-MD5 or GSSAPI
	Identity  string // the username or principal
	Server    string // host:port
	// Code is the ZooKeeper error code the server answered with; 0 when
	// the client gave up by itself (Err says why).
	Code int32
	Err  error
}

func (e *AuthError) Error() string {
	if e.Server == "" {
		return fmt.Sprintf("SASL %s authentication as %q failed: %v", e.Mechanism, e.Identity, e.Err)
	}
	return fmt.Sprintf("SASL %s authentication as %q with %s failed: %v", e.Mechanism, e.Identity, e.Server, e.Err)
}

func (e *AuthError) Unwrap() []error { return []error{ErrAuthFailed, e.Err} }

// serverAnswer explains a ZooKeeper error code answering a SASL token.
func serverAnswer(code int32) error {
	switch code {
	case zkwire.CodeSessionClosedRequireSASLAuth:
		return errors.New("the server answered SESSIONCLOSEDREQUIRESASLAUTH (-124): it refused the credentials and closed the session")
	case zkwire.CodeAuthFailed:
		return errors.New("the server answered AUTHFAILED (-115): it refused the credentials")
	}
	return fmt.Errorf("the server answered error code %d", code)
}

// saslAuth authenticates connections with one SASL configuration.
type saslAuth struct {
	cfg SASL           // resolved
	krb *sasl.Kerberos // GSSAPI's login
}

// newSASLAuth resolves cfg and loads Kerberos credentials; its errors are
// final.
func newSASLAuth(cfg SASL) (*saslAuth, error) {
	r, err := cfg.resolved()
	if err != nil {
		return nil, fmt.Errorf("sasl: %w", err)
	}
	a := &saslAuth{cfg: r}
	if r.Mechanism == MechanismGSSAPI {
		a.krb, err = sasl.NewKerberos(sasl.KerberosConfig{Principal: r.Principal, Keytab: r.Keytab, TicketCache: r.TicketCache, Krb5Conf: r.Krb5Conf})
		if err != nil {
			return nil, &AuthError{Mechanism: r.Mechanism, Identity: r.identity(), Err: err}
		}
		a.cfg.Principal = a.krb.Principal()
	}
	return a, nil
}

// close releases the Kerberos login.
func (a *saslAuth) close() {
	if a.krb != nil {
		a.krb.Close()
	}
}

// mechanism starts one exchange with the server at addr.
func (a *saslAuth) mechanism(addr string) (sasl.Mechanism, error) {
	switch a.cfg.Mechanism {
	case MechanismDigestMD5:
		return &sasl.DigestMD5{Username: a.cfg.Username, Password: a.cfg.Password,
			Service: sasl.ZooKeeperDigestService, Host: sasl.ZooKeeperDigestHost}, nil
	case MechanismGSSAPI:
		host := a.cfg.ServiceHost
		if host == "" {
			h, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			host = h
		}
		return a.krb.GSSAPI(a.cfg.ServiceName, host), nil
	}
	return nil, fmt.Errorf("SASL mechanism %q is not supported", a.cfg.Mechanism)
}

// exchange runs the SASL exchange on conn, which has just read the
// server's connect response. An *AuthError is final; other errors (the
// connection failed) are not.
func (a *saslAuth) exchange(conn net.Conn, addr string) error {
	authErr := func(code int32, err error) error {
		return &AuthError{Mechanism: a.cfg.Mechanism, Identity: a.cfg.identity(), Server: addr, Code: code, Err: err}
	}
	m, err := a.mechanism(addr)
	if err != nil {
		return authErr(0, err)
	}
	tok, err := m.Start()
	if err != nil {
		return a.mechErr(err, authErr)
	}
	for range saslMaxRounds {
		reply, code, err := saslRoundTrip(conn, tok)
		if err != nil {
			return fmt.Errorf("SASL %s with %s: %w", a.cfg.Mechanism, addr, err)
		}
		if code != 0 {
			return authErr(code, serverAnswer(code))
		}
		if m.Complete() {
			return nil
		}
		if tok, err = m.Step(reply); err != nil {
			return a.mechErr(err, authErr)
		}
		if tok == nil && m.Complete() {
			return nil
		}
	}
	return authErr(0, fmt.Errorf("no outcome after %d rounds", saslMaxRounds))
}

// mechErr makes a mechanism's error final when retrying cannot help.
func (a *saslAuth) mechErr(err error, authErr func(int32, error) error) error {
	if errors.Is(err, sasl.ErrRejected) || errors.Is(err, sasl.ErrNoChallenge) || errors.Is(err, sasl.ErrCredentials) {
		return authErr(0, err)
	}
	return fmt.Errorf("SASL %s: %w", a.cfg.Mechanism, err)
}

// saslRoundTrip sends one token and reads the answer: its token and the
// server's error code.
func saslRoundTrip(conn net.Conn, tok []byte) ([]byte, int32, error) {
	xid := saslXid
	req := zkwire.W{}
	req.Int32(xid)
	req.Int32(zkwire.OpSASL)
	req.Buffer(tok)
	if err := zkwire.WriteFrame(conn, req.B); err != nil {
		return nil, 0, fmt.Errorf("send token: %w", err)
	}
	f, err := zkwire.ReadFrame(conn)
	if err != nil {
		return nil, 0, fmt.Errorf("read answer: %w", err)
	}
	// ReplyHeader: int xid, long zxid, int err.
	if len(f) < 16 {
		return nil, 0, fmt.Errorf("answer of %d bytes", len(f))
	}
	if xid := int32(binary.BigEndian.Uint32(f)); xid != saslXid {
		return nil, 0, fmt.Errorf("answer with xid %d, want %d", xid, saslXid)
	}
	code := int32(binary.BigEndian.Uint32(f[12:]))
	body := f[16:]
	if len(body) < 4 {
		// An error answer may come without a SetSASLResponse.
		return nil, code, nil
	}
	n := int32(binary.BigEndian.Uint32(body))
	if n <= 0 {
		return []byte{}, code, nil
	}
	if int(n) > len(body)-4 {
		return nil, 0, fmt.Errorf("answer token of %d bytes in %d", n, len(body)-4)
	}
	return body[4 : 4+n], code, nil
}
