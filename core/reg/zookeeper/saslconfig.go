package zookeeper

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// SASL mechanisms.
const (
	MechanismDigestMD5 = "DIGEST-MD5"
	MechanismGSSAPI    = "GSSAPI"
)

// DefaultServiceName is the Kerberos service name of ZooKeeper servers
// (their principal is serviceName/host@REALM), as the Java client's
// zookeeper.sasl.client.username default.
const DefaultServiceName = "zookeeper"

// SASL is regCenter.sasl: the client authenticates every new connection
// with SASL before any other request, as the Java client does with a JAAS
// Client section. The zero value means no SASL.
type SASL struct {
	// Mechanism is DIGEST-MD5 or GSSAPI (any case); empty with JAASFile.
	Mechanism string `json:"mechanism,omitempty" yaml:"mechanism,omitempty"`
	// Username and Password are DIGEST-MD5's credentials: a user_NAME
	// entry of the server's JAAS DigestLoginModule.
	Username string `json:"username,omitempty" yaml:"username,omitempty"`
	Password string `json:"password,omitempty" yaml:"password,omitempty"`
	// Principal is GSSAPI's client principal (user@REALM or
	// service/host@REALM); required with Keytab, else the ticket cache's.
	Principal string `json:"principal,omitempty" yaml:"principal,omitempty"`
	// Keytab holds Principal's keys. Without it the credential cache is
	// used: TicketCache, else $KRB5CCNAME, else /tmp/krb5cc_UID.
	Keytab      string `json:"keytab,omitempty" yaml:"keytab,omitempty"`
	TicketCache string `json:"ticketCache,omitempty" yaml:"ticketCache,omitempty"`
	// Krb5Conf is the Kerberos configuration (default $KRB5_CONFIG, else
	// /etc/krb5.conf).
	Krb5Conf string `json:"krb5Conf,omitempty" yaml:"krb5Conf,omitempty"`
	// ServiceName and ServiceHost make the server's principal
	// ServiceName/ServiceHost (defaults: zookeeper, and the host of the
	// server being connected to, as written in serverLists).
	ServiceName string `json:"serviceName,omitempty" yaml:"serviceName,omitempty"`
	ServiceHost string `json:"serviceHost,omitempty" yaml:"serviceHost,omitempty"`
	// JAASFile is a JAAS configuration whose Client section (a
	// DigestLoginModule or a Krb5LoginModule) gives the mechanism and the
	// credentials instead of the keys above.
	JAASFile string `json:"jaasFile,omitempty" yaml:"jaasFile,omitempty"`
	// ACL creates nodes with ZooKeeper's CREATOR_ALL_ACL, which the server
	// stores as sasl:<the authenticated identity>: only that identity (and
	// the digest one, when digest is set too) may then read and write them.
	ACL bool `json:"acl,omitempty" yaml:"acl,omitempty"`
}

// Enabled reports whether s configures SASL.
func (s SASL) Enabled() bool { return s != SASL{} }

// String masks the password (fmt prints nested Stringers, so a Config
// printed with %v or %+v does not show it either).
func (s SASL) String() string {
	if !s.Enabled() {
		return "{}"
	}
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("mechanism", s.Mechanism)
	add("username", s.Username)
	if s.Password != "" {
		add("password", "***")
	}
	add("principal", s.Principal)
	add("keytab", s.Keytab)
	add("ticketCache", s.TicketCache)
	add("krb5Conf", s.Krb5Conf)
	add("serviceName", s.ServiceName)
	add("serviceHost", s.ServiceHost)
	add("jaasFile", s.JAASFile)
	if s.ACL {
		add("acl", "true")
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// GoString masks the password for %#v too.
func (s SASL) GoString() string { return "zookeeper.SASL" + s.String() }

// identity names who authenticates, for messages.
func (s SASL) identity() string {
	if s.Mechanism == MechanismDigestMD5 {
		return s.Username
	}
	if s.Principal != "" {
		return s.Principal
	}
	return "the ticket cache's principal"
}

// resolved returns s with the JAAS file's Client section applied and the
// mechanism in canonical case; its error names the file and line.
func (s SASL) resolved() (SASL, error) {
	if s.JAASFile != "" {
		data, err := os.ReadFile(s.JAASFile)
		if err != nil {
			return s, fmt.Errorf("read JAAS file: %w", err)
		}
		e, err := parseJAASClient(s.JAASFile, string(data))
		if err != nil {
			return s, err
		}
		s.Mechanism, s.Username, s.Password = e.mechanism, e.username, e.password
		s.Principal, s.Keytab, s.TicketCache = e.principal, e.keytab, e.ticketCache
	}
	switch strings.ToUpper(strings.TrimSpace(s.Mechanism)) {
	case MechanismDigestMD5:
		s.Mechanism = MechanismDigestMD5
	case MechanismGSSAPI:
		s.Mechanism = MechanismGSSAPI
		if s.ServiceName == "" {
			s.ServiceName = DefaultServiceName
		}
	}
	return s, nil
}

// validate reports the problems of s through bad ("sasl.KEY", reason).
func (s SASL) validate(bad func(field, format string, a ...any)) {
	if !s.Enabled() {
		return
	}
	if s.JAASFile != "" {
		for _, f := range []struct{ key, v string }{
			{"mechanism", s.Mechanism}, {"username", s.Username}, {"password", s.Password},
			{"principal", s.Principal}, {"keytab", s.Keytab}, {"ticketCache", s.TicketCache},
		} {
			if f.v != "" {
				bad("sasl."+f.key, "must not be set with jaasFile: the JAAS file's Client section gives it")
			}
		}
	}
	r, err := s.resolved()
	if err != nil {
		bad("sasl.jaasFile", "%v", err)
		return
	}
	gssapiOnly := []struct{ key, v string }{
		{"principal", r.Principal}, {"keytab", r.Keytab}, {"ticketCache", r.TicketCache},
		{"krb5Conf", r.Krb5Conf}, {"serviceName", r.ServiceName}, {"serviceHost", r.ServiceHost},
	}
	switch r.Mechanism {
	case MechanismDigestMD5:
		if r.Username == "" {
			bad("sasl.username", "DIGEST-MD5 needs a username")
		}
		if r.Password == "" {
			bad("sasl.password", "DIGEST-MD5 needs a password")
		}
		for _, f := range gssapiOnly {
			if f.v != "" {
				bad("sasl."+f.key, "is a GSSAPI setting; DIGEST-MD5 would ignore it")
			}
		}
	case MechanismGSSAPI:
		if r.Username != "" {
			bad("sasl.username", "is a DIGEST-MD5 setting; GSSAPI takes a principal")
		}
		if r.Password != "" {
			bad("sasl.password", "is a DIGEST-MD5 setting; GSSAPI takes a keytab or a ticket cache")
		}
		if r.Keytab != "" && r.TicketCache != "" {
			bad("sasl.ticketCache", "must not be set with keytab: the keytab logs in by itself")
		}
		if r.Keytab != "" && r.Principal == "" {
			bad("sasl.principal", "GSSAPI with a keytab needs the principal whose keys it holds")
		}
		if r.Principal != "" && !strings.Contains(r.Principal, "@") {
			bad("sasl.principal", "%q has no realm: write name@REALM", r.Principal)
		}
	case "":
		if s.JAASFile == "" {
			bad("sasl.mechanism", "required: DIGEST-MD5 or GSSAPI (or jaasFile)")
		}
	default:
		bad("sasl.mechanism", "%q is not DIGEST-MD5 or GSSAPI", r.Mechanism)
	}
}

// jaasClient is what ejob takes from a JAAS Client section.
type jaasClient struct {
	mechanism, username, password, principal, keytab, ticketCache string
}

// JAAS login modules ejob reads.
const (
	jaasDigestModule = "org.apache.zookeeper.server.auth.DigestLoginModule"
	jaasKrb5Module   = "com.sun.security.auth.module.Krb5LoginModule"
)

// parseJAASClient reads the Client section of a JAAS configuration (the
// section ZooKeeper's Java client reads by default), with one login
// module: DigestLoginModule (username, password) or Krb5LoginModule
// (principal, useKeyTab, keyTab, useTicketCache, ticketCache). Errors
// name file:line.
func parseJAASClient(file, text string) (jaasClient, error) {
	toks, err := jaasTokens(text)
	if err != nil {
		return jaasClient{}, fmt.Errorf("%s:%w", file, err)
	}
	at := func(i int) string {
		if i < len(toks) {
			return toks[i].text
		}
		return ""
	}
	fail := func(i int, format string, a ...any) error {
		line := 0
		if i < len(toks) {
			line = toks[i].line
		} else if len(toks) > 0 {
			line = toks[len(toks)-1].line
		}
		return fmt.Errorf("%s:%d: %s", file, line, fmt.Sprintf(format, a...))
	}
	i := 0
	var found *jaasClient
	for i < len(toks) {
		name := at(i)
		if at(i+1) != "{" {
			return jaasClient{}, fail(i+1, "want { after the section name %s", name)
		}
		i += 2
		var modules []int // token index of each module's class
		opts := []map[string]string{}
		lines := []map[string]int{}
		for at(i) != "}" {
			if i >= len(toks) {
				return jaasClient{}, fail(i, "section %s is not closed with };", name)
			}
			modules = append(modules, i)
			switch strings.ToLower(at(i + 1)) {
			case "required", "requisite", "sufficient", "optional":
			default:
				return jaasClient{}, fail(i+1, "want a control flag (required, requisite, sufficient, optional) after %s", at(i))
			}
			i += 2
			o, l := map[string]string{}, map[string]int{}
			for at(i) != ";" {
				if i+2 >= len(toks) || at(i+1) != "=" {
					return jaasClient{}, fail(i, "want option=value or ; in %s's %s entry", name, at(modules[len(modules)-1]))
				}
				o[at(i)], l[at(i)] = toks[i+2].text, toks[i].line
				i += 3
			}
			i++ // ;
			opts, lines = append(opts, o), append(lines, l)
		}
		i++ // }
		if at(i) == ";" {
			i++
		}
		if name != "Client" {
			continue
		}
		if found != nil {
			return jaasClient{}, fail(modules[0], "a second Client section")
		}
		if len(modules) != 1 {
			return jaasClient{}, fail(modules[0], "the Client section has %d login modules; ejob reads one", len(modules))
		}
		c, err := jaasModule(at(modules[0]), opts[0], lines[0], func(line int, format string, a ...any) error {
			if line == 0 {
				line = toks[modules[0]].line
			}
			return fmt.Errorf("%s:%d: %s", file, line, fmt.Sprintf(format, a...))
		})
		if err != nil {
			return jaasClient{}, err
		}
		found = &c
	}
	if found == nil {
		return jaasClient{}, fmt.Errorf("%s: no Client section (the section ZooKeeper's Java client reads)", file)
	}
	return *found, nil
}

func jaasModule(class string, o map[string]string, line map[string]int, fail func(line int, format string, a ...any) error) (jaasClient, error) {
	// Options with no meaning here: accepted so that a Java user's file
	// works unchanged.
	harmless := map[string]bool{"debug": true, "storeKey": true, "doNotPrompt": true, "refreshKrb5Config": true, "renewTGT": true, "isInitiator": true}
	known := func(keys ...string) error {
		for k := range o {
			if !harmless[k] && !slices.Contains(keys, k) {
				return fail(line[k], "%s option %s is not supported (ejob reads %s)", class[strings.LastIndex(class, ".")+1:], k, strings.Join(keys, ", "))
			}
		}
		return nil
	}
	boolean := func(k string) (bool, error) {
		switch strings.ToLower(o[k]) {
		case "", "false":
			return false, nil
		case "true":
			return true, nil
		}
		return false, fail(line[k], "%s must be true or false", k)
	}
	switch class {
	case jaasDigestModule:
		if err := known("username", "password"); err != nil {
			return jaasClient{}, err
		}
		if o["username"] == "" || o["password"] == "" {
			return jaasClient{}, fail(0, "DigestLoginModule needs username and password")
		}
		return jaasClient{mechanism: MechanismDigestMD5, username: o["username"], password: o["password"]}, nil
	case jaasKrb5Module:
		if err := known("principal", "useKeyTab", "keyTab", "useTicketCache", "ticketCache"); err != nil {
			return jaasClient{}, err
		}
		useKeyTab, err := boolean("useKeyTab")
		if err != nil {
			return jaasClient{}, err
		}
		useCache, err := boolean("useTicketCache")
		if err != nil {
			return jaasClient{}, err
		}
		c := jaasClient{mechanism: MechanismGSSAPI, principal: o["principal"]}
		switch {
		case useKeyTab:
			// With both, Java tries the cache first; a keytab always
			// logs in, so ejob takes it.
			if o["keyTab"] == "" {
				return jaasClient{}, fail(line["useKeyTab"], "useKeyTab=true needs keyTab")
			}
			c.keytab = o["keyTab"]
		case useCache:
			c.ticketCache = o["ticketCache"]
		default:
			return jaasClient{}, fail(0, "Krb5LoginModule needs useKeyTab=true (with keyTab and principal) or useTicketCache=true: ejob cannot prompt for a password")
		}
		return c, nil
	}
	return jaasClient{}, fail(0, "login module %s is not supported (ejob reads %s or %s)", class, jaasDigestModule, jaasKrb5Module)
}

type jaasToken struct {
	text string
	line int
}

// jaasTokens splits a JAAS file into words, quoted strings (unquoted) and
// the punctuation { } ; =, dropping // and /* */ comments.
func jaasTokens(s string) ([]jaasToken, error) {
	var out []jaasToken
	line := 1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(s[i:], "//") || c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("%d: unterminated /* comment", line)
			}
			line += strings.Count(s[i:i+2+end], "\n")
			i += end + 4
		case c == '{' || c == '}' || c == ';' || c == '=':
			out = append(out, jaasToken{string(c), line})
			i++
		case c == '"' || c == '\'':
			start := line
			var b strings.Builder
			i++
			for {
				if i >= len(s) {
					return nil, fmt.Errorf("%d: unterminated quoted value", start)
				}
				if s[i] == c {
					i++
					break
				}
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				if s[i] == '\n' {
					line++
				}
				b.WriteByte(s[i])
				i++
			}
			out = append(out, jaasToken{b.String(), start})
		default:
			start := i
			for i < len(s) && !strings.ContainsRune(" \t\r\n{};=\"'", rune(s[i])) {
				i++
			}
			out = append(out, jaasToken{s[start:i], line})
		}
	}
	return out, nil
}
