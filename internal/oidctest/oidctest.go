// Package oidctest starts a real OpenID Provider for tests: zitadel/oidc's
// op package with its example in-memory storage and login form
// (github.com/zitadel/oidc/v3/example/server), on a loopback port, with
// the users and the one web client a test gives. Each user's Groups are
// asserted as the "groups" claim, in the ID token and at the userinfo
// endpoint.
package oidctest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/text/language"
)

// GroupsClaim is the claim that carries a user's Groups.
const GroupsClaim = "groups"

// User may sign in at the provider's login form.
type User struct {
	Name, Password string
	Groups         []string
}

// Client is the one client the provider knows (a confidential web
// client, client_secret_basic).
type Client struct {
	ID, Secret  string
	RedirectURL string
}

// Provider is a running OpenID Provider.
type Provider struct {
	// Issuer is http://127.0.0.1:<port>.
	Issuer string
}

// LoginPath is the path of the provider's login form (fields username and
// password, a submit button).
const LoginPath = "/login/username"

// Start serves a provider until the test ends.
func Start(t testing.TB, c Client, users ...User) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	us := userStore{byID: map[string]*storage.User{}, groups: map[string][]string{}}
	for _, u := range users {
		us.byID[u.Name] = &storage.User{ID: u.Name, Username: u.Name, Password: u.Password, FirstName: u.Name,
			Email: u.Name + "@example.com", EmailVerified: true, PreferredLanguage: language.English}
		us.groups[u.Name] = u.Groups
	}
	st := &groupsStorage{Storage: storage.NewStorageWithClients(us,
		map[string]*storage.Client{c.ID: storage.WebClient(c.ID, c.Secret, c.RedirectURL)}), groups: us.groups}
	srv := &http.Server{Handler: exampleop.SetupServer(issuer, st, nil, false), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("oidctest: %v", err)
		}
	})
	return &Provider{Issuer: issuer}
}

type userStore struct {
	byID   map[string]*storage.User
	groups map[string][]string
}

func (u userStore) GetUserByID(id string) *storage.User { return u.byID[id] }
func (u userStore) GetUserByUsername(name string) *storage.User {
	return u.byID[name]
}
func (u userStore) ExampleClientID() string { return storage.ServiceUserID }

// groupsStorage is the example storage plus the groups claim.
type groupsStorage struct {
	*storage.Storage
	groups map[string][]string
}

func (s *groupsStorage) addGroups(info *oidc.UserInfo, userID string) {
	if g, ok := s.groups[userID]; ok && g != nil {
		info.AppendClaims(GroupsClaim, g)
	}
}

// SetUserinfoFromScopes asserts the groups in the ID token.
func (s *groupsStorage) SetUserinfoFromScopes(ctx context.Context, info *oidc.UserInfo, userID, clientID string, scopes []string) error {
	if err := s.Storage.SetUserinfoFromScopes(ctx, info, userID, clientID, scopes); err != nil {
		return err
	}
	s.addGroups(info, userID)
	return nil
}

// SetUserinfoFromToken asserts the groups at the userinfo endpoint.
func (s *groupsStorage) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, info, tokenID, subject, origin); err != nil {
		return err
	}
	s.addGroups(info, subject)
	return nil
}
