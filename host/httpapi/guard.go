package httpapi

import (
	"context"
	"errors"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Login limits: every password login (POST /api/login, the console's login
// form) goes through them.
const (
	// FreeLoginFailures is how many wrong passwords in a row a user name,
	// or a client, may send before it backs off.
	FreeLoginFailures = 5
	// LoginBackoffBase is the wait after the first failure beyond the
	// free ones; it doubles with each further failure up to
	// LoginBackoffMax.
	LoginBackoffBase = time.Second
	LoginBackoffMax  = 5 * time.Minute
	// LoginFailureMemory is how long failures are remembered: a user name
	// or client without a failure for this long starts over.
	LoginFailureMemory = 15 * time.Minute
	// loginTableSize bounds each table of failures (user names, clients):
	// the least recently failing entry makes room for a new one.
	loginTableSize = 16384
	// maxPasswordWaiters bounds the logins waiting for a password check;
	// more are answered 429 at once.
	maxPasswordWaiters = 64
	// passwordWait bounds how long a login waits for a password check.
	passwordWait = 10 * time.Second
)

// ErrRateLimited: a login refused before its password was checked, to be
// tried again after RetryAfter.
var ErrRateLimited = errors.New("too many login attempts")

// RateLimitError is ErrRateLimited with the wait.
type RateLimitError struct {
	RetryAfter time.Duration
	// Why names what is limited (user, client, or busy).
	Why string
}

func (e *RateLimitError) Error() string {
	return ErrRateLimited.Error() + " (" + e.Why + "): retry after " + e.RetryAfter.String()
}
func (e *RateLimitError) Unwrap() error { return ErrRateLimited }

// failures is one user name's or client's run of wrong passwords.
type failures struct {
	count    int
	last     time.Time
	until    time.Time // no attempt before this
	inFlight int       // attempts whose password is being checked
}

// loginGuard holds the login limits: failures per user name and per
// client with exponential backoff, and a bound on concurrent password
// checks (bcrypt takes a core for 50-100 ms at cost 10: unbounded, a
// flood of logins starves the API and the probes).
type loginGuard struct {
	mu      sync.Mutex
	users   *lru.Cache[string, *failures]
	clients *lru.Cache[string, *failures]
	checks  chan struct{}
	waiting int
}

func newLoginGuard() *loginGuard {
	users, _ := lru.New[string, *failures](loginTableSize)
	clients, _ := lru.New[string, *failures](loginTableSize)
	return &loginGuard{users: users, clients: clients, checks: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))}
}

// entry is key's failures in t, nil when it has none worth remembering.
func entry(t *lru.Cache[string, *failures], key string, now time.Time) *failures {
	f, ok := t.Get(key)
	if ok && f.inFlight == 0 && now.Sub(f.last) > LoginFailureMemory {
		t.Remove(key)
		return nil
	}
	return f
}

// blockedFor is how long f must wait before one more attempt (0: it may
// go on): after its free failures it waits out its backoff, and has one
// attempt in flight at a time.
func (f *failures) blockedFor(now time.Time) time.Duration {
	if f == nil {
		return 0
	}
	if d := f.until.Sub(now); d > 0 {
		return d
	}
	if f.count+f.inFlight >= FreeLoginFailures {
		if f.count >= FreeLoginFailures && f.inFlight == 0 {
			return 0
		}
		return time.Second
	}
	return 0
}

// attempt is one password login admitted by begin.
type attempt struct {
	g            *loginGuard
	user, client string
}

// begin admits a login for user from client, or refuses it with a
// *RateLimitError. The caller checks the password, then calls done.
func (g *loginGuard) begin(user, client string) (*attempt, error) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	uf, cf := entry(g.users, user, now), entry(g.clients, client, now)
	if d := uf.blockedFor(now); d > 0 {
		return nil, &RateLimitError{RetryAfter: d, Why: "user"}
	}
	if d := cf.blockedFor(now); d > 0 {
		return nil, &RateLimitError{RetryAfter: d, Why: "client"}
	}
	for _, k := range []struct {
		t   *lru.Cache[string, *failures]
		key string
		f   *failures
	}{{g.users, user, uf}, {g.clients, client, cf}} {
		if k.f == nil {
			k.f = &failures{last: now}
			k.t.Add(k.key, k.f)
		}
		k.f.inFlight++
	}
	return &attempt{g: g, user: user, client: client}, nil
}

// Outcomes of an attempt.
const (
	unchecked = iota // the password was not checked (busy, context ended)
	failed
	succeeded
)

// done records how the attempt ended: a success clears the user's
// failures, a failure backs the user and the client off, an unchecked
// attempt counts as neither.
func (a *attempt) done(outcome int) {
	now := time.Now()
	g := a.g
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range []struct {
		t   *lru.Cache[string, *failures]
		key string
	}{{g.users, a.user}, {g.clients, a.client}} {
		f, has := k.t.Peek(k.key)
		if !has {
			// Evicted by a flood of other keys: count this failure anew.
			f = &failures{inFlight: 1}
			if outcome == failed {
				k.t.Add(k.key, f)
			}
		}
		f.inFlight = max(0, f.inFlight-1)
		switch outcome {
		case succeeded:
			// The user's failures end; the client's wear off with time
			// (a success under one name must not reset a client that
			// tries many names).
			if k.t == g.users {
				k.t.Remove(k.key)
			}
		case failed:
			f.count++
			f.last = now
			if over := f.count - FreeLoginFailures; over >= 0 {
				f.until = now.Add(backoff(over))
			}
		}
	}
}

// backoff is the wait after the n-th failure beyond the free ones (n from 0).
func backoff(n int) time.Duration {
	if n >= 30 {
		return LoginBackoffMax
	}
	return min(LoginBackoffBase*time.Duration(1<<n), LoginBackoffMax)
}

// check runs one password check when a slot is free: it waits at most
// passwordWait, and refuses at once when maxPasswordWaiters already wait.
func (g *loginGuard) check(ctx context.Context, f func() bool) (bool, error) {
	select {
	case g.checks <- struct{}{}:
	default:
		g.mu.Lock()
		if g.waiting >= maxPasswordWaiters {
			g.mu.Unlock()
			return false, &RateLimitError{RetryAfter: time.Second, Why: "busy"}
		}
		g.waiting++
		g.mu.Unlock()
		t := time.NewTimer(passwordWait)
		defer t.Stop()
		var err error
		select {
		case g.checks <- struct{}{}:
		case <-t.C:
			err = &RateLimitError{RetryAfter: time.Second, Why: "busy"}
		case <-ctx.Done():
			err = ctx.Err()
		}
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
		if err != nil {
			return false, err
		}
	}
	defer func() { <-g.checks }()
	return f(), nil
}

// Login checks name's password for a login from r's client, within the
// login limits: (user, true, nil) when it is theirs, (User{}, false, nil)
// when it is not, or an error (a *RateLimitError, or r's context ended)
// when it was not checked.
func (s *Server) Login(r *http.Request, name, password string) (User, bool, error) {
	a, err := s.guard.begin(name, s.ClientKey(r))
	if err != nil {
		return User{}, false, err
	}
	var u User
	valid, err := s.guard.check(r.Context(), func() bool {
		var ok bool
		u, ok = s.CheckPassword(name, password)
		return ok
	})
	switch {
	case err != nil:
		a.done(unchecked)
		return User{}, false, err
	case valid:
		a.done(succeeded)
	default:
		a.done(failed)
	}
	return u, valid, nil
}

// RetryAfter writes a Retry-After header for err when it is a
// *RateLimitError and reports whether it was.
func RetryAfter(w http.ResponseWriter, err error) bool {
	rl, ok := errors.AsType[*RateLimitError](err)
	if !ok {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(rl.RetryAfter.Seconds()))))
	return true
}

// refusalLog bounds the audit lines of refusals that cost the server
// nothing (rate-limited logins, refused single sign-on begins): a flood
// of them writes a few lines a second, each saying how many it stands
// for.
type refusalLog struct {
	lim        *rate.Limiter
	mu         sync.Mutex
	suppressed int
}

func newRefusalLog() *refusalLog { return &refusalLog{lim: rate.NewLimiter(2, 10)} }

// allow reports whether a line may be written now and how many were
// suppressed since the last one.
func (l *refusalLog) allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.lim.Allow() {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.suppressed = 0
	return true, n
}

// AuditRefusal writes the audit line of a refused request that cost the
// server nothing, at most a few a second (a flood is counted, not
// written line by line).
func (s *Server) AuditRefusal(kv ...any) {
	ok, n := s.refusals.allow()
	if !ok {
		return
	}
	if n > 0 {
		kv = append(kv, "suppressed", n)
	}
	s.Audit(hclog.Warn, kv...)
}

// LoginRefused answers a login that Login refused before checking its
// password: 429 with Retry-After when rate-limited, 503 when r ended.
func (s *Server) LoginRefused(w http.ResponseWriter, r *http.Request, user, op string, err error) {
	s.AuditRefusal("user", user, "op", op, "result", "refused: "+err.Error(), "remote", s.Remote(r))
	if RetryAfter(w, err) {
		fail(w, http.StatusTooManyRequests, "Too many login attempts: retry after "+w.Header().Get("Retry-After")+" s")
		return
	}
	fail(w, http.StatusServiceUnavailable, "login not checked: "+err.Error())
}

// Remote is r's client address as audit lines show it (ClientIP).
func (s *Server) Remote(r *http.Request) string {
	if a := s.ClientIP(r); a.IsValid() {
		return a.String()
	}
	return r.RemoteAddr
}
