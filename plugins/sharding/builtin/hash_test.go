package shardingbuiltin

import (
	"math"
	"testing"
)

// TestJavaStringHashCode checks a table of hashes
// (computed with the JDK), including Java's % and Math.abs semantics.
func TestJavaStringHashCode(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		hash                 int32
		even                 bool
		abs2, abs3, abs4     int32
		offset3, offset4     int // roundRobinOffset with 3 and 4 instances
		upstreamThrowsWithN3 bool
	}{
		"test_job":           {hash: -1146456432, even: true, abs2: 0, abs3: 0, abs4: 0, offset3: 0, offset4: 0},
		"myJob":              {hash: 104343153, even: false, abs2: 1, abs3: 0, abs4: 1, offset3: 0, offset4: 1},
		"javaSimpleJob":      {hash: -694093655, even: false, abs2: 1, abs3: 2, abs4: 3, offset3: 2, offset4: 3},
		"0":                  {hash: 48, even: true, abs2: 0, abs3: 0, abs4: 0, offset3: 0, offset4: 0},
		"1":                  {hash: 49, even: false, abs2: 1, abs3: 1, abs4: 1, offset3: 1, offset4: 1},
		"2":                  {hash: 50, even: true, abs2: 0, abs3: 2, abs4: 2, offset3: 2, offset4: 2},
		"3":                  {hash: 51, even: false, abs2: 1, abs3: 0, abs4: 3, offset3: 0, offset4: 3},
		"polygenelubricants": {hash: math.MinInt32, even: true, abs2: 0, abs3: -2, abs4: 0, offset3: 1, offset4: 0, upstreamThrowsWithN3: true},
		"作业":                 {hash: 649790, even: true, abs2: 0, abs3: 2, abs4: 2, offset3: 2, offset4: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := JavaStringHashCode(name)
			if h != tc.hash {
				t.Fatalf("JavaStringHashCode(%q) = %d, want %d", name, h, tc.hash)
			}
			if even := h%2 == 0; even != tc.even {
				t.Errorf("even = %t, want %t", even, tc.even)
			}
			a := javaAbs(h)
			if got := [3]int32{a % 2, a % 3, a % 4}; got != [3]int32{tc.abs2, tc.abs3, tc.abs4} {
				t.Errorf("Math.abs(h) %% 2,3,4 = %v, want %v", got, [3]int32{tc.abs2, tc.abs3, tc.abs4})
			}
			if got := roundRobinOffset(name, 3); got != tc.offset3 {
				t.Errorf("roundRobinOffset(n=3) = %d, want %d", got, tc.offset3)
			}
			if got := roundRobinOffset(name, 4); got != tc.offset4 {
				t.Errorf("roundRobinOffset(n=4) = %d, want %d", got, tc.offset4)
			}
			// Where upstream does not throw, the offset equals upstream's.
			if !tc.upstreamThrowsWithN3 && int32(tc.offset3) != tc.abs3 {
				t.Errorf("offset for n=3 is %d, upstream's is %d", tc.offset3, tc.abs3)
			}
		})
	}
}

func TestJavaStringHashCodeUTF16(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		s    string
		want int32
	}{
		"empty": {"", 0},
		// U+1F600 is the surrogate pair D83D DE00 in UTF-16:
		// 31*0xD83D + 0xDE00 = 31*55357 + 56832 = 1772899.
		"supplementary": {"😀", 1772899},
		"ascii":         {"abc", 96354},
		// An invalid byte reads as U+FFFD (65533), as Java's decoder does.
		"invalid_utf8": {"\xff", 65533},
		// int32 wrap-around: a long string overflows many times.
		"wraps": {"aaaaaaaaaaaaaaaaaaaa", javaHashOfASCII("aaaaaaaaaaaaaaaaaaaa")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := JavaStringHashCode(tc.s); got != tc.want {
				t.Errorf("JavaStringHashCode(%q) = %d, want %d", tc.s, got, tc.want)
			}
		})
	}
}

// javaHashOfASCII is an independent int64-with-mask reference for ASCII.
func javaHashOfASCII(s string) int32 {
	var h int64
	for i := 0; i < len(s); i++ {
		h = (31*h + int64(s[i])) & 0xFFFFFFFF
	}
	return int32(uint32(h))
}

func TestRoundRobinOffsetNeverNegative(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"polygenelubricants", "test_job", "javaSimpleJob", "作业", ""} {
		for n := 1; n <= 64; n++ {
			if off := roundRobinOffset(name, n); off < 0 || off >= n {
				t.Errorf("roundRobinOffset(%q, %d) = %d, outside 0..%d", name, n, off, n-1)
			}
		}
	}
}
