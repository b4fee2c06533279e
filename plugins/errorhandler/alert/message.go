package alert

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// Message is one alert: a failure of a job, and what suppression held
// back before it.
type Message struct {
	JobName    string
	InstanceID string
	// TaskID is empty for failures outside an execution.
	TaskID string
	// Item is the failed sharding item, -1 when the failure is not tied to
	// one.
	Item  int
	Error spi.JobError
	// Time is when the failure was reported.
	Time time.Time
	// Suppressed counts this job's failures that were not sent since the
	// previous alert (suppression, or a full queue).
	Suppressed int
	// Previous is when the previous alert for this job was sent; zero if
	// none.
	Previous time.Time
	// Digest says this alert is sent because the suppression window ended:
	// the failure shown is the latest of the Suppressed ones.
	Digest bool
	// Window is the suppression window in force (alert.suppressSeconds).
	Window time.Duration
	// Test marks a test alert (alert.test, `ejob alert test`).
	Test bool
}

// Headline returns upstream's first line for a failure of job caused by
// cause: Job '<job>' exception occur in job processing, caused by <cause>.
func Headline(job, cause string) string {
	return fmt.Sprintf("Job '%s' exception occur in job processing, caused by %s", job, cause)
}

// FirstLine is the message's first line: upstream's text with the first
// line of the error.
func (m Message) FirstLine() string {
	first, _, _ := strings.Cut(m.Error.Message, "\n")
	return Headline(m.JobName, strings.TrimRight(first, "\r"))
}

// ItemText is the item number, or "none" for a failure not tied to an
// item.
func (m Message) ItemText() string {
	if m.Item < 0 {
		return "none (not tied to an item)"
	}
	return strconv.Itoa(m.Item)
}

// TimeText is Time in RFC 3339 with the zone of the plugin process.
func (m Message) TimeText() string { return m.Time.Format(time.RFC3339) }

// TestNotice is the line a test alert carries.
const TestNotice = "This is a test alert sent by 'ejob alert test': the job did not fail."

// Notes returns the lines about suppression and test mode, in order; none
// for an ordinary first alert.
func (m Message) Notes() []string {
	var notes []string
	if m.Test {
		notes = append(notes, TestNotice)
	}
	if m.Suppressed > 0 {
		since := "the previous alert"
		if !m.Previous.IsZero() {
			since += " (" + m.Previous.Format(time.RFC3339) + ")"
		}
		window := fmt.Sprintf("%s=%d", PropSuppressSeconds, int(m.Window/time.Second))
		if m.Digest {
			notes = append(notes, fmt.Sprintf("%d failure(s) of job '%s' since %s were not sent one by one (%s); this is the latest of them.",
				m.Suppressed, m.JobName, since, window))
		} else {
			notes = append(notes, fmt.Sprintf("%d more failure(s) of job '%s' since %s were not sent (%s).",
				m.Suppressed, m.JobName, since, window))
		}
	}
	return notes
}

// Fields returns the labelled facts of the alert, in display order: job,
// instance, item, task (when there is one) and time.
func (m Message) Fields() [][2]string {
	f := [][2]string{{"Job", m.JobName}, {"Instance", m.InstanceID}, {"Item", m.ItemText()}}
	if m.TaskID != "" {
		f = append(f, [2]string{"Task", m.TaskID})
	}
	return append(f, [2]string{"Time", m.TimeText()})
}

// Text is the plain-text alert: FirstLine, the rest of the error text,
// then the notes, the fields and the error's detail.
//
//	Job 'orders' exception occur in job processing, caused by exit status 1
//
//	Job:      orders
//	Instance: 10.0.0.5@-@4242
//	Item:     2
//	Task:     orders@-@0,1,2@-@READY@-@10.0.0.5@-@4242
//	Time:     2026-11-23T10:00:00Z
//
//	caused by: exit status 1
func (m Message) Text() string {
	var b strings.Builder
	b.WriteString(m.FirstLine())
	b.WriteByte('\n')
	if _, rest, ok := strings.Cut(m.Error.Message, "\n"); ok && strings.TrimSpace(rest) != "" {
		b.WriteString(strings.TrimRight(rest, "\n"))
		b.WriteByte('\n')
	}
	for _, n := range m.Notes() {
		b.WriteByte('\n')
		b.WriteString(n)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	for _, f := range m.Fields() {
		fmt.Fprintf(&b, "%-9s %s\n", f[0]+":", f[1])
	}
	if d := strings.TrimRight(m.Error.Detail, "\n"); d != "" {
		b.WriteByte('\n')
		b.WriteString(d)
		b.WriteByte('\n')
	}
	return b.String()
}
