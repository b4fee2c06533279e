package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/core/reg/zookeeper/internal/zkwire"
)

// TestCreateParentsReadsTheAncestryOnce: a create whose parents are
// missing reads the node's ancestry in one multiRead and creates the
// missing ancestors from the first missing down, asking no exists. It pins
// the cost of re-registering thousands of jobs whose election containers
// the server reaped: asking exists of every ancestor from the root, one
// after another as Curator does, took five requests where one does.
func TestCreateParentsReadsTheAncestryOnce(t *testing.T) {
	c := connect(t, testConfig(t, server.Addr(), "mkdirs"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Create(ctx, "/p", nil, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		path    string
		opt     reg.CreateOption
		parents int32 // the opcode the ancestors are created with
	}{
		{"persistent parents", "/p/q/r/s", reg.WithParents(), zkwire.OpCreate},
		{"container parents", "/p/c/d/e", reg.WithParentContainers(), zkwire.OpCreateContainer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := sent(c)
			if _, err := c.Create(ctx, tc.path, []byte("v"), reg.Persistent, tc.opt); err != nil {
				t.Fatal(err)
			}
			got := sent(c).sub(before)
			want := requests{multiRead: 1}
			// The node's create fails (no parent) and succeeds after its
			// two missing ancestors are made.
			want.add(zkwire.OpCreate, 2)
			want.add(tc.parents, 2)
			if got != want {
				t.Errorf("Create %s wrote %v, want %v", tc.path, got, want)
			}
			for p := reg.Parent(tc.path); p != "/p"; p = reg.Parent(p) {
				data, _, err := c.Get(ctx, p)
				if err != nil || len(data) != 0 {
					t.Errorf("ancestor %s: %q, %v; want it with empty data", p, data, err)
				}
			}
			if data, _, err := c.Get(ctx, tc.path); err != nil || string(data) != "v" {
				t.Errorf("%s: %q, %v", tc.path, data, err)
			}
		})
	}
}

// requests counts the request frames of the opcodes a create with parents
// may write.
type requests struct{ exists, create, createContainer, multiRead int64 }

func (r *requests) add(op int32, n int64) {
	switch op {
	case zkwire.OpExists:
		r.exists += n
	case zkwire.OpCreate:
		r.create += n
	case zkwire.OpCreateContainer:
		r.createContainer += n
	case zkwire.OpMultiRead:
		r.multiRead += n
	}
}

func (r requests) sub(o requests) requests {
	return requests{r.exists - o.exists, r.create - o.create, r.createContainer - o.createContainer, r.multiRead - o.multiRead}
}

func sent(c *zookeeper.Client) requests {
	var r requests
	for _, op := range []int32{zkwire.OpExists, zkwire.OpCreate, zkwire.OpCreateContainer, zkwire.OpMultiRead} {
		r.add(op, c.RequestsSent(op))
	}
	return r
}
