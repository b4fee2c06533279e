package golden_test

import (
	"errors"
	"io"
	"log"
	"path"
	"testing"
	"time"

	// The one test outside core/reg/zookeeper that imports go-zookeeper: it
	// reads the tree with the raw client, not through ejob's own registry
	// code, so it sees the bytes a Java instance sees.
	"github.com/go-zookeeper/zk"
)

// javaReader reads a namespace the way a Java ElasticJob instance does with
// ZookeeperRegistryCenter.getDirectly (client.getData().forPath(key), then
// new String(bytes, UTF_8)): a node whose data is ZooKeeper's null makes
// that throw a NullPointerException, which breaks the Java dump port.
type javaReader struct {
	conn *zk.Conn
	root string
}

func newJavaReader(t *testing.T, addr, namespace string) *javaReader {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatalf("raw zk connect: %v", err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return &javaReader{conn: conn, root: "/" + namespace}
			}
		case <-deadline:
			t.Fatal("raw zk: no session within 20 s")
		}
	}
}

// nulls reads every node under the namespace (and the namespace node) and
// returns how many it read and the namespace-relative paths whose data is
// null. Nodes deleted during the walk are skipped.
func (r *javaReader) nulls() (read int, null []string, err error) {
	var walk func(full string) error
	walk = func(full string) error {
		data, _, err := r.conn.Get(full)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		read++
		if data == nil {
			rel := full[len(r.root):]
			if rel == "" {
				rel = "/"
			}
			null = append(null, rel)
		}
		kids, _, err := r.conn.Children(full)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := walk(path.Join(full, k)); err != nil {
				return err
			}
		}
		return nil
	}
	err = walk(r.root)
	return read, null, err
}

// check fails t for every null node now in the tree.
func (r *javaReader) check(t *testing.T, when string) {
	t.Helper()
	read, null, err := r.nulls()
	if err != nil {
		t.Fatalf("%s: raw read: %v", when, err)
	}
	if read == 0 {
		t.Fatalf("%s: raw read found no nodes under %s", when, r.root)
	}
	for _, p := range null {
		t.Errorf("%s: %s has null data (length -1): Java's getDirectly throws a NullPointerException on it; Curator writes empty data", when, p)
	}
}
