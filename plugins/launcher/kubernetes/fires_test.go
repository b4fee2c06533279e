package kubernetes

import "testing"

// TestParseFireReport: the fires container's line is read exactly; any
// other line is no report.
func TestParseFireReport(t *testing.T) {
	for line, want := range map[string]*fireReport{
		"fires 0 idle":  {fires: 0, idle: true},
		"fires 12 busy": {fires: 12, idle: false},
		"fires -1 idle": nil, "fires 1": nil, "fires x busy": nil, "fires 1 asleep": nil, "": nil, "hello 1 idle": nil,
	} {
		got, ok := parseFireReport(line)
		if ok != (want != nil) || want != nil && got != *want {
			t.Errorf("parseFireReport(%q) = %+v, %v; want %+v", line, got, ok, want)
		}
	}
}
