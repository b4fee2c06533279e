package node

import (
	"bufio"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Ported from upstream's JobNodePathTest, ConfigurationNodeTest,
// LeaderNodeTest, ShardingNodeTest, FailoverNodeTest, GuaranteeNodeTest,
// InstanceNodeTest and ServerNodeTest (upstream's node tests, ported).
func TestBuilders(t *testing.T) {
	t.Parallel()
	j := New("test_job")
	rel := func(p string) string {
		r, ok := j.Rel(p)
		if !ok {
			t.Fatalf("Rel(%q) not under the job", p)
		}
		return r
	}
	tests := map[string]struct{ got, want string }{
		"assertGetFullPath":                       {j.Full("node"), "/test_job/node"},
		"assertGetServerNodePath":                 {j.Servers(), "/test_job/servers"},
		"assertGetServerNodePathForServerIp":      {j.Server("ip0"), "/test_job/servers/ip0"},
		"assertGetShardingNodePath":               {j.Sharding(), "/test_job/sharding"},
		"assertGetShardingNodePathWihItemAndNode": {j.Running(0), "/test_job/sharding/0/running"},
		"assertGetLeaderIpNodePath":               {j.LeaderInstance(), "/test_job/leader/election/instance"},
		"ShardingNode.assertGetRunningNode":       {rel(j.Running(0)), "sharding/0/running"},
		"ShardingNode.assertGetMisfireNode":       {rel(j.Misfire(0)), "sharding/0/misfire"},
		"FailoverNode.assertGetItemsNode":         {rel(j.FailoverItem(0)), "leader/failover/items/0"},
		"assertGetExecutionFailoverNode":          {rel(j.Failover(0)), "sharding/0/failover"},
		"assertGetProcessingFailoverNode":         {rel(j.Failovering(0)), "sharding/0/failovering"},
		"GuaranteeNode.assertGetStartedNode":      {rel(j.GuaranteeStarted(1)), "guarantee/started/1"},
		"GuaranteeNode.assertGetCompletedNode":    {rel(j.GuaranteeCompleted(1)), "guarantee/completed/1"},
		"InstanceNode.assertGetInstanceFullPath":  {j.Instances(), "/test_job/instances"},
		"InstanceNode.assertGetLocalInstancePath": {rel(j.Instance("127.0.0.1@-@0")), "instances/127.0.0.1@-@0"},
		"InstanceNode.assertGetInstancePath":      {j.Instance("host0@-@0"), "/test_job/instances/host0@-@0"},
		"ServerNode.assertGetServerNode":          {rel(j.Server("127.0.0.1")), "servers/127.0.0.1"},
		"config":                                  {j.Config(), "/test_job/config"},
		"root":                                    {j.Root(), "/test_job"},
		"trigger":                                 {j.TriggerInstance("127.0.0.1@-@0"), "/test_job/trigger/127.0.0.1@-@0"},
		"sharding instance":                       {j.ShardingInstance(2), "/test_job/sharding/2/instance"},
		"disabled":                                {j.Disabled(3), "/test_job/sharding/3/disabled"},
		"election latch":                          {j.LeaderLatch(), "/test_job/leader/election/latch"},
		"necessary":                               {j.ShardingNecessary(), "/test_job/leader/sharding/necessary"},
		"processing":                              {j.ShardingProcessing(), "/test_job/leader/sharding/processing"},
		"failover latch":                          {j.FailoverLatch(), "/test_job/leader/failover/latch"},
		"started latch":                           {j.GuaranteeStartedLatch(), "/test_job/guarantee/started-latch"},
		"completed latch":                         {j.GuaranteeCompletedLatch(), "/test_job/guarantee/completed-latch"},
		"system time":                             {j.SystemTime(), "/test_job/systemTime/current"},
		"next ip":                                 {j.NextJobInstanceIP(), "/test_job/next-job-instance-ip"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestPredicates(t *testing.T) {
	t.Parallel()
	j := New("test_job")
	const local = "127.0.0.1@-@0"
	tests := map[string]struct {
		got, want bool
	}{
		"assertIsConfigPath":             {j.IsConfigPath("/test_job/config"), true},
		"assertIsLeaderInstancePath":     {j.IsLeaderInstancePath("/test_job/leader/election/instance"), true},
		"assertIsNotLeaderInstancePath":  {j.IsLeaderInstancePath("/test_job/leader/election/instance1"), false},
		"assertIsInstancePath":           {j.IsInstancePath("/test_job/instances/127.0.0.1@-@0"), true},
		"assertIsNotInstancePath":        {j.IsInstancePath("/test_job/other/127.0.0.1@-@0"), false},
		"assertIsLocalInstancePath":      {j.IsLocalInstancePath("/test_job/instances/127.0.0.1@-@0", local), true},
		"assertIsNotLocalInstancePath":   {j.IsLocalInstancePath("/test_job/other/127.0.0.1@-@0", local), false},
		"assertIsServerPath":             {j.IsServerPath("/test_job/servers/127.0.0.1"), true},
		"assertIsNotServerPath":          {j.IsServerPath("/test_job/servers/255.255.255.256"), false},
		"assertIsLocalServerPath":        {j.IsLocalServerPath("/test_job/servers/127.0.0.1", "127.0.0.1"), true},
		"assertIsNotLocalServerPath":     {j.IsLocalServerPath("/test_job/servers/127.0.0.2", "127.0.0.1"), false},
		"assertIsStartedRootNode":        {j.IsGuaranteeStartedRoot("/test_job/guarantee/started"), true},
		"assertIsNotStartedRootNode":     {j.IsGuaranteeStartedRoot("/otherJob/guarantee/started"), false},
		"assertIsCompletedRootNode":      {j.IsGuaranteeCompletedRoot("/test_job/guarantee/completed"), true},
		"assertIsNotCompletedRootNode":   {j.IsGuaranteeCompletedRoot("/otherJob/guarantee/completed"), false},
		"local trigger":                  {j.IsLocalTriggerPath("/test_job/trigger/127.0.0.1@-@0", local), true},
		"other trigger":                  {j.IsLocalTriggerPath("/test_job/trigger/127.0.0.2@-@0", local), false},
		"job name not a regex":           {New("a.b").IsServerPath("/aXb/servers/127.0.0.1"), false},
		"other job's instance":           {j.IsInstancePath("/test_job2/instances/x@-@1"), false},
		"instances root is not instance": {j.IsInstancePath("/test_job/instances"), false},
		"instance child is not instance": {j.IsInstancePath("/test_job/instances/a/b"), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestItemParsers(t *testing.T) {
	t.Parallel()
	j := New("test_job")
	tests := map[string]struct {
		fn     func(string) (int, bool)
		path   string
		want   int
		wantOK bool
	}{
		"assertGetItemByRunningItemPath":            {j.RunningItem, "/test_job/sharding/0/running", 0, true},
		"assertGetItemWhenNotRunningItemPath":       {j.RunningItem, "/test_job/sharding/0/completed", 0, false},
		"assertGetItemByExecutionFailoverPath":      {j.FailoverItemOf, "/test_job/sharding/0/failover", 0, true},
		"assertGetItemWhenNotExecutionFailoverPath": {j.FailoverItemOf, "/test_job/sharding/0/failover/deep", 0, false},
		"large item":                  {j.RunningItem, "/test_job/sharding/123/running", 123, true},
		"non-canonical item":          {j.RunningItem, "/test_job/sharding/01/running", 0, false},
		"negative item":               {j.RunningItem, "/test_job/sharding/-1/running", 0, false},
		"other job":                   {j.RunningItem, "/other/sharding/0/running", 0, false},
		"failovering is not failover": {j.FailoverItemOf, "/test_job/sharding/0/failovering", 0, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := tc.fn(tc.path)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got %d %v, want %d %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// Every builder's path parses back to its kind.
func TestParseInvertsBuilders(t *testing.T) {
	t.Parallel()
	j := New("myJob")
	tests := map[string]struct {
		path string
		want Path
	}{
		"root":               {j.Root(), Path{Kind: KindRoot}},
		"config":             {j.Config(), Path{Kind: KindConfig}},
		"servers":            {j.Servers(), Path{Kind: KindServers}},
		"server":             {j.Server("10.0.0.1"), Path{Kind: KindServer, ID: "10.0.0.1"}},
		"instances":          {j.Instances(), Path{Kind: KindInstances}},
		"instance":           {j.Instance("10.0.0.1@-@7"), Path{Kind: KindInstance, ID: "10.0.0.1@-@7"}},
		"trigger":            {j.Trigger(), Path{Kind: KindTrigger}},
		"trigger instance":   {j.TriggerInstance("10.0.0.1@-@7"), Path{Kind: KindTriggerInstance, ID: "10.0.0.1@-@7"}},
		"sharding":           {j.Sharding(), Path{Kind: KindSharding}},
		"item":               {j.ShardingItem(4), Path{Kind: KindShardingItem, Item: 4}},
		"item instance":      {j.ShardingInstance(4), Path{Kind: KindShardingInstance, Item: 4}},
		"running":            {j.Running(4), Path{Kind: KindRunning, Item: 4}},
		"failover":           {j.Failover(4), Path{Kind: KindFailover, Item: 4}},
		"failovering":        {j.Failovering(4), Path{Kind: KindFailovering, Item: 4}},
		"misfire":            {j.Misfire(4), Path{Kind: KindMisfire, Item: 4}},
		"disabled":           {j.Disabled(4), Path{Kind: KindDisabled, Item: 4}},
		"leader instance":    {j.LeaderInstance(), Path{Kind: KindLeaderInstance}},
		"leader latch":       {j.LeaderLatch(), Path{Kind: KindLeaderLatch}},
		"latch participant":  {j.LeaderLatch() + "/_c_b9959344-006e-4a11-8009-bc0b7b017d91-latch-0000000000", Path{Kind: KindLeaderLatchParticipant, ID: "_c_b9959344-006e-4a11-8009-bc0b7b017d91-latch-0000000000"}},
		"necessary":          {j.ShardingNecessary(), Path{Kind: KindShardingNecessary}},
		"processing":         {j.ShardingProcessing(), Path{Kind: KindShardingProcessing}},
		"failover items":     {j.FailoverItems(), Path{Kind: KindFailoverItems}},
		"failover item":      {j.FailoverItem(1), Path{Kind: KindFailoverItem, Item: 1}},
		"failover latch":     {j.FailoverLatch(), Path{Kind: KindFailoverLatch}},
		"failover latch kid": {j.FailoverLatch() + "/_c_x-latch-0000000001", Path{Kind: KindFailoverLatchParticipant, ID: "_c_x-latch-0000000001"}},
		"started root":       {j.GuaranteeStartedRoot(), Path{Kind: KindGuaranteeStartedRoot}},
		"started":            {j.GuaranteeStarted(1), Path{Kind: KindGuaranteeStarted, Item: 1}},
		"completed root":     {j.GuaranteeCompletedRoot(), Path{Kind: KindGuaranteeCompletedRoot}},
		"completed":          {j.GuaranteeCompleted(1), Path{Kind: KindGuaranteeCompleted, Item: 1}},
		"started latch":      {j.GuaranteeStartedLatch(), Path{Kind: KindGuaranteeStartedLatch}},
		"completed latch":    {j.GuaranteeCompletedLatch(), Path{Kind: KindGuaranteeCompletedLatch}},
		"system time":        {j.SystemTime(), Path{Kind: KindSystemTime}},
		"next ip":            {j.NextJobInstanceIP(), Path{Kind: KindNextJobInstanceIP}},
		"leader":             {j.Leader(), Path{Kind: KindIntermediate, ID: "leader"}},
		"election":           {"/myJob/leader/election", Path{Kind: KindIntermediate, ID: "leader/election"}},
		"guarantee":          {j.Guarantee(), Path{Kind: KindIntermediate, ID: "guarantee"}},
		"system time root":   {"/myJob/systemTime", Path{Kind: KindIntermediate, ID: "systemTime"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := j.Parse(tc.path)
			if !ok || got != tc.want {
				t.Errorf("Parse(%q) = %+v %v, want %+v", tc.path, got, ok, tc.want)
			}
		})
	}
	for _, bad := range []string{"/myJob/", "/myJob//config", "/myJob/config/x", "/myJob/servers/host", "/myJob/sharding/x/running",
		"/myJob/sharding/0/other", "/myJob/leader/other", "/myJob/leader/election/instance/x", "/myJob/systemTime/x", "/myJob/unknown", "/other/config", "/myJob2/config"} {
		if p, ok := j.Parse(bad); ok {
			t.Errorf("Parse(%q) = %+v, want no match", bad, p)
		}
	}
}

var treeLine = regexp.MustCompile(`^/peer(/\S+)\s+\[`)

// Every node of the real ZooKeeper tree written by Java 3.0.4 parses, and
// its value decodes.
func TestRealTree(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/elasticjob-zk-tree.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type entry struct {
		path  string
		value []string
	}
	var entries []*entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := treeLine.FindStringSubmatch(line); m != nil {
			entries = append(entries, &entry{path: m[1]})
			continue
		}
		if v, ok := strings.CutPrefix(line, "    | "); ok && len(entries) > 0 {
			e := entries[len(entries)-1]
			e.value = append(e.value, v)
		}
	}
	if len(entries) < 50 {
		t.Fatalf("parsed only %d entries", len(entries))
	}
	for _, e := range entries {
		job, _, _ := strings.Cut(strings.TrimPrefix(e.path, "/"), "/")
		j := New(job)
		p, ok := j.Parse(e.path)
		if !ok {
			t.Errorf("Parse(%q) failed", e.path)
			continue
		}
		value := []byte(strings.Join(e.value, "\n"))
		switch p.Kind {
		case KindInstance:
			in, err := DecodeInstance(value)
			if err != nil || in.JobInstanceID != p.ID || in.ServerIP != "192.0.2.2" {
				t.Errorf("%s: DecodeInstance = %+v, %v", e.path, in, err)
			}
			enc, err := EncodeInstance(in)
			if err != nil || string(enc) != string(value) {
				t.Errorf("%s: EncodeInstance = %q, want %q", e.path, enc, value)
			}
		case KindServer:
			if !IsServerEnabled(value) || string(ServerValue(true)) != string(value) {
				t.Errorf("%s: server value %q", e.path, value)
			}
		case KindShardingInstance, KindRunning, KindLeaderInstance:
			if !strings.HasPrefix(string(value), "192.0.2.2@-@") {
				t.Errorf("%s: value %q is not an instance id", e.path, value)
			}
		}
	}
}

func TestInstanceValue(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   JobInstance
		want string
	}{
		// InstanceServiceTest.assertPersistOnline
		"upstream": {JobInstance{JobInstanceID: "127.0.0.1@-@0", ServerIP: "127.0.0.1"}, "jobInstanceId: 127.0.0.1@-@0\nserverIp: 127.0.0.1\n"},
		// JobInstanceTest.assertYamlConvert: labels sit between the two keys
		"labels":    {JobInstance{JobInstanceID: "ip1@-@defaultInstance", Labels: "a,b", ServerIP: "ip1"}, "jobInstanceId: ip1@-@defaultInstance\nlabels: a,b\nserverIp: ip1\n"},
		"quoted id": {JobInstance{JobInstanceID: "yes", ServerIP: "::1"}, "jobInstanceId: 'yes'\nserverIp: ::1\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := EncodeInstance(tc.in)
			if err != nil || string(got) != tc.want {
				t.Fatalf("EncodeInstance = %q, %v; want %q", got, err, tc.want)
			}
			back, err := DecodeInstance(got)
			if err != nil || back != tc.in {
				t.Errorf("DecodeInstance = %+v, %v", back, err)
			}
		})
	}
	for _, bad := range []string{"", "TRIGGER", "- a", "serverIp: x\n", "jobInstanceId: [a]\n"} {
		if _, err := DecodeInstance([]byte(bad)); !errors.Is(err, ErrValue) {
			t.Errorf("DecodeInstance(%q) err = %v, want ErrValue", bad, err)
		}
	}
}

func TestValues(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ got, want string }{
		"enabled":        {string(ServerValue(true)), "ENABLED"},
		"disabled":       {string(ServerValue(false)), "DISABLED"},
		"class":          {string(RootValue("peer.PeerMain$JavaSimpleJob")), "peer.PeerMain$JavaSimpleJob"},
		"typed":          {string(RootValue("SCRIPT")), "SCRIPT"},
		"lambda trimmed": {string(RootValue("com.example.Main$$Lambda$14/0x0000000800c0b000")), "com.example.Main$$Lambda"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
	for v, want := range map[string]bool{"ENABLED": true, "DISABLED": false, "": false, "enabled": false} {
		if IsServerEnabled([]byte(v)) != want {
			t.Errorf("IsServerEnabled(%q) != %v", v, want)
		}
	}
}

// TestInstanceValueFast: the encoder-free InstanceValue writes exactly
// what EncodeInstance writes for ejob's own instance ids, and
// InstanceServerIP reads the IP back (or falls back to the id's prefix).
func TestInstanceValueFast(t *testing.T) {
	t.Parallel()
	for _, in := range []JobInstance{
		{JobInstanceID: "127.0.0.1@-@0", ServerIP: "127.0.0.1"},
		{JobInstanceID: "192.0.2.17@-@4194304", ServerIP: "192.0.2.17"},
	} {
		want, err := EncodeInstance(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := InstanceValue(in.JobInstanceID, in.ServerIP); string(got) != string(want) {
			t.Errorf("InstanceValue(%+v) = %q, want EncodeInstance's %q", in, got, want)
		}
		if ip := InstanceServerIP(in.JobInstanceID, want); ip != in.ServerIP {
			t.Errorf("InstanceServerIP(%q) = %q, want %q", want, ip, in.ServerIP)
		}
	}
	for _, tc := range []struct{ id, data, want string }{
		{"10.0.0.1@-@5", "jobInstanceId: 10.0.0.1@-@5\n", "10.0.0.1"},
		{"10.0.0.1@-@5", "jobInstanceId: 10.0.0.1@-@5\nserverIp: '10.0.0.9'\n", "10.0.0.9"},
		{"10.0.0.1@-@5", "", "10.0.0.1"},
	} {
		if ip := InstanceServerIP(tc.id, []byte(tc.data)); ip != tc.want {
			t.Errorf("InstanceServerIP(%q, %q) = %q, want %q", tc.id, tc.data, ip, tc.want)
		}
	}
}

// TestItemNodeAndLeaves: ItemNode builds the item children the named
// builders build, and IsItemLeaf is true exactly for them.
func TestItemNodeAndLeaves(t *testing.T) {
	t.Parallel()
	j := New("test_job")
	for _, tc := range []struct{ got, want string }{
		{j.ItemNode(3, ItemRunning), j.Running(3)},
		{j.ItemNode(12, ItemInstance), "/test_job/sharding/12/instance"},
		{j.ShardingItem(120), "/test_job/sharding/120"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for path, want := range map[string]bool{
		"/test_job/sharding/0/instance":    true,
		"/test_job/sharding/0/running":     true,
		"/test_job/sharding/7/failover":    true,
		"/test_job/sharding/7/failovering": true,
		"/test_job/sharding/7/misfire":     true,
		"/test_job/sharding/7/disabled":    true,
		"/test_job/sharding/7/other":       false,
		"/test_job/sharding/7":             false,
		"/test_job/sharding//running":      false,
		"/test_job/sharding/7/running/x":   false,
		"/test_job/servers/7/running":      false,
		"/test_job2/sharding/7/running":    false,
		"/test_job":                        false,
	} {
		if got := j.IsItemLeaf(path); got != want {
			t.Errorf("IsItemLeaf(%q) = %v, want %v", path, got, want)
		}
		if got, want := j.IsRunning(path), want && strings.HasSuffix(path, "/running"); got != want {
			t.Errorf("IsRunning(%q) = %v, want %v", path, got, want)
		}
		flag := want && (strings.HasSuffix(path, "/misfire") || strings.HasSuffix(path, "/failover") || strings.HasSuffix(path, "/failovering"))
		if got := j.IsFlag(path); got != flag {
			t.Errorf("IsFlag(%q) = %v, want %v", path, got, flag)
		}
	}
	for path, want := range map[string]bool{
		"/test_job/leader/failover/items/3":   true,
		"/test_job/leader/failover/items":     false,
		"/test_job/leader/failover/items/3/x": false,
		"/test_job/leader/failover/latch":     false,
		"/test_job2/leader/failover/items/3":  false,
	} {
		if got := j.IsFlag(path); got != want {
			t.Errorf("IsFlag(%q) = %v, want %v", path, got, want)
		}
	}
}
