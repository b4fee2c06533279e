package embedded_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/regtest"
)

func TestSuite(t *testing.T) {
	srv := embedded.NewServer()
	regtest.Run(t, regtest.Harness{
		Connect: func(t testing.TB, ns string) reg.Client {
			c, err := srv.Connect(ns)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		Disconnect: func(t testing.TB, c reg.Client) { c.(*embedded.Client).Suspend() },
		Reconnect:  func(t testing.TB, c reg.Client) { c.(*embedded.Client).Resume() },
		Wait:       5 * time.Second,
	})
}

// TestMain fails the binary if goroutines outlive the tests (clients closed,
// caches stopped, subscriptions ended).
func TestMain(m *testing.M) {
	base := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > base {
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "goroutine leak: %d > %d\n%s\n", n, base, buf[:runtime.Stack(buf, true)])
			code = 1
		}
	}
	os.Exit(code)
}
