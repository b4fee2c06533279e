package instance

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Separator joins the parts of instance ids and task ids.
const Separator = "@-@"

// FallbackInstanceID is what upstream puts in a task id when the job
// instance is unknown.
const FallbackInstanceID = "127.0.0.1@-@1"

// ErrInvalidID is wrapped by errors parsing instance and task ids.
var ErrInvalidID = errors.New("invalid id")

// ID is an instance id: "{serverIp}@-@{pid}". All jobs of one process
// share it. Upstream's tests also use non-numeric suffixes
// ("ip1@-@defaultInstance"), so the suffix is kept as a string.
type ID struct {
	IP  string
	PID string
}

// NewID returns the id of process pid on ip.
func NewID(ip string, pid int) ID { return ID{IP: ip, PID: strconv.Itoa(pid)} }

// String returns "ip@-@pid".
func (id ID) String() string { return id.IP + Separator + id.PID }

// ParseID splits an instance id at its first "@-@". It fails when there is
// none, when the IP part is empty, or when the suffix contains another
// "@-@" (a task id is split on it into exactly 5 parts).
func ParseID(s string) (ID, error) {
	ip, pid, ok := strings.Cut(s, Separator)
	switch {
	case !ok:
		return ID{}, fmt.Errorf("%w: instance id %q has no %q", ErrInvalidID, s, Separator)
	case ip == "":
		return ID{}, fmt.Errorf("%w: instance id %q has no IP", ErrInvalidID, s)
	case strings.Contains(pid, Separator):
		return ID{}, fmt.Errorf("%w: instance id %q has more than one %q", ErrInvalidID, s, Separator)
	}
	return ID{IP: ip, PID: pid}, nil
}

// ServerIP returns the part of an instance id before the first "@-@", as
// upstream's crash detection and removeOfflineServers take it, and false
// when the id has no separator.
func ServerIP(instanceID string) (string, bool) {
	ip, _, ok := strings.Cut(instanceID, Separator)
	return ip, ok
}

// HasServerIPPrefix is upstream's hasOnlineInstances test:
// instanceId.startsWith(ip). It is a plain prefix test, so "10.0.0.1"
// matches "10.0.0.12@-@7" too; callers that need exactness use ServerIP.
func HasServerIPPrefix(instanceID, ip string) bool { return strings.HasPrefix(instanceID, ip) }

// CheckServerIP returns nil when s can name a server (the {ip} of a job's
// servers/{ip} node and of an instance id): an IP address (an IPv6 zone of
// letters, digits, '.', '_' and '-' allowed), or a host name of such
// labels, at most 253 bytes. Else an error wrapping ErrInvalidID says why.
// Anything that builds a ZooKeeper path from a server name it did not
// read from the registry checks it first: "1.2.3.4/x" or ".." would
// address another node.
func CheckServerIP(s string) error {
	if a, err := netip.ParseAddr(s); err == nil {
		if z := a.Zone(); z != "" && !isHostLabel(z) {
			return fmt.Errorf("%w: server %q: the IPv6 zone %q has characters other than letters, digits, '.', '_' and '-'", ErrInvalidID, s, z)
		}
		return nil
	}
	switch {
	case s == "":
		return fmt.Errorf("%w: server: empty (want an IP address or a host name)", ErrInvalidID)
	case len(s) > 253:
		return fmt.Errorf("%w: server %.40q...: %d bytes, longer than a host name may be (253)", ErrInvalidID, s, len(s))
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || !isHostLabel(label) || label[0] == '-' {
			return fmt.Errorf("%w: server %q: want an IP address or a host name (labels of letters, digits, '_' and '-', separated by '.')", ErrInvalidID, s)
		}
	}
	return nil
}

// isHostLabel reports whether s is made of ASCII letters, digits, '.',
// '_' and '-' only.
func isHostLabel(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
