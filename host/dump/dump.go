package dump

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/reg"
)

// Cache is a host's cache of one job's subtree (a reg.TreeView), whose
// view the dump compares with the registry's.
type Cache interface {
	Get(path string) ([]byte, reg.Stat, bool)
}

// errNoCache: the job has nodes but this host keeps no cache of it.
var errNoCache = errors.New("this host does not run the job")

// Render returns the dump of jobName exactly as upstream's SnapshotService
// writes it: a depth-first, pre-order walk of every node under /{jobName}
// (the root itself excluded), children in descending name order as
// upstream's getChildrenKeys sorts them, one line per node:
//
//	path | value                               when the cache holds path
//	path | value | cachePath | cacheValue      otherwise (both cache fields empty)
//
// where value is the cached value when the cache holds the node (as
// upstream's regCenter.get reads it), else the registry's ("" for none).
// Values with line breaks are written as they are, with their secrets
// masked first (lifecycle.RedactNode: the config node's secret props,
// URL credentials, Authorization headers in command lines; upstream
// shows them in clear). IP addresses are then masked (MaskIPs), and the
// lines are joined with "\n" plus a final "\n".
//
// A job with no node under its root renders as "\n", as upstream. A job
// that has nodes but no cache here (nil: this host does not run it) is
// errNoCache: upstream fails on the missing cache and closes the
// connection without a byte, and so does Server.
func Render(ctx context.Context, c reg.Client, cache Cache, jobName string) (string, error) {
	var lines []string
	if err := walk(ctx, c, cache, jobName, "/"+jobName, &lines); err != nil {
		return "", err
	}
	return strings.Join(MaskIPs(lines), "\n") + "\n", nil
}

func walk(ctx context.Context, c reg.Client, cache Cache, jobName, path string, lines *[]string) error {
	names, err := c.Children(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(b, a) })
	for _, name := range names {
		if cache == nil {
			return errNoCache
		}
		p := path + "/" + name
		cached, _, inCache := cache.Get(p)
		value := string(cached)
		if !inCache {
			data, _, err := c.Get(ctx, p)
			if err != nil && !errors.Is(err, reg.ErrNoNode) {
				return err
			}
			value = string(data)
		}
		value = lifecycle.RedactNode(jobName, p, value)
		if inCache {
			*lines = append(*lines, p+" | "+value)
		} else {
			*lines = append(*lines, p+" | "+value+" |  | ")
		}
		if err := walk(ctx, c, cache, jobName, p, lines); err != nil {
			return err
		}
	}
	return nil
}

// ipPattern is upstream's IpUtils.IP_REGEX. Go's leftmost-first matching
// picks the same matches as Java's backtracking matcher.
var ipPattern = regexp.MustCompile(`((\d|[1-9]\d|1\d{2}|2[0-4]\d|25[0-5])(\.(1\d{2}|2[0-4]\d|25[0-5]|[1-9]\d|\d)){3})`)

// MaskIPs is upstream's SensitiveInfoUtils.filterSensitiveIps: every IPv4
// address is replaced by ip1, ip2, ..., numbered in order of first
// appearance over all lines (one alias per address). As upstream, the
// matches of a line are found in the original line and each is then
// replaced everywhere in the line as a plain substring, so "10.0.0.1"
// inside "10.0.0.11" is replaced too: "10.0.0.1 10.0.0.11" becomes
// "ip1 ip11", and 10.0.0.11's own alias, ip2, appears nowhere.
func MaskIPs(lines []string) []string {
	alias := map[string]string{}
	out := make([]string, len(lines))
	for i, line := range lines {
		result := line
		for _, ip := range ipPattern.FindAllString(line, -1) {
			a, ok := alias[ip]
			if !ok {
				a = "ip" + strconv.Itoa(len(alias)+1)
				alias[ip] = a
			}
			result = strings.ReplaceAll(result, ip, a)
		}
		out[i] = result
	}
	return out
}
