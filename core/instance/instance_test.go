package instance

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func TestID(t *testing.T) {
	t.Parallel()
	if got := NewID("192.168.1.10", 12345).String(); got != "192.168.1.10@-@12345" {
		t.Errorf("NewID = %q", got)
	}
	tests := map[string]struct {
		in      string
		want    ID
		wantErr bool
	}{
		"real tree":         {"192.0.2.2@-@12474", ID{"192.0.2.2", "12474"}, false},
		"upstream test id":  {"ip1@-@defaultInstance", ID{"ip1", "defaultInstance"}, false},
		"no separator":      {"192.0.2.2", ID{}, true},
		"empty ip":          {"@-@1", ID{}, true},
		"two separators":    {"a@-@1@-@2", ID{}, true},
		"empty pid allowed": {"a@-@", ID{"a", ""}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseID(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidID) {
					t.Fatalf("err = %v, want ErrInvalidID", err)
				}
				return
			}
			if err != nil || got != tc.want || got.String() != tc.in {
				t.Errorf("ParseID = %+v, %v", got, err)
			}
		})
	}
	if ip, ok := ServerIP("10.0.0.12@-@7"); !ok || ip != "10.0.0.12" {
		t.Errorf("ServerIP = %q %v", ip, ok)
	}
	if !HasServerIPPrefix("10.0.0.12@-@7", "10.0.0.1") {
		t.Error("upstream's prefix quirk: 10.0.0.1 matches 10.0.0.12@-@7")
	}
}

func TestSelectIP(t *testing.T) {
	t.Parallel()
	eth0 := Interface{Name: "eth0", Up: true, Addrs: addrs("fe80::1", "10.0.0.5")}
	eth1 := Interface{Name: "eth1", Up: true, Addrs: addrs("192.168.1.7")}
	lo := Interface{Name: "lo", Up: true, Loopback: true, Addrs: addrs("127.0.0.1", "::1")}
	down := Interface{Name: "eth2", Up: false, Addrs: addrs("172.16.0.1")}
	alias := Interface{Name: "eth0:1", Up: true, Virtual: true, Addrs: addrs("10.9.9.9")}
	v6only := Interface{Name: "v6", Up: true, Addrs: addrs("2001:db8::1")}
	linkLocal := Interface{Name: "ll", Up: true, Addrs: addrs("169.254.3.4")}
	mapped := Interface{Name: "m", Up: true, Addrs: addrs("::ffff:10.1.2.3")}
	list := func(in ...Interface) func() ([]Interface, error) {
		return func() ([]Interface, error) { return in, nil }
	}
	tests := map[string]struct {
		opts    IPOptions
		want    string
		wantErr error
	}{
		// IpUtilsTest.assertGetFirstNetworkInterface: the last valid wins.
		"last valid interface wins": {IPOptions{Interfaces: list(eth0, eth1)}, "192.168.1.7", nil},
		"order decides":             {IPOptions{Interfaces: list(eth1, eth0)}, "10.0.0.5", nil},
		"skips loopback down alias": {IPOptions{Interfaces: list(eth0, lo, down, alias)}, "10.0.0.5", nil},
		"ipv6 never chosen":         {IPOptions{Interfaces: list(eth0, v6only)}, "10.0.0.5", nil},
		"link-local kept as java":   {IPOptions{Interfaces: list(eth0, linkLocal)}, "169.254.3.4", nil},
		"ipv4-mapped is ipv4":       {IPOptions{Interfaces: list(mapped)}, "10.1.2.3", nil},
		// IpUtilsTest.assertPreferredNetworkInterface
		"preferred interface":                 {IPOptions{PreferredInterface: "eth0", Interfaces: list(eth0, eth1)}, "10.0.0.5", nil},
		"unknown preferred interface":         {IPOptions{PreferredInterface: "wlan9", Interfaces: list(eth0, eth1)}, "192.168.1.7", nil},
		"preferred interface without address": {IPOptions{PreferredInterface: "v6", Interfaces: list(eth0, v6only)}, "", ErrNoIP},
		// IpUtilsTest.assertPreferredNetworkAddress: prefix and regex.
		"preferred ip prefix":        {IPOptions{PreferredIP: "10.0", Interfaces: list(eth0, eth1)}, "10.0.0.5", nil},
		"preferred ip regex":         {IPOptions{PreferredIP: "192.168.*", Interfaces: list(eth0, eth1)}, "192.168.1.7", nil},
		"preferred ip matches none":  {IPOptions{PreferredIP: "172.20", Interfaces: list(eth0, eth1)}, "", ErrNoIP},
		"preferred interface and ip": {IPOptions{PreferredInterface: "eth1", PreferredIP: "10.", Interfaces: list(eth0, eth1)}, "", ErrNoIP},
		"no interfaces":              {IPOptions{Interfaces: list()}, "", ErrNoIP},
		"only loopback":              {IPOptions{Interfaces: list(lo)}, "", ErrNoIP},
		"unreachable skipped":        {IPOptions{Interfaces: list(eth0, eth1), Reachable: func(a netip.Addr) bool { return a.String() != "192.168.1.7" }}, "10.0.0.5", nil},
		"list error":                 {IPOptions{Interfaces: func() ([]Interface, error) { return nil, errors.New("boom") }}, "", nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := SelectIP(tc.opts)
			switch {
			case tc.want == "" && tc.wantErr == nil:
				if err == nil {
					t.Fatalf("SelectIP = %v, want an error", got)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			default:
				if err != nil || got.String() != tc.want {
					t.Errorf("SelectIP = %v, %v; want %s", got, err, tc.want)
				}
			}
		})
	}
	if _, err := SelectIP(IPOptions{PreferredIP: "(", Interfaces: list(eth0)}); err == nil {
		t.Error("an invalid preferred-ip regex must be an error")
	}
}

func TestIPOptionsFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{EnvPreferredInterface: "eno1", EnvPreferredIP: "192.168.*"}
	got := IPOptionsFromEnv(func(k string) string { return env[k] })
	if got.PreferredInterface != "eno1" || got.PreferredIP != "192.168.*" {
		t.Errorf("IPOptionsFromEnv = %+v", got)
	}
}

func TestSystemInterfaces(t *testing.T) {
	t.Parallel()
	ifs, err := SystemInterfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ifs {
		if in.Name == "" {
			t.Errorf("interface without name: %+v", in)
		}
	}
}

func TestTaskID(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		job      string
		items    []int
		instance string
		want     string
	}{
		"items":    {"myJob", []int{0, 1, 2}, "192.168.1.10@-@12345", "myJob@-@0,1,2@-@READY@-@192.168.1.10@-@12345"},
		"no items": {"myJob", nil, "192.168.1.10@-@12345", "myJob@-@@-@READY@-@192.168.1.10@-@12345"},
		// ExecutionContextServiceTest.assertGetShardingContextWhenNotAssignShardingItem
		"fallback":            {"test_job", nil, FallbackInstanceID, "test_job@-@@-@READY@-@127.0.0.1@-@1"},
		"failover order kept": {"j", []int{2, 0}, "h@-@1", "j@-@2,0@-@READY@-@h@-@1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := NewTaskID(tc.job, tc.items, tc.instance)
			if got != tc.want {
				t.Fatalf("NewTaskID = %q, want %q", got, tc.want)
			}
			parsed, err := ParseTaskID(got)
			if err != nil {
				t.Fatal(err)
			}
			if parsed.JobName != tc.job || !reflect.DeepEqual(parsed.Items, tc.items) || parsed.ExecutionType != ExecutionTypeReady ||
				parsed.Instance.String() != tc.instance || parsed.String() != got {
				t.Errorf("ParseTaskID = %+v", parsed)
			}
		})
	}
	// TaskContextTest: exactly 5 parts.
	for _, bad := range []string{"a@-@b", "job@-@0@-@READY@-@ip", "job@-@x@-@READY@-@ip@-@1", "job@-@0@-@READY@-@ip@-@1@-@extra"} {
		if _, err := ParseTaskID(bad); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ParseTaskID(%q) err = %v, want ErrInvalidID", bad, err)
		}
	}
}

func TestShardingContexts(t *testing.T) {
	t.Parallel()
	sc := NewShardingContexts("myJob", 3, "", []int{0, 1}, map[int]string{0: "A", 2: "C"}, "192.168.1.10@-@12345")
	if sc.TaskID != "myJob@-@0,1@-@READY@-@192.168.1.10@-@12345" {
		t.Errorf("TaskID = %q", sc.TaskID)
	}
	if !reflect.DeepEqual(sc.ShardingItemParameters, map[int]string{0: "A"}) {
		t.Errorf("params = %v (only this run's items)", sc.ShardingItemParameters)
	}
	// ShardingContextsTest.assertCreateShardingContext
	c0 := sc.ShardingContext(0)
	if c0.JobName != "myJob" || c0.TaskID != sc.TaskID || c0.ShardingTotalCount != 3 || c0.ShardingItem != 0 ||
		c0.ShardingParameter == nil || *c0.ShardingParameter != "A" {
		t.Errorf("ShardingContext(0) = %+v", c0)
	}
	if c1 := sc.ShardingContext(1); c1.ShardingParameter != nil {
		t.Errorf("item without a parameter got %q", *c1.ShardingParameter)
	}
	if c0.FencingToken != 0 {
		t.Errorf("token before the begin = %d, want 0 (no fence)", c0.FencingToken)
	}
	// The begin fills the tokens into the map every copy shares.
	cp := *sc
	cp.FencingTokens[1] = 42
	if c1 := sc.ShardingContext(1); c1.FencingToken != 42 {
		t.Errorf("ShardingContext(1).FencingToken = %d, want 42", c1.FencingToken)
	}
	cl := sc.Clone()
	cl.ShardingItemParameters[1] = "x"
	cl.FencingTokens[0] = 9
	if _, ok := sc.Parameter(1); ok {
		t.Error("Clone shares its map")
	}
	if sc.ShardingContext(0).FencingToken != 0 || cl.ShardingContext(1).FencingToken != 42 {
		t.Error("Clone shares its token map, or drops its tokens")
	}
}
