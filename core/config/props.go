package config

import "slices"

// javaPropertiesOrder returns the keys of props in the order Java 9+
// iterates a java.util.Properties after putting them in: Properties is
// backed by a ConcurrentHashMap(8) (table of 16 bins, resized at 3/4 load),
// iterated bin by bin. Keys are put in `order` first (the order a parsed
// YAML listed them, which is how SnakeYAML fills the Properties), then the
// remaining keys sorted. Only the order of keys sharing a bin depends on
// insertion order. Tree bins (8+ keys in one bin) are not modelled.
func javaPropertiesOrder(order []string, props map[string]string) []string {
	seen := make(map[string]bool, len(props))
	var insert []string
	for _, k := range order {
		if _, ok := props[k]; ok && !seen[k] {
			seen[k] = true
			insert = append(insert, k)
		}
	}
	var rest []string
	for k := range props {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	slices.SortFunc(rest, javaCompare)
	insert = append(insert, rest...)

	type chmNode struct {
		hash int32
		key  string
	}
	table := make([][]chmNode, 16)
	sizeCtl := 12
	count := 0
	for _, k := range insert {
		h := spread(javaStringHash(k))
		i := int(h) & (len(table) - 1)
		table[i] = append(table[i], chmNode{h, k})
		count++
		for count >= sizeCtl {
			n := len(table)
			next := make([][]chmNode, 2*n)
			for i, bin := range table {
				if len(bin) == 0 {
					continue
				}
				// ConcurrentHashMap.transfer: the tail run with the same
				// high bit is reused as is; nodes before it are prepended.
				runBit := int(bin[0].hash) & n
				lastRun := 0
				for j := 1; j < len(bin); j++ {
					if b := int(bin[j].hash) & n; b != runBit {
						runBit, lastRun = b, j
					}
				}
				var ln, hn []chmNode
				if runBit == 0 {
					ln = slices.Clone(bin[lastRun:])
				} else {
					hn = slices.Clone(bin[lastRun:])
				}
				for j := 0; j < lastRun; j++ {
					if int(bin[j].hash)&n == 0 {
						ln = append([]chmNode{bin[j]}, ln...)
					} else {
						hn = append([]chmNode{bin[j]}, hn...)
					}
				}
				next[i], next[i+n] = ln, hn
			}
			table = next
			sizeCtl = 2*n - n/2 // (n << 1) - (n >>> 1), n the old size
		}
	}
	out := make([]string, 0, len(props))
	for _, bin := range table {
		for _, nd := range bin {
			out = append(out, nd.key)
		}
	}
	return out
}

// javaStringHash is java.lang.String.hashCode over UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16Units(s) {
		h = 31*h + int32(u)
	}
	return h
}

// spread is ConcurrentHashMap.spread.
func spread(h int32) int32 {
	return (h ^ int32(uint32(h)>>16)) & 0x7fffffff
}
