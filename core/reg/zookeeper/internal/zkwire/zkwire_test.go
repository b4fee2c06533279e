package zkwire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// A record written with W reads back with R; a null buffer reads as nil, an
// empty one as empty; a truncated record sets Err and reads zeros after.
func TestJuteRoundTrip(t *testing.T) {
	w := W{}
	w.Int32(-7)
	w.Int64(1 << 40)
	w.Bool(true)
	w.String("/a")
	w.Buffer([]byte{})
	w.Int32(-1) // a null buffer
	j := &R{B: w.B}
	if v := j.Int32(); v != -7 {
		t.Fatalf("int32 %d", v)
	}
	if v := j.Int64(); v != 1<<40 {
		t.Fatalf("int64 %d", v)
	}
	if !j.Bool() {
		t.Fatal("bool false")
	}
	if v := j.Buffer(); string(v) != "/a" {
		t.Fatalf("string %q", v)
	}
	if v := j.Buffer(); v == nil || len(v) != 0 {
		t.Fatalf("empty buffer %v", v)
	}
	if v := j.Buffer(); v != nil {
		t.Fatalf("null buffer %v", v)
	}
	if j.Err != nil || len(j.B) != 0 {
		t.Fatalf("err %v, %d bytes left", j.Err, len(j.B))
	}
	if v := j.Int32(); v != 0 || j.Err == nil {
		t.Fatalf("read past the end: %d, err %v", v, j.Err)
	}
}

// Frames carry their length; a frame over the limit is refused.
func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), WithLength([]byte("abc"))) {
		t.Fatalf("frame %x", buf.Bytes())
	}
	f, err := ReadFrame(bytes.NewReader(buf.Bytes()))
	if err != nil || string(f) != "abc" {
		t.Fatalf("read %q %v", f, err)
	}
	if _, err := ReadFrameMax(bytes.NewReader(buf.Bytes()), 2); err == nil {
		t.Fatal("a frame over the limit was read")
	}
	if _, err := ReadFrame(bytes.NewReader(buf.Bytes()[:5])); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated frame: %v", err)
	}
}

// A connect request for a session reads back as the session's connect
// response does (the same fields after the protocol version).
func TestConnectRecords(t *testing.T) {
	req := ConnectRequest(4000, 0x1234, []byte("pw"))
	// Request: version, zxid, timeout, id, passwd; a response lacks the zxid.
	resp := append(append([]byte{}, req[:4]...), req[12:]...)
	cr, ok := ParseConnectResponse(resp)
	if !ok || cr.TimeoutMs != 4000 || cr.SessionID != 0x1234 || string(cr.Passwd) != "pw" {
		t.Fatalf("%+v %v", cr, ok)
	}
	if _, ok := ParseConnectResponse(resp[:19]); ok {
		t.Fatal("a short response parsed")
	}
}

// WalkMulti hands each result to fn and refuses a reply whose result count
// differs from the ops'; a header error comes back as code.
func TestWalkMulti(t *testing.T) {
	reply := func(code int32, results int) []byte {
		w := W{}
		w.Int32(5)
		w.Int64(9)
		w.Int32(code)
		for range results {
			w.MultiHeader(OpCheck, false, 0)
		}
		w.MultiHeader(-1, true, -1)
		return w.B
	}
	n := 0
	if code, err := WalkMulti(reply(0, 2), 2, func(*R, int, int32, int32) { n++ }); code != 0 || err != nil || n != 2 {
		t.Fatalf("code %d, err %v, %d results", code, err, n)
	}
	if _, err := WalkMulti(reply(0, 1), 2, func(*R, int, int32, int32) {}); err == nil {
		t.Fatal("1 result for 2 ops accepted")
	}
	if code, _ := WalkMulti(reply(CodeNoNode, 0), 2, func(*R, int, int32, int32) {}); code != CodeNoNode {
		t.Fatalf("code %d", code)
	}
	if ReplyCode(reply(CodeNoAuth, 0)) != CodeNoAuth || Xid(reply(0, 0)) != 5 || ReplyCode([]byte{1}) != CodeConnectionLoss {
		t.Fatal("reply header")
	}
}
