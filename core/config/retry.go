package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Props of ejob's item retry (docs/configuration.md, "ejob"). They live in
// JobConfiguration.Props next to the job type's and error handler's props;
// Java peers ignore them.
const (
	// PropRetryMax is how many times a failed item is run again, in
	// place, before the error handler is told: an integer from 0 to
	// 2147483647. Absent or empty means DefaultRetryMax (no retry).
	PropRetryMax = "ejob.retry.max"
	// PropRetryBackoff is the wait before the first retry, a positive Go
	// duration (500ms, 1s, 1m30s); it doubles before each further retry.
	// Absent or empty means DefaultRetryBackoff.
	PropRetryBackoff = "ejob.retry.backoff"
	// PropRetryBackoffMax caps the doubled wait: a positive Go duration
	// not less than the backoff. Absent or empty means
	// DefaultRetryBackoffMax, or the backoff when that is larger.
	PropRetryBackoffMax = "ejob.retry.backoffMax"
)

// Defaults of the retry props.
const (
	DefaultRetryMax        = 0
	DefaultRetryBackoff    = time.Second
	DefaultRetryBackoffMax = time.Minute
)

// Retry is how the executor retries a failed item (the retry props).
type Retry struct {
	// Max is how many retries follow a failed first try; 0: none.
	Max int
	// Backoff is the wait before the first retry; it doubles before each
	// further one, up to BackoffMax.
	Backoff, BackoffMax time.Duration
}

// Delay returns the wait before retry n (1 for the first retry):
// Backoff * 2^(n-1), at most BackoffMax.
func (r Retry) Delay(n int) time.Duration {
	d := r.Backoff
	for i := 1; i < n && d < r.BackoffMax; i++ {
		if d > r.BackoffMax/2 {
			return r.BackoffMax
		}
		d *= 2
	}
	return min(d, r.BackoffMax)
}

// PropError is a job prop with an invalid value.
type PropError struct {
	Key string // the prop key, e.g. "ejob.retry.max"
	Msg string // what is wrong, e.g. `want an integer from 0 to 2147483647, got "-1"`
}

func (e *PropError) Error() string { return fmt.Sprintf("prop %s: %s", e.Key, e.Msg) }

// Unwrap returns ErrInvalid.
func (e *PropError) Unwrap() error { return ErrInvalid }

// ParseRetry reads the retry props. An invalid value gives the defaults
// and an error joining one *PropError per problem (each wraps ErrInvalid).
func ParseRetry(props map[string]string) (Retry, error) {
	r, errs := parseRetry(props)
	if len(errs) > 0 {
		return Retry{Max: DefaultRetryMax, Backoff: DefaultRetryBackoff, BackoffMax: DefaultRetryBackoffMax}, errors.Join(errs...)
	}
	return r, nil
}

func parseRetry(props map[string]string) (Retry, []error) {
	var errs []error
	prop := func(key string) (string, bool) {
		v := strings.TrimSpace(props[key])
		return v, v != ""
	}
	r := Retry{Max: DefaultRetryMax, Backoff: DefaultRetryBackoff}
	if v, ok := prop(PropRetryMax); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			errs = append(errs, &PropError{PropRetryMax, fmt.Sprintf("want an integer from 0 to 2147483647, got %q", props[PropRetryMax])})
		} else {
			r.Max = int(n)
		}
	}
	bad := false
	duration := func(key string) (time.Duration, bool) {
		v, ok := prop(key)
		if !ok {
			return 0, false
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, &PropError{key, fmt.Sprintf("want a positive duration such as 500ms, 1s or 1m30s, got %q", props[key])})
			bad = true
			return 0, false
		}
		return d, true
	}
	if d, ok := duration(PropRetryBackoff); ok {
		r.Backoff = d
	}
	r.BackoffMax = max(DefaultRetryBackoffMax, r.Backoff)
	if d, ok := duration(PropRetryBackoffMax); ok {
		r.BackoffMax = d
		if d < r.Backoff && !bad {
			errs = append(errs, &PropError{PropRetryBackoffMax, fmt.Sprintf("%s is less than %s (%s)", d, PropRetryBackoff, r.Backoff)})
		}
	}
	return r, errs
}
