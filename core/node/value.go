package node

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ejob-io/ejob/core/config/snakeyaml"
	"gopkg.in/yaml.v3"
)

// ErrValue is wrapped by errors decoding a node value.
var ErrValue = errors.New("malformed node value")

// Server node values (enum names of upstream's ServerStatus). Since 3.0.0
// Java never writes "" to a server node; readers treat a missing or empty
// node as "not yet written" (upstream re-reads it up to 10 times, 100 ms
// apart) and anything but ENABLED as disabled.
const (
	ServerEnabled  = "ENABLED"
	ServerDisabled = "DISABLED"
)

// ServerValue is the value written to servers/{ip}.
func ServerValue(enabled bool) []byte {
	if enabled {
		return []byte(ServerEnabled)
	}
	return []byte(ServerDisabled)
}

// IsServerEnabled reports whether a servers/{ip} value means enabled:
// exactly "ENABLED" (3.0.2+; 3.0.0/3.0.1 treated "anything but DISABLED"
// as enabled).
func IsServerEnabled(data []byte) bool { return string(data) == ServerEnabled }

// lambdaMarker is where upstream trims a lambda's class name.
const lambdaMarker = "$$Lambda"

// RootValue is the job root node's value: the job class name, or for typed
// jobs the type ("SCRIPT", "HTTP"). As upstream, a Java lambda class name
// (com.example.Main$$Lambda$14/0x...) is cut right after "$$Lambda", so a
// Go job sharing a name with a Java job must pass the Java name to match.
func RootValue(jobClass string) []byte {
	if i := strings.Index(jobClass, lambdaMarker); i >= 0 {
		jobClass = jobClass[:i+len(lambdaMarker)]
	}
	return []byte(jobClass)
}

// JobInstance is the value of instances/{instanceId}: upstream's
// JobInstance serialised by SnakeYAML (keys sorted, nulls omitted), e.g.
// "jobInstanceId: 192.0.2.2@-@12474\nserverIp: 192.0.2.2\n". Equality is
// by JobInstanceID only, as upstream.
type JobInstance struct {
	JobInstanceID string
	// Labels is stored but never set by Lite; empty is omitted.
	Labels   string
	ServerIP string
}

// EncodeInstance writes the instance node value exactly as upstream.
func EncodeInstance(in JobInstance) ([]byte, error) {
	m := snakeyaml.Mapping(snakeyaml.String("jobInstanceId"), snakeyaml.String(in.JobInstanceID))
	if in.Labels != "" {
		m.Content = append(m.Content, snakeyaml.String("labels"), snakeyaml.String(in.Labels))
	}
	if in.ServerIP != "" {
		m.Content = append(m.Content, snakeyaml.String("serverIp"), snakeyaml.String(in.ServerIP))
	}
	out, err := snakeyaml.Dump(m)
	if err != nil {
		return nil, fmt.Errorf("encode instance %q: %w", in.JobInstanceID, err)
	}
	return out, nil
}

// InstanceValue is EncodeInstance's output for an instance without labels
// ("jobInstanceId: {id}\nserverIp: {ip}\n"), written without the YAML
// encoder: every job writes it at registration. Only for ids and IPs that
// SnakeYAML writes plain (ejob's own: an IPv4 and a PID); a test compares
// it with EncodeInstance.
func InstanceValue(id, ip string) []byte {
	return []byte("jobInstanceId: " + id + "\nserverIp: " + ip + "\n")
}

// InstanceServerIP returns the serverIp of an instance node value without
// parsing it as YAML (the leader reads every instance at each resharding),
// falling back to the id's prefix before "@-@" when the value has none.
func InstanceServerIP(id string, data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "serverIp:"); ok {
			return strings.Trim(strings.TrimSpace(v), `'"`)
		}
	}
	ip, _, _ := strings.Cut(id, "@-@")
	return ip
}

// DecodeInstance parses an instance node value. Empty data (a node being
// removed, or written by 3.0.0-alpha) is an error wrapping ErrValue, as is
// YAML without jobInstanceId; unknown keys are ignored.
func DecodeInstance(data []byte) (JobInstance, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return JobInstance{}, fmt.Errorf("%w: empty instance value", ErrValue)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return JobInstance{}, fmt.Errorf("%w: instance value: %v", ErrValue, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return JobInstance{}, fmt.Errorf("%w: instance value is not a mapping: %q", ErrValue, data)
	}
	var out JobInstance
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return JobInstance{}, fmt.Errorf("%w: instance value: line %d: key %q is not a string", ErrValue, v.Line, k.Value)
		}
		if snakeyaml.ScalarTag(v) == snakeyaml.TagNull {
			continue
		}
		switch k.Value {
		case "jobInstanceId":
			out.JobInstanceID = v.Value
		case "labels":
			out.Labels = v.Value
		case "serverIp":
			out.ServerIP = v.Value
		}
	}
	if out.JobInstanceID == "" {
		return JobInstance{}, fmt.Errorf("%w: instance value without jobInstanceId: %q", ErrValue, data)
	}
	return out, nil
}
