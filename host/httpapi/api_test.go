package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/crypto/bcrypt"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/host/hostconfig"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func hash(t *testing.T, pw string) string {
	t.Helper()
	h, err := bcryptHash(pw)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func bcryptHash(pw string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	return string(h), err
}

// fixture is a server on a fresh embedded namespace with job "j" (3
// items, secret props, one instance on 10.0.0.1) and users admin/guest.
type fixture struct {
	t    *testing.T
	c    reg.Client
	base string
	logs *proctest.Buffer
}

const (
	adminPW = "admin-pass-1"
	guestPW = "guest-pass-1"
)

func start(t *testing.T, users []httpapi.User) *fixture {
	t.Helper()
	return startWith(t, users, httpapi.Options{})
}

// startWith is start with the tracer of extra.
func startWith(t *testing.T, users []httpapi.User, extra httpapi.Options) *fixture {
	t.Helper()
	c, err := embedded.NewServer().Connect("api")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	cfg := config.New("j", 3)
	cfg.Cron = "0 0/5 * * * ?"
	cfg.Props = map[string]string{"email.password": "hunter2-secret", "dingtalk.webhook": "https://oapi.example.com/robot/send?access_token=tok123456789",
		"script.command.line": "echo hi"}
	data, err := config.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	j := node.New("j")
	id := "10.0.0.1@-@42"
	for path, v := range map[string]string{j.Config(): string(data), j.Server("10.0.0.1"): "ENABLED", j.Server("10.0.0.2"): "ENABLED",
		j.ShardingInstance(0): id, j.ShardingInstance(1): id, j.ShardingInstance(2): id} {
		if _, err := reg.Persist(ctx, c, path, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create(ctx, j.Instance(id), []byte("jobInstanceId: "+id+"\nserverIp: 10.0.0.1\n"), reg.Ephemeral, reg.WithParents()); err != nil {
		t.Fatal(err)
	}
	logs := &proctest.Buffer{}
	srv, err := httpapi.Listen(httpapi.Options{Listen: "127.0.0.1:0", Users: users, Client: c,
		Tracer: extra.Tracer, TracerConfig: extra.TracerConfig, Console: extra.Console,
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(rctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return &fixture{t: t, c: c, base: "http://" + srv.Addr().String(), logs: logs}
}

func defaultUsers(t *testing.T) []httpapi.User {
	return []httpapi.User{{Name: "admin", PasswordHash: hash(t, adminPW), Role: httpapi.RoleAdmin},
		{Name: "guest", PasswordHash: hash(t, guestPW), Role: httpapi.RoleGuest}}
}

// instance registers a live instance of job j.
func (f *fixture) instance(id string) {
	f.t.Helper()
	ip, _, _ := strings.Cut(id, "@-@")
	if _, err := f.c.Create(context.Background(), node.New("j").Instance(id), []byte("jobInstanceId: "+id+"\nserverIp: "+ip+"\n"),
		reg.Ephemeral, reg.WithParents()); err != nil {
		f.t.Fatal(err)
	}
}

// do sends a request and returns the status and the raw body. The status
// of an /api/* error is the envelope's errorCode (testkit.APIStatus), and
// do fails the test unless such an error came with HTTP 200, as upstream
// answers; the console's own endpoints must answer errors with a real
// HTTP status.
func (f *fixture) do(method, path, token string, body io.Reader) (int, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.base+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set(httpapi.TokenHeader, token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	st := testkit.APIStatus(resp.StatusCode, data)
	switch upstream := strings.HasPrefix(path, "/api/"); {
	case upstream && resp.StatusCode != http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"):
		f.t.Errorf("%s %s: HTTP %d, want 200 with the status in errorCode: %s", method, path, resp.StatusCode, data)
	case !upstream && st != resp.StatusCode:
		f.t.Errorf("%s %s: HTTP 200 for errorCode %d, want the real status: %s", method, path, st, data)
	}
	return st, data
}

// envelope decodes an envelope, failing the test on any other shape.
func (f *fixture) envelope(data []byte) (env map[string]json.RawMessage) {
	f.t.Helper()
	if err := json.Unmarshal(data, &env); err != nil {
		f.t.Fatalf("not a JSON object: %s", data)
	}
	for _, k := range []string{"success", "errorCode", "errorMsg", "model"} {
		if _, ok := env[k]; !ok {
			f.t.Fatalf("envelope without %q: %s", k, data)
		}
	}
	if len(env) != 4 {
		f.t.Fatalf("envelope with extra fields: %s", data)
	}
	return env
}

func (f *fixture) login(user, pw string) string {
	f.t.Helper()
	st, data := f.do("POST", "/api/login", "", strings.NewReader(fmt.Sprintf(`{"username":%q,"password":%q}`, user, pw)))
	env := f.envelope(data)
	if st != 200 || string(env["success"]) != "true" {
		f.t.Fatalf("login %s: %d %s", user, st, data)
	}
	var m httpapi.LoginModel
	if err := json.Unmarshal(env["model"], &m); err != nil || m.AccessToken == "" || m.Username != user {
		f.t.Fatalf("login model %s: %v", env["model"], err)
	}
	return m.AccessToken
}

func (f *fixture) configVersion() int32 {
	f.t.Helper()
	_, st, err := f.c.Get(context.Background(), node.New("j").Config())
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Version
}

// endpoints lists every endpoint with a request that succeeds as admin.
func endpoints() []struct{ method, path, body string } {
	return []struct{ method, path, body string }{
		{"GET", "/api/jobs/count", ""},
		{"GET", "/api/jobs/getAllJobsBriefInfo", ""},
		{"GET", "/api/jobs/j/sharding", ""},
		{"GET", "/api/jobs/config/j", ""},
		{"GET", "/api/servers/count", ""},
		{"GET", "/api/servers/getAllServersBriefInfo", ""},
		{"GET", "/api/servers/10.0.0.1/jobs", ""},
		{"GET", "/api/registry-center/activated", ""},
		{"GET", "/api/registry-center/load", ""},
		{"POST", "/api/jobs/j/trigger", ""},
		{"POST", "/api/jobs/j/disable", ""},
		{"POST", "/api/jobs/j/enable", ""},
		{"POST", "/api/jobs/j/sharding/1/disable", ""},
		{"POST", "/api/jobs/j/sharding/1/enable", ""},
		{"PUT", "/api/jobs/config", `{"jobName":"j","cron":"0 0/7 * * * ?","shardingTotalCount":3,"props":{}}`},
		{"POST", "/api/servers/10.0.0.1/disable", ""},
		{"POST", "/api/servers/10.0.0.1/enable", ""},
		{"POST", "/api/servers/10.0.0.1/jobs/j/disable", ""},
		{"POST", "/api/servers/10.0.0.1/jobs/j/enable", ""},
		{"POST", "/api/servers/127.0.0.1/1/jobs/j/dump", ""},
		{"POST", "/api/servers/10.0.0.1/jobs/j/shutdown", ""},
		{"POST", "/api/jobs/j/shutdown", ""},
		{"POST", "/api/servers/10.0.0.1/shutdown", ""},
		{"DELETE", "/api/servers/10.0.0.2/jobs/j", ""},
		{"DELETE", "/api/servers/10.0.0.1", ""},
		{"DELETE", "/api/jobs/config/j", ""},
	}
}

// TestEveryEndpointNeedsAToken: without a token, or with a made-up one,
// every endpoint answers 403 in the envelope and writes nothing; with an
// admin's token every one succeeds.
func TestEveryEndpointNeedsAToken(t *testing.T) {
	f := start(t, defaultUsers(t))
	v := f.configVersion()
	for _, e := range endpoints() {
		for _, token := range []string{"", "forged-token"} {
			st, data := f.do(e.method, e.path, token, strings.NewReader(e.body))
			if st != http.StatusForbidden || !bytes.Contains(data, []byte(`"errorCode":403`)) || !bytes.Contains(data, []byte(`"success":false`)) {
				t.Errorf("%s %s with token %q: %d %s, want 403 in the envelope", e.method, e.path, token, st, data)
			}
		}
	}
	if f.configVersion() != v {
		t.Errorf("a request without a valid token wrote the config")
	}
	token := f.login("admin", adminPW)
	// The dump endpoint dials only a live instance's IP: one on loopback,
	// whose port 1 answers nothing.
	f.instance("127.0.0.1@-@43")
	for _, e := range endpoints() {
		var body io.Reader
		if e.body != "" {
			body = strings.NewReader(e.body)
		}
		st, data := f.do(e.method, e.path, token, body)
		if st != http.StatusOK {
			t.Errorf("%s %s as admin: %d %s", e.method, e.path, st, data)
			continue
		}
		if strings.HasSuffix(e.path, "/count") {
			var n int
			if err := json.Unmarshal(data, &n); err != nil {
				t.Errorf("%s: want a bare int, got %s", e.path, data)
			}
			continue
		}
		if env := f.envelope(data); string(env["success"]) != "true" {
			t.Errorf("%s %s: %s", e.method, e.path, data)
		}
	}
	if !strings.Contains(f.logs.String(), "audit: user=admin op=disable job=j result=ok") {
		t.Errorf("no audit line for the disable:\n%s", f.logs)
	}
}

func TestLoginRefusals(t *testing.T) {
	f := start(t, defaultUsers(t))
	for name, body := range map[string]string{
		"wrong password": `{"username":"admin","password":"nope"}`,
		"unknown user":   `{"username":"root","password":"root"}`,
		"empty":          `{}`,
	} {
		st, data := f.do("POST", "/api/login", "", strings.NewReader(body))
		env := f.envelope(data)
		if st != http.StatusForbidden || string(env["errorCode"]) != "403" || string(env["errorMsg"]) != `"Unauthorized."` || string(env["model"]) != "null" {
			t.Errorf("%s: %d %s", name, st, data)
		}
	}
	if st, data := f.do("POST", "/api/login", "", strings.NewReader(`{"username":`)); st != http.StatusBadRequest || !bytes.Contains(data, []byte("malformed JSON")) {
		t.Errorf("malformed login: %d %s", st, data)
	}
}

// TestGuestIsReadOnly: a guest reads, and every write is refused by the
// server with nothing written.
func TestGuestIsReadOnly(t *testing.T) {
	f := start(t, defaultUsers(t))
	token := f.login("guest", guestPW)
	v := f.configVersion()
	for _, e := range endpoints() {
		st, data := f.do(e.method, e.path, token, strings.NewReader(e.body))
		if e.method == "GET" {
			if st != http.StatusOK {
				t.Errorf("guest %s %s: %d %s", e.method, e.path, st, data)
			}
			continue
		}
		if st != http.StatusForbidden || !bytes.Contains(data, []byte("read-only")) {
			t.Errorf("guest %s %s: %d %s, want 403 read-only", e.method, e.path, st, data)
		}
	}
	ctx := context.Background()
	if f.configVersion() != v {
		t.Error("a guest's request changed the config")
	}
	if v, _, _ := f.c.Get(ctx, node.New("j").Server("10.0.0.1")); string(v) != "ENABLED" {
		t.Errorf("server node %q after a guest's disable", v)
	}
}

// TestFieldNames: the JSON of the console: the field names of upstream's
// domain objects as Jackson serialises them, in ElasticJob-UI's
// ResponseResult envelope.
func TestFieldNames(t *testing.T) {
	f := start(t, defaultUsers(t))
	token := f.login("admin", adminPW)
	for path, want := range map[string][]string{
		"/api/jobs/getAllJobsBriefInfo":       {"jobName", "status", "description", "cron", "instanceCount", "shardingTotalCount"},
		"/api/jobs/j/sharding":                {"item", "serverIp", "instanceId", "status", "failover"},
		"/api/servers/getAllServersBriefInfo": {"serverIp", "instances", "jobNames", "instancesNum", "jobsNum", "disabledJobsNum"},
		"/api/servers/10.0.0.1/jobs":          {"jobName", "status", "description", "cron", "instanceCount", "shardingTotalCount"},
		"/api/registry-center/load":           {"name", "zkAddressList", "namespace", "digest", "activated"},
	} {
		_, data := f.do("GET", path, token, nil)
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(f.envelope(data)["model"], &list); err != nil || len(list) == 0 {
			t.Errorf("%s: model %s", path, data)
			continue
		}
		for _, k := range want {
			if _, ok := list[0][k]; !ok {
				t.Errorf("%s: no field %q in %s", path, k, data)
			}
		}
		if len(list[0]) != len(want) {
			t.Errorf("%s: fields %s, want exactly %v", path, data, want)
		}
	}
	_, data := f.do("GET", "/api/jobs/getAllJobsBriefInfo", token, nil)
	if !bytes.Contains(data, []byte(`{"jobName":"j","status":"OK","description":"","cron":"0 0/5 * * * ?","instanceCount":1,"shardingTotalCount":3}`)) {
		t.Errorf("brief: %s", data)
	}
}

// TestSecretsMasked: secret props never leave the server, and a config
// written back as read keeps them.
func TestSecretsMasked(t *testing.T) {
	f := start(t, defaultUsers(t))
	token := f.login("admin", adminPW)
	_, data := f.do("GET", "/api/jobs/config/j", token, nil)
	for _, secret := range []string{"hunter2-secret", "tok123456789"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("secret %q in %s", secret, data)
		}
	}
	if !bytes.Contains(data, []byte(`"email.password":"***"`)) || !bytes.Contains(data, []byte(`access_token=***`)) || !bytes.Contains(data, []byte(`"script.command.line":"echo hi"`)) {
		t.Errorf("config: %s", data)
	}
	// Write it back with one change.
	model := f.envelope(data)["model"]
	changed := bytes.Replace(model, []byte(`"0 0/5 * * * ?"`), []byte(`"0 0/9 * * * ?"`), 1)
	if st, out := f.do("PUT", "/api/jobs/config", token, bytes.NewReader(changed)); st != 200 {
		t.Fatalf("PUT: %d %s", st, out)
	}
	st, err := lifecycle.GetConfig(context.Background(), f.c, "j")
	if err != nil {
		t.Fatal(err)
	}
	if st.Config.Cron != "0 0/9 * * * ?" || st.Config.Props["email.password"] != "hunter2-secret" ||
		st.Config.Props["dingtalk.webhook"] != "https://oapi.example.com/robot/send?access_token=tok123456789" {
		t.Errorf("stored after the round trip: cron %q props %v", st.Config.Cron, st.Config.Props)
	}
}

// TestBadInput: clear 4xx errors in the envelope and nothing written.
func TestBadInput(t *testing.T) {
	f := start(t, defaultUsers(t))
	token := f.login("admin", adminPW)
	v := f.configVersion()
	big := `{"jobName":"j","description":"` + strings.Repeat("x", httpapi.DefaultMaxBody) + `"}`
	for name, tc := range map[string]struct {
		method, path, body string
		status             int
		msg                string
	}{
		"unknown job":       {"POST", "/api/jobs/nope/disable", "", 404, `job not found: \"nope\"`},
		"unknown job item":  {"POST", "/api/jobs/nope/sharding/0/disable", "", 404, "not found"},
		"item out of range": {"POST", "/api/jobs/j/sharding/3/disable", "", 400, "has items 0 to 2"},
		"item not a number": {"POST", "/api/jobs/j/sharding/x/disable", "", 400, "path parameter item: \\\"x\\\" is not a sharding item"},
		"unknown server":    {"POST", "/api/servers/10.9.9.9/disable", "", 404, "no job has server"},
		"bad cron":          {"PUT", "/api/jobs/config", `{"jobName":"j","cron":"not a cron","shardingTotalCount":3}`, 400, "cron"},
		"bad total":         {"PUT", "/api/jobs/config", `{"jobName":"j","cron":"0 0/5 * * * ?","shardingTotalCount":0}`, 400, "shardingTotalCount"},
		"malformed JSON":    {"PUT", "/api/jobs/config", `{"jobName":"j",`, 400, "JSON"},
		"no job name":       {"PUT", "/api/jobs/config", `{"cron":"0 0/5 * * * ?"}`, 400, "jobName: invalid job name: must not be empty"},
		"config unknown":    {"PUT", "/api/jobs/config", `{"jobName":"nope","cron":"0 0/5 * * * ?","shardingTotalCount":1}`, 404, "not found"},
		"oversized":         {"PUT", "/api/jobs/config", big, 413, "larger than"},
		"unknown endpoint":  {"GET", "/api/jobs/j/nothing", "", 404, "no endpoint"},
		"bad dump port":     {"POST", "/api/servers/127.0.0.1/x/jobs/j/dump", "", 400, "path parameter dumpPort: \\\"x\\\" is not a port"},
	} {
		st, data := f.do(tc.method, tc.path, token, strings.NewReader(tc.body))
		env := f.envelope(data)
		if st != tc.status || string(env["errorCode"]) != fmt.Sprint(tc.status) || !strings.Contains(string(env["errorMsg"]), tc.msg) {
			t.Errorf("%s: %d %.300s, want %d with %q", name, st, data, tc.status, tc.msg)
		}
	}
	if f.configVersion() != v {
		t.Error("a refused request wrote the config")
	}
	if _, found, _ := f.c.Exists(context.Background(), node.New("j").Disabled(3)); found {
		t.Error("item 3 was disabled")
	}
	if _, found, _ := f.c.Exists(context.Background(), "/nope"); found {
		t.Error("a request on an unknown job created it")
	}
}

// TestNoDefaultCredentials: without users the server makes a random admin
// password, logs it once, and upstream's root/root does not work; a
// public address is refused.
func TestNoDefaultCredentials(t *testing.T) {
	f := start(t, nil)
	m := regexp.MustCompile(`user=admin password=(\S+)`).FindStringSubmatch(f.logs.String())
	if m == nil {
		t.Fatalf("no generated password in the log:\n%s", f.logs)
	}
	if strings.Count(f.logs.String(), m[1]) != 1 {
		t.Errorf("the generated password is logged more than once")
	}
	for _, cred := range [][2]string{{"root", "root"}, {"admin", "admin"}, {"guest", "guest"}, {"admin", ""}} {
		st, _ := f.do("POST", "/api/login", "", strings.NewReader(fmt.Sprintf(`{"username":%q,"password":%q}`, cred[0], cred[1])))
		if st != http.StatusForbidden {
			t.Errorf("login %s/%s: %d", cred[0], cred[1], st)
		}
	}
	f.login("admin", m[1])

	f2 := start(t, nil)
	if m2 := regexp.MustCompile(`user=admin password=(\S+)`).FindStringSubmatch(f2.logs.String()); m2 == nil || m2[1] == m[1] {
		t.Errorf("two servers share a generated password")
	}

	c, err := embedded.NewServer().Connect("x")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		_, err := httpapi.Listen(httpapi.Options{Listen: addr, Client: c})
		if !errors.Is(err, httpapi.ErrPublicWithoutUsers) {
			t.Errorf("listen %s without users: %v, want ErrPublicWithoutUsers", addr, err)
		}
	}
	// With users, a public address needs TLS or the explicit opt-in to
	// plain HTTP.
	_, err = httpapi.Listen(httpapi.Options{Listen: "0.0.0.0:0", Client: c, Users: defaultUsers(t)})
	if !errors.Is(err, hostconfig.ErrInsecureListen) {
		t.Errorf("listen publicly over plain HTTP: %v, want ErrInsecureListen", err)
	}
	srv, err := httpapi.Listen(httpapi.Options{Listen: "0.0.0.0:0", Client: c, Users: defaultUsers(t), AllowInsecureHTTP: true})
	if err != nil {
		t.Fatalf("listen publicly with users: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = srv.Run(ctx)

	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(src, []byte(`"root"`)) {
		t.Error("server.go mentions a root account")
	}
}

func TestHealth(t *testing.T) {
	f := start(t, defaultUsers(t))
	for _, p := range []string{"/healthz", "/readyz"} {
		if st, data := f.do("GET", p, "", nil); st != 200 || string(data) != "ok\n" {
			t.Errorf("%s: %d %q", p, st, data)
		}
	}
}

// A trigger no instance would run is refused in the envelope with
// errorCode 409 and the reason (upstream, and ejob once, answered success
// and nothing ran). Only the envelope is asserted: /api/* may carry its
// errors on HTTP 200 as upstream does.
func TestTriggerOfADisabledJobIsRefused(t *testing.T) {
	f := start(t, defaultUsers(t))
	token := f.login("admin", adminPW)
	if _, data := f.do("POST", "/api/jobs/j/disable", token, nil); string(f.envelope(data)["success"]) != "true" {
		t.Fatalf("disable: %s", data)
	}
	_, data := f.do("POST", "/api/jobs/j/trigger", token, nil)
	env := f.envelope(data)
	var msg string
	_ = json.Unmarshal(env["errorMsg"], &msg)
	if string(env["success"]) != "false" || string(env["errorCode"]) != "409" ||
		!strings.Contains(msg, `job "j" is disabled on every server with a live instance (10.0.0.1); enable it first`) {
		t.Errorf("trigger of a disabled job: %s; want errorCode 409 with the reason", data)
	}
	if _, data := f.do("POST", "/api/jobs/j/enable", token, nil); string(f.envelope(data)["success"]) != "true" {
		t.Fatalf("enable: %s", data)
	}
	if _, data := f.do("POST", "/api/jobs/j/trigger", token, nil); string(f.envelope(data)["success"]) != "true" {
		t.Errorf("trigger of an enabled job: %s", data)
	}
}
