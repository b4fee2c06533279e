package embedded_test

import (
	"context"
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

// TestSharedData: the registry keeps the written slice and hands it to
// readers (reg.Client: data written and read is not modified in place),
// and nothing the contract allows changes a node: appending to the slice
// a read returned or to the written one (past its length), reading data
// while a set replaces it.
func TestSharedData(t *testing.T) {
	ctx := context.Background()
	c, err := embedded.NewServer().Connect("shared")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 0, 64)
	buf = append(buf, "value"...)
	if _, err := c.Create(ctx, "/n", buf, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	_ = append(buf, "WRITER"...) // into buf's spare capacity, past the data written
	got, _, err := c.Get(ctx, "/n")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "value" || cap(got) != len(got) {
		t.Fatalf("get = %q, cap %d; want %q, cap %d", got, cap(got), "value", len("value"))
	}
	grown := append(got, "READER"...)
	rs, err := c.MultiRead(ctx, reg.GetOp("/n"))
	if err != nil {
		t.Fatal(err)
	}
	if again := rs[0].Data; string(again) != "value" || cap(again) != len(again) {
		t.Fatalf("after appends: multiread = %q, cap %d; want %q, cap %d", again, cap(again), "value", len("value"))
	}
	if string(grown) != "valueREADER" {
		t.Fatalf("reader's append = %q", grown)
	}
	if _, err := c.Set(ctx, "/n", []byte("new"), reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if string(got) != "value" {
		t.Fatalf("a set changed data read before it: %q", got)
	}
	if now, _, err := c.Get(ctx, "/n"); err != nil || string(now) != "new" {
		t.Fatalf("after set: %q %v", now, err)
	}
	// Empty data reads back empty, not nil (never ZooKeeper's null).
	if _, err := c.Create(ctx, "/empty", make([]byte, 0, 8), reg.Persistent); err != nil {
		t.Fatal(err)
	}
	if e, _, err := c.Get(ctx, "/empty"); err != nil || e == nil || len(e) != 0 {
		t.Fatalf("empty node = %#v %v", e, err)
	}
}
