package alert

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// The props every alerting handler reads, besides its own.
const (
	// PropSuppressSeconds is the suppression window: after an alert for a
	// job, its failures within this many seconds are counted, not sent,
	// and one digest alert with the count follows when the window ends.
	// 0 sends every failure. Default 300.
	PropSuppressSeconds = "alert.suppressSeconds"
	// PropTimeoutSeconds bounds one alert's delivery, retries included.
	// Default 20.
	PropTimeoutSeconds = "alert.timeoutSeconds"
	// PropTest, when true, makes HandleError send at once (no queue, no
	// suppression), wait for the outcome and return the send error, if
	// any. `ejob alert test` sets it; jobs should not.
	PropTest = "alert.test"
)

// The defaults of the alert.* props.
const (
	DefaultSuppress = 300 * time.Second
	DefaultTimeout  = 20 * time.Second
)

// Settings are the alert.* props, parsed.
type Settings struct {
	// Suppress is the suppression window; 0 sends every failure.
	Suppress time.Duration
	// Timeout bounds one alert's delivery, retries included.
	Timeout time.Duration
	// Test asks for a synchronous send (PropTest).
	Test bool
}

// ParseSettings parses the alert.* props. Errors wrap spi.ErrInvalidConfig
// and name the property.
func ParseSettings(props map[string]string) (Settings, error) {
	suppress, err := Int(props, PropSuppressSeconds, int(DefaultSuppress/time.Second), 0)
	if err != nil {
		return Settings{}, err
	}
	timeout, err := Int(props, PropTimeoutSeconds, int(DefaultTimeout/time.Second), 1)
	if err != nil {
		return Settings{}, err
	}
	test, err := Bool(props, PropTest, false)
	if err != nil {
		return Settings{}, err
	}
	return Settings{
		Suppress: time.Duration(suppress) * time.Second,
		Timeout:  time.Duration(timeout) * time.Second,
		Test:     test,
	}, nil
}

// Invalid returns a configuration error: the message (which names the
// property and never quotes a secret) wrapped with spi.ErrInvalidConfig.
func Invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", spi.ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// Required returns the value of key, or upstream's error "The property
// `key` is required." when it is absent or empty.
func Required(props map[string]string, key string) (string, error) {
	v := strings.TrimSpace(props[key])
	if v == "" {
		return "", Invalid("The property `%s` is required.", key)
	}
	return v, nil
}

// Int returns the integer value of key, def when it is absent. A present
// value must be a 32-bit integer (upstream's "The property `key` should be
// integer.") and at least min (min 1: upstream's "should be positive").
func Int(props map[string]string, key string, def, min int) (int, error) {
	v, ok := props[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, Invalid("The property `%s` should be integer.", key)
	}
	switch {
	case int(n) >= min:
		return int(n), nil
	case min == 1:
		return 0, Invalid("The property `%s` should be positive.", key)
	default:
		return 0, Invalid("The property `%s` should be at least %d.", key, min)
	}
}

// Millis returns the positive millisecond value of key as a duration, def
// when absent.
func Millis(props map[string]string, key string, def time.Duration) (time.Duration, error) {
	n, err := Int(props, key, int(def/time.Millisecond), 1)
	return time.Duration(n) * time.Millisecond, err
}

// Bool returns the boolean value of key, def when absent. Unlike Java's
// Boolean.parseBoolean, which reads any other word as false, only true and
// false (any case) are accepted.
func Bool(props map[string]string, key string, def bool) (bool, error) {
	v, ok := props[key]
	if !ok {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, Invalid("The property `%s` should be true or false.", key)
}

// HTTPURL returns the required absolute http or https URL of key. Its
// errors never quote the value (webhook URLs carry tokens).
func HTTPURL(props map[string]string, key string) (*url.URL, error) {
	raw, err := Required(props, key)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, Invalid("The property `%s` should be an absolute http or https URL (it does not parse).", key)
	}
	if s := strings.ToLower(u.Scheme); (s != "http" && s != "https") || u.Host == "" {
		return nil, Invalid("The property `%s` should be an absolute http or https URL.", key)
	}
	return u, nil
}

// Timeouts reads a channel's connect and read timeout props
// (<prefix>.connectTimeoutMilliseconds, default 3000, and
// <prefix>.readTimeoutMilliseconds, default 5000, as upstream).
func Timeouts(props map[string]string, prefix string) (connect, read time.Duration, err error) {
	if connect, err = Millis(props, prefix+".connectTimeoutMilliseconds", DefaultConnectTimeout); err != nil {
		return 0, 0, err
	}
	read, err = Millis(props, prefix+".readTimeoutMilliseconds", DefaultReadTimeout)
	return connect, read, err
}
