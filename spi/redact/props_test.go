package redact_test

import (
	"errors"
	"maps"
	"strings"
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
	back, err := redact.Unmask(sent, stored)
	if err != nil {
		t.Fatalf("Unmask: %v", err)
	}
	wantBack := maps.Clone(stored)
	wantBack["script.command"] = "echo bye"
	if !maps.Equal(back, wantBack) {
		t.Errorf("Unmask = %v, want %v", back, wantBack)
	}
}

// TestUnmaskRefusesAnEditAroundAMask: a command line shown with its token
// masked and edited around the mask (its URL changed) must be refused,
// naming the prop, instead of saving the literal mask in the token's place;
// a value typed whole, secret included, is taken.
func TestUnmaskRefusesAnEditAroundAMask(t *testing.T) {
	stored := map[string]string{"script.command.line": `curl -H "Authorization: Bearer s3cr3t-t0ken" https://a.example.com/`}
	shown := redact.Props(stored)["script.command.line"]
	if !strings.Contains(shown, redact.Mask) || strings.Contains(shown, "s3cr3t") {
		t.Fatalf("shown %q: want the token masked", shown)
	}
	edited := map[string]string{"script.command.line": strings.Replace(shown, "a.example.com", "b.example.com", 1)}
	if _, err := redact.Unmask(edited, stored); !errors.Is(err, redact.ErrMasked) || !strings.Contains(err.Error(), "script.command.line") {
		t.Errorf("Unmask of an edit around the mask: err = %v, want ErrMasked naming the prop", err)
	}
	whole := map[string]string{"script.command.line": `curl -H "Authorization: Bearer n3w" https://b.example.com/`}
	if back, err := redact.Unmask(whole, stored); err != nil || back["script.command.line"] != whole["script.command.line"] {
		t.Errorf("Unmask of a whole new value = %v, %v; want it taken", back, err)
	}
}
