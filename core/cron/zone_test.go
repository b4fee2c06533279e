package cron

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLoadZone(t *testing.T) {
	t.Parallel()
	jan := time.Date(2025, 1, 15, 0, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		tz      string
		name    string // want loc.String(); "" to skip
		offset  int    // want offset (seconds) on 2025-01-15
		wantErr bool
	}{
		"UTC":                 {tz: "UTC", name: "UTC"},
		"GMT":                 {tz: "GMT", name: "GMT"},
		"GMT+8":               {tz: "GMT+8", name: "GMT+08:00", offset: 8 * 3600},
		"GMT+08":              {tz: "GMT+08", name: "GMT+08:00", offset: 8 * 3600},
		"GMT+0800":            {tz: "GMT+0800", name: "GMT+08:00", offset: 8 * 3600},
		"GMT+08:00":           {tz: "GMT+08:00", name: "GMT+08:00", offset: 8 * 3600},
		"GMT-5":               {tz: "GMT-5", name: "GMT-05:00", offset: -5 * 3600},
		"GMT+0830":            {tz: "GMT+0830", name: "GMT+08:30", offset: 8*3600 + 1800},
		"GMT+830":             {tz: "GMT+830", name: "GMT+08:30", offset: 8*3600 + 1800},
		"GMT+23:59":           {tz: "GMT+23:59", name: "GMT+23:59", offset: 23*3600 + 59*60},
		"IANA":                {tz: "Asia/Shanghai", name: "Asia/Shanghai", offset: 8 * 3600},
		"IANA with DST":       {tz: "America/New_York", name: "America/New_York", offset: -5 * 3600},
		"Java short ID":       {tz: "CTT", offset: 8 * 3600},
		"Java short ID PST":   {tz: "PST", offset: -8 * 3600},
		"empty is local":      {tz: "", name: "Local"},
		"GMT+24":              {tz: "GMT+24", wantErr: true},
		"minutes need 2 digs": {tz: "GMT+5:3", wantErr: true},
		"UTC+8 is not Java":   {tz: "UTC+8", wantErr: true},
		"lower case":          {tz: "asia/shanghai", wantErr: true},
		"unknown":             {tz: "Mars/Olympus", wantErr: true},
		"Local":               {tz: "Local", wantErr: true},
		"posix prefix":        {tz: "posix/Asia/Shanghai", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			loc, err := LoadZone(tc.tz)
			if tc.wantErr {
				if !errors.Is(err, ErrUnknownZone) || !strings.Contains(err.Error(), `"`+tc.tz+`"`) {
					t.Fatalf("LoadZone(%q) error = %v, want ErrUnknownZone naming the zone", tc.tz, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.name != "" && loc.String() != tc.name {
				t.Errorf("name = %q, want %q", loc.String(), tc.name)
			}
			if tc.tz == "" {
				return
			}
			if _, off := jan.In(loc).Zone(); off != tc.offset {
				t.Errorf("offset = %d, want %d", off, tc.offset)
			}
		})
	}
}

func TestWallOffset(t *testing.T) {
	t.Parallel()
	ny := mustZone(t, "America/New_York")
	wall := func(y int, m time.Month, d, h, mi int) int64 {
		return time.Date(y, m, d, h, mi, 0, 0, time.UTC).Unix()
	}
	tests := map[string]struct {
		wall int64
		want int
	}{
		"before the gap":         {wall(2025, 3, 9, 1, 59), -5 * 3600},
		"in the gap: standard":   {wall(2025, 3, 9, 2, 30), -5 * 3600},
		"after the gap":          {wall(2025, 3, 9, 3, 0), -4 * 3600},
		"before the overlap":     {wall(2025, 11, 2, 0, 59), -4 * 3600},
		"in the overlap: second": {wall(2025, 11, 2, 1, 30), -5 * 3600},
		"far future rule":        {wall(2113, 7, 1, 12, 0), -4 * 3600},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := wallOffset(ny, tc.wall); got != tc.want {
				t.Errorf("wallOffset = %d, want %d", got, tc.want)
			}
		})
	}
}
