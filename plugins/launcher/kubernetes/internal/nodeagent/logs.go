package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// serveLogs answers the kubelet's container log path on ln (TLS with a
// certificate of its own: the API server of the test cluster does not
// check it), GET /containerLogs/{namespace}/{pod}/{container} with
// tailLines, from the container's log file in the pod's directory, so that
// pods/log (kubectl logs) reads what a container printed.
func (a *agent) serveLogs(ctx context.Context, ln net.Listener) error {
	cert, err := selfSigned(a.cfg.name)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", a.containerLog)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("log server: %w", err)
	}
	return nil
}

func (a *agent) containerLog(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	var dir string
	a.mu.Lock()
	for _, p := range a.pods {
		if p.pod.Namespace == ns && p.pod.Name == name {
			dir = p.dir
		}
	}
	a.mu.Unlock()
	if dir == "" {
		http.Error(w, fmt.Sprintf("pod %s/%s does not run on this node", ns, name), http.StatusNotFound)
		return
	}
	b, err := os.ReadFile(filepath.Join(dir, filepath.Base(container)+".log"))
	if errors.Is(err, os.ErrNotExist) {
		b, err = nil, nil
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if v := r.URL.Query().Get("tailLines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			http.Error(w, fmt.Sprintf("tailLines %q: want a number of lines", v), http.StatusBadRequest)
			return
		}
		b = tail(b, n)
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(b)
}

// tail is the last n lines of b.
func tail(b []byte, n int) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, nil)
}

// selfSigned is a serving certificate for 127.0.0.1 and the node's name.
func selfSigned(node string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: node},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{node},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("log server certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
