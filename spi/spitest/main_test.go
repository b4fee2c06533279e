package spitest_test

import (
	"testing"

	"github.com/ejob-io/ejob/internal/testkit"
)

// TestMain fails the test binary when a goroutine outlives its tests.
func TestMain(m *testing.M) { testkit.Main(m) }
