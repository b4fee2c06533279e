package recipe

import (
	"testing"

	"github.com/ejob-io/ejob/internal/testkit"
)

// TestMain fails the binary if a test leaves goroutines behind (latch
// waits, clients).
func TestMain(m *testing.M) { testkit.Main(m) }
