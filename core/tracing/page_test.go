package tracing_test

import (
	"errors"
	"math"
	"testing"

	"github.com/ejob-io/ejob/core/tracing"
)

// TestPageOffset: a page number of 2^63-1 must not wrap the offset to a
// negative number (which a sink clamps to 0, answering the first page):
// pages that would start past MaxOffset are refused.
func TestPageOffset(t *testing.T) {
	for _, tc := range []struct {
		number, size, want int
		ok                 bool
	}{
		{1, 10, 0, true}, {2, 10, 10, true}, {3, 1000, 2000, true},
		{tracing.MaxOffset/1000 + 1, 1000, tracing.MaxOffset / 1000 * 1000, true},
		{tracing.MaxOffset + 1, 1, tracing.MaxOffset, true},
		{tracing.MaxOffset/1000 + 2, 1000, 0, false},
		{math.MaxInt64, 1000, 0, false}, {math.MaxInt64, 1, 0, false}, {2, math.MaxInt64, 0, false},
		{0, 10, 0, false}, {-1, 10, 0, false}, {1, 0, 0, false}, {math.MinInt64, 10, 0, false},
	} {
		got, err := tracing.PageOffset(tc.number, tc.size)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("PageOffset(%d, %d) = %d, %v; want %d", tc.number, tc.size, got, err, tc.want)
		}
		if !tc.ok && !errors.Is(err, tracing.ErrPage) {
			t.Errorf("PageOffset(%d, %d) = %d, %v; want ErrPage", tc.number, tc.size, got, err)
		}
	}
}
