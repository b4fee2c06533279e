package zkwire

// Operation codes (ZooDefs.OpCode) of the requests the adapter writes or
// reads on the wire.
const (
	OpCreate          = 1
	OpDelete          = 2
	OpExists          = 3
	OpGetData         = 4
	OpSetData         = 5
	OpGetChildren     = 8
	OpGetChildren2    = 12
	OpCheck           = 13
	OpMulti           = 14
	OpCreateContainer = 19
	OpMultiRead       = 22
	OpSetAuth         = 100
	OpSetWatches      = 101
	OpSASL            = 102
	OpAddWatch        = 106
	OpCloseSession    = -11
	// OpError is the type of a failed op's result in a multi reply.
	OpError = -1
)

// Error codes (KeeperException.Code) the adapter decodes itself.
const (
	CodeConnectionLoss               = -4
	CodeUnimplemented                = -6
	CodeNoNode                       = -101
	CodeNoAuth                       = -102
	CodeSessionExpired               = -112
	CodeAuthFailed                   = -115
	CodeSessionMoved                 = -118
	CodeSessionClosedRequireSASLAuth = -124
)

// Xids the server gives frames that answer no request.
const (
	XidNotification = -1
	XidPing         = -2
)

// Watch notification types (Watcher.Event.EventType).
const (
	EventNodeCreated         = 1
	EventNodeDeleted         = 2
	EventNodeDataChanged     = 3
	EventNodeChildrenChanged = 4
)

// AddWatchPersistentRecursive is addWatch's mode PERSISTENT_RECURSIVE.
const AddWatchPersistentRecursive = 1
