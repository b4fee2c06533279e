package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/redact"
)

// The job props WEBHOOK reads.
const (
	// PropURL is the http or https URL failures are posted to (required).
	PropURL = "webhook.url"
	// PropTimeout bounds one post, as a Go duration ("5s"); default 5s.
	PropTimeout = "webhook.timeout"
	// PropPropagate ("true" or "false", default false) is the handler's
	// answer: true stops the failing trigger, as the built-in THROW does.
	PropPropagate = "webhook.propagate"
)

// DefaultTimeout bounds one post when webhook.timeout is not set.
const DefaultTimeout = 5 * time.Second

// Failure is the JSON object posted for each failure.
type Failure struct {
	Job      string `json:"job"`
	Instance string `json:"instance,omitempty"`
	// TaskID is empty for a failure outside an execution.
	TaskID string `json:"taskId,omitempty"`
	// Item is the failed item, -1 when the failure is not tied to one.
	Item    int    `json:"item"`
	Message string `json:"message"`
	Detail  string `json:"detail,omitempty"`
}

// Webhook is the WEBHOOK error handler. It holds no state: everything it
// needs travels in each request's props, so one value serves every job, on
// any number of goroutines.
type Webhook struct{}

var _ spi.ErrorHandler = Webhook{}

// settings are the parsed props of one job.
type settings struct {
	url       *url.URL
	timeout   time.Duration
	propagate bool
}

// parse reads props; its errors wrap spi.ErrInvalidConfig and name the
// property.
func parse(props map[string]string) (settings, error) {
	s := settings{timeout: DefaultTimeout}
	raw := props[PropURL]
	if raw == "" {
		return s, fmt.Errorf("property %s is required: %w", PropURL, spi.ErrInvalidConfig)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return s, fmt.Errorf("property %s must be an http or https URL, not %q: %w", PropURL, redact.URLString(raw), spi.ErrInvalidConfig)
	}
	s.url = u
	if v, ok := props[PropTimeout]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("property %s must be a positive duration such as 5s, not %q: %w", PropTimeout, v, spi.ErrInvalidConfig)
		}
		s.timeout = d
	}
	if v, ok := props[PropPropagate]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return s, fmt.Errorf("property %s must be true or false, not %q: %w", PropPropagate, v, spi.ErrInvalidConfig)
		}
		s.propagate = b
	}
	return s, nil
}

// Validate checks the job's props when the job is configured.
func (Webhook) Validate(_ context.Context, req spi.ValidatePropsRequest) error {
	_, err := parse(req.Props)
	return err
}

// HandleError posts the failure. It returns an error only when the post
// failed (the handler itself failed: the host logs it); whether the
// trigger stops is its answer, webhook.propagate.
func (Webhook) HandleError(ctx context.Context, req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	s, err := parse(req.Props)
	if err != nil {
		return spi.HandleErrorResponse{}, err
	}
	resp := spi.HandleErrorResponse{Propagate: s.propagate}
	body, err := json.Marshal(Failure{
		Job: req.JobName, Instance: req.InstanceID, TaskID: req.TaskID, Item: req.ShardingItem,
		Message: req.Error.Message, Detail: req.Error.Detail,
	})
	if err != nil {
		return resp, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	post, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url.String(), bytes.NewReader(body))
	if err != nil {
		return resp, fmt.Errorf("post to %s: %w", redact.URL(s.url), err)
	}
	post.Header.Set("Content-Type", "application/json")
	r, err := http.DefaultClient.Do(post)
	if err != nil {
		// The client's error repeats the URL, tokens included: say it
		// once, masked, with the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return resp, fmt.Errorf("post to %s: %w", redact.URL(s.url), err)
	}
	defer r.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
	if r.StatusCode/100 != 2 {
		return resp, fmt.Errorf("post to %s: the server answered %s", redact.URL(s.url), r.Status)
	}
	return resp, nil
}
