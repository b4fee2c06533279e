package gson

import (
	"strconv"
	"unicode/utf8"

	"github.com/ejob-io/ejob/spi"
)

// ShardingContext returns the JSON upstream ElasticJob's Gson produces for a
// ShardingContext (the argument of SCRIPT jobs and the body of HTTP jobs):
// compact, fields in the order jobName, taskId, shardingTotalCount,
// jobParameter, shardingItem, shardingParameter, with shardingParameter
// omitted when nil, and strings escaped HTML-safe as Gson does by default.
// ejob adds fencingToken last when the context has one (not 0); without
// one the JSON is upstream's byte for byte.
func ShardingContext(c spi.ShardingContext) []byte {
	b := make([]byte, 0, 128+len(c.JobName)+len(c.TaskID)+len(c.JobParameter))
	b = append(b, `{"jobName":`...)
	b = appendString(b, c.JobName)
	b = append(b, `,"taskId":`...)
	b = appendString(b, c.TaskID)
	b = append(b, `,"shardingTotalCount":`...)
	b = strconv.AppendInt(b, int64(c.ShardingTotalCount), 10)
	b = append(b, `,"jobParameter":`...)
	b = appendString(b, c.JobParameter)
	b = append(b, `,"shardingItem":`...)
	b = strconv.AppendInt(b, int64(c.ShardingItem), 10)
	if c.ShardingParameter != nil {
		b = append(b, `,"shardingParameter":`...)
		b = appendString(b, *c.ShardingParameter)
	}
	if c.FencingToken != 0 {
		b = append(b, `,"fencingToken":`...)
		b = strconv.AppendInt(b, c.FencingToken, 10)
	}
	return append(b, '}')
}

// String returns s as a JSON string literal (quotes included), escaped as
// Gson's JsonWriter does in HTML-safe mode (see ShardingContext). Error
// handlers use it to build upstream's WeCom and DingTalk payloads byte for
// byte.
func String(s string) []byte { return appendString(make([]byte, 0, len(s)+2), s) }

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string escaped like Gson's JsonWriter in
// HTML-safe mode: the short escapes for " \ \t \b \n \r \f, \u00xx
// (lower-case hex) for other control characters, \u003c \u003e \u0026
// \u003d \u0027 for < > & = ', and \u2028 \u2029 for the line and paragraph
// separators. Other characters, including non-ASCII, are written as UTF-8.
// Invalid UTF-8 (which a Java string cannot hold) becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			var esc string
			switch c {
			case '"':
				esc = `\"`
			case '\\':
				esc = `\\`
			case '\t':
				esc = `\t`
			case '\b':
				esc = `\b`
			case '\n':
				esc = `\n`
			case '\r':
				esc = `\r`
			case '\f':
				esc = `\f`
			case '<', '>', '&', '=', '\'':
			default:
				if c >= 0x20 {
					i++
					continue
				}
			}
			b = append(b, s[start:i]...)
			if esc != "" {
				b = append(b, esc...)
			} else {
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...)
		case r == '\u2028':
			b = append(b, s[start:i]...)
			b = append(b, `\u2028`...)
		case r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, `\u2029`...)
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
