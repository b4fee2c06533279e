package coord_test

import (
	"testing"

	"github.com/ejob-io/ejob/internal/testkit"
)

// TestMain fails the binary if a job's coordination leaves goroutines
// behind (event loops, tree caches, pumps, connection watchers).
func TestMain(m *testing.M) { testkit.Main(m) }
