package console

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ejob-io/ejob/host/hostconfig"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/host/sso"
	"github.com/hashicorp/go-hclog"
)

// ssoStartTimeout bounds the provider's discovery at start: a provider
// that hangs delays the host's start by this much at most (the next
// sign-in tries again).
const ssoStartTimeout = 5 * time.Second

// SSOInfo is GET /console/sso (no session needed): whether the login page
// shows the "Sign in with SSO" button.
type SSOInfo struct {
	Enabled bool `json:"enabled"`
}

// ssoRoutes mounts single sign-on when ejob.http.oidc is set:
//
//	GET /console/sso          {enabled}
//	GET /login/sso            redirect to the provider (state, nonce, PKCE)
//	GET /login/sso/callback   the provider's redirect: a session, or back
//	                          to /login?sso=<reason> (sso.Reason)
func (c *Console) ssoRoutes() {
	set := c.srv.Options().OIDC
	c.mux.HandleFunc("GET /console/sso", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		httpapi.OK(w, SSOInfo{Enabled: set != nil})
	})
	if set == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ssoStartTimeout)
	defer cancel()
	client := sso.New(ctx, sso.Options{Settings: *set, Logger: c.log.Named("sso"), ClientKey: c.srv.ClientKey, Secure: c.srv.Secure})
	c.mux.HandleFunc("GET /login/sso", func(w http.ResponseWriter, r *http.Request) {
		if err := client.Begin(w, r); err != nil {
			c.ssoRefused(w, r, "", err)
		}
	})
	c.mux.HandleFunc("GET "+hostconfig.OIDCRedirectPath, func(w http.ResponseWriter, r *http.Request) {
		id, err := client.Finish(w, r)
		if err != nil {
			c.ssoRefused(w, r, id.Username, err)
			return
		}
		c.srv.Audit(hclog.Info, "user", id.Username, "op", "console sso login", "subject", id.Subject, "role", id.Role,
			"issuer", set.Issuer, "result", "ok", "remote", c.srv.Remote(r))
		c.srv.StartSession(w, r, id.Username, httpapi.Role(id.Role))
		// The browser arrived here from the provider's site: a
		// SameSite=Strict cookie set now is not sent on a redirect of this
		// same navigation, but is on one this page starts.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(`<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/">` +
			`<title>ejob console</title><a href="/">Continue to the console</a>`))
	})
}

// ssoRefused logs a failed sign-in (a flood of them as a few lines) and
// sends the browser back to the login page with the reason (a fixed word:
// the page has the message); a client that began too many sign-ins gets
// 429 with Retry-After.
func (c *Console) ssoRefused(w http.ResponseWriter, r *http.Request, user string, err error) {
	reason := sso.ReasonOf(err)
	c.srv.AuditRefusal("user", user, "op", "console sso login", "result", "refused: "+string(reason), "error", err, "remote", c.srv.Remote(r))
	w.Header().Set("Cache-Control", "no-store")
	if e, ok := errors.AsType[*sso.Error](err); ok && e.Reason == sso.ReasonRateLimited {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`<!doctype html><meta charset="utf-8"><title>ejob console</title>` +
			`<p>Too many sign-ins from this address: wait a little, then <a href="/login">log in again</a>.</p>`))
		return
	}
	http.Redirect(w, r, "/login?sso="+url.QueryEscape(string(reason)), http.StatusSeeOther)
}
