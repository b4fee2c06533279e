package httpreg

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/jsonhttp"
	"github.com/ejob-io/ejob/core/reg"
)

// Bounds of what one request may ask, so that no caller can take the
// serving process down.
const (
	// DefaultMaxBody is HandlerOptions.MaxBody's default: a request body
	// of at most 8 MiB (ZooKeeper's own limit is 1 MiB per node).
	DefaultMaxBody = 8 << 20
	// DefaultMaxOps is HandlerOptions.MaxOps's default: at most this many
	// ops in one multi or multiread.
	DefaultMaxOps = 20000
	// DefaultTimeout is HandlerOptions.Timeout's default: how long one
	// request may take.
	DefaultTimeout = 30 * time.Second
	// DefaultConcurrency is HandlerOptions.Concurrency's default: how many
	// requests run at once; more wait (within their timeout).
	DefaultConcurrency = 8
)

// HandlerOptions configure Handler. Zero fields take the defaults above.
type HandlerOptions struct {
	MaxBody     int64
	MaxOps      int
	Timeout     time.Duration
	Concurrency int
	Logger      hclog.Logger
}

type handler struct {
	c    reg.Client
	opts HandlerOptions
	gate *jsonhttp.Gate
}

// Handler serves c under PathPrefix (see the package doc). Every request
// is bounded: its body (MaxBody, 413 beyond), its ops (MaxOps), its
// duration (Timeout) and how many run at once (Concurrency). A registry
// error is answered with its sentinel's code, which New's client turns
// back into the same sentinel.
func Handler(c reg.Client, opts HandlerOptions) http.Handler {
	if opts.MaxOps <= 0 {
		opts.MaxOps = DefaultMaxOps
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	lim := jsonhttp.Limits{MaxBody: opts.MaxBody, Timeout: opts.Timeout, Concurrency: opts.Concurrency}.
		Or(jsonhttp.Limits{MaxBody: DefaultMaxBody, Timeout: DefaultTimeout, Concurrency: DefaultConcurrency})
	h := &handler{c: c, opts: opts, gate: jsonhttp.NewGate(lim)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathPrefix+"info", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, infoResponse{Namespace: c.Namespace()})
	})
	for name, fn := range map[string]func(ctx context.Context, body []byte) (any, string, error){
		"get": h.get, "exists": h.exists, "children": h.children, "multiread": h.multiRead,
		"create": h.create, "set": h.set, "delete": h.delete, "multi": h.multi,
	} {
		mux.HandleFunc("POST "+PathPrefix+name, func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, name, fn) })
	}
	return mux
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request, name string, fn func(context.Context, []byte) (any, string, error)) {
	ctx, body, done, refused := h.gate.Enter(w, r)
	if refused != nil {
		e := &wireError{Code: "INVALID_ARGUMENT", Op: name, Message: refused.Message}
		if refused.Status == http.StatusServiceUnavailable {
			e.Code, e.Message = "CONNECTION_LOSS", "the registry is "+refused.Message
		}
		replyErr(w, refused.Status, e)
		return
	}
	defer done()
	resp, path, err := fn(ctx, body)
	if err != nil {
		status := http.StatusConflict
		switch {
		case errors.Is(err, reg.ErrInvalidArgument):
			status = http.StatusBadRequest
		case errors.Is(err, reg.ErrConnectionLoss), errors.Is(err, reg.ErrSessionLost), errors.Is(err, reg.ErrClosed),
			errors.Is(err, context.DeadlineExceeded):
			status = http.StatusServiceUnavailable
		}
		if status == http.StatusServiceUnavailable || codeOf(err) == "" {
			h.opts.Logger.Warn("registry request failed", "op", name, "path", path, "error", err)
		}
		replyErr(w, status, toWire(name, path, err))
		return
	}
	reply(w, http.StatusOK, resp)
}

func reply(w http.ResponseWriter, status int, v any) { jsonhttp.Reply(w, status, v) }

func replyErr(w http.ResponseWriter, status int, e *wireError) {
	reply(w, status, errorResponse{Error: e})
}

// decode reads body into v: one JSON value with known fields only.
func decode(body []byte, v any) error {
	if err := jsonhttp.Decode(body, v); err != nil {
		return fmt.Errorf("%w: %w", err, reg.ErrInvalidArgument)
	}
	return nil
}

// noEphemeral refuses an ephemeral mode: the node would belong to this
// process's session and outlive the caller.
func noEphemeral(opName, path string, mode reg.CreateMode) error {
	if !mode.IsEphemeral() {
		return nil
	}
	return &reg.OpError{Op: opName, Path: path, Err: fmt.Errorf(
		"%v nodes cannot be created from another process: they would belong to the host's session: %w", mode, reg.ErrInvalidArgument)}
}

// onPath decodes a pathRequest from body and answers fn of its path.
func onPath(body []byte, fn func(path string) (any, error)) (any, string, error) {
	var req pathRequest
	if err := decode(body, &req); err != nil {
		return nil, "", err
	}
	resp, err := fn(req.Path)
	return resp, req.Path, err
}

func (h *handler) get(ctx context.Context, body []byte) (any, string, error) {
	return onPath(body, func(path string) (any, error) {
		data, st, err := h.c.Get(ctx, path)
		return getResponse{Data: data, Stat: st}, err
	})
}

func (h *handler) exists(ctx context.Context, body []byte) (any, string, error) {
	return onPath(body, func(path string) (any, error) {
		st, ok, err := h.c.Exists(ctx, path)
		return existsResponse{Stat: st, Exists: ok}, err
	})
}

func (h *handler) children(ctx context.Context, body []byte) (any, string, error) {
	return onPath(body, func(path string) (any, error) {
		names, err := h.c.Children(ctx, path)
		return childrenResponse{Children: names}, err
	})
}

func (h *handler) multiRead(ctx context.Context, body []byte) (any, string, error) {
	var req multiReadRequest
	if err := decode(body, &req); err != nil {
		return nil, "", err
	}
	if len(req.Ops) > h.opts.MaxOps {
		return nil, "", fmt.Errorf("%d ops, at most %d in one multiread: %w", len(req.Ops), h.opts.MaxOps, reg.ErrInvalidArgument)
	}
	ops := make([]reg.ReadOp, len(req.Ops))
	for i, o := range req.Ops {
		ops[i] = reg.ReadOp{Kind: o.Kind, Path: o.Path}
	}
	res, err := h.c.MultiRead(ctx, ops...)
	if err != nil {
		return nil, "", err
	}
	out := multiReadResponse{Results: make([]readResult, len(res))}
	for i, r := range res {
		out.Results[i] = readResult{Data: r.Data, Stat: r.Stat, Children: r.Children}
		if r.Err != nil {
			out.Results[i].Error = toWire("multiread", ops[i].Path, r.Err)
		}
	}
	return out, "", nil
}

func (h *handler) create(ctx context.Context, body []byte) (any, string, error) {
	var req createRequest
	if err := decode(body, &req); err != nil {
		return nil, "", err
	}
	if err := noEphemeral("create", req.Path, req.Mode); err != nil {
		return nil, req.Path, err
	}
	var opts []reg.CreateOption
	switch req.Parents {
	case reg.NoParents:
	case reg.PersistentParents:
		opts = append(opts, reg.WithParents())
	case reg.ContainerParents:
		opts = append(opts, reg.WithParentContainers())
	default:
		return nil, req.Path, &reg.OpError{Op: "create", Path: req.Path, Err: fmt.Errorf("parent mode %d: %w", req.Parents, reg.ErrInvalidArgument)}
	}
	p, err := h.c.Create(ctx, req.Path, req.Data, req.Mode, opts...)
	return createResponse{Path: p}, req.Path, err
}

func (h *handler) set(ctx context.Context, body []byte) (any, string, error) {
	var req setRequest
	if err := decode(body, &req); err != nil {
		return nil, "", err
	}
	st, err := h.c.Set(ctx, req.Path, req.Data, req.Version)
	return statResponse{Stat: st}, req.Path, err
}

func (h *handler) delete(ctx context.Context, body []byte) (any, string, error) {
	var req deleteRequest
	if err := decode(body, &req); err != nil {
		return nil, "", err
	}
	return struct{}{}, req.Path, h.c.Delete(ctx, req.Path, req.Version)
}

func (h *handler) multi(ctx context.Context, body []byte) (any, string, error) {
	var req multiRequest
	if err := decode(body, &req); err != nil {
		return nil, "", err
	}
	if len(req.Ops) > h.opts.MaxOps {
		return nil, "", fmt.Errorf("%d ops, at most %d in one multi: %w", len(req.Ops), h.opts.MaxOps, reg.ErrInvalidArgument)
	}
	ops := make([]reg.Op, len(req.Ops))
	for i, o := range req.Ops {
		if o.Kind == reg.OpCreate {
			if err := noEphemeral("multi", o.Path, o.Mode); err != nil {
				return nil, o.Path, err
			}
		}
		ops[i] = reg.Op{Kind: o.Kind, Path: o.Path, Data: o.Data, Version: o.Version, Mode: o.Mode}
	}
	res, err := h.c.Multi(ctx, ops...)
	return multiResponse{Results: res}, "", err
}
