package zookeeper_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/regtest"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/internal/testkit"
)

// server is the ZooKeeper shared by the whole test binary (started in
// TestMain); tests that stop or restart a server start their own.
var server *zktest.Server

func TestMain(m *testing.M) {
	srv, err := zktest.Launch(zktest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "zookeeper tests need a ZooKeeper server:", err)
		os.Exit(1)
	}
	server = srv
	// Clients, watches and caches must not leave goroutines behind.
	code := testkit.Run(m)
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "stop zookeeper:", err)
	}
	os.Exit(code)
}

// testConfig is a fast-failing config for tests against addr.
func testConfig(t testing.TB, addr, ns string) zookeeper.Config {
	cfg := zookeeper.DefaultConfig(addr, ns)
	cfg.SessionTimeoutMilliseconds = 2000
	cfg.ConnectionTimeoutMilliseconds = 2000
	cfg.BaseSleepTimeMilliseconds = 50
	cfg.MaxSleepTimeMilliseconds = 200
	cfg.MaxRetries = 10
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: testWriter{t}})
	return cfg
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func connect(t testing.TB, cfg zookeeper.Config) *zookeeper.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestSuite(t *testing.T) {
	regtest.Run(t, regtest.Harness{
		Connect: func(t testing.TB, ns string) reg.Client {
			return connect(t, testConfig(t, server.Addr(), ns))
		},
		Disconnect: func(t testing.TB, c reg.Client) { c.(*zookeeper.Client).DropConnection() },
		Wait:       10 * time.Second,
	})
}

func BenchmarkSharedCache(b *testing.B) {
	regtest.BenchSharedCache(b, func(tb testing.TB, ns string) reg.Client {
		return connect(tb, testConfig(tb, server.Addr(), ns))
	}, 100, 1000)
}
