package shardingbuiltin

import "unicode/utf16"

// JavaStringHashCode returns Java's String.hashCode of s: h = 31*h + c over
// the string's UTF-16 code units, with int32 wrap-around. s is read as
// UTF-8; each invalid byte counts as U+FFFD, as Java's UTF-8 decoder reads
// it.
func JavaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r1, r2 := utf16.EncodeRune(r); r1 != '\uFFFD' || r2 != '\uFFFD' {
			h = 31*h + r1
			h = 31*h + r2
			continue
		}
		h = 31*h + r
	}
	return h
}

// javaAbs is Java's Math.abs(int): math.MinInt32 stays negative.
func javaAbs(h int32) int32 {
	if h < 0 {
		return -h
	}
	return h
}
