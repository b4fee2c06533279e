package kernel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/spi"
)

// TestAddValidatesErrorHandlerProps: as upstream, a job's error-handler
// props are checked when the job is configured, and only when
// jobErrorHandlerType is set.
func TestAddValidatesErrorHandlerProps(t *testing.T) {
	t.Parallel()
	s, _ := standalone(t, plugins(), hclog.NewNullLogger())
	rec := &recorder{}
	add := func(name, handler string, props map[string]string) error {
		cfg := config.New(name, 1)
		cfg.JobErrorHandlerType, cfg.Props = handler, props
		return s.Add(context.Background(), kernel.Job{Config: cfg, Runner: rec.runner("i", 0)})
	}
	bad := map[string]string{"email.host": "smtp.example.com", "email.port": "0"}
	err := add("mail", "email", bad)
	if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), `job "mail": props for error handler email:`) ||
		!strings.Contains(err.Error(), "The property `email.port` should be positive.") {
		t.Errorf("Add = %v", err)
	}
	// The other bad error-handler props, each refused by Add with
	// upstream's message where upstream has one.
	mail := func(k, v string) map[string]string {
		p := map[string]string{"email.host": "smtp.example.com", "email.port": "587", "email.username": "", "email.password": "",
			"email.from": "ejob@example.com", "email.to": "ops@example.com", "email.useSsl": "false"}
		if v == "" {
			delete(p, k)
		} else {
			p[k] = v
		}
		return p
	}
	for _, tc := range []struct {
		job, handler, want string
		props              map[string]string
	}{
		{"nohost", "EMAIL", "The property `email.host` is required.", mail("email.host", "")},
		{"portword", "EMAIL", "The property `email.port` should be integer.", mail("email.port", "smtps")},
		{"starttls", "EMAIL", "The property `email.startTls` should be one of off, opportunistic, mandatory.", mail("email.startTls", "always")},
		{"hookurl", "WEBHOOK", "The property `webhook.url` should be an absolute http or https URL.", map[string]string{"webhook.url": "example.com/hook"}},
	} {
		err := add(tc.job, tc.handler, tc.props)
		if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), `job "`+tc.job+`": props for error handler `+tc.handler+`:`) ||
			!strings.Contains(err.Error(), tc.want) {
			t.Errorf("Add(%s) = %v, want %q", tc.job, err, tc.want)
		}
	}
	if err := add("logged", "", bad); err != nil {
		t.Errorf("Add without an error handler type = %v (props must not be checked)", err)
	}
	if err := add("hook", "WEBHOOK", map[string]string{"webhook.url": "http://127.0.0.1:9/hook"}); err != nil {
		t.Errorf("Add with valid props = %v", err)
	}
}
