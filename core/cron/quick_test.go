package cron

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {
	ny, _ := LoadZone("America/New_York")
	for _, c := range []struct{ e, from string; n int }{
		{"0 30 2 * * ?", "2025-03-08T00:00:00-05:00", 3},
		{"0 30 1 * * ?", "2025-11-01T00:00:00-04:00", 3},
		{"0 */15 * * * ?", "2025-11-02T00:40:00-04:00", 8},
		{"0 */15 * * * ?", "2025-03-09T01:40:00-05:00", 4},
	} {
		e, err := parse(c.e, ny, 2126)
		if err != nil { t.Fatal(err) }
		f, _ := time.Parse(time.RFC3339, c.from)
		s := ""
		for i := 0; i < c.n; i++ { f = e.Next(f); s += " " + f.Format(time.RFC3339) }
		t.Log(c.e, s)
	}
}
