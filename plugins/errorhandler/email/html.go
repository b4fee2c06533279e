package email

import (
	"html"
	"strings"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
)

// HTML renders m as the mail's HTML alternative: the first line as a
// heading, the rest of the error and the notes as paragraphs, the fields
// as a table and the detail as preformatted text. The plain-text part
// (m.Text()) carries the same content.
func HTML(m alert.Message) string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><body style="font-family:sans-serif;font-size:14px">`)
	b.WriteString(`<p style="font-weight:bold;color:#b00020">`)
	b.WriteString(html.EscapeString(m.FirstLine()))
	b.WriteString("</p>")
	if _, rest, ok := strings.Cut(m.Error.Message, "\n"); ok && strings.TrimSpace(rest) != "" {
		b.WriteString(`<pre style="white-space:pre-wrap">`)
		b.WriteString(html.EscapeString(strings.TrimRight(rest, "\n")))
		b.WriteString("</pre>")
	}
	for _, n := range m.Notes() {
		b.WriteString(`<p style="background:#fff3cd;padding:6px">`)
		b.WriteString(html.EscapeString(n))
		b.WriteString("</p>")
	}
	b.WriteString(`<table style="border-collapse:collapse">`)
	for _, f := range m.Fields() {
		b.WriteString(`<tr><th style="text-align:left;padding:2px 12px 2px 0">`)
		b.WriteString(html.EscapeString(f[0]))
		b.WriteString(`</th><td style="font-family:monospace">`)
		b.WriteString(html.EscapeString(f[1]))
		b.WriteString("</td></tr>")
	}
	b.WriteString("</table>")
	if d := strings.TrimRight(m.Error.Detail, "\n"); d != "" {
		b.WriteString(`<pre style="white-space:pre-wrap;background:#f4f4f4;padding:6px">`)
		b.WriteString(html.EscapeString(d))
		b.WriteString("</pre>")
	}
	b.WriteString("</body></html>\n")
	return b.String()
}
