package cron

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrUnknownZone is wrapped by LoadZone's errors.
var ErrUnknownZone = errors.New("unknown time zone")

// wallOffset returns the UTC offset (seconds) java.util.GregorianCalendar
// applies to the wall-clock time wall (seconds since 1970-01-01T00:00 local):
// the offset of the last transition whose local start, measured in the new
// offset, is at or before wall (sun.util.calendar.ZoneInfo.getOffsetsByWall).
// So a time in a spring-forward gap is read in the old (standard) offset
// (02:30 -> 03:30 daylight), and a time in a fall-back overlap in the new
// (standard) offset, i.e. the second occurrence.
func wallOffset(loc *time.Location, wall int64) int {
	// Offsets lie within -12h..+14h, so only transitions in this window can
	// decide; start before it in the offset then in force and walk forward.
	const window = 26 * 3600
	t := wall - window
	_, off := time.Unix(t, 0).In(loc).Zone()
	for range 16 {
		_, end := time.Unix(t, 0).In(loc).ZoneBounds()
		if end.IsZero() {
			break // no later transitions
		}
		next := end.Unix()
		if next <= t {
			// Past the zone's explicit transitions Go computes zones a year at
			// a time and may report the year boundary as the end of the zone
			// containing that very instant; step over it.
			next = t + 1
		}
		if next > wall+window {
			break
		}
		if _, o := time.Unix(next, 0).In(loc).Zone(); next+int64(o) <= wall {
			off = o
		}
		t = next
	}
	return off
}

// LoadZone resolves a time zone string the way ElasticJob passes its
// timeZone setting to java.util.TimeZone.getTimeZone, except that a string
// Java would silently turn into GMT is an error here:
//
//   - "" is the local zone (ElasticJob uses the JVM default zone then);
//   - "UTC", "GMT" and IANA names such as "Asia/Shanghai" (case-sensitive);
//   - custom offsets "GMT+8", "GMT-05", "GMT+0830", "GMT+08:30" (hours 0-23,
//     minutes 0-59), named like Java names them ("GMT+08:30");
//   - Java's legacy three-letter IDs ("PST", "CTT", "IST", ...), as aliases.
func LoadZone(tz string) (*time.Location, error) {
	switch tz {
	case "":
		return time.Local, nil
	case "UTC":
		return time.UTC, nil
	case "GMT":
		return time.FixedZone("GMT", 0), nil
	case "Local":
		return nil, fmt.Errorf("cron: time zone %q: %w (use \"\" for the local zone)", tz, ErrUnknownZone)
	}
	if loc, ok := customGMTZone(tz); ok {
		return loc, nil
	}
	name := tz
	if alias, ok := javaShortID(tz); ok {
		name = alias
	}
	if strings.HasPrefix(name, "posix/") || strings.HasPrefix(name, "right/") || strings.HasPrefix(name, "SystemV/") {
		return nil, fmt.Errorf("cron: time zone %q: %w (want an IANA name such as Asia/Shanghai, UTC, or GMT+08:00)", tz, ErrUnknownZone)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("cron: time zone %q: %w (want an IANA name such as Asia/Shanghai, UTC, or GMT+08:00): %v", tz, ErrUnknownZone, err)
	}
	return loc, nil
}

// customGMTZone is java.util.TimeZone.parseCustomTimeZone: "GMT", a sign,
// then h, hh, hmm, hhmm, h:mm or hh:mm.
func customGMTZone(id string) (*time.Location, bool) {
	if len(id) < len("GMT")+2 || !strings.HasPrefix(id, "GMT") {
		return nil, false
	}
	i := len("GMT")
	negative := false
	switch id[i] {
	case '-':
		negative = true
	case '+':
	default:
		return nil, false
	}
	i++
	hours, num, delims, n := 0, 0, 0, 0
	for ; i < len(id); i++ {
		c := id[i]
		if c == ':' {
			if delims > 0 || n > 2 {
				return nil, false
			}
			hours, num, n = num, 0, 0
			delims++
			continue
		}
		if c < '0' || c > '9' {
			return nil, false
		}
		num = num*10 + int(c-'0')
		n++
		if n > 9 {
			return nil, false // Java would overflow; no valid id is this long
		}
	}
	if delims == 0 {
		if n <= 2 {
			hours, num = num, 0
		} else {
			hours, num = num/100, num%100
		}
	} else if n != 2 {
		return nil, false
	}
	if hours > 23 || num > 59 {
		return nil, false
	}
	sign := '+'
	off := (hours*60 + num) * 60
	if negative {
		sign = '-'
		off = -off
	}
	return time.FixedZone(fmt.Sprintf("GMT%c%02d:%02d", sign, hours, num), off), true
}

// javaShortID maps the legacy IDs java.util.TimeZone still accepts (and that
// the IANA database does not have) to the zones Java aliases them to.
func javaShortID(id string) (string, bool) {
	switch id {
	case "ACT":
		return "Australia/Darwin", true
	case "AET":
		return "Australia/Sydney", true
	case "AGT":
		return "America/Argentina/Buenos_Aires", true
	case "ART":
		return "Africa/Cairo", true
	case "AST":
		return "America/Anchorage", true
	case "BET":
		return "America/Sao_Paulo", true
	case "BST":
		return "Asia/Dhaka", true
	case "CAT":
		return "Africa/Harare", true
	case "CNT":
		return "America/St_Johns", true
	case "CST":
		return "America/Chicago", true
	case "CTT":
		return "Asia/Shanghai", true
	case "EAT":
		return "Africa/Addis_Ababa", true
	case "ECT":
		return "Europe/Paris", true
	case "IET":
		return "America/Indiana/Indianapolis", true
	case "IST":
		return "Asia/Kolkata", true
	case "JST":
		return "Asia/Tokyo", true
	case "MIT":
		return "Pacific/Apia", true
	case "NET":
		return "Asia/Yerevan", true
	case "NST":
		return "Pacific/Auckland", true
	case "PLT":
		return "Asia/Karachi", true
	case "PNT":
		return "America/Phoenix", true
	case "PRT":
		return "America/Puerto_Rico", true
	case "PST":
		return "America/Los_Angeles", true
	case "SST":
		return "Pacific/Guadalcanal", true
	case "VST":
		return "Asia/Ho_Chi_Minh", true
	}
	return "", false
}
