package zookeeper

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper/internal/zkwire"
)

// mapErr is the one place go-zookeeper errors become reg sentinels. The
// original error stays in the chain for logs.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var sentinel error
	switch {
	case errors.Is(err, zk.ErrNoNode):
		sentinel = reg.ErrNoNode
	case errors.Is(err, zk.ErrNodeExists):
		sentinel = reg.ErrNodeExists
	case errors.Is(err, zk.ErrBadVersion):
		sentinel = reg.ErrBadVersion
	case errors.Is(err, zk.ErrNotEmpty):
		sentinel = reg.ErrNotEmpty
	case errors.Is(err, zk.ErrNoChildrenForEphemerals):
		sentinel = reg.ErrNoChildrenForEphemerals
	case errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrAuthFailed):
		sentinel = reg.ErrNoAuth
	case errors.Is(err, zk.ErrSessionExpired):
		sentinel = reg.ErrSessionLost
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer),
		errors.Is(err, zk.ErrSessionMoved), errors.Is(err, zk.ErrClosing):
		sentinel = reg.ErrConnectionLoss
	case isNetErr(err):
		// go-zookeeper hands a request whose write failed the socket's
		// error itself (its sendLoop), not ErrConnectionClosed: the same
		// connection loss, whose outcome is unknown, so retried alike.
		sentinel = reg.ErrConnectionLoss
	case errors.Is(err, zk.ErrInvalidPath), errors.Is(err, zk.ErrInvalidFlags),
		errors.Is(err, zk.ErrInvalidACL), errors.Is(err, zk.ErrBadArguments):
		sentinel = reg.ErrInvalidArgument
	case strings.HasSuffix(err.Error(), fmt.Sprintf("unknown error: %d", zkwire.CodeSessionClosedRequireSASLAuth)):
		// go-zookeeper does not know ZooKeeper 3.6's code (nor wraps it).
		return fmt.Errorf("%w (%w: the server requires SASL authentication and closed the session: configure regCenter.sasl)", reg.ErrNoAuth, err)
	default:
		return err
	}
	return fmt.Errorf("%w (%w)", sentinel, err)
}

// retryable reports whether Curator's RetryLoop would retry after err:
// connection loss, not session expiry (the caller must see the new session).
func retryable(err error) bool { return errors.Is(err, reg.ErrConnectionLoss) }

// isNetErr: err is a socket's failure (reset, broken pipe, closed, EOF).
func isNetErr(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}
