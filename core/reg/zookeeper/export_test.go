package zookeeper

import (
	"strings"

	"github.com/go-zookeeper/zk"
)

// LibConn is the client's go-zookeeper connection, for tests that drive the
// library directly.
func (c *Client) LibConn() *zk.Conn { return c.conn }

// Abs is the server path of a namespace-relative path.
func (c *Client) Abs(p string) string { return c.abs(p) }

// HoldDials makes new connections wait until release is called.
func (c *Client) HoldDials() (release func()) {
	gate := make(chan struct{})
	c.mu.Lock()
	c.gate = gate
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		if c.gate == gate {
			c.gate = nil
			close(gate)
		}
		c.mu.Unlock()
	}
}

// Deviations counts go-zookeeper behaving otherwise than library.go says.
func (c *Client) Deviations() int64 { return c.deviations.Load() }

// WatchTable is the table of go-zookeeper's one-shot watches the client
// keeps, by server path, its kinds named.
func (c *Client) WatchTable() map[string]string {
	out := map[string]string{}
	for p, b := range c.libw.snapshot() {
		var s []string
		for _, k := range []struct {
			b    stdBits
			name string
		}{{stdData, "data"}, {stdExist, "exist"}, {stdChild, "child"}} {
			if b&k.b != 0 {
				s = append(s, k.name)
			}
		}
		out[p] = strings.Join(s, "+")
	}
	return out
}

// SetWatchesSent counts the setWatches frames go-zookeeper wrote.
func (c *Client) SetWatchesSent() int64 { return c.setWatchesSent.Load() }

// RequestsSent counts the request frames of opcode op (zkwire's) the client
// wrote, go-zookeeper's and its own.
func (c *Client) RequestsSent(op int32) int64 {
	if op < 0 || op >= 128 {
		op = 128
	}
	return c.sent[op].Load()
}
