package httpapi

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
)

// Audit logs one audit line ("audit" and the key, value pairs kv) at
// level, to Options.AuditLog or else the server's log. Values come from
// the network (user names, paths, a provider's error text): each is
// escaped by AuditEscape, so a line stays one line and no value reads as
// another field.
func (s *Server) Audit(level hclog.Level, kv ...any) {
	out := make([]any, len(kv))
	for i, v := range kv {
		if i%2 == 0 {
			out[i] = v
			continue
		}
		switch v := v.(type) {
		case int, int64, bool:
			out[i] = v
		case string:
			out[i] = AuditEscape(v)
		case error:
			out[i] = AuditEscape(v.Error())
		default:
			out[i] = AuditEscape(fmt.Sprint(v))
		}
	}
	s.auditLog.Log(level, "audit", out...)
}

// AuditEscape percent-encodes what could forge an audit line: control,
// format and line or paragraph separator characters, spaces other than
// ' ', invalid UTF-8, and '%', '=', '"' and '\'. Every other character,
// letters of any script included, stays as it is.
func AuditEscape(v string) string {
	if !strings.ContainsFunc(v, auditUnsafe) && utf8.ValidString(v) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); {
		r, n := utf8.DecodeRuneInString(v[i:])
		if (r == utf8.RuneError && n == 1) || auditUnsafe(r) {
			for _, c := range []byte(v[i : i+n]) {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		} else {
			b.WriteString(v[i : i+n])
		}
		i += n
	}
	return b.String()
}

func auditUnsafe(r rune) bool {
	switch r {
	case '%', '=', '"', '\\':
		return true
	case ' ':
		return false
	}
	return !unicode.IsGraphic(r) || unicode.IsSpace(r)
}

// auditFile is the file of Options.AuditLog, opened again by reopen (after
// a log rotation).
type auditFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func openAuditFile(path string) (*auditFile, error) {
	a := &auditFile{path: path}
	if err := a.reopen(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *auditFile) reopen() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	a.mu.Lock()
	old := a.f
	a.f = f
	a.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return nil
}

func (a *auditFile) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.f.Write(p)
}

func (a *auditFile) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.f.Close()
}
