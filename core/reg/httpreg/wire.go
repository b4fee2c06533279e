package httpreg

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ejob-io/ejob/core/jsonhttp"
	"github.com/ejob-io/ejob/core/reg"
)

// PathPrefix is the URL path under which Handler serves, one POST per
// method: PathPrefix+"get", "exists", "children", "multiread", "create",
// "set", "delete", "multi", and a GET of PathPrefix+"info".
const PathPrefix = "/registry/v1/"

// The wire messages. Node data is base64 (encoding/json's []byte); null is
// a node whose data is ZooKeeper's null.

type pathRequest struct {
	Path string `json:"path"`
}

type getResponse struct {
	Data []byte   `json:"data"`
	Stat reg.Stat `json:"stat"`
}

type existsResponse struct {
	Stat   reg.Stat `json:"stat"`
	Exists bool     `json:"exists"`
}

type childrenResponse struct {
	Children []string `json:"children"`
}

type readOp struct {
	Kind reg.ReadKind `json:"kind"`
	Path string       `json:"path"`
}

type multiReadRequest struct {
	Ops []readOp `json:"ops"`
}

type readResult struct {
	Data     []byte     `json:"data"`
	Stat     reg.Stat   `json:"stat"`
	Children []string   `json:"children"`
	Error    *wireError `json:"error,omitempty"`
}

type multiReadResponse struct {
	Results []readResult `json:"results"`
}

type createRequest struct {
	Path    string         `json:"path"`
	Data    []byte         `json:"data"`
	Mode    reg.CreateMode `json:"mode"`
	Parents reg.ParentMode `json:"parents"`
}

type createResponse struct {
	Path string `json:"path"`
}

type setRequest struct {
	Path    string `json:"path"`
	Data    []byte `json:"data"`
	Version int32  `json:"version"`
}

type statResponse struct {
	Stat reg.Stat `json:"stat"`
}

type deleteRequest struct {
	Path    string `json:"path"`
	Version int32  `json:"version"`
}

type op struct {
	Kind    reg.OpKind     `json:"kind"`
	Path    string         `json:"path"`
	Data    []byte         `json:"data"`
	Version int32          `json:"version"`
	Mode    reg.CreateMode `json:"mode"`
}

type multiRequest struct {
	Ops []op `json:"ops"`
}

type multiResponse struct {
	Results []reg.OpResult `json:"results"`
}

type infoResponse struct {
	Namespace string `json:"namespace"`
}

type errorResponse struct {
	Error *wireError `json:"error"`
}

// wireError is an error as it crosses: the reg sentinel it wraps (Code),
// the operation and path of its reg.OpError, its text, and for a failed
// transaction the failing op.
type wireError struct {
	Code    string     `json:"code"`
	Op      string     `json:"op,omitempty"`
	Path    string     `json:"path,omitempty"`
	Message string     `json:"message"`
	Multi   *multiFail `json:"multi,omitempty"`
}

type multiFail struct {
	Index int        `json:"index"`
	Kind  reg.OpKind `json:"kind"`
	Path  string     `json:"path"`
}

// sentinels maps each wire code to the reg sentinel it stands for.
func sentinels() map[string]error {
	return map[string]error{
		"NO_NODE":                    reg.ErrNoNode,
		"NODE_EXISTS":                reg.ErrNodeExists,
		"BAD_VERSION":                reg.ErrBadVersion,
		"NOT_EMPTY":                  reg.ErrNotEmpty,
		"NO_CHILDREN_FOR_EPHEMERALS": reg.ErrNoChildrenForEphemerals,
		"NO_AUTH":                    reg.ErrNoAuth,
		"CONNECTION_LOSS":            reg.ErrConnectionLoss,
		"SESSION_LOST":               reg.ErrSessionLost,
		"CLOSED":                     reg.ErrClosed,
		"INVALID_ARGUMENT":           reg.ErrInvalidArgument,
		"UNIMPLEMENTED":              reg.ErrUnimplemented,
	}
}

// codeOf is the wire code of err's sentinel ("" for none).
func codeOf(err error) string { return jsonhttp.CodeOf(sentinels(), err) }

// toWire describes err, the result of op on path, for the wire.
func toWire(opName, path string, err error) *wireError {
	w := &wireError{Code: codeOf(err), Op: opName, Path: path, Message: err.Error()}
	var oe *reg.OpError
	if errors.As(err, &oe) {
		w.Op, w.Path, w.Message = oe.Op, oe.Path, strings.TrimPrefix(oe.Err.Error(), "reg: ")
		var me *reg.MultiError
		if errors.As(oe.Err, &me) {
			w.Multi = &multiFail{Index: me.Index, Kind: me.Op.Kind, Path: me.Op.Path}
			w.Message = strings.TrimPrefix(me.Err.Error(), "reg: ")
		}
	}
	return w
}

// fromWire is the error w describes, as the registry behind the handler
// returned it: an *reg.OpError wrapping the same sentinel (and a
// *reg.MultiError for a failed transaction).
func fromWire(w *wireError) error {
	var cause error = &jsonhttp.RemoteError{Message: w.Message, Sentinel: sentinels()[w.Code]}
	if w.Multi != nil {
		cause = &reg.MultiError{Index: w.Multi.Index, Op: reg.Op{Kind: w.Multi.Kind, Path: w.Multi.Path}, Err: cause}
	}
	return &reg.OpError{Op: w.Op, Path: w.Path, Err: cause}
}

// unexpected is an answer that is not the protocol's.
func unexpected(opName, path string, format string, args ...any) error {
	return &reg.OpError{Op: opName, Path: path, Err: fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), reg.ErrConnectionLoss)}
}
