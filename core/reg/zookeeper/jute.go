package zookeeper

import (
	"encoding/binary"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/ejob-io/ejob/core/reg"
)

// juteW builds a request record in ZooKeeper's jute encoding (big-endian
// ints, length-prefixed strings and buffers, one byte per bool). ejob
// writes its own requests (multi with containers, multiRead, addWatch,
// the SASL exchange, the expiry probe's connect) on go-zookeeper's
// connection because v1.0.4 has no API for them; every one of them is
// framed here.
type juteW struct{ b []byte }

func (w *juteW) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }

func (w *juteW) int64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }

func (w *juteW) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *juteW) string(s string) {
	w.int32(int32(len(s)))
	w.b = append(w.b, s...)
}

func (w *juteW) buffer(data []byte) {
	w.int32(int32(len(data)))
	w.b = append(w.b, data...)
}

// multiHeader is a MultiHeader{type, done, err}.
func (w *juteW) multiHeader(typ int32, done bool, code int32) {
	w.int32(typ)
	w.bool(done)
	w.int32(code)
}

// ownXid is the xid of ejob's next request of its own (see isOwnXid).
func (c *Client) ownXid() int32 { return int32(ownXidTop - c.xid.Add(1)%ownXids) }

// ownRequest sends body (a request after its xid) on the current
// connection with an xid of ejob's and returns the reply frame.
func (c *Client) ownRequest(body []byte) ([]byte, error) {
	sc := c.wire.Load()
	if sc == nil {
		return nil, zk.ErrConnectionClosed
	}
	return sc.roundTrip(c.ownXid(), body, ms(c.cfg.ConnectionTimeoutMilliseconds), c.closing)
}

// jute reads a reply's fields; the first malformed read sets err.
type jute struct {
	b   []byte
	err error
}

func (j *jute) need(n int) bool {
	if j.err == nil && len(j.b) < n {
		j.err = fmt.Errorf("%d bytes left, need %d", len(j.b), n)
	}
	return j.err == nil
}

func (j *jute) int32() int32 {
	if !j.need(4) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(j.b))
	j.b = j.b[4:]
	return v
}

func (j *jute) int64() int64 {
	if !j.need(8) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(j.b))
	j.b = j.b[8:]
	return v
}

func (j *jute) bool() bool {
	if !j.need(1) {
		return false
	}
	v := j.b[0] != 0
	j.b = j.b[1:]
	return v
}

// buffer is a jute buffer: nil for length -1 (ZooKeeper's null), else a
// copy (empty, not nil, for length 0), as go-zookeeper decodes it.
func (j *jute) buffer() []byte {
	n := j.int32()
	if n < 0 || !j.need(int(n)) {
		return nil
	}
	v := append(make([]byte, 0, n), j.b[:n]...)
	j.b = j.b[n:]
	return v
}

func (j *jute) stat() reg.Stat {
	var s reg.Stat
	s.Czxid, s.Mzxid, s.Ctime, s.Mtime = j.int64(), j.int64(), j.int64(), j.int64()
	s.Version, s.Cversion, s.Aversion = j.int32(), j.int32(), j.int32()
	s.EphemeralOwner = j.int64()
	s.DataLength, s.NumChildren = j.int32(), j.int32()
	s.Pzxid = j.int64()
	return s
}
