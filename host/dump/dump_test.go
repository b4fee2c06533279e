package dump_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/host/dump"
	"github.com/ejob-io/ejob/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// prepared is a job's tree as a Java or ejob host leaves it, with the IPs
// the masking must handle.
var prepared = []struct{ path, value string }{
	{"/myJob", "SCRIPT"},
	{"/myJob/config", "cron: 0/5 * * * * ?\njobName: myJob\nshardingTotalCount: 2\n"},
	{"/myJob/servers/192.168.0.1", "ENABLED"},
	{"/myJob/servers/10.0.0.11", "DISABLED"},
	{"/myJob/servers/10.0.0.1", "ENABLED"},
	{"/myJob/instances/192.168.0.1@-@100", "jobInstanceId: 192.168.0.1@-@100\nserverIp: 192.168.0.1\n"},
	{"/myJob/leader/election/instance", "192.168.0.1@-@100"},
	{"/myJob/sharding/0/instance", "192.168.0.1@-@100"},
	{"/myJob/sharding/1/instance", "10.0.0.11@-@7"},
	{"/myJob/sharding/1/failovering", "10.0.0.1 took over from 10.0.0.11"},
	{"/otherJob/config", "shardingTotalCount: 1\n"},
}

// world is an embedded registry with the prepared tree, and a host's cache
// of /myJob taken from it and then stopped, so that later registry changes
// are not in the cache.
func world(t *testing.T) (reg.Client, *reg.TreeCache) {
	t.Helper()
	c, err := embedded.NewServer().Connect("dump")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	for _, n := range prepared {
		if _, err := reg.Persist(ctxOf(t), c, n.path, []byte(n.value)); err != nil {
			t.Fatal(err)
		}
	}
	cache := reg.NewTreeCache(c, "/myJob")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = cache.Run(ctx)
	}()
	go func() {
		for range cache.Events() {
		}
	}()
	select {
	case <-cache.Initialized():
	case <-time.After(10 * time.Second):
		t.Fatal("cache not initialized")
	}
	cancel()
	<-done
	// After the cache stopped: a new node (absent from the cache), and a
	// changed value (the cache's older one is shown, as upstream reads
	// through its cache).
	for path, v := range map[string]string{"/myJob/sharding/1/running": "10.0.0.11@-@7", "/myJob/servers/10.0.0.1": "DISABLED"} {
		if _, err := reg.Persist(ctxOf(t), c, path, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	return c, cache
}

// The dump as upstream writes it: descending child order, pre-order, the
// cache columns only for the node the cache lacks, raw multi-line values,
// IPs masked in order of first appearance over the whole dump, with
// upstream's substring replacement ("10.0.0.1" inside "10.0.0.11").
const wantDump = `/myJob/sharding | 
/myJob/sharding/1 | 
/myJob/sharding/1/running | ip1@-@7 |  | 
/myJob/sharding/1/instance | ip1@-@7
/myJob/sharding/1/failovering | ip2 took over from ip21
/myJob/sharding/0 | 
/myJob/sharding/0/instance | ip3@-@100
/myJob/servers | 
/myJob/servers/ip3 | ENABLED
/myJob/servers/ip1 | DISABLED
/myJob/servers/ip2 | ENABLED
/myJob/leader | 
/myJob/leader/election | 
/myJob/leader/election/instance | ip3@-@100
/myJob/instances | 
/myJob/instances/ip3@-@100 | jobInstanceId: ip3@-@100
serverIp: ip3

/myJob/config | cron: 0/5 * * * * ?
jobName: myJob
shardingTotalCount: 2

`

func TestRenderIsUpstreamsDump(t *testing.T) {
	c, cache := world(t)
	got, err := dump.Render(ctxOf(t), c, cache, "myJob")
	if err != nil {
		t.Fatal(err)
	}
	if got != wantDump {
		t.Errorf("dump =\n%s\nwant\n%s", got, wantDump)
	}
	// A job without nodes is a lone line end; a job with nodes but no
	// cache here is not dumped.
	if got, err := dump.Render(ctxOf(t), c, nil, "nope"); err != nil || got != "\n" {
		t.Errorf("dump of an unknown job = %q, %v; want \"\\n\"", got, err)
	}
	if got, err := dump.Render(ctxOf(t), c, nil, "otherJob"); err == nil {
		t.Errorf("dump of a job without a cache = %q, want an error", got)
	}
}

func TestMaskIPs(t *testing.T) {
	tests := map[string]struct{ in, want []string }{
		"upstream example": {[]string{"/job/servers/192.168.0.1/hostName | 192.168.0.1"}, []string{"/job/servers/ip1/hostName | ip1"}},
		"aliases shared over lines": {[]string{"a 10.0.0.2", "b 10.0.0.3 10.0.0.2", "c 10.0.0.3"},
			[]string{"a ip1", "b ip2 ip1", "c ip2"}},
		"prefix first mangles":   {[]string{"10.0.0.1 10.0.0.11"}, []string{"ip1 ip11"}},
		"longer first is fine":   {[]string{"10.0.0.11 10.0.0.1"}, []string{"ip1 ip2"}},
		"prefix on another line": {[]string{"10.0.0.1", "10.0.0.11"}, []string{"ip1", "ip2"}},
		"octet bounds":           {[]string{"255.255.255.255 0.0.0.0 10.0.0.256"}, []string{"ip1 ip2 ip36"}}, // 10.0.0.25, then "6"
		"digits around":          {[]string{"1192.168.0.1x", "10.0.0.1111"}, []string{"1ip1x", "ip21"}},
		"no ip":                  {[]string{"/job/config | cron: 0/5 * * * * ?", ""}, []string{"/job/config | cron: 0/5 * * * * ?", ""}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := dump.MaskIPs(tc.in)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("MaskIPs(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// serve runs a dump server on a free port for the test.
func serve(t *testing.T) (port int) {
	t.Helper()
	c, cache := world(t)
	s, err := dump.Listen("", 0, dump.Options{Client: c, Caches: func(job string) (dump.Cache, bool) {
		if job == "myJob" {
			return cache, true
		}
		return nil, false
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s.Addr().(*net.TCPAddr).Port
}

// exchange sends raw bytes, half-closes, and reads everything back.
func exchange(t *testing.T, port int, send string) string {
	t.Helper()
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.WriteString(conn, send); err != nil {
		t.Fatal(err)
	}
	_ = conn.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(conn)
	// A server that closes with part of a long request unread resets the
	// connection: closed without output all the same.
	if err != nil && !(errors.Is(err, syscall.ECONNRESET) && len(got) == 0) {
		t.Fatalf("read: %v", err)
	}
	return string(got)
}

func TestServer(t *testing.T) {
	port := serve(t)
	for _, req := range []string{"dump@myJob\n", "dump@myJob\r\n", "dump@myJob", "dump@myJob@\n"} {
		if got := exchange(t, port, req); got != wantDump {
			t.Errorf("reply to %q =\n%s\nwant the dump", req, got)
		}
	}
	if got := exchange(t, port, "dump@nope\n"); got != "\n" {
		t.Errorf("reply for an unknown job = %q, want \"\\n\" as upstream", got)
	}
	// Anything else: the connection is closed without a byte.
	for _, req := range []string{"", "\n", "dump@\n", "dump@a@b\n", "DUMP@myJob\n", "stat\n", " dump@myJob\n",
		"dump@otherJob\n", "dump@" + strings.Repeat("x", 70<<10) + "\n"} {
		if got := exchange(t, port, req); got != "" {
			t.Errorf("reply to %.40q = %.80q, want nothing", req, got)
		}
	}
	// Upstream's client (JobOperateAPI.dump) reads it line by line.
	got, err := lifecycle.Dump(ctxOf(t), "myJob", "127.0.0.1", port)
	if err != nil || got != wantDump {
		t.Errorf("lifecycle.Dump = %q, %v", got, err)
	}
	if got, err := lifecycle.Dump(ctxOf(t), "otherJob", "127.0.0.1", port); err != nil || got != "" {
		t.Errorf("lifecycle.Dump of a job the host does not run = %q, %v; want \"\"", got, err)
	}
	if _, err := lifecycle.Dump(ctxOf(t), "a@b", "127.0.0.1", port); !errors.Is(err, lifecycle.ErrInvalid) {
		t.Errorf("lifecycle.Dump of a name with '@': %v, want ErrInvalid", err)
	}
}

// A client that never sends its line does not hold the server: the others
// are served, and Run returns when ctx ends.
func TestServerNotHeldBySilentClients(t *testing.T) {
	port := serve(t)
	for range 6 {
		conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
	}
	if got := exchange(t, port, "dump@myJob\n"); got != wantDump {
		t.Errorf("reply with silent clients connected = %q", got)
	}
}

func TestListenRefusesBadPorts(t *testing.T) {
	for _, p := range []int{-1, 65536} {
		if _, err := dump.Listen("", p, dump.Options{}); err == nil || !strings.Contains(err.Error(), "Port value out of range: "+strconv.Itoa(p)) {
			t.Errorf("Listen(%d) = %v, want upstream's out-of-range error", p, err)
		}
	}
}

// A job whose props hold secrets, some in URLs with IP addresses (which
// the dump aliases) and some YAML-quoted: the dump shows none of them,
// and the rest of the config as it is.
func TestRenderMasksSecretsAtTheSource(t *testing.T) {
	const secret = "S3CR3T"
	c, err := embedded.NewServer().Connect("dump")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	cfg := "cron: 0/5 * * * * ?\njobName: sj\nprops:\n" +
		"  email.password: 'p''a ss: #" + secret + "'\n" +
		"  http.uri: http://bob:" + secret + "@10.0.0.5:8080/run?token=" + secret + "\n" +
		"  http.data: apikey=" + secret + "\n" +
		"  script.command.line: curl -H 'Authorization: Bearer " + secret + "' http://10.0.0.5/\n" +
		"  webhook.headers.X-Api-Key: " + secret + "\n" +
		"shardingTotalCount: 1\n"
	for path, v := range map[string]string{"/sj/config": cfg, "/sj/servers/10.0.0.5": "ENABLED"} {
		if _, err := reg.Persist(ctxOf(t), c, path, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := dump.Render(ctxOf(t), c, missCache{}, "sj")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, secret) {
		t.Errorf("the dump shows a secret:\n%s", got)
	}
	for _, keep := range []string{"/sj/servers/ip1 | ENABLED |  | ", "http.uri: http://***@ip1:8080/run?token=***", "cron: 0/5 * * * * ?", "shardingTotalCount: 1"} {
		if !strings.Contains(got, keep) {
			t.Errorf("the dump lost %q:\n%s", keep, got)
		}
	}
}

// missCache holds nothing: every value comes from the registry.
type missCache struct{}

func (missCache) Get(string) ([]byte, reg.Stat, bool) { return nil, reg.Stat{}, false }
