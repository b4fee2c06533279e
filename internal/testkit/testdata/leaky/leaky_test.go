// Package leaky is testkit's own test subject: its test leaves a goroutine
// running (when EJOB_TESTKIT_LEAK=1), which testkit.Run must report.
package leaky

import (
	"os"
	"testing"

	"github.com/ejob-io/ejob/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func TestMaybeLeak(t *testing.T) {
	if os.Getenv("EJOB_TESTKIT_LEAK") == "1" {
		go func() { select {} }() // never ends: a leak
	}
}
