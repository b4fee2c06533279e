package cron

import "math/bits"

// intSet is an immutable-after-parse ordered set of ints, the Go stand-in for
// the java.util.TreeSet<Integer> fields of Quartz's CronExpression. Values in
// [0,128) (every legal field value plus Quartz's '?' and '*' markers 98 and 99)
// live in a bitmap; anything else (years, odd values Quartz lets through) in a
// sorted slice.
type intSet struct {
	lo [2]uint64
	hi []int // sorted, distinct, each outside [0,128)
}

func (s *intSet) add(v int) {
	if v >= 0 && v < 128 {
		s.lo[v>>6] |= 1 << (uint(v) & 63)
		return
	}
	i := searchInts(s.hi, v)
	if i < len(s.hi) && s.hi[i] == v {
		return
	}
	s.hi = append(s.hi, 0)
	copy(s.hi[i+1:], s.hi[i:])
	s.hi[i] = v
}

func (s *intSet) has(v int) bool {
	if v >= 0 && v < 128 {
		return s.lo[v>>6]&(1<<(uint(v)&63)) != 0
	}
	i := searchInts(s.hi, v)
	return i < len(s.hi) && s.hi[i] == v
}

func (s *intSet) empty() bool {
	return s.lo[0] == 0 && s.lo[1] == 0 && len(s.hi) == 0
}

// ceil returns the smallest element >= v (TreeSet.tailSet(v).first()).
func (s *intSet) ceil(v int) (int, bool) {
	i := searchInts(s.hi, v)
	if i < len(s.hi) && s.hi[i] < 0 {
		return s.hi[i], true
	}
	if v < 128 {
		from := v
		if from < 0 {
			from = 0
		}
		for w := from >> 6; w < 2; w++ {
			word := s.lo[w]
			if w == from>>6 {
				word &^= (1 << (uint(from) & 63)) - 1
			}
			if word != 0 {
				return w<<6 + bits.TrailingZeros64(word), true
			}
		}
	}
	for ; i < len(s.hi); i++ {
		if s.hi[i] >= v {
			return s.hi[i], true
		}
	}
	return 0, false
}

// first returns the smallest element.
func (s *intSet) first() (int, bool) {
	return s.ceil(minInt)
}

// last returns the largest element.
func (s *intSet) last() (int, bool) {
	if n := len(s.hi); n > 0 && s.hi[n-1] >= 128 {
		return s.hi[n-1], true
	}
	for w := 1; w >= 0; w-- {
		if s.lo[w] != 0 {
			return w<<6 + 63 - bits.LeadingZeros64(s.lo[w]), true
		}
	}
	if len(s.hi) > 0 {
		return s.hi[len(s.hi)-1], true
	}
	return 0, false
}

const minInt = -1 << 63

// searchInts is sort.SearchInts without the closure.
func searchInts(a []int, v int) int {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
