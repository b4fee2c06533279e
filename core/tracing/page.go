package tracing

import (
	"errors"
	"fmt"
	"math"
)

// MaxOffset is the deepest row a history query may start at: 2^31-1,
// which every sink's database takes as an OFFSET and no page number times
// page size overflows on the way to.
const MaxOffset = math.MaxInt32

// ErrPage is wrapped by PageOffset's refusals.
var ErrPage = errors.New("invalid page")

// PageOffset is the first row of page number (1 is the newest) of size
// rows: (number-1)*size, computed without overflow. It refuses a size
// below 1, a number below 1, and a page that would start past MaxOffset,
// naming the largest page number that size allows.
func PageOffset(number, size int) (int, error) {
	switch {
	case size < 1:
		return 0, fmt.Errorf("%w: page size %d: want 1 or more", ErrPage, size)
	case number < 1:
		return 0, fmt.Errorf("%w: page number %d: want 1 or more", ErrPage, number)
	}
	if last := MaxOffset/size + 1; number > last {
		return 0, fmt.Errorf("%w: page number %d: with %d rows a page, want at most %d (history queries start at row %d at most)",
			ErrPage, number, size, last, MaxOffset)
	}
	return (number - 1) * size, nil
}
