package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TokenHeader carries the token of a login (upstream's header).
const TokenHeader = "Access-Token"

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// LoginModel is the model of a successful login, as upstream's (isGuest
// as 3.0.0/3.0.1's).
type LoginModel struct {
	Username    string `json:"username"`
	AccessToken string `json:"accessToken"`
	IsGuest     bool   `json:"isGuest"`
}

type userKey struct{}

// login is POST /api/login: {"username","password"} gives a token valid
// for TokenTTL (until the process exits at the latest).
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var req loginRequest
	if !s.decode(w, r, &req) {
		return
	}
	u, valid, err := s.Login(r, req.Username, req.Password)
	if err != nil {
		s.LoginRefused(w, r, req.Username, "login", err)
		return
	}
	if !valid {
		s.Audit(hclog.Warn, "user", req.Username, "op", "login", "result", "refused", "remote", s.Remote(r))
		fail(w, http.StatusForbidden, "Unauthorized.")
		return
	}
	token := rand.Text() + rand.Text()
	now := time.Now()
	s.mu.Lock()
	for t, ss := range s.tokens {
		if now.After(ss.expires) {
			delete(s.tokens, t)
		}
	}
	s.tokens[sha256.Sum256([]byte(token))] = session{user: u.Name, role: u.Role, expires: now.Add(s.opts.TokenTTL)}
	s.mu.Unlock()
	s.Audit(hclog.Info, "user", u.Name, "op", "login", "result", "ok", "remote", s.Remote(r))
	ok(w, LoginModel{Username: u.Name, AccessToken: token, IsGuest: u.Role == RoleGuest})
}

// Authenticate lets a request through with a valid Access-Token, or
// else a valid console cookie session (whose writes must carry the
// session's CSRF token), and a guest's only when it reads (GET, HEAD, or a
// POST that queries the event trace). The handler below sees the user in
// UserOf.
func (s *Server) Authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads := r.Method == http.MethodGet || r.Method == http.MethodHead
		var ss session
		if token := r.Header.Get(TokenHeader); token != "" {
			var valid bool
			if ss, valid = s.session(token); !valid {
				fail(w, http.StatusForbidden, "Unauthorized.")
				return
			}
		} else {
			cs, valid := s.CookieSession(r)
			if !valid {
				fail(w, http.StatusForbidden, "Unauthorized.")
				return
			}
			if !reads && !CSRFValid(r, cs) {
				s.Audit(hclog.Warn, "user", cs.Username, "op", r.Method+" "+r.URL.Path, "result", "refused: no valid CSRF token", "remote", s.Remote(r))
				fail(w, http.StatusForbidden, "Forbidden: missing or wrong "+CSRFHeader+" header")
				return
			}
			ss = session{user: cs.Username, role: cs.Role}
		}
		reads = reads || r.Method == http.MethodPost && traceRoutes[r.URL.Path]
		if ss.role != RoleAdmin && !reads {
			s.Audit(hclog.Warn, "user", ss.user, "op", r.Method+" "+r.URL.Path, "result", "refused: read-only user", "remote", s.Remote(r))
			fail(w, http.StatusForbidden, "Forbidden: user "+ss.user+" is read-only (role guest)")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, ss.user)))
	})
}

func (s *Server) session(token string) (session, bool) {
	if token == "" {
		return session{}, false
	}
	// Looked up by its hash: the map's timing tells nothing of a token.
	key := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.tokens[key]
	if ok && time.Now().After(ss.expires) {
		delete(s.tokens, key)
		return session{}, false
	}
	return ss, ok
}

// UserOf is the user Authenticate let through.
func UserOf(r *http.Request) string {
	u, _ := r.Context().Value(userKey{}).(string)
	return u
}

// Envelope is every /api response but the bare counts: ElasticJob-UI's
// ResponseResult.
type Envelope struct {
	Success   bool    `json:"success"`
	ErrorCode int     `json:"errorCode"`
	ErrorMsg  *string `json:"errorMsg"`
	Model     any     `json:"model"`
}

func ok(w http.ResponseWriter, model any) {
	write(w, http.StatusOK, Envelope{Success: true, Model: model})
}

// OK writes model in a success envelope.
func OK(w http.ResponseWriter, model any) { ok(w, model) }

// Fail answers status with msg in the envelope.
func Fail(w http.ResponseWriter, status int, msg string) { fail(w, status, msg) }

// WriteEnvelope answers status with env.
func WriteEnvelope(w http.ResponseWriter, status int, env Envelope) { write(w, status, env) }

// fail answers with status and the same errorCode in the envelope; under
// /api/ the HTTP status is 200 (statusInBody).
func fail(w http.ResponseWriter, status int, msg string) {
	write(w, status, Envelope{ErrorCode: status, ErrorMsg: &msg})
}

func write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
