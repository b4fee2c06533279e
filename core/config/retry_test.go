package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRetry(t *testing.T) {
	t.Parallel()
	const (
		max, backoff, backoffMax = PropRetryMax, PropRetryBackoff, PropRetryBackoffMax
	)
	tests := map[string]struct {
		props map[string]string
		want  Retry
		errs  []string // each *PropError's text, in order
	}{
		"absent":             {nil, Retry{0, time.Second, time.Minute}, nil},
		"empty values":       {map[string]string{max: "", backoff: " ", backoffMax: ""}, Retry{0, time.Second, time.Minute}, nil},
		"set":                {map[string]string{max: " 3 ", backoff: "250ms", backoffMax: "2s"}, Retry{3, 250 * time.Millisecond, 2 * time.Second}, nil},
		"long backoff":       {map[string]string{max: "1", backoff: "5m"}, Retry{1, 5 * time.Minute, 5 * time.Minute}, nil},
		"max equals backoff": {map[string]string{backoff: "2s", backoffMax: "2s"}, Retry{0, 2 * time.Second, 2 * time.Second}, nil},
		"largest max":        {map[string]string{max: "2147483647"}, Retry{2147483647, time.Second, time.Minute}, nil},
		"negative max":       {map[string]string{max: "-1"}, Retry{}, []string{`prop ejob.retry.max: want an integer from 0 to 2147483647, got "-1"`}},
		"max not a number":   {map[string]string{max: "three"}, Retry{}, []string{`prop ejob.retry.max: want an integer from 0 to 2147483647, got "three"`}},
		"max too large":      {map[string]string{max: "2147483648"}, Retry{}, []string{`prop ejob.retry.max: want an integer from 0 to 2147483647, got "2147483648"`}},
		"unparsable":         {map[string]string{backoff: "1"}, Retry{}, []string{`prop ejob.retry.backoff: want a positive duration such as 500ms, 1s or 1m30s, got "1"`}},
		"zero":               {map[string]string{backoff: "0s"}, Retry{}, []string{`prop ejob.retry.backoff: want a positive duration such as 500ms, 1s or 1m30s, got "0s"`}},
		"negative cap":       {map[string]string{backoffMax: "-1s"}, Retry{}, []string{`prop ejob.retry.backoffMax: want a positive duration such as 500ms, 1s or 1m30s, got "-1s"`}},
		"cap below backoff":  {map[string]string{backoff: "2s", backoffMax: "1s"}, Retry{}, []string{`prop ejob.retry.backoffMax: 1s is less than ejob.retry.backoff (2s)`}},
		"cap below default":  {map[string]string{backoffMax: "500ms"}, Retry{}, []string{`prop ejob.retry.backoffMax: 500ms is less than ejob.retry.backoff (1s)`}},
		"all bad": {map[string]string{max: "-2", backoff: "soon", backoffMax: "1ms"}, Retry{}, []string{
			`prop ejob.retry.max: want an integer from 0 to 2147483647, got "-2"`,
			`prop ejob.retry.backoff: want a positive duration such as 500ms, 1s or 1m30s, got "soon"`,
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseRetry(tc.props)
			if tc.errs == nil {
				if err != nil || got != tc.want {
					t.Fatalf("ParseRetry = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if def := (Retry{DefaultRetryMax, DefaultRetryBackoff, DefaultRetryBackoffMax}); got != def {
				t.Errorf("ParseRetry gave %+v with an error, want the defaults", got)
			}
			if err.Error() != strings.Join(tc.errs, "\n") {
				t.Errorf("errors:\n%v\nwant:\n%s", err, strings.Join(tc.errs, "\n"))
			}
			// Validate reports each problem as a FieldError of props.
			c := New("myJob", 1)
			c.Props = tc.props
			verr := c.Validate(ValidateOptions{})
			var fe *FieldError
			var pe *PropError
			if !errors.As(verr, &fe) || fe.Field != KeyProps || !errors.As(verr, &pe) ||
				!strings.HasPrefix(verr.Error(), "job configuration key props: "+tc.errs[0]) {
				t.Errorf("Validate = %v", verr)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	r := Retry{Max: 10, Backoff: time.Second, BackoffMax: 10 * time.Second}
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, r.Delay(n))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
	// No overflow however many retries.
	huge := Retry{Max: 1 << 30, Backoff: time.Hour, BackoffMax: 1<<63 - 1}
	if d := huge.Delay(1 << 30); d != huge.BackoffMax {
		t.Errorf("Delay(2^30) = %v, want the cap", d)
	}
}
