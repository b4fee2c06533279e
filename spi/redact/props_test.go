package redact_test

import (
	"maps"
	"testing"

	"github.com/ejob-io/ejob/spi/redact"
)

func TestProps(t *testing.T) {
	stored := map[string]string{
		"email.password":    "hunter2",
		"webhook.headers.X": "Bearer abc",
		"dingtalk.webhook":  "https://oapi.example.com/robot/send?access_token=tok123456789",
		"script.command":    "echo hi",
		"api_token":         "",
	}
	want := map[string]string{
		"email.password":    redact.Mask,
		"webhook.headers.X": redact.Mask,
		"dingtalk.webhook":  "https://oapi.example.com/robot/send?access_token=" + redact.Mask,
		"script.command":    "echo hi",
		"api_token":         "",
	}
	got := redact.Props(stored)
	if !maps.Equal(got, want) {
		t.Errorf("Props = %v, want %v", got, want)
	}
	// A masked config written back keeps the stored secrets; a changed
	// value is taken.
	sent := maps.Clone(got)
	sent["script.command"] = "echo bye"
	back := redact.Unmask(sent, stored)
	wantBack := maps.Clone(stored)
	wantBack["script.command"] = "echo bye"
	if !maps.Equal(back, wantBack) {
		t.Errorf("Unmask = %v, want %v", back, wantBack)
	}
}
