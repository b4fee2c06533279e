package transport

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"math/big"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestCheckHandshake: the first line a plugin prints is refused, with a
// reason, unless it is what sdk.Serve prints: core protocol 1, this ejob
// protocol version, a Unix socket that exists (or a TCP address), gRPC
// and an AutoMTLS certificate.
func TestCheckHandshake(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "plugin.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cert := testCert(t)
	v := strconv.Itoa
	tests := map[string]struct {
		line string
		want error  // nil: accepted
		msg  string // in the error
	}{
		"valid unix":      {line: "1|" + v(ProtocolVersion) + "|unix|" + sock + "|grpc|" + cert},
		"valid tcp":       {line: "1|" + v(ProtocolVersion) + "|tcp|127.0.0.1:1234|grpc|" + cert},
		"garbage":         {line: "this|is not|a handshake", want: ErrNotPlugin, msg: `printed "this|is not|a handshake" on stdout`},
		"core protocol":   {line: "2|" + v(ProtocolVersion) + "|unix|" + sock + "|grpc|" + cert, want: ErrProtocolVersion, msg: `go-plugin core protocol "2"`},
		"ejob protocol":   {line: "1|1|unix|" + sock + "|grpc|" + cert, want: ErrProtocolVersion, msg: `ejob plugin protocol version "1", this host speaks ejob plugin protocol version ` + v(ProtocolVersion)},
		"no such socket":  {line: "1|" + v(ProtocolVersion) + "|unix|/nonexistent/plugin.sock|grpc|" + cert, want: ErrNotPlugin, msg: `Unix socket "/nonexistent/plugin.sock", which does not exist`},
		"bad network":     {line: "1|" + v(ProtocolVersion) + "|udp|x|grpc|" + cert, want: ErrNotPlugin, msg: `network "udp"`},
		"net/rpc":         {line: "1|" + v(ProtocolVersion) + "|unix|" + sock, want: ErrNotPlugin, msg: `serves the "netrpc" protocol`},
		"no certificate":  {line: "1|" + v(ProtocolVersion) + "|unix|" + sock + "|grpc|", want: ErrNotPlugin, msg: "no TLS certificate"},
		"bad certificate": {line: "1|" + v(ProtocolVersion) + "|unix|" + sock + "|grpc|bm90IGEgY2VydA", want: ErrNotPlugin, msg: "invalid TLS certificate"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := checkHandshake(tt.line)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line wrapping %v saying %q", err, tt.want, tt.msg)
			}
		})
	}
}

func testCert(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawStdEncoding.EncodeToString(der)
}

// TestContains finds a string across the reader's chunk boundaries.
func TestContains(t *testing.T) {
	t.Parallel()
	s := []byte(magicCookieValue)
	for _, at := range []int{0, 1<<20 - 3, 1 << 20, 3<<20 - len(s)} {
		data := make([]byte, 3<<20)
		copy(data[at:], s)
		if ok, err := contains(bytes.NewReader(data), s); !ok || err != nil {
			t.Errorf("at %d: contains = %v, %v", at, ok, err)
		}
		if ok, _ := contains(iotest.HalfReader(bytes.NewReader(data)), s); !ok {
			t.Errorf("at %d, half reads: not found", at)
		}
	}
	if ok, _ := contains(bytes.NewReader(make([]byte, 3<<20)), s); ok {
		t.Error("found in zeros")
	}
}
