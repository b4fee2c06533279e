package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/internal/testkit"
)

// zkClient is a ZooKeeper client on the test's namespace, closed when the
// test ends: the registry as a peer (another host, a Java instance) sees
// it.
func (e *env) zkClient() reg.Client {
	e.t.Helper()
	cfg := zookeeper.DefaultConfig(zk.Addr(), e.ns)
	cfg.Logger = hclog.NewNullLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// serveWith is serve with more flags for `ejob serve`.
func (e *env) serveWith(cfg string, flags ...string) (p *proc, base, password string) {
	e.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(e.t))
	p = e.start("serve", append([]string{"serve", "-c", cfg, "--listen", addr}, flags...)...)
	p.waitLog(e.t, 60*time.Second, regexp.MustCompile(`operations HTTP server listening`))
	if m := passwordLine.FindStringSubmatch(p.out.String()); m != nil {
		password = m[1]
	}
	return p, "http://" + addr, password
}

// serverBrief is one entry of getAllServersBriefInfo, its instances kept
// raw to tell [] from null.
type serverBrief struct {
	ServerIP     string          `json:"serverIp"`
	Instances    json.RawMessage `json:"instances"`
	JobNames     []string        `json:"jobNames"`
	InstancesNum int             `json:"instancesNum"`
}

// servers is GET /api/servers/getAllServersBriefInfo's model.
func (c *apiClient) servers() []serverBrief {
	c.t.Helper()
	st, data := c.call(http.MethodGet, "/api/servers/getAllServersBriefInfo", "")
	if st != http.StatusOK {
		c.t.Fatalf("servers: %d %s", st, data)
	}
	var env struct{ Model []serverBrief }
	if err := json.Unmarshal(data, &env); err != nil {
		c.t.Fatalf("servers: %v: %s", err, data)
	}
	return env.Model
}

// waitHostServer waits until a server with a live instance of job is
// listed and returns its IP.
func (c *apiClient) waitHostServer(job string) string {
	c.t.Helper()
	var ip string
	testkit.Eventually(c.t, 60*time.Second, "the host's server to be listed with an instance", func() bool {
		for _, s := range c.servers() {
			if s.InstancesNum > 0 && strings.Contains(string(s.Instances), "@-@") && contains(s.JobNames, job) {
				ip = s.ServerIP
				return true
			}
		}
		return false
	})
	return ip
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// errorMsg is an answer's errorMsg ("" when it has none).
func errorMsg(data []byte) string {
	var env struct{ ErrorMsg string }
	_ = json.Unmarshal(data, &env)
	return env.ErrorMsg
}

// TestHostilePathParameters: job names, server IPs and items in REST and
// console paths are checked before anything is read or written.
// DELETE /api/jobs/config/idle%2Fservers reached the job "idle/servers"
// and deleted the node /idle/servers, reporting success. Against a real
// host and `ejob serve`, every such path (percent-encoded '/', NUL, a
// newline, "@-@", a negative or signed item, a server IP that is a path)
// is refused with 400 naming the parameter, and the job's nodes are as
// they were.
func TestHostilePathParameters(t *testing.T) {
	e := newEnv(t)
	cfg := e.write("ejob.yaml", e.config(""))
	e.start("run", "run", "-c", cfg)
	_, base, pw := e.serve(cfg)
	c := login(t, base, "admin", pw)
	ip := c.waitHostServer("idle")
	zc := e.zkClient()
	ctx := context.Background()
	j := node.New("idle")
	config, _, err := zc.Get(ctx, j.Config())
	if err != nil {
		t.Fatal(err)
	}

	for _, req := range []struct{ method, path, body, param string }{
		{http.MethodDelete, "/api/jobs/config/idle%2Fservers", "", "jobName"},
		{http.MethodDelete, "/api/jobs/config/idle%2Fservers%2F" + ip, "", "jobName"},
		{http.MethodDelete, "/api/jobs/config/idle%00", "", "jobName"},
		{http.MethodDelete, "/api/jobs/config/idle%0Aservers", "", "jobName"},
		{http.MethodGet, "/api/jobs/config/idle%2Fservers", "", "jobName"},
		{http.MethodGet, "/api/jobs/idle%2Fservers/sharding", "", "jobName"},
		{http.MethodPost, "/api/jobs/idle%2Fservers/disable", "", "jobName"},
		{http.MethodPost, "/api/jobs/idle%2Fservers/trigger", "", "jobName"},
		{http.MethodPost, "/api/jobs/idle@-@1/shutdown", "", "jobName"},
		{http.MethodPost, "/api/jobs/idle/sharding/-1/disable", "", "item"},
		{http.MethodPost, "/api/jobs/idle/sharding/%2B0/disable", "", "item"},
		{http.MethodPost, "/api/jobs/idle/sharding/4294967296/disable", "", "item"},
		{http.MethodDelete, "/api/servers/" + ip + "%2F..", "", "ip"},
		{http.MethodDelete, "/api/servers/..%2Fidle", "", "ip"},
		{http.MethodPost, "/api/servers/" + ip + "%00/disable", "", "ip"},
		{http.MethodDelete, "/api/servers/" + ip + "/jobs/idle%2Fservers", "", "jobName"},
		{http.MethodGet, "/api/servers/" + ip + "%2Fx/jobs", "", "ip"},
		{http.MethodPost, "/api/servers/" + ip + "/0/jobs/idle/dump", "", "dumpPort"},
		{http.MethodGet, "/console/api/jobs/idle%2Fservers", "", "jobName"},
		{http.MethodGet, "/console/api/jobs/idle%2Fservers/executions", "", "jobName"},
		{http.MethodPut, "/console/api/jobs/idle%2Fservers/config", `{"config":{"jobName":"idle/servers"},"version":0}`, "jobName"},
		{http.MethodPut, "/api/jobs/config", `{"jobName":"idle/servers","cron":"0 0 * * * ?","shardingTotalCount":1}`, "jobName"},
	} {
		st, data := c.call(req.method, req.path, req.body)
		if msg := errorMsg(data); st != http.StatusBadRequest || !strings.Contains(msg, req.param) {
			t.Errorf("%s %s: %d %s, want 400 naming %s", req.method, req.path, st, data, req.param)
		}
	}
	if ips, err := zc.Children(ctx, j.Servers()); err != nil || !contains(ips, ip) {
		t.Errorf("/idle/servers after the requests: %v, %v; want it with %s", ips, err, ip)
	}
	if after, _, err := zc.Get(ctx, j.Config()); err != nil || string(after) != string(config) {
		t.Errorf("/idle/config after the requests: %v\n%s\nwant\n%s", err, after, config)
	}
	if v, _, err := zc.Get(ctx, j.Server(ip)); err != nil || string(v) != "" && string(v) != "ENABLED" {
		t.Errorf("/idle/servers/%s = %q, %v; want it enabled", ip, v, err)
	}
	if _, found, err := zc.Exists(ctx, j.Disabled(0)); err != nil || found {
		t.Errorf("item 0 disabled: %v %v", found, err)
	}
}

// TestHostileStoppedServerListsEmptyInstances: a host that stops cleanly
// leaves its servers/{ip} node behind; getAllServersBriefInfo answered
// "instances": null for it, and the console's Servers page threw and hid
// the live servers too. After a real host's SIGTERM its server lists
// "instances": [], and a live peer's server (another machine's instance)
// is listed with its instance.
func TestHostileStoppedServerListsEmptyInstances(t *testing.T) {
	e := newEnv(t)
	cfg := e.write("ejob.yaml", e.config(""))
	host := e.start("run", "run", "-c", cfg)
	_, base, pw := e.serve(cfg)
	c := login(t, base, "admin", pw)
	ip := c.waitHostServer("idle")

	// A live peer on another machine: its server node and its
	// instance's ephemeral node, as an instance writes them.
	const peerIP, peerID = "10.0.0.7", "10.0.0.7@-@4242"
	zc := e.zkClient()
	ctx := context.Background()
	j := node.New("idle")
	if _, err := reg.Persist(ctx, zc, j.Server(peerIP), []byte("ENABLED")); err != nil {
		t.Fatal(err)
	}
	inst, err := node.EncodeInstance(node.JobInstance{JobInstanceID: peerID, ServerIP: peerIP})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create(ctx, j.Instance(peerID), inst, reg.Ephemeral, reg.WithParents()); err != nil {
		t.Fatal(err)
	}

	if err := host.stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	var list []serverBrief
	testkit.Eventually(t, 30*time.Second, "the stopped host's instance to leave", func() bool {
		list = c.servers()
		for _, s := range list {
			if s.ServerIP == ip {
				return s.InstancesNum == 0
			}
		}
		return false
	})
	var sawHost, sawPeer bool
	for _, s := range list {
		switch s.ServerIP {
		case ip:
			sawHost = true
			if string(s.Instances) != "[]" {
				t.Errorf("stopped host's server %s: instances %s, want []", ip, s.Instances)
			}
		case peerIP:
			sawPeer = true
			if string(s.Instances) != `["`+peerID+`"]` || s.InstancesNum != 1 {
				t.Errorf("live peer's server: instances %s (%d), want [%q]", s.Instances, s.InstancesNum, peerID)
			}
		}
	}
	if !sawHost || !sawPeer {
		t.Errorf("servers %+v: want the stopped host's %s and the peer's %s", list, ip, peerIP)
	}
	_, data := c.call(http.MethodGet, "/api/servers/getAllServersBriefInfo", "")
	var env struct{ Model json.RawMessage }
	if err := json.Unmarshal(data, &env); err != nil || strings.Contains(string(env.Model), "null") {
		t.Errorf("getAllServersBriefInfo's model has a null: %s", data)
	}
	if st, data := c.call(http.MethodGet, "/console/api/overview", ""); st != http.StatusOK || strings.Contains(string(data), `"crashed":null`) {
		t.Errorf("overview: %d %s", st, data)
	}
}

// tracedConfig is e.config(jobs) with an RDB event trace in the SQLite
// file db.
func (e *env) tracedConfig(db, jobs string) string {
	return strings.Replace(e.config(jobs), "  jobs:\n",
		"  tracing:\n    type: RDB\n    dataSource:\n      url: jdbc:sqlite:"+db+"\n  jobs:\n", 1)
}

// TestHostileHugePageNumber: {"pageSize":1000,"pageNumber":
// 9223372036854775807} wrapped the offset negative: the answer was
// total -1904 and the first page's rows, and `ejob history --page
// 9223372036854775807` showed rows too. Against a real host recording into
// SQLite, such a page is refused (400 naming pageNumber; the CLI's usage
// error, exit 2) and no row is shown; a page past the end is empty with a
// positive total.
func TestHostileHugePageNumber(t *testing.T) {
	e := newEnv(t)
	cfg := e.write("ejob.yaml", e.tracedConfig(filepath.Join(e.dir, "trace.db"), `    tick:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props:
        script.command.line: "true"
`))
	e.start("run", "run", "-c", cfg)
	_, base, pw := e.serve(cfg)
	c := login(t, base, "admin", pw)
	testkit.Eventually(t, 60*time.Second, "two executions and a status of tick in the event trace", func() bool {
		var p struct{ Model struct{ Total int } }
		_, data := c.call(http.MethodPost, "/api/event-trace/execution", `{"jobName":"tick"}`)
		_, sdata := c.call(http.MethodPost, "/api/event-trace/status", `{"jobName":"tick"}`)
		var s struct{ Model struct{ Total int } }
		return json.Unmarshal(data, &p) == nil && p.Model.Total >= 2 && json.Unmarshal(sdata, &s) == nil && s.Model.Total >= 1
	})
	for _, path := range []string{"/api/event-trace/execution", "/api/event-trace/status"} {
		for _, body := range []string{`{"pageSize":1000,"pageNumber":9223372036854775807}`, `{"pageSize":10,"pageNumber":9223372036854775807}`,
			`{"jobName":"tick","pageSize":1,"pageNumber":9223372036854775807}`} {
			st, data := c.call(http.MethodPost, path, body)
			if st != http.StatusBadRequest || !strings.Contains(errorMsg(data), "pageNumber") || strings.Contains(string(data), "tick@-@") {
				t.Errorf("%s %s: %d %s, want 400 naming pageNumber and no rows", path, body, st, data)
			}
		}
		st, data := c.call(http.MethodPost, path, `{"pageSize":1000,"pageNumber":2147484}`)
		var p struct {
			Model struct {
				Total int
				Rows  []json.RawMessage
			}
		}
		if err := json.Unmarshal(data, &p); st != http.StatusOK || err != nil || p.Model.Total < 1 || p.Model.Total > 1_000_000 || len(p.Model.Rows) != 0 {
			t.Errorf("%s: the last page allowed: %d %s, want no rows and the rows' count as total", path, st, data)
		}
	}
	for _, args := range [][]string{{"--page", "9223372036854775807"}, {"--page", "9223372036854775807", "--limit", "1"},
		{"--status", "tick", "--page", "9223372036854775807"}} {
		r := e.ejob(60*time.Second, append([]string{"history", "-c", cfg}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "--page: want 1 to") || strings.Contains(r.stdout, "tick") {
			t.Errorf("ejob history %v: exit %d\nstdout:\n%s\nstderr:\n%s\nwant a usage error and no rows", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestHostileDataSourceFiles: POST /api/data-source/add with
// jdbc:sqlite:/any/path, then connect, made `ejob serve` create that
// file. Without --data-source-dir an SQLite data source is refused; with
// it, a file outside the directory (an absolute path, "..", a symbolic
// link out, URL parameters, an entry written into the namespaces file by
// hand) is refused at add and at connect, and no file is created; a file
// inside is added, connected and created there.
func TestHostileDataSourceFiles(t *testing.T) {
	e := newEnv(t)
	cfg := e.write("ejob.yaml", e.config(""))
	dir := filepath.Join(e.dir, "traces")
	outside := filepath.Join(e.dir, "elsewhere")
	for _, d := range []string{dir, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	// An entry outside the directory, in the store before the server
	// starts (written by an older version, or by hand).
	store := filepath.Join(e.dir, "namespaces.json")
	e.write("namespaces.json", fmt.Sprintf(`{"registryCenters":[],"dataSources":[{"name":"old","driver":"sqlite","url":"jdbc:sqlite:%s"}]}`,
		filepath.Join(outside, "old.db")))
	add := func(c *apiClient, name, url string) (int, []byte) {
		return c.call(http.MethodPost, "/api/data-source/add", fmt.Sprintf(`{"name":%q,"driver":"sqlite","url":%q}`, name, url))
	}

	// Without a directory: refused, saying how to allow it.
	_, base, pw := e.serveWith(cfg, "--namespaces-file", store)
	c := login(t, base, "admin", pw)
	if st, data := add(c, "any", "jdbc:sqlite:"+filepath.Join(outside, "any.db")); st != http.StatusBadRequest || !strings.Contains(errorMsg(data), "--data-source-dir") {
		t.Errorf("add without --data-source-dir: %d %s, want 400 naming --data-source-dir", st, data)
	}
	if st, data := c.call(http.MethodPost, "/api/data-source/connect", `{"name":"old"}`); st != http.StatusBadRequest {
		t.Errorf("connect old without --data-source-dir: %d %s, want 400", st, data)
	}

	_, base, pw = e.serveWith(cfg, "--namespaces-file", store, "--data-source-dir", dir)
	c = login(t, base, "admin", pw)
	for name, url := range map[string]string{
		"abs":     "jdbc:sqlite:" + filepath.Join(outside, "abs.db"),
		"dotdot":  "jdbc:sqlite:" + dir + "/../elsewhere/dotdot.db",
		"rel":     "../elsewhere/rel.db",
		"link":    "jdbc:sqlite:out/link.db",
		"param":   "jdbc:sqlite:p.db?mode=memory",
		"escaped": "jdbc:sqlite:%2e%2e/elsewhere/escaped.db",
		"root":    "jdbc:sqlite:/any/path.db",
	} {
		if st, data := add(c, name, url); st != http.StatusBadRequest || !strings.Contains(errorMsg(data), "SQLite file") {
			t.Errorf("add %s (%s): %d %s, want 400", name, url, st, data)
		}
	}
	if st, data := c.call(http.MethodPost, "/api/data-source/connect", `{"name":"old"}`); st != http.StatusBadRequest || !strings.Contains(errorMsg(data), "not under") {
		t.Errorf("connect old: %d %s, want 400", st, data)
	}
	// connectTest (ElasticJob-UI's "test" of the add dialog) checks a
	// data source without storing or switching to it, confined alike.
	test := func(body string) (int, []byte) {
		return c.call(http.MethodPost, "/api/data-source/connectTest", body)
	}
	if st, data := test(fmt.Sprintf(`{"name":"t","driver":"sqlite","url":"jdbc:sqlite:%s"}`, filepath.Join(outside, "tested.db"))); st != http.StatusBadRequest || !strings.Contains(errorMsg(data), "SQLite file") {
		t.Errorf("connectTest outside the directory: %d %s, want 400", st, data)
	}
	if st, data := test(`{"name":"t","driver":"sqlite","url":"jdbc:sqlite:tested.db"}`); st != http.StatusOK || !strings.Contains(string(data), `"model":true`) {
		t.Errorf("connectTest inside the directory: %d %s, want model true", st, data)
	}
	if _, err := os.Stat(filepath.Join(dir, "tested.db")); err != nil {
		t.Errorf("connectTest opened no database in the directory: %v", err)
	}
	if st, data := test(fmt.Sprintf(`{"name":"t","driver":"postgres","url":"postgres://u@127.0.0.1:%d/db?connect_timeout=2","password":"pw"}`, testkit.FreePort(t))); st != http.StatusBadGateway || !strings.Contains(errorMsg(data), "data source t") {
		t.Errorf("connectTest of an unreachable database: %d %s, want 502 with the connection error", st, data)
	}
	if st, data := test(`{"name":"t","driver":"sqlite"}`); st != http.StatusBadRequest || !strings.Contains(errorMsg(data), "url") {
		t.Errorf("connectTest without a url: %d %s, want 400 naming url", st, data)
	}
	if st, data := c.call(http.MethodGet, "/api/data-source/load", ""); st != http.StatusOK || strings.Contains(string(data), `"name":"t"`) {
		t.Errorf("connectTest stored the data source: %d %s", st, data)
	}
	if st, data := add(c, "good", "jdbc:sqlite:good.db"); st != http.StatusOK {
		t.Fatalf("add good: %d %s", st, data)
	}
	if st, data := c.call(http.MethodPost, "/api/data-source/connect", `{"name":"good"}`); st != http.StatusOK {
		t.Fatalf("connect good: %d %s", st, data)
	}
	if _, err := os.Stat(filepath.Join(dir, "good.db")); err != nil {
		t.Errorf("the data source inside the directory: %v", err)
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range entries {
		t.Errorf("%s was created outside the data-source directory", x.Name())
	}
	if _, err := os.Stat("/any/path.db"); err == nil {
		t.Error("/any/path.db was created")
	}
}
