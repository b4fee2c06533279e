package zkwire

import (
	"encoding/binary"
	"fmt"

	"github.com/ejob-io/ejob/core/reg"
)

// W builds a record in ZooKeeper's jute encoding (big-endian ints,
// length-prefixed strings and buffers, one byte per bool) in B.
type W struct{ B []byte }

func (w *W) Int32(v int32) { w.B = binary.BigEndian.AppendUint32(w.B, uint32(v)) }

func (w *W) Int64(v int64) { w.B = binary.BigEndian.AppendUint64(w.B, uint64(v)) }

func (w *W) Bool(v bool) {
	if v {
		w.B = append(w.B, 1)
	} else {
		w.B = append(w.B, 0)
	}
}

func (w *W) String(s string) {
	w.Int32(int32(len(s)))
	w.B = append(w.B, s...)
}

func (w *W) Buffer(data []byte) {
	w.Int32(int32(len(data)))
	w.B = append(w.B, data...)
}

// MultiHeader is a MultiHeader{type, done, err}.
func (w *W) MultiHeader(typ int32, done bool, code int32) {
	w.Int32(typ)
	w.Bool(done)
	w.Int32(code)
}

// R reads a record's fields from B; the first malformed read sets Err and
// every later one returns a zero value.
type R struct {
	B   []byte
	Err error
}

// Need reports whether n more bytes are there (else sets Err).
func (j *R) Need(n int) bool {
	if j.Err == nil && len(j.B) < n {
		j.Err = fmt.Errorf("%d bytes left, need %d", len(j.B), n)
	}
	return j.Err == nil
}

func (j *R) Int32() int32 {
	if !j.Need(4) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(j.B))
	j.B = j.B[4:]
	return v
}

func (j *R) Int64() int64 {
	if !j.Need(8) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(j.B))
	j.B = j.B[8:]
	return v
}

func (j *R) Bool() bool {
	if !j.Need(1) {
		return false
	}
	v := j.B[0] != 0
	j.B = j.B[1:]
	return v
}

// Buffer is a jute buffer: nil for length -1 (ZooKeeper's null), else a
// copy (empty, not nil, for length 0), as go-zookeeper decodes it.
func (j *R) Buffer() []byte {
	n := j.Int32()
	if n < 0 || !j.Need(int(n)) {
		return nil
	}
	v := append(make([]byte, 0, n), j.B[:n]...)
	j.B = j.B[n:]
	return v
}

// Stat is a Stat record.
func (j *R) Stat() reg.Stat {
	var s reg.Stat
	s.Czxid, s.Mzxid, s.Ctime, s.Mtime = j.Int64(), j.Int64(), j.Int64(), j.Int64()
	s.Version, s.Cversion, s.Aversion = j.Int32(), j.Int32(), j.Int32()
	s.EphemeralOwner = j.Int64()
	s.DataLength, s.NumChildren = j.Int32(), j.Int32()
	s.Pzxid = j.Int64()
	return s
}
