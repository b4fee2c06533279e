package httpapi_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/host/dump"
	"github.com/ejob-io/ejob/internal/testkit"
)

// The dump endpoint dials only a host the registry knows as a live
// instance of the job: any other address is refused before a dial with
// one answer whatever its port does (open, closed), and a known host's
// failed exchange reads the same for a closed port as for another
// service's open port, whose reply is not passed on: the server cannot be
// used to scan ports or read other services.
func TestDumpDialsOnlyKnownInstances(t *testing.T) {
	f := start(t, defaultUsers(t))
	token := f.login("admin", adminPW)
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	go func() {
		for {
			c, err := open.Accept()
			if err != nil {
				return
			}
			// An open port of another service: its banner, then close.
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n"))
			_ = c.Close()
		}
	}()
	openPort := open.Addr().(*net.TCPAddr).Port
	closedPort := testkit.FreePort(t)
	answer := func(ip string, port int) (int, string) {
		st, data := f.do("POST", "/api/servers/"+ip+"/"+strconv.Itoa(port)+"/jobs/j/dump", token, nil)
		return st, strings.ReplaceAll(string(data), strconv.Itoa(port), "PORT")
	}
	// No instance of j on 127.0.0.1 yet: refused, the same for both ports.
	stOpen, open1 := answer("127.0.0.1", openPort)
	stClosed, closed1 := answer("127.0.0.1", closedPort)
	if stOpen != http.StatusNotFound || stClosed != stOpen || open1 != closed1 || !strings.Contains(open1, "no live instance") {
		t.Errorf("unknown host: open port %d %s, closed port %d %s; want the same 404", stOpen, open1, stClosed, closed1)
	}
	for _, ip := range []string{"localhost", "10.0.0.2", "169.254.169.254", "[::1]", "127.0.0.1:80"} {
		if st, body := answer(ip, openPort); st != http.StatusNotFound && st != http.StatusBadRequest {
			t.Errorf("dump from %s: %d %s, want a refusal", ip, st, body)
		}
	}
	// A known host: a closed port and an open non-dump port read the same.
	f.instance("127.0.0.1@-@43")
	stOpen, open2 := answer("127.0.0.1", openPort)
	stClosed, closed2 := answer("127.0.0.1", closedPort)
	if stOpen != http.StatusOK || stClosed != stOpen || open2 != closed2 || strings.Contains(closed2, "refused") || strings.Contains(open2, "SSH") {
		t.Errorf("known host: open port %d %s, closed port %d %s; want one answer naming no cause", stOpen, open2, stClosed, closed2)
	}
	if !strings.Contains(f.logs.String(), "refused") {
		t.Errorf("the cause is not in the audit log:\n%s", f.logs)
	}
	// A known host's real dump port: the dump, its secrets masked.
	srv, err := dump.Listen("127.0.0.1", 0, dump.Options{Client: f.c, Caches: func(string) (dump.Cache, bool) { return noCache{}, true }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	st, data := f.do("POST", "/api/servers/127.0.0.1/"+strconv.Itoa(srv.Addr().(*net.TCPAddr).Port)+"/jobs/j/dump", token, nil)
	var env struct{ Model string }
	if err := json.Unmarshal(data, &env); err != nil || st != http.StatusOK {
		t.Fatalf("dump: %d %s", st, data)
	}
	if !strings.Contains(env.Model, "/j/config | ") || strings.Contains(env.Model, "hunter2") || strings.Contains(env.Model, "tok123456789") {
		t.Errorf("the dump, want the config without its secrets:\n%s", env.Model)
	}
}

// noCache is a host's cache that holds nothing: the dump shows the
// registry's values.
type noCache struct{}

func (noCache) Get(string) ([]byte, reg.Stat, bool) { return nil, reg.Stat{}, false }
