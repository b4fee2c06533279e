package sasl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/krberror"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// KerberosConfig says where a Kerberos login's credentials are.
type KerberosConfig struct {
	// Principal is name@REALM; required with Keytab. With a ticket cache
	// it must be the cache's principal when set.
	Principal string
	// Keytab holds Principal's keys; empty: the ticket cache.
	Keytab string
	// TicketCache is the credential cache (default $KRB5CCNAME, else
	// /tmp/krb5cc_UID).
	TicketCache string
	// Krb5Conf is the Kerberos configuration (default $KRB5_CONFIG, else
	// /etc/krb5.conf).
	Krb5Conf string
}

// Kerberos is a Kerberos login, shared by the GSSAPI exchanges of one
// ZooKeeper client: tickets are cached, and a keytab login renews itself.
// It is safe for concurrent use.
type Kerberos struct {
	mu       sync.Mutex
	cl       *client.Client
	fromKeys bool // a keytab login (renewable), not a ticket cache
	name     string
}

// NewKerberos loads the configuration and the credentials; it does not
// talk to the KDC yet. Its errors are final (ErrCredentials).
func NewKerberos(cfg KerberosConfig) (*Kerberos, error) {
	confPath := cfg.Krb5Conf
	if confPath == "" {
		confPath = os.Getenv("KRB5_CONFIG")
	}
	if confPath == "" {
		confPath = "/etc/krb5.conf"
	}
	conf, err := config.Load(confPath)
	if err != nil {
		return nil, fmt.Errorf("Kerberos configuration %s: %v: %w", confPath, err, ErrCredentials)
	}
	settings := []func(*client.Settings){client.DisablePAFXFAST(true)} // MIT KDCs offer FAST, which gokrb5 lacks
	if cfg.Keytab != "" {
		kt, err := keytab.Load(cfg.Keytab)
		if err != nil {
			return nil, fmt.Errorf("keytab %s: %v: %w", cfg.Keytab, err, ErrCredentials)
		}
		at := strings.LastIndex(cfg.Principal, "@")
		if at <= 0 || at == len(cfg.Principal)-1 {
			return nil, fmt.Errorf("principal %q is not name@REALM: %w", cfg.Principal, ErrCredentials)
		}
		name, realm := cfg.Principal[:at], cfg.Principal[at+1:]
		return &Kerberos{cl: client.NewWithKeytab(name, realm, kt, conf, settings...), fromKeys: true, name: cfg.Principal}, nil
	}
	path := cfg.TicketCache
	if path == "" {
		path = strings.TrimPrefix(os.Getenv("KRB5CCNAME"), "FILE:")
	}
	if path == "" {
		path = fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid())
	}
	cc, err := credentials.LoadCCache(path)
	if err != nil {
		return nil, fmt.Errorf("ticket cache %s (kinit first): %v: %w", path, err, ErrCredentials)
	}
	cl, err := client.NewFromCCache(cc, conf, settings...)
	if err != nil {
		return nil, fmt.Errorf("ticket cache %s: %v: %w", path, err, ErrCredentials)
	}
	got := cc.GetClientPrincipalName().PrincipalNameString() + "@" + cc.GetClientRealm()
	if cfg.Principal != "" && cfg.Principal != got {
		return nil, fmt.Errorf("ticket cache %s holds %s, not %s: %w", path, got, cfg.Principal, ErrCredentials)
	}
	return &Kerberos{cl: cl, name: got}, nil
}

// Close ends the login: gokrb5 renews a keytab login's tickets in a
// goroutine of its own until then.
func (k *Kerberos) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cl.Destroy()
}

// Principal is the client principal.
func (k *Kerberos) Principal() string { return k.name }

// serviceTicket logs in if needed and returns a ticket for spn.
func (k *Kerberos) serviceTicket(spn string) (messages.Ticket, types.EncryptionKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fromKeys {
		if err := k.cl.AffirmLogin(); err != nil {
			return messages.Ticket{}, types.EncryptionKey{}, kerberosErr("log in as "+k.name, err)
		}
	}
	tkt, key, err := k.cl.GetServiceTicket(spn)
	if err != nil {
		return tkt, key, kerberosErr("get a ticket for "+spn, err)
	}
	return tkt, key, nil
}

// kerberosErr marks what the KDC refused, or the credentials could not
// do, as final; a KDC out of reach may come back.
func kerberosErr(what string, err error) error {
	// gokrb5 wraps its typed errors with %v on the way (AffirmLogin), so
	// the root cause is found in the text.
	var ke krberror.Krberror
	if errors.As(err, &ke) && ke.RootCause == krberror.NetworkingError ||
		strings.Contains(err.Error(), "[Root cause: "+krberror.NetworkingError+"]") {
		return fmt.Errorf("Kerberos: %s: %w", what, err)
	}
	return fmt.Errorf("Kerberos: %s: %v: %w", what, err, ErrCredentials)
}

// GSSAPI returns an exchange with the server whose principal is
// service/host (in the realm krb5.conf maps host to).
func (k *Kerberos) GSSAPI(service, host string) *GSSAPI {
	return &GSSAPI{k: k, spn: service + "/" + host}
}

// GSSAPI is the GSSAPI SASL client of RFC 4752 over Kerberos V5 (RFC
// 4121), with mutual authentication and no security layer, as Java's
// GssKrb5Server (ZooKeeper's) speaks it: the AP-REQ; the server's AP-REP,
// checked and answered with an empty token; the server's wrapped offer of
// security layers, answered with a wrapped choice of none.
type GSSAPI struct {
	k     *Kerberos
	spn   string
	key   types.EncryptionKey // the session key, or the acceptor's subkey
	auth  types.Authenticator // the AP-REQ's, to check the AP-REP against
	state int                 // 0 AP-REQ sent, 1 AP-REP checked, 2 complete
}

var _ Mechanism = (*GSSAPI)(nil)

// Name implements Mechanism.
func (g *GSSAPI) Name() string { return "GSSAPI" }

// Complete implements Mechanism.
func (g *GSSAPI) Complete() bool { return g.state == 2 }

// Start implements Mechanism: the initial context token with the AP-REQ.
func (g *GSSAPI) Start() ([]byte, error) {
	tkt, key, err := g.k.serviceTicket(g.spn)
	if err != nil {
		return nil, err
	}
	creds := g.k.cl.Credentials
	auth, err := types.NewAuthenticator(creds.Domain(), creds.CName())
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: authenticator: %w", err)
	}
	// RFC 4121 4.1.1: the checksum field carries no channel bindings
	// (Bnd zero, Lgth 16) and the context flags.
	cksum := make([]byte, 24)
	binary.LittleEndian.PutUint32(cksum, 16)
	binary.LittleEndian.PutUint32(cksum[20:], gssapi.ContextFlagInteg|gssapi.ContextFlagConf|gssapi.ContextFlagMutual)
	auth.Cksum = types.Checksum{CksumType: chksumtype.GSSAPI, Checksum: cksum}
	req, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: AP-REQ: %w", err)
	}
	types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	apreq, err := req.Marshal()
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: AP-REQ: %w", err)
	}
	// The authenticator as the server will read it (times to the
	// microsecond), to check its AP-REP against.
	plain, err := crypto.DecryptEncPart(req.EncryptedAuthenticator, key, keyusage.AP_REQ_AUTHENTICATOR)
	if err == nil {
		err = g.auth.Unmarshal(plain)
	}
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: read back the authenticator: %w", err)
	}
	g.key = key
	// RFC 2743 3.1 InitialContextToken: [APPLICATION 0] { mech OID,
	// then the RFC 4121 token: TOK_ID 01 00 and the AP-REQ }.
	oid, err := asn1.Marshal(gssapi.OIDKRB5.OID())
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: %w", err)
	}
	body := append(append(oid, tokAPReq...), apreq...)
	return asn1tools.AddASNAppTag(body, 0), nil
}

// RFC 4121 4.1 token ids.
var (
	tokAPReq    = []byte{0x01, 0x00}
	tokAPRep    = []byte{0x02, 0x00}
	tokKRBError = []byte{0x03, 0x00}
)

// Step implements Mechanism.
func (g *GSSAPI) Step(challenge []byte) ([]byte, error) {
	switch g.state {
	case 0:
		if len(challenge) == 0 {
			return nil, ErrNoChallenge
		}
		if err := g.checkAPRep(challenge); err != nil {
			return nil, err
		}
		g.state = 1
		return []byte{}, nil
	case 1:
		var wt gssapi.WrapToken
		if err := wt.Unmarshal(challenge, true); err != nil {
			return nil, fmt.Errorf("GSSAPI: the server's security layer offer: %v: %w", err, ErrRejected)
		}
		if ok, err := wt.Verify(g.key, keyusage.GSSAPI_ACCEPTOR_SEAL); !ok {
			return nil, fmt.Errorf("GSSAPI: the server's security layer offer does not verify: %v: %w", err, ErrRejected)
		}
		if len(wt.Payload) != 4 || wt.Payload[0]&0x01 == 0 {
			return nil, fmt.Errorf("GSSAPI: the server does not offer to do without a security layer (offer %x): %w", wt.Payload, ErrRejected)
		}
		// No security layer, no receive buffer, no authorization id: the
		// server authorizes the authenticated principal.
		et, err := crypto.GetEtype(g.key.KeyType)
		if err != nil {
			return nil, fmt.Errorf("GSSAPI: %w", err)
		}
		// The flags say the same key (an acceptor subkey or not), not sent
		// by the acceptor.
		resp := gssapi.WrapToken{Flags: wt.Flags &^ 0x01, EC: uint16(et.GetHMACBitLength() / 8), Payload: []byte{0x01, 0, 0, 0}}
		if err := resp.SetCheckSum(g.key, keyusage.GSSAPI_INITIATOR_SEAL); err != nil {
			return nil, fmt.Errorf("GSSAPI: wrap the answer: %w", err)
		}
		b, err := resp.Marshal()
		if err != nil {
			return nil, fmt.Errorf("GSSAPI: wrap the answer: %w", err)
		}
		g.state = 2
		return b, nil
	}
	return nil, errors.New("GSSAPI: exchange already complete")
}

// checkAPRep checks that the server decrypted our authenticator (mutual
// authentication), and takes its subkey if it sent one.
func (g *GSSAPI) checkAPRep(b []byte) error {
	var oid asn1.ObjectIdentifier
	rest, err := asn1.UnmarshalWithParams(b, &oid, "application,explicit,tag:0")
	if err != nil || !oid.Equal(gssapi.OIDKRB5.OID()) || len(rest) < 2 {
		return fmt.Errorf("GSSAPI: the server's answer to the AP-REQ is no Kerberos token: %w", ErrRejected)
	}
	id, msg := rest[:2], rest[2:]
	if bytes.Equal(id, tokKRBError) {
		var ke messages.KRBError
		if err := ke.Unmarshal(msg); err != nil {
			return fmt.Errorf("GSSAPI: the server's KRB-ERROR: %v: %w", err, ErrRejected)
		}
		return fmt.Errorf("GSSAPI: the server refused the ticket for %s: %v: %w", g.spn, ke, ErrRejected)
	}
	if !bytes.Equal(id, tokAPRep) {
		return fmt.Errorf("GSSAPI: the server's answer to the AP-REQ is no AP-REP (token id %x): %w", id, ErrRejected)
	}
	var rep messages.APRep
	if err := rep.Unmarshal(msg); err != nil {
		return fmt.Errorf("GSSAPI: the server's AP-REP: %v: %w", err, ErrRejected)
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, g.key, keyusage.AP_REP_ENCPART)
	if err != nil {
		return fmt.Errorf("GSSAPI: the server's AP-REP does not decrypt with the session key: %v: %w", err, ErrRejected)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return fmt.Errorf("GSSAPI: the server's AP-REP: %v: %w", err, ErrRejected)
	}
	if !part.CTime.Equal(g.auth.CTime) || part.Cusec != g.auth.Cusec {
		return fmt.Errorf("GSSAPI: the server's AP-REP does not answer our authenticator: %w", ErrRejected)
	}
	if len(part.Subkey.KeyValue) > 0 && !bytes.Equal(part.Subkey.KeyValue, g.key.KeyValue) {
		g.key = part.Subkey
	}
	return nil
}
