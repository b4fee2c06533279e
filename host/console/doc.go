// Package console is ejob's web console: the pages an operator opens in a
// browser to see and steer a namespace, served by the operations HTTP
// server (host/httpapi) of `ejob serve` and of any host with ejob.http.
//
// Layout. The assets live under web/ and are embedded in the binary
// (go:embed), so the console works in an air-gapped network: no CDN and no
// build step anywhere. The browser loads ES modules directly; the vendored
// libraries (scripts/vendor-web.sh, pinned versions from the npm registry,
// each with its LICENSE, under web/vendor/<name>-<version>/) are Preact +
// htm (components without JSX or a bundler), Tabulator (the sortable,
// filterable tables, virtual rendering for 1,000 rows) and uPlot (charts).
// An import map in web/index.html names them. Every page is one module,
// web/pages/<page>.js, listed in web/pages/index.js; every user-visible
// string is in web/i18n/en.js (keys grouped by page); web/api.js wraps
// fetch (cookie session, CSRF header, envelope, redirect to the login page)
// and web/ui.js holds the shared UI helpers.
//
// Sessions. The session code lives in host/httpapi (session.go), because
// the REST API must accept the console's cookie session as well as its
// Access-Token header, with the same users and roles:
// httpapi.(*Server).StartSession(w, r, user, role) starts a session for an
// authenticated user on a response (the hook a single sign-on login calls),
// CookieSession reads one, EndSession ends one, and
// httpapi.(*Server).Authenticate wraps any handler (the /api endpoints and
// this package's /console/api ones) with the token-or-cookie check, CSRF
// on every write under a cookie, and the read-only role. This package
// serves what a browser needs around that:
//
//	GET  /login             the login page (a live session goes to /)
//	POST /login             {username, password} -> session cookie
//	POST /logout            ends the session (needs the CSRF header)
//	GET  /console/session   {username, role, csrfToken, expiresAt}, or 401
//	GET  /assets/...        the embedded web/ files
//	/console/api/...        the console's own JSON endpoints (authenticated,
//	                        api.go): overview, jobs (with next fire times
//	                        and last results), cron/preview, and a job's
//	                        config for the edit form (GET, and PUT validated
//	                        per key as `ejob job set`)
//	GET  any other path     the app shell (web/index.html), or a redirect
//	                        to /login?next=PATH without a session
//
// Every response carries a Content-Security-Policy allowing this origin's
// scripts only (and the shell's import map by its hash). A page's periodic
// refreshes send httpapi.BackgroundHeader so that they do not keep an
// unattended session alive.
package console
