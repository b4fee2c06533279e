package embedded_test

import (
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/regtest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// connector connects clients of srv.
func connector(srv *embedded.Server) func(tb testing.TB, ns string) reg.Client {
	return func(tb testing.TB, ns string) reg.Client {
		c, err := srv.Connect(ns)
		if err != nil {
			tb.Fatal(err)
		}
		return c
	}
}

func TestSuite(t *testing.T) {
	regtest.Run(t, regtest.Harness{
		Connect:    connector(embedded.NewServer()),
		Disconnect: func(t testing.TB, c reg.Client) { c.(*embedded.Client).Suspend() },
		Reconnect:  func(t testing.TB, c reg.Client) { c.(*embedded.Client).Resume() },
		Wait:       5 * time.Second,
	})
}

// TestMain fails the binary if goroutines outlive the tests (clients closed,
// caches stopped, subscriptions ended).
func TestMain(m *testing.M) { testkit.Main(m) }

func BenchmarkSharedCache(b *testing.B) {
	regtest.BenchSharedCache(b, connector(embedded.NewServer()), 100, 1000, 10000)
}
