package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/host/httpapi"
)

//go:embed web
var webFS embed.FS

// Assets is the embedded web/ tree (read-only).
func Assets() fs.FS {
	sub, err := fs.Sub(webFS, "web")
	if err != nil {
		panic(err) // web is embedded at build time: cannot fail
	}
	return sub
}

// asset is one embedded file, ready to serve.
type asset struct {
	data  []byte
	ctype string
	etag  string
}

// Console serves the web console around an operations server.
type Console struct {
	srv    *httpapi.Server
	log    hclog.Logger
	assets map[string]asset
	mux    *http.ServeMux
	// csp is the pages' Content-Security-Policy: scripts from this
	// origin only, plus the shell's inline import map by its hash.
	csp string
}

// cloudPages is the page list the shell loads on the cloud scheduler
// (served as pages/index.js there).
const cloudPages = "pages/cloud/index.js"

// importMap is the shell's inline <script type="importmap">.
var importMap = regexp.MustCompile(`(?s)<script type="importmap">(.*?)</script>`)

// Handler is httpapi.Options.Console: the console's handler for srv.
func Handler(srv *httpapi.Server) (http.Handler, error) {
	c, err := New(srv)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// CloudHandler is httpapi.Options.Console on `ejob cloud`: the same shell
// and login with the cloud scheduler's pages (apps, cloud jobs, tasks,
// statistics) instead of a namespace's.
func CloudHandler(srv *httpapi.Server) (http.Handler, error) {
	c, err := New(srv)
	if err != nil {
		return nil, err
	}
	c.assets["pages/index.js"] = c.assets[cloudPages]
	return c, nil
}

// New loads the embedded assets and routes the console on srv.
func New(srv *httpapi.Server) (*Console, error) {
	c := &Console{srv: srv, log: srv.Logger().Named("console"), assets: map[string]asset{}, mux: http.NewServeMux()}
	err := fs.WalkDir(Assets(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(Assets(), p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		c.assets[p] = asset{data: data, ctype: contentType(p), etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console assets: %w", err)
	}
	m := importMap.FindSubmatch(c.assets["index.html"].data)
	if m == nil {
		return nil, errors.New("console assets: index.html has no import map")
	}
	sum := sha256.Sum256(m[1])
	c.csp = "default-src 'self'; script-src 'self' 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
		"style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
	c.routes()
	return c, nil
}

func contentType(p string) string {
	switch path.Ext(p) {
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case "":
		return "text/plain; charset=utf-8"
	}
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", c.csp)
	c.mux.ServeHTTP(w, r)
}

func (c *Console) routes() {
	c.mux.HandleFunc("GET /login", c.loginPage)
	c.mux.HandleFunc("POST /login", c.login)
	c.mux.HandleFunc("POST /logout", c.logout)
	c.mux.HandleFunc("GET /console/session", c.session)
	c.mux.HandleFunc("GET /assets/{path...}", c.asset)
	c.ssoRoutes()
	api := httpapi.NewMux()
	c.apiRoutes(api)
	c.mux.Handle("/console/api/", c.srv.Authenticate(api))
	c.mux.HandleFunc("/", c.page)
}

// page serves the app shell for any page path, or sends a browser without
// a session to the login page.
func (c *Console) page(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/console/") {
		httpapi.Fail(w, http.StatusNotFound, "no endpoint "+r.Method+" "+r.URL.Path)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if _, ok := c.srv.CookieSession(r); !ok {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	c.serveAsset(w, r, "index.html")
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.srv.CookieSession(r); ok {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	c.serveAsset(w, r, "login.html")
}

func (c *Console) asset(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("path")
	if strings.HasSuffix(p, ".html") {
		http.NotFound(w, r)
		return
	}
	c.serveAsset(w, r, p)
}

func (c *Console) serveAsset(w http.ResponseWriter, r *http.Request, p string) {
	a, ok := c.assets[p]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", a.ctype)
	w.Header().Set("ETag", a.etag)
	if w.Header().Get("Cache-Control") == "" {
		// Not fingerprinted: revalidate each time (a 304 costs one round trip).
		w.Header().Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.data))
}

// safeNext is a path of this origin to go to after login: anything else
// is /. A browser strips tabs and line breaks from a URL and reads a
// backslash as a slash, so "/\t/host" would leave for another origin: a
// target holding any control, space or backslash character is refused,
// whatever its position and also percent-encoded in the path, as is one
// that parses with a scheme or a host or whose path is not clean (dot or
// empty segments, also percent-encoded).
func safeNext(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/login") ||
		!utf8.ValidString(next) || strings.ContainsFunc(next, unsafeInURL) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") ||
		strings.ContainsFunc(u.Path, unsafeInURL) {
		return "/"
	}
	// Dot segments and empty ones resolve to "//host" in a browser.
	clean := path.Clean(u.Path)
	if strings.HasSuffix(u.Path, "/") && clean != "/" {
		clean += "/"
	}
	if clean != u.Path {
		return "/"
	}
	return next
}

// unsafeInURL reports a rune a browser may drop or rewrite in a URL: a
// control or format character, any space, a backslash.
func unsafeInURL(r rune) bool {
	return r == '\\' || r <= ' ' || r == 0x7f || unicode.IsSpace(r) || unicode.IsControl(r) ||
		unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) || !unicode.IsPrint(r)
}

// sameOrigin reports whether a browser's write comes from this site: the
// Origin header, when sent, must name the host the request was sent to.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return r.Header.Get("Sec-Fetch-Site") == "" || r.Header.Get("Sec-Fetch-Site") == "same-origin"
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Next     string `json:"next"`
}

// login is POST /login: a JSON {username, password, next} from the login
// page, or the same as a form. It answers {next} with the session cookie.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		httpapi.Fail(w, http.StatusForbidden, "Forbidden: cross-site login")
		return
	}
	var req loginRequest
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			httpapi.Fail(w, http.StatusBadRequest, "malformed JSON body: "+err.Error())
			return
		}
	} else {
		if err := r.ParseForm(); err != nil {
			httpapi.Fail(w, http.StatusBadRequest, "malformed form: "+err.Error())
			return
		}
		req = loginRequest{Username: r.PostForm.Get("username"), Password: r.PostForm.Get("password"), Next: r.PostForm.Get("next")}
	}
	u, ok, err := c.srv.Login(r, req.Username, req.Password)
	if err != nil {
		c.srv.LoginRefused(w, r, req.Username, "console login", err)
		return
	}
	if !ok {
		c.srv.Audit(hclog.Warn, "user", req.Username, "op", "console login", "result", "refused", "remote", c.srv.Remote(r))
		httpapi.Fail(w, http.StatusUnauthorized, "wrong user name or password")
		return
	}
	c.srv.StartSession(w, r, u.Name, u.Role)
	httpapi.OK(w, map[string]string{"next": safeNext(req.Next)})
}

// logout is POST /logout: it needs the CSRF header of the session it ends.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.srv.CookieSession(r)
	if ok && !httpapi.CSRFValid(r, ss) {
		httpapi.Fail(w, http.StatusForbidden, "Forbidden: missing or wrong "+httpapi.CSRFHeader+" header")
		return
	}
	c.srv.EndSession(w, r)
	httpapi.OK(w, map[string]string{"next": "/login"})
}

// session is GET /console/session: the page's user, role and CSRF token.
func (c *Console) session(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.srv.CookieSession(r)
	if !ok {
		httpapi.Fail(w, http.StatusUnauthorized, "no session: log in")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.OK(w, ss)
}
