package httpapi_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/host/httpapi"
)

// tree reads every node of c's namespace (path: value), to show that a
// refused request changed nothing.
func tree(t *testing.T, c reg.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(path string)
	walk = func(path string) {
		kids, err := c.Children(context.Background(), path)
		if err != nil {
			t.Fatalf("children of %s: %v", path, err)
		}
		for _, k := range kids {
			p := strings.TrimSuffix(path, "/") + "/" + k
			data, _, err := c.Get(context.Background(), p)
			if err != nil {
				t.Fatalf("get %s: %v", p, err)
			}
			out[p] = string(data)
			walk(p)
		}
	}
	walk("/")
	return out
}

// badParams are path-parameter values (as sent, percent-encoded) that
// break each parameter's rule.
var badParams = map[string][]string{
	"jobName":  {"j%2Fservers", "j%2F..%2Fj", "%2E%2E", "%2E", "j%00", "j%0Aservers", "j@-@1", "j%7F"},
	"ip":       {"10.0.0.1%2Fx", "%2E%2E", "10.0.0.1%00", "a%20b", "-x", "a..b", "fe80::1%25eth0%2Fx"},
	"item":     {"-1", "%2B1", "2147483648", "1%2F2", "0x1", "1.0"},
	"dumpPort": {"0", "65536", "-1", "1%2F2"},
	"name":     {"%00", "%20x", "x%0A"},
}

// goodParams are values each rule accepts.
var goodParams = map[string]string{"jobName": "j", "ip": "10.0.0.1", "item": "0", "dumpPort": "1", "name": "x"}

// TestPathParamsChecked: every route that takes a job name, server IP,
// item, dump port or namespace entry name from the path refuses a value
// that breaks its rule (DELETE /api/jobs/config/j%2Fservers would delete
// the node /j/servers) with 400 naming the parameter, and writes nothing.
func TestPathParamsChecked(t *testing.T) {
	f := startWith(t, defaultUsers(t), withConsole(httpapi.Options{}))
	token := f.login("admin", adminPW)
	before := tree(t, f.c)
	routes := []string{
		"POST /api/jobs/{jobName}/trigger", "POST /api/jobs/{jobName}/disable", "POST /api/jobs/{jobName}/enable",
		"POST /api/jobs/{jobName}/shutdown", "GET /api/jobs/config/{jobName}", "GET /api/jobs/{jobName}/sharding",
		"POST /api/jobs/{jobName}/sharding/{item}/disable", "POST /api/jobs/{jobName}/sharding/{item}/enable",
		"DELETE /api/jobs/config/{jobName}",
		"POST /api/servers/{ip}/disable", "POST /api/servers/{ip}/enable", "POST /api/servers/{ip}/shutdown",
		"POST /api/servers/{ip}/jobs/{jobName}/disable", "POST /api/servers/{ip}/jobs/{jobName}/enable",
		"POST /api/servers/{ip}/jobs/{jobName}/shutdown", "DELETE /api/servers/{ip}", "DELETE /api/servers/{ip}/jobs/{jobName}",
		"GET /api/servers/{ip}/jobs", "POST /api/servers/{ip}/{dumpPort}/jobs/{jobName}/dump",
		"PUT /api/registry-center/{name}", "DELETE /api/registry-center/{name}",
		"PUT /api/data-source/{name}", "DELETE /api/data-source/{name}",
		"GET /console/api/jobs/{jobName}", "GET /console/api/jobs/{jobName}/executions",
	}
	for _, route := range routes {
		method, tmpl, _ := strings.Cut(route, " ")
		for _, param := range slices.Sorted(maps.Keys(goodParams)) {
			if !strings.Contains(tmpl, "{"+param+"}") {
				continue
			}
			for _, bad := range badParams[param] {
				path := tmpl
				for p, good := range goodParams {
					v := good
					if p == param {
						v = bad
					}
					path = strings.ReplaceAll(path, "{"+p+"}", v)
				}
				st, data := f.do(method, path, token, strings.NewReader(`{"name":"x","zkAddressList":"127.0.0.1:1","namespace":"n","driver":"sqlite","url":"/tmp/x"}`))
				if st == http.StatusOK {
					t.Errorf("%s %s: %d %s, want it refused", method, path, st, data)
					continue
				}
				// "." and ".." are cleaned by the router itself (a
				// redirect to another path): refused before any route.
				if bad == "%2E" || bad == "%2E%2E" {
					continue
				}
				if env := f.envelope(data); st != http.StatusBadRequest || !strings.Contains(string(env["errorMsg"]), "path parameter "+param+":") {
					t.Errorf("%s %s: %d %s, want 400 naming path parameter %s", method, path, st, data, param)
				}
			}
		}
	}
	if after := tree(t, f.c); !maps.Equal(before, after) {
		t.Errorf("refused requests changed the namespace:\nbefore %v\nafter  %v", before, after)
	}
}

// TestCheckParam: the rules themselves, on decoded values.
func TestCheckParam(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{"jobName", "tinyJob", true}, {"jobName", "a.b-c_d", true}, {"jobName", "config", true},
		{"jobName", "tinyJob/servers", false}, {"jobName", "", false}, {"jobName", "..", false}, {"jobName", "a\x00", false},
		{"ip", "10.0.0.1", true}, {"ip", "::1", true}, {"ip", "fe80::1%eth0", true}, {"ip", "host-1.example.com", true},
		{"ip", "", false}, {"ip", "..", false}, {"ip", "1.2.3.4/servers", false}, {"ip", "fe80::1%a/b", false},
		{"ip", strings.Repeat("a.", 130), false}, {"ip", "a\x00", false},
		{"item", "0", true}, {"item", "2147483647", true}, {"item", "2147483648", false}, {"item", "", false}, {"item", "-1", false},
		{"dumpPort", "65535", true}, {"dumpPort", "0", false}, {"dumpPort", "65536", false},
		{"name", "my zk", true}, {"name", "", false}, {"name", " x", false}, {"name", "x\n", false},
		{"name", strings.Repeat("x", 201), false},
		{"unknown", "x", false}, {"a", "x/y", false},
	} {
		err := httpapi.CheckParam(tc.name, tc.value)
		if (err == nil) != tc.ok {
			t.Errorf("CheckParam(%s, %q) = %v, want ok %v", tc.name, tc.value, err, tc.ok)
		}
		shown := map[string]string{"a": "jobName"}[tc.name]
		if shown == "" {
			shown = tc.name
		}
		if err != nil && !strings.HasPrefix(err.Error(), fmt.Sprintf("path parameter %s: ", shown)) {
			t.Errorf("CheckParam(%s, %q): %q does not name the parameter", tc.name, tc.value, err)
		}
	}
}

// TestMuxRefusesUncheckedWildcard: a route whose wildcard has no rule is
// refused when it is registered.
func TestMuxRefusesUncheckedWildcard(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering GET /x/{unknown} did not panic")
		}
	}()
	httpapi.NewMux().HandleFunc("GET /x/{unknown}", func(http.ResponseWriter, *http.Request) {})
}
