package httptrace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/spi"
)

// Bounds of what one request may ask, so that no caller can take the
// serving process down.
const (
	// DefaultMaxBody is HandlerOptions.MaxBody's default: a request body
	// of at most 64 KiB (a query is a few hundred bytes).
	DefaultMaxBody = 64 << 10
	// DefaultTimeout is HandlerOptions.Timeout's default: how long one
	// request may take.
	DefaultTimeout = 30 * time.Second
	// DefaultConcurrency is HandlerOptions.Concurrency's default: how many
	// requests run at once; more wait (within their timeout).
	DefaultConcurrency = 4
)

// HandlerOptions configure Handler. Zero fields take the defaults above.
type HandlerOptions struct {
	MaxBody     int64
	Timeout     time.Duration
	Concurrency int
	Logger      hclog.Logger
}

type handler struct {
	tr     spi.Tracer
	config map[string]string
	opts   HandlerOptions
	sem    chan struct{}
}

// Handler serves tr's read methods and Purge under PathPrefix (see the
// package doc), each call with config as its Config. Every request is
// bounded: its body (MaxBody, 413 beyond), its duration (Timeout) and
// how many run at once (Concurrency). A request that is not one JSON
// value of the method's struct is answered 400; an error of tr with the
// spi sentinel it wraps, which New's client turns back into the same
// sentinel.
func Handler(tr spi.Tracer, config map[string]string, opts HandlerOptions) http.Handler {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	h := &handler{tr: tr, config: config, opts: opts, sem: make(chan struct{}, opts.Concurrency)}
	mux := http.NewServeMux()
	route(mux, h, "executions", func(ctx context.Context, q spi.ExecutionQuery) (spi.ExecutionPage, error) {
		q.Config = h.config
		return h.tr.QueryExecutions(ctx, q)
	})
	route(mux, h, "statuses", func(ctx context.Context, q spi.StatusQuery) (spi.StatusPage, error) {
		q.Config = h.config
		return h.tr.QueryStatuses(ctx, q)
	})
	route(mux, h, "output", func(ctx context.Context, q spi.OutputQuery) (spi.OutputResult, error) {
		q.Config = h.config
		return h.tr.QueryOutput(ctx, q)
	})
	route(mux, h, "distinct", func(ctx context.Context, q spi.DistinctQuery) (spi.DistinctValues, error) {
		q.Config = h.config
		return h.tr.Distinct(ctx, q)
	})
	route(mux, h, "purge", func(ctx context.Context, q spi.TracePurgeRequest) (spi.TracePurgeResponse, error) {
		q.Config = h.config
		return h.tr.Purge(ctx, q)
	})
	return mux
}

// route serves fn as POST PathPrefix+name.
func route[Q, R any](mux *http.ServeMux, h *handler, name string, fn func(context.Context, Q) (R, error)) {
	mux.HandleFunc("POST "+PathPrefix+name, func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), h.opts.Timeout)
		defer cancel()
		select {
		case h.sem <- struct{}{}:
			defer func() { <-h.sem }()
		case <-ctx.Done():
			replyErr(w, http.StatusServiceUnavailable, "", fmt.Sprintf("%s: the history is busy: no request slot within %v", name, h.opts.Timeout))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBody))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			replyErr(w, http.StatusRequestEntityTooLarge, "", fmt.Sprintf("%s: request body over %d bytes", name, h.opts.MaxBody))
			return
		case err != nil:
			replyErr(w, http.StatusBadRequest, "", fmt.Sprintf("%s: read request: %v", name, err))
			return
		}
		var q Q
		if err := decode(body, &q); err != nil {
			replyErr(w, http.StatusBadRequest, "", fmt.Sprintf("%s: %v", name, err))
			return
		}
		resp, err := fn(ctx, q)
		if err != nil {
			status := http.StatusInternalServerError
			switch {
			case errors.Is(err, spi.ErrInvalidConfig):
				status = http.StatusBadRequest
			case errors.Is(err, spi.ErrUnsupported):
				status = http.StatusNotImplemented
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, spi.ErrPluginExited):
				status = http.StatusServiceUnavailable
			}
			if status != http.StatusBadRequest {
				h.opts.Logger.Warn("history request failed", "op", name, "error", err)
			}
			replyErr(w, status, codeOf(err), err.Error())
			return
		}
		reply(w, http.StatusOK, resp)
	})
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func replyErr(w http.ResponseWriter, status int, code, msg string) {
	reply(w, status, errorResponse{Error: &wireError{Code: code, Message: msg}})
}

// decode reads body into v: one JSON value with known fields only.
func decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request: %w", err)
	}
	if dec.More() {
		return errors.New("request: data after the JSON value")
	}
	return nil
}
