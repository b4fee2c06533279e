package zookeeper

import (
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper/internal/zkwire"
)

// ZooKeeper's multi (zookeeper.jute): RequestHeader{xid, type=multi} and a
// MultiOperationRecord of ops, each MultiHeader{type, done=false, err=-1}
// and its request record (CreateRequest{path, data, acl, flags},
// DeleteRequest{path, version}, SetDataRequest{path, data, version},
// CheckVersionRequest{path, version}), ended by MultiHeader{-1, true, -1}.
// The reply is ReplyHeader{xid, zxid, err} and a MultiResponse: per op a
// MultiHeader{type, false, err} and CreateResponse{path} (create),
// Create2Response{path, stat} (createContainer), SetDataResponse{stat}, no
// record (delete, check) or ErrorResponse{err} (type error: every op of a
// failed transaction, 0 for the ops before the failing one); then
// MultiHeader{-1, true, -1}. ZooKeeper 3.8 answers a create2 in a multi
// with a CreateResponse (no stat), so the created node's Czxid is taken
// from the ReplyHeader: the zxid of the transaction, which creates every
// node of it. go-zookeeper v1.0.4 reports neither that zxid nor a
// createContainer's result, so a transaction that creates a node is
// written on go-zookeeper's connection by ejob itself (sniffConn), as
// multiRead is.

// hasCreate reports whether ops create a node.
func hasCreate(ops []reg.Op) bool {
	for _, op := range ops {
		if op.Kind == reg.OpCreate {
			return true
		}
	}
	return false
}

// multiTxn sends ops (already validated) as one multi request on the
// current connection and returns go-zookeeper's view of the reply: the
// per-op results, and the error of the first failing op (nil when the
// transaction was applied).
func (c *Client) multiTxn(ops []reg.Op) ([]zk.MultiResponse, error) {
	w := zkwire.W{}
	w.Int32(zkwire.OpMulti)
	for _, op := range ops {
		full := c.abs(op.Path)
		switch op.Kind {
		case reg.OpCreate:
			t := int32(zkwire.OpCreate)
			if op.Mode == reg.Container {
				t = zkwire.OpCreateContainer
			}
			w.MultiHeader(t, false, -1)
			w.String(full)
			w.Buffer(nonNull(op.Data))
			w.Int32(int32(len(c.acl)))
			for _, a := range c.acl {
				w.Int32(a.Perms)
				w.String(a.Scheme)
				w.String(a.ID)
			}
			w.Int32(createFlags(op.Mode))
		case reg.OpDelete:
			w.MultiHeader(zkwire.OpDelete, false, -1)
			w.String(full)
			w.Int32(op.Version)
		case reg.OpSet:
			w.MultiHeader(zkwire.OpSetData, false, -1)
			w.String(full)
			w.Buffer(nonNull(op.Data))
			w.Int32(op.Version)
		case reg.OpCheck:
			w.MultiHeader(zkwire.OpCheck, false, -1)
			w.String(full)
			w.Int32(op.Version)
		}
	}
	w.MultiHeader(-1, true, -1)
	f, err := c.ownRequest(w.B)
	if err != nil {
		return nil, err
	}
	return decodeMultiTxn(f, ops)
}

// txnCodeErr is the go-zookeeper error for an op's error code in a failed
// transaction (nil for 0: an op before the failing one).
func txnCodeErr(code int32) error {
	switch code {
	case 0:
		return nil
	case -2:
		return fmt.Errorf("zookeeper error code %d (runtime inconsistency: an earlier op failed)", code)
	case -103:
		return zk.ErrBadVersion
	case -108:
		return zk.ErrNoChildrenForEphemerals
	case -110:
		return zk.ErrNodeExists
	case -111:
		return zk.ErrNotEmpty
	case -114:
		return zk.ErrInvalidACL
	case -8:
		return zk.ErrBadArguments
	}
	return codeErr(code)
}

// decodeMultiTxn decodes a multi reply frame (xid first) for ops. The
// result of a create carries the transaction's zxid as its Stat's Czxid.
func decodeMultiTxn(f []byte, ops []reg.Op) ([]zk.MultiResponse, error) {
	out := make([]zk.MultiResponse, len(ops))
	hdr := &zkwire.R{B: f}
	hdr.Int32() // xid
	zxid := hdr.Int64()
	var first error
	code, err := zkwire.WalkMulti(f, len(ops), func(j *zkwire.R, i int, typ, code int32) {
		r := &out[i]
		switch typ {
		case zkwire.OpError:
			r.Error = txnCodeErr(j.Int32())
			if first == nil {
				first = r.Error
			}
		case zkwire.OpCreate:
			r.String = string(j.Buffer())
			r.Stat = &zk.Stat{Czxid: zxid}
		case zkwire.OpCreateContainer, 15: // 15: create2
			r.String = string(j.Buffer())
			j.Stat()
			r.Stat = &zk.Stat{Czxid: zxid}
		case zkwire.OpSetData:
			st := j.Stat()
			r.Stat = &zk.Stat{Czxid: st.Czxid, Mzxid: st.Mzxid, Ctime: st.Ctime, Mtime: st.Mtime,
				Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: st.EphemeralOwner,
				DataLength: st.DataLength, NumChildren: st.NumChildren, Pzxid: st.Pzxid}
		case zkwire.OpDelete, zkwire.OpCheck:
		default:
			j.Err = fmt.Errorf("result %d of type %d (error code %d) for a %s", i, typ, code, ops[i].Kind)
		}
	})
	if code != 0 {
		return nil, txnCodeErr(code)
	}
	if err != nil {
		return nil, fmt.Errorf("malformed multi reply: %w", err)
	}
	return out, first
}
