package httptrace

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/jsonhttp"
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
	log    hclog.Logger
	gate   *jsonhttp.Gate
}

// Handler serves tr's read methods and Purge under PathPrefix (see the
// package doc), each call with config as its Config. Every request is
// bounded: its body (MaxBody, 413 beyond), its duration (Timeout) and
// how many run at once (Concurrency). A request that is not one JSON
// value of the method's struct is answered 400; an error of tr with the
// spi sentinel it wraps, which New's client turns back into the same
// sentinel.
func Handler(tr spi.Tracer, config map[string]string, opts HandlerOptions) http.Handler {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	lim := jsonhttp.Limits{MaxBody: opts.MaxBody, Timeout: opts.Timeout, Concurrency: opts.Concurrency}.
		Or(jsonhttp.Limits{MaxBody: DefaultMaxBody, Timeout: DefaultTimeout, Concurrency: DefaultConcurrency})
	h := &handler{tr: tr, config: config, log: opts.Logger, gate: jsonhttp.NewGate(lim)}
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
		ctx, body, done, refused := h.gate.Enter(w, r)
		if refused != nil {
			replyErr(w, refused.Status, "", name+": "+refused.Message)
			return
		}
		defer done()
		var q Q
		if err := jsonhttp.Decode(body, &q); err != nil {
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
				h.log.Warn("history request failed", "op", name, "error", err)
			}
			replyErr(w, status, jsonhttp.CodeOf(sentinels(), err), err.Error())
			return
		}
		jsonhttp.Reply(w, http.StatusOK, resp)
	})
}

func replyErr(w http.ResponseWriter, status int, code, msg string) {
	jsonhttp.Reply(w, status, errorResponse{Error: &wireError{Code: code, Message: msg}})
}
