package zkwire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// A frame is a record's length (4 bytes, big-endian) and the record. The
// functions here take and return frames without their length.

// MaxFrame bounds one frame from the server (the default jute.maxbuffer
// limits a node to 1 MiB; a multiRead reply carries a few hundred).
const MaxFrame = 256 << 20

// WriteFrame writes body as one frame with one Write.
func WriteFrame(w io.Writer, body []byte) error {
	_, err := w.Write(WithLength(body))
	return err
}

// WithLength is f with its length in front.
func WithLength(f []byte) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(f)), uint32(len(f)))
	return append(b, f...)
}

// ReadFrame reads one frame of at most 1 MiB.
func ReadFrame(r io.Reader) ([]byte, error) { return ReadFrameMax(r, 1<<20) }

// ReadFrameMax reads one frame of at most limit bytes.
func ReadFrameMax(r io.Reader, limit uint32) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > limit {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

// Xid is a reply frame's xid (ReplyHeader{xid, zxid, err}; 0 for a frame
// too short).
func Xid(f []byte) int32 {
	if len(f) < 4 {
		return 0
	}
	return int32(binary.BigEndian.Uint32(f))
}

// ReplyCode is a reply frame's error code: connectionLoss for a truncated
// frame.
func ReplyCode(f []byte) int32 {
	if len(f) < 16 {
		return CodeConnectionLoss
	}
	return int32(binary.BigEndian.Uint32(f[12:]))
}

// ConnectResponse is jute ConnectResponse{int protocolVersion, int
// timeOut, long sessionId, buffer passwd}.
type ConnectResponse struct {
	TimeoutMs int32
	SessionID int64
	Passwd    []byte
}

// ParseConnectResponse decodes a connect response frame.
func ParseConnectResponse(b []byte) (ConnectResponse, bool) {
	if len(b) < 20 {
		return ConnectResponse{}, false
	}
	cr := ConnectResponse{
		TimeoutMs: int32(binary.BigEndian.Uint32(b[4:])),
		SessionID: int64(binary.BigEndian.Uint64(b[8:])),
	}
	n := int(int32(binary.BigEndian.Uint32(b[16:])))
	if n > 0 && len(b) >= 20+n {
		cr.Passwd = append([]byte(nil), b[20:20+n]...)
	}
	return cr, true
}

// ConnectRequest is jute ConnectRequest{int protocolVersion, long
// lastZxidSeen, int timeOut, long sessionId, buffer passwd} for
// protocol 0 and zxid 0: attaching to session id.
func ConnectRequest(timeoutMs int32, id int64, passwd []byte) []byte {
	w := W{}
	w.Int32(0)
	w.Int64(0)
	w.Int32(timeoutMs)
	w.Int64(id)
	w.Buffer(passwd)
	return w.B
}

// WalkMulti reads a multi or multiRead reply frame (xid first) of n ops:
// a non-zero error code in its reply header is returned as code; else fn
// gets each result's index, header type and error code, and reads the
// result's record from j (setting j.Err for one it cannot read). err is
// a malformed frame's.
func WalkMulti(f []byte, n int, fn func(j *R, i int, typ, code int32)) (code int32, err error) {
	j := &R{B: f}
	j.Int32() // xid
	j.Int64() // zxid
	if code := j.Int32(); j.Err == nil && code != 0 {
		return code, nil
	}
	count := 0
	for {
		typ, done, code := j.Int32(), j.Bool(), j.Int32()
		if j.Err != nil || done {
			break
		}
		if count >= n {
			j.Err = fmt.Errorf("more than %d results", n)
			break
		}
		fn(j, count, typ, code)
		count++
	}
	if j.Err == nil && count != n {
		j.Err = fmt.Errorf("%d results for %d ops", count, n)
	}
	return 0, j.Err
}
