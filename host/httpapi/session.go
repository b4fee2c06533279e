package httpapi

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/crypto/bcrypt"
)

// Cookie sessions: the web console's login. A session lives on the server
// (the cookie holds only a random id); it ends after SessionIdle without a
// request, after SessionMaxAge in any case, at logout, or when the process
// exits. A write under a cookie session needs the session's CSRF token in
// CSRFHeader.
const (
	// SessionCookie names the session cookie.
	SessionCookie = "ejob_session"
	// CSRFHeader carries the session's CSRF token on every write.
	CSRFHeader = "X-CSRF-Token"
	// BackgroundHeader marks a request a page sends by itself (a periodic
	// refresh): it does not count as use, so an open page left alone
	// still lets its session idle out.
	BackgroundHeader = "X-Ejob-Background"
	// DefaultSessionIdle ends a session after this long without a request.
	DefaultSessionIdle = 30 * time.Minute
	// DefaultSessionMaxAge ends a session this long after login.
	DefaultSessionMaxAge = 12 * time.Hour
)

// Session is a console login as the pages see it (GET /console/session).
type Session struct {
	Username  string    `json:"username"`
	Role      Role      `json:"role"`
	CSRFToken string    `json:"csrfToken"`
	ExpiresAt time.Time `json:"expiresAt"`
	// IdleTimeout is SessionIdle in seconds: the page may warn before it.
	IdleTimeout int       `json:"idleTimeoutSeconds"`
	deadline    time.Time // login + SessionMaxAge
}

// CheckPassword reports the user of name when password is theirs. An
// unknown name costs as long as a known one.
func (s *Server) CheckPassword(name, password string) (User, bool) {
	u, known := s.users[name]
	hash := s.dummy
	if known {
		hash = []byte(u.PasswordHash)
	}
	if err := bcrypt.CompareHashAndPassword(hash, []byte(password)); err != nil || !known {
		return User{}, false
	}
	return u, true
}

// StartSession starts a cookie session for user with role and sets its
// cookie on w (HttpOnly, SameSite=Strict, Secure when the browser came
// over HTTPS: Secure).
// It is the one way a login (password or single sign-on) opens the
// console; the caller has authenticated the user.
func (s *Server) StartSession(w http.ResponseWriter, r *http.Request, user string, role Role) Session {
	id := rand.Text() + rand.Text()
	now := time.Now()
	ss := &Session{Username: user, Role: role, CSRFToken: rand.Text() + rand.Text(),
		deadline: now.Add(s.opts.SessionMaxAge), IdleTimeout: int(s.opts.SessionIdle / time.Second)}
	ss.ExpiresAt = minTime(ss.deadline, now.Add(s.opts.SessionIdle))
	s.mu.Lock()
	for k, o := range s.sessions {
		if now.After(o.ExpiresAt) {
			delete(s.sessions, k)
		}
	}
	s.sessions[sha256.Sum256([]byte(id))] = ss
	out := *ss
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: "/", HttpOnly: true, Secure: s.Secure(r),
		SameSite: http.SameSiteStrictMode, Expires: ss.deadline})
	s.Audit(hclog.Info, "user", user, "op", "console login", "result", "ok", "remote", s.Remote(r))
	return out
}

// CookieSession is r's live cookie session; a request extends its idle
// expiry (never past SessionMaxAge) unless it carries BackgroundHeader.
func (s *Server) CookieSession(r *http.Request) (Session, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return Session{}, false
	}
	key := sha256.Sum256([]byte(c.Value))
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[key]
	if !ok {
		return Session{}, false
	}
	if now.After(ss.ExpiresAt) {
		delete(s.sessions, key)
		return Session{}, false
	}
	if r.Header.Get(BackgroundHeader) == "" {
		ss.ExpiresAt = minTime(ss.deadline, now.Add(s.opts.SessionIdle))
	}
	return *ss, true
}

// EndSession ends r's cookie session, if any, and clears the cookie.
func (s *Server) EndSession(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		key := sha256.Sum256([]byte(c.Value))
		s.mu.Lock()
		ss, ok := s.sessions[key]
		delete(s.sessions, key)
		s.mu.Unlock()
		if ok {
			s.Audit(hclog.Info, "user", ss.Username, "op", "console logout", "result", "ok", "remote", s.Remote(r))
		}
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: s.Secure(r),
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

// CSRFValid reports whether r carries ss's CSRF token in CSRFHeader.
func CSRFValid(r *http.Request, ss Session) bool {
	got := r.Header.Get(CSRFHeader)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(ss.CSRFToken)) == 1
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
