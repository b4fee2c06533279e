package httpapi

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/instance"
)

// Mux is an http.ServeMux whose routes have their path parameters checked
// before their handler runs: a parameter that breaks its rule (a job name
// with '/', as tinyJob%2Fservers decodes to, "..", an empty one, a NUL, a
// server that is no IP address or host name, an item that is no item
// number) is answered 400 with a message naming the parameter, and the
// handler never sees it. Every wildcard of a pattern must have a rule
// (paramRule): registering one without panics, as ServeMux panics on a
// bad pattern.
type Mux struct {
	*http.ServeMux
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{ServeMux: http.NewServeMux()} }

// HandleFunc registers h for pattern, its path parameters checked.
func (m *Mux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// Handle registers h for pattern, its path parameters checked.
func (m *Mux) Handle(pattern string, h http.Handler) {
	var names []string
	for _, w := range wildcard.FindAllStringSubmatch(pattern, -1) {
		if _, _, ok := paramRule(w[1]); !ok {
			panic(fmt.Sprintf("httpapi: pattern %q: no rule for path parameter %q", pattern, w[1]))
		}
		names = append(names, w[1])
	}
	if len(names) == 0 {
		m.ServeMux.Handle(pattern, h)
		return
	}
	m.ServeMux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, name := range names {
			if err := CheckParam(name, r.PathValue(name)); err != nil {
				fail(w, http.StatusBadRequest, err.Error())
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
}

// wildcard matches a ServeMux pattern's {name} and {name...} (not {$},
// the end of the path).
var wildcard = regexp.MustCompile(`\{([^}.$]+)(?:\.\.\.)?\}`)

// CheckParam checks the value of the path parameter name against its rule:
// nil, or an error naming the parameter and what is wrong.
func CheckParam(name, value string) error {
	shown, check, ok := paramRule(name)
	if !ok {
		return fmt.Errorf("path parameter %s: no rule for it", name)
	}
	if err := check(value); err != nil {
		return fmt.Errorf("path parameter %s: %w", shown, err)
	}
	return nil
}

// paramRule is the check of a path parameter, by its wildcard's name, and
// the name its errors give it (upstream's name of the parameter).
func paramRule(name string) (shown string, check func(string) error, ok bool) {
	switch name {
	case "jobName", "appName":
		return name, config.CheckJobName, true
	case "a", "b": // GET /api/jobs/{a}/{b}: config/{jobName} or {jobName}/sharding
		return "jobName", config.CheckJobName, true
	case "ip":
		return name, instance.CheckServerIP, true
	case "item":
		return name, checkItem, true
	case "dumpPort":
		return name, checkPort, true
	case "name":
		return name, checkEntryName, true
	case "prefix":
		return name, checkPrefix, true
	case "executionId":
		return name, checkExecutionID, true
	case "period":
		return name, checkPeriod, true
	}
	return "", nil, false
}

// checkPeriod: a statistics period (online, lastWeek, ...): 1 to 40 ASCII
// letters.
func checkPeriod(s string) error {
	if len(s) == 0 || len(s) > 40 || strings.ContainsFunc(s, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }) {
		return fmt.Errorf("%q is not a period (online, lastWeek, lastHour or lastMinute)", s)
	}
	return nil
}

// checkItem: a sharding item, 0 to 2^31-1 in decimal digits.
func checkItem(s string) error {
	if _, err := strconv.ParseUint(s, 10, 31); err != nil {
		return fmt.Errorf("%q is not a sharding item (0 to %d)", s, 1<<31-1)
	}
	return nil
}

// checkExecutionID: an execution's id as the event trace keys it (a UUID
// as ejob and upstream write it): 1 to 40 letters, digits, '-', '_' or '.'.
func checkExecutionID(s string) error {
	ok := len(s) > 0 && len(s) <= 40
	for _, r := range s {
		ok = ok && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}
	if !ok {
		return fmt.Errorf("%q is not an execution id (1 to 40 letters, digits, '-', '_' or '.')", s)
	}
	return nil
}

// checkPort: a TCP port, 1 to 65535.
func checkPort(s string) error {
	if n, err := strconv.ParseUint(s, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("%q is not a port (1 to 65535)", s)
	}
	return nil
}

// maxPrefix bounds the prefix of the event-trace prefix lists (the
// longest column they list holds 100 characters).
const maxPrefix = 400

// checkPrefix: a prefix of a job name or an IP address: at most maxPrefix
// bytes of UTF-8 without control characters.
func checkPrefix(s string) error {
	switch {
	case len(s) > maxPrefix:
		return fmt.Errorf("%d bytes, more than a prefix may have (%d)", len(s), maxPrefix)
	case !utf8.ValidString(s):
		return fmt.Errorf("%q is not UTF-8", s)
	case strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("%q has a control character", s)
	}
	return nil
}

// maxEntryName bounds the name of a registry center or data source.
const maxEntryName = 200

// checkEntryName: the name of a registry center or data source of the
// namespaces store: not empty, at most maxEntryName bytes, no control
// characters, no space at either end.
func checkEntryName(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty (want the name of a registry center or data source)")
	case len(s) > maxEntryName:
		return fmt.Errorf("%d bytes, more than a name may have (%d)", len(s), maxEntryName)
	case strings.TrimSpace(s) != s:
		return fmt.Errorf("%q has space at an end", s)
	case strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("%q has a control character", s)
	}
	return nil
}
