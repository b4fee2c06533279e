package instance

import (
	"errors"
	"fmt"
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
