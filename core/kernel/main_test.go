package kernel_test

import (
	"testing"

	"github.com/ejob-io/ejob/internal/testkit"
)

// TestMain fails the binary if a scheduler leaves goroutines behind (its
// jobs' coordination, the trigger loop, the watchdog, executions).
func TestMain(m *testing.M) { testkit.Main(m) }
