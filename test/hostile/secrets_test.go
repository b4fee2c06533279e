package hostile

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/ejob-io/ejob/internal/testkit"
)

// secretMark is in every secret of secretJobs; no output may contain it.
const secretMark = "S3CR3T"

// secretJobs are two jobs holding the secrets the dump port and the
// config printers once showed in clear: a webhook secret and header, an
// HTTP job's URL user:password and ?token= (with an IP address in the URL,
// which the dump aliases), an apikey= body, a bearer token inside a
// script's command line and a YAML-quoted email password.
const secretJobs = `    hookJob:
      elasticJobType: HTTP
      shardingTotalCount: 1
      jobErrorHandlerType: WEBHOOK
      props:
        http.uri: http://bob:S3CR3T-urlpw@10.9.8.7:8080/run?token=S3CR3T-query
        http.method: POST
        http.data: apikey=S3CR3T-data&x=1
        webhook.url: https://hooks.example.com/ejob?sig=S3CR3T-hookurl
        webhook.secret: S3CR3T-hooksecret
        webhook.headers.X-Api-Key: S3CR3T-header
    mailJob:
      elasticJobType: SCRIPT
      shardingTotalCount: 1
      jobErrorHandlerType: EMAIL
      props:
        script.command.line: 'curl -sf -H "Authorization: Bearer S3CR3T-bearer" http://127.0.0.1:1/'
        email.host: smtp.example.com
        email.port: 25
        email.useSsl: false
        email.username: ops
        email.password: 'p''a ss: #S3CR3T-mailpw'
        email.from: a@example.com
        email.to: b@example.com
`

// noSecret fails the test when text shows any part of a secret.
func noSecret(t *testing.T, where, text string) {
	t.Helper()
	if i := strings.Index(text, secretMark); i >= 0 {
		t.Errorf("%s shows a secret (%q):\n%s", where, text[max(0, i-60):min(len(text), i+40)], text)
	}
}

// dumpOver sends dump@job to addr and returns the reply.
func dumpOver(t *testing.T, addr, job string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial the dump port %s: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, "dump@"+job+"\n"); err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(conn)
	return string(data)
}

// TestHostileSecretsNeverShown: a real host whose jobs hold secrets in
// every form (secret props, URL credentials and query values, an
// Authorization header in a command line, apikey= in a body, a
// YAML-quoted password). Its dump port listens on loopback only unless
// configured; and neither `dump@JOB` over the port, `ejob dump`, the REST
// dump endpoint, a guest's GET /api/jobs/config/JOB, the console's config
// API nor `ejob job show` (text and JSON) shows any of the secrets.
func TestHostileSecretsNeverShown(t *testing.T) {
	e := newEnv(t)
	portA, portB := testkit.FreePort(t), testkit.FreePort(t)
	// Host A: the default dump address. Host B: every interface, so the
	// REST dump can reach it at its instance IP.
	a := e.start("hostA", "run", "-c", e.write("a.yaml", e.config(secretJobs)+fmt.Sprintf("  dump:\n    port: %d\n", portA)))
	b := e.start("hostB", "run", "-c", e.write("b.yaml", e.config(secretJobs)+fmt.Sprintf("  dump:\n    port: %d\n    address: 0.0.0.0\n", portB)))
	dumpLine := regexp.MustCompile(`dump port is open.*addr=(\S+)`)
	if got := a.waitLog(t, 60*time.Second, dumpLine)[1]; got != "127.0.0.1:"+strconv.Itoa(portA) {
		t.Errorf("host A's dump port listens on %s, want 127.0.0.1:%d", got, portA)
	}
	b.waitLog(t, 60*time.Second, dumpLine)

	// The console server, with an admin and a guest.
	hashOf := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), 10)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	serveCfg := e.write("serve.yaml", e.config("")+fmt.Sprintf("ejob:\n  http:\n    listen: 127.0.0.1:1\n    users:\n"+
		"      - {name: ops, role: admin, passwordHash: '%s'}\n      - {name: viewer, role: guest, passwordHash: '%s'}\n",
		hashOf("ops-password-1"), hashOf("viewer-password-1")))
	_, base, _ := e.serve(serveCfg)
	admin := login(t, base, "ops", "ops-password-1")
	guest := login(t, base, "viewer", "viewer-password-1")

	// The hosts' instance IP, as the registry knows it.
	var ip string
	testkit.Eventually(t, 60*time.Second, "both hosts' instances in the registry", func() bool {
		_, data := admin.call(http.MethodGet, "/api/servers/getAllServersBriefInfo", "")
		var env struct {
			Model []struct {
				ServerIP     string `json:"serverIp"`
				InstancesNum int    `json:"instancesNum"`
			} `json:"model"`
		}
		if json.Unmarshal(data, &env) != nil {
			return false
		}
		for _, s := range env.Model {
			if s.InstancesNum >= 2 {
				ip = s.ServerIP
				return true
			}
		}
		return false
	})
	if ip == "127.0.0.1" {
		t.Fatal("the instance IP is loopback: the test cannot tell loopback from the instance's address")
	}
	// Host A's port is closed on the instance's address.
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(portA)), 5*time.Second); err == nil {
		conn.Close()
		t.Errorf("host A's dump port answers on %s: it listens beyond loopback", ip)
	}

	for _, job := range []string{"hookJob", "mailJob"} {
		var text string
		testkit.Eventually(t, 60*time.Second, "host A's dump of "+job, func() bool {
			text = dumpOver(t, "127.0.0.1:"+strconv.Itoa(portA), job)
			return strings.Contains(text, "/"+job+"/config | ")
		})
		noSecret(t, "dump@"+job+" over the port", text)

		r := e.ejob(30*time.Second, "dump", job, "--server", "127.0.0.1", "--port", strconv.Itoa(portA))
		if r.code != 0 || !strings.Contains(r.stdout, "/"+job+"/config | ") {
			t.Errorf("ejob dump %s: exit %d\n%s%s", job, r.code, r.stdout, r.stderr)
		}
		noSecret(t, "ejob dump "+job, r.stdout+r.stderr)

		status, data := admin.call(http.MethodPost, fmt.Sprintf("/api/servers/%s/%d/jobs/%s/dump", ip, portB, job), "")
		if status != http.StatusOK || !strings.Contains(string(data), "/"+job+"/config | ") {
			t.Errorf("REST dump of %s from %s:%d: %d %s", job, ip, portB, status, data)
		}
		noSecret(t, "the REST dump of "+job, string(data))

		status, data = guest.call(http.MethodGet, "/api/jobs/config/"+job, "")
		if status != http.StatusOK || !strings.Contains(string(data), `"props"`) {
			t.Errorf("guest GET /api/jobs/config/%s: %d %s", job, status, data)
		}
		noSecret(t, "a guest's GET /api/jobs/config/"+job, string(data))

		if status, data = guest.call(http.MethodGet, "/console/api/jobs/"+job+"/config", ""); status == http.StatusOK {
			noSecret(t, "a guest's GET /console/api/jobs/"+job+"/config", string(data))
		}

		for _, args := range [][]string{{"job", "show", job, "-c", serveCfg}, {"job", "show", job, "-c", serveCfg, "--json"}} {
			r := e.ejob(30*time.Second, args...)
			if r.code != 0 || !strings.Contains(r.stdout, "script.command.line") && !strings.Contains(r.stdout, "http.uri") {
				t.Errorf("ejob %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
			}
			noSecret(t, "ejob "+strings.Join(args, " "), r.stdout+r.stderr)
		}
	}
}

// TestHostileDumpEndpointDialsOnlyKnownHosts: an admin asks the REST
// dump endpoint for hosts and ports the registry does not know (loopback,
// another address, the cloud metadata address), each once at an open port
// and once at a closed one. Every one is refused before any dial, with the
// same answer for the open and the closed port, so the server can be used
// neither to reach arbitrary addresses nor to scan ports.
func TestHostileDumpEndpointDialsOnlyKnownHosts(t *testing.T) {
	e := newEnv(t)
	cfg := e.write("ejob.yaml", e.config(""))
	host := e.start("host", "run", "-c", cfg)
	_, base, pw := e.serve(cfg)
	admin := login(t, base, "admin", pw)
	testkit.Eventually(t, 60*time.Second, "the host's instance of idle", func() bool {
		if !host.alive() {
			t.Fatalf("the host exited:\n%s", host.out)
		}
		_, data := admin.call(http.MethodGet, "/api/servers/getAllServersBriefInfo", "")
		return strings.Contains(string(data), `"instancesNum":1`)
	})
	// An open port on loopback that would answer anything.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			_, _ = io.WriteString(c, "/idle/config | banner\n")
			_ = c.Close()
		}
	}()
	open := ln.Addr().(*net.TCPAddr).Port
	closed := testkit.FreePort(t)
	for _, ip := range []string{"127.0.0.1", "10.255.255.1", "169.254.169.254"} {
		answer := func(port int) (int, string) {
			status, data := admin.call(http.MethodPost, fmt.Sprintf("/api/servers/%s/%d/jobs/idle/dump", ip, port), "")
			return status, strings.ReplaceAll(string(data), strconv.Itoa(port), "PORT")
		}
		so, bo := answer(open)
		sc, bc := answer(closed)
		if so != sc || bo != bc {
			t.Errorf("%s: the open port answers %d %s, the closed one %d %s: they must not differ", ip, so, bo, sc, bc)
		}
		if so == http.StatusOK || strings.Contains(bo, "banner") {
			t.Errorf("%s: an address the registry does not know was dumped: %d %s", ip, so, bo)
		}
	}
	select {
	case <-accepted:
		t.Error("the server dialed an address the registry does not know")
	default:
	}
}
