package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestStartSaysHowABrowserThatExitedEnded pins the diagnosis of a browser
// that exits before it listens for DevTools: chromedp reports only its
// output ("chrome failed to start"), so a rare start failure of the console
// tests could not be told apart from a crash or a signal.
func TestStartSaysHowABrowserThatExitedEnded(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "chromium")
	script := "#!/bin/sh\necho 'cannot open display' >&2\nexit 3\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := start(t, fake)
	if err == nil {
		b.cancel()
		t.Fatal("a browser that exits at once started")
	}
	for _, want := range []string{"exit status 3", "cannot open display", fake} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error %q does not say %q", err, want)
		}
	}
}
