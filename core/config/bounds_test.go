package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Every bound is refused with an error naming the key, the value or its
// size and the limit, by Validate and by Decode alike; the limit itself is
// accepted.
func TestBounds(t *testing.T) {
	t.Parallel()
	props := func(n, valueLen int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("p%d", i)] = strings.Repeat("v", valueLen)
		}
		return m
	}
	listeners := make([]string, MaxListenerTypes+1)
	for i := range listeners {
		listeners[i] = fmt.Sprintf("L%d", i)
	}
	cases := map[string]struct {
		set  func(c *JobConfiguration)
		key  string
		want string // in the message
	}{
		"count 10^9":      {func(c *JobConfiguration) { c.ShardingTotalCount = 1_000_000_000 }, KeyShardingTotalCount, "1000000000 is above the limit of 1000"},
		"count Java max":  {func(c *JobConfiguration) { c.ShardingTotalCount = 2147483647 }, KeyShardingTotalCount, "jute.maxbuffer"},
		"count limit + 1": {func(c *JobConfiguration) { c.ShardingTotalCount = MaxShardingTotalCount + 1 }, KeyShardingTotalCount, "1001 is above"},
		"job name":        {func(c *JobConfiguration) { c.JobName = strings.Repeat("j", MaxJobNameBytes+1) }, KeyJobName, "129 bytes is above the limit of 128 bytes"},
		"cron":            {func(c *JobConfiguration) { c.Cron = strings.Repeat("0,", MaxCronBytes) }, KeyCron, "above the limit of 4096 bytes"},
		"time zone":       {func(c *JobConfiguration) { c.TimeZone = strings.Repeat("z", MaxTimeZoneBytes+1) }, KeyTimeZone, "256 bytes"},
		"job parameter":   {func(c *JobConfiguration) { c.JobParameter = strings.Repeat("x", MaxParameterBytes+1) }, KeyJobParameter, "32769 bytes is above the limit of 32768 bytes"},
		"item parameters": {func(c *JobConfiguration) {
			c.ShardingItemParameters = "0=" + strings.Repeat("x", MaxItemParametersBytes)
		}, KeyShardingItemParameters, "above the limit of 65536 bytes"},
		"description":   {func(c *JobConfiguration) { c.Description = strings.Repeat("d", MaxDescriptionBytes+1) }, KeyDescription, "4097 bytes"},
		"label":         {func(c *JobConfiguration) { c.Label = strings.Repeat("l", MaxTypeNameBytes+1) }, KeyLabel, "256 bytes"},
		"error handler": {func(c *JobConfiguration) { c.JobErrorHandlerType = strings.Repeat("E", MaxTypeNameBytes+1) }, KeyJobErrorHandlerType, "256 bytes"},
		"listeners":     {func(c *JobConfiguration) { c.JobListenerTypes = listeners }, KeyJobListenerTypes, "33 types is above the limit of 32"},
		"props count":   {func(c *JobConfiguration) { c.Props = props(MaxProps+1, 1) }, KeyProps, "257 props is above the limit of 256"},
		"props bytes":   {func(c *JobConfiguration) { c.Props = props(5, MaxPropsBytes/4) }, KeyProps, "above the limit of 262144 bytes"},
		"prop name":     {func(c *JobConfiguration) { c.Props = map[string]string{strings.Repeat("k", MaxPropKeyBytes+1): "v"} }, KeyProps, "its name of 257 bytes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := New("boundsJob", 1)
			tc.set(c)
			for via, err := range map[string]error{"Validate": c.Validate(ValidateOptions{}), "CheckBounds": c.CheckBounds()} {
				var fe *FieldError
				if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("%s: got %v, want a FieldError wrapping ErrInvalid", via, err)
				}
				if fe.Field != tc.key || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "key "+tc.key) {
					t.Errorf("%s: got %q (field %s), want key %s and %q", via, err, fe.Field, tc.key, tc.want)
				}
			}
			if tc.key == KeyJobName {
				return // Marshal writes the name, Decode reads it back: same check
			}
			data, err := Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(data)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode: got %v, want ErrInvalid with %q", err, tc.want)
			}
			if got == nil {
				t.Errorf("Decode returned no configuration with its bound error")
			}
		})
	}
}

// The limits themselves are accepted.
func TestBoundsAtTheLimit(t *testing.T) {
	t.Parallel()
	c := New(strings.Repeat("j", MaxJobNameBytes), MaxShardingTotalCount)
	c.JobParameter = strings.Repeat("x", MaxParameterBytes)
	c.Description = strings.Repeat("d", MaxDescriptionBytes)
	c.ShardingItemParameters = "0=" + strings.Repeat("x", MaxItemParametersBytes-2)
	c.Props = map[string]string{}
	for i := range MaxProps {
		c.Props[fmt.Sprintf("p%03d", i)] = "v"
	}
	if err := c.Validate(ValidateOptions{}); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	data, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(data); err != nil {
		t.Fatalf("Decode: %v", err)
	}
}

// A config node that does not parse is ErrMalformed from Decode, with no
// configuration.
func TestDecodeMalformed(t *testing.T) {
	t.Parallel()
	c, err := Decode([]byte("jobName: j\ncron: [\n"))
	if !errors.Is(err, ErrMalformed) || c != nil {
		t.Fatalf("got %v, %v; want ErrMalformed and nil", c, err)
	}
}
