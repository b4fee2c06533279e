package zookeeper

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg/zookeeper/internal/zkwire"
)

// zxidHold lets through what cannot reach go-zookeeper's lastZxid write nor
// its watch table: pings and replies without a zxid (setAuth's).
func TestZxidHold(t *testing.T) {
	frame := func(xid int32, zxid int64) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(xid))
		b = binary.BigEndian.AppendUint64(b, uint64(zxid))
		return binary.BigEndian.AppendUint32(b, 0)
	}
	cases := []struct {
		f    []byte
		hold bool
	}{
		{frame(5, 0), false},    // setAuth's answer
		{frame(-2, 7), false},   // ping
		{frame(5, 7), true},     // a reply recvLoop takes the zxid of
		{frame(-1, -1), true},   // a notification (changes the watch table)
		{frame(0, 7), true},     // xid 0 is go-zookeeper's too
		{[]byte{0, 0, 0}, true}, // what it cannot read, it holds
	}
	for i, c := range cases {
		if got := zxidHold(c.f); got != c.hold {
			t.Errorf("case %d: hold %v, want %v", i, got, c.hold)
		}
	}
}

// A held connection whose go-zookeeper writes no setWatches by its read
// deadline lets the frame through and reports the deviation; one whose
// connection fails meanwhile returns an error, not the frame.
func TestHeldConnectionWithoutSetWatches(t *testing.T) {
	for _, fail := range []bool{false, true} {
		client, server := net.Pipe()
		sc := newSniffConn(client, "test", newLibWatches())
		sc.rd.framed, sc.rd.hold = true, true
		var deviated []string
		sc.deviation = func(what string) { deviated = append(deviated, what) }
		if fail {
			sc.shut()
		} else {
			sc.st.readDL = time.Now().Add(50 * time.Millisecond) // go-zookeeper's, not the pipe's
		}
		reply := binary.BigEndian.AppendUint32(nil, 5)
		reply = binary.BigEndian.AppendUint64(reply, 9)
		reply = binary.BigEndian.AppendUint32(reply, 0)
		go func() { _, _ = server.Write(zkwire.WithLength(reply)) }()
		got := make([]byte, 4+len(reply))
		_, err := io.ReadFull(sc, got)
		switch {
		case fail && err == nil:
			t.Fatal("a failed connection handed over a held frame")
		case !fail && err != nil:
			t.Fatal(err)
		case !fail && len(deviated) != 1:
			t.Fatalf("deviations %q, want one", deviated)
		}
		_ = client.Close()
		_ = server.Close()
	}
}
