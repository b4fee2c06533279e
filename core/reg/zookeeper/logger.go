package zookeeper

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// zkLogger routes go-zookeeper's Printf logging into hclog: failures at Warn,
// the connection chatter at Debug. Once the client is closing, the
// failures are its own doing: Debug.
type zkLogger struct {
	l       hclog.Logger
	closing func() bool
}

func (z zkLogger) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	low := strings.ToLower(msg)
	if z.closing != nil && z.closing() {
		z.l.Debug("go-zookeeper: " + msg)
		return
	}
	if strings.Contains(msg, "authentication failed: SASL ") {
		// The client logged this SASL failure already (Client.authenticate).
		z.l.Debug("go-zookeeper: " + msg)
		return
	}
	if rest, ok := strings.CutPrefix(msg, "authentication failed: "); ok && (strings.HasPrefix(rest, "ZooKeeper handshake with ") || strings.Contains(rest, ErrNotZooKeeper.Error())) {
		// A connection attempt that got no connect response: go-zookeeper
		// calls its handshake "authentication".
		z.l.Warn("zookeeper connection attempt failed", "error", rest)
		return
	}
	if strings.Contains(low, "fail") || strings.Contains(low, "error") {
		z.l.Warn("go-zookeeper: " + msg)
		return
	}
	z.l.Debug("go-zookeeper: " + msg)
}
