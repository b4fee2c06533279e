package embedded_test

import (
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/regtest"
	"github.com/ejob-io/ejob/internal/testkit"
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
func TestMain(m *testing.M) { testkit.Main(m) }

func BenchmarkSharedCache(b *testing.B) {
	srv := embedded.NewServer()
	regtest.BenchSharedCache(b, func(tb testing.TB, ns string) reg.Client {
		c, err := srv.Connect(ns)
		if err != nil {
			tb.Fatal(err)
		}
		return c
	}, 100, 1000, 10000)
}
