package httpreg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/ejob-io/ejob/core/jsonhttp"
	"github.com/ejob-io/ejob/core/reg"
)

// maxResponse bounds an answer the client reads: a multiread of many
// large nodes stays well below it.
const maxResponse = 256 << 20

// Client is a reg.Client whose calls a Handler serves. Its session is its
// own (it ends when the client closes); the registry's session behind the
// handler is the serving process's.
type Client struct {
	http      *http.Client
	base      string
	namespace string
	session   *reg.Session

	mu     sync.Mutex
	closed chan struct{}
}

var _ reg.Client = (*Client)(nil)

// New asks the handler at base (a URL without PathPrefix, e.g.
// "http://ejob") over hc for its namespace and returns a client of it.
// It fails when the handler cannot be reached or does not answer as one.
func New(ctx context.Context, hc *http.Client, base string) (*Client, error) {
	c := &Client{http: hc, base: base, session: reg.NewSession(0), closed: make(chan struct{})}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+PathPrefix+"info", nil)
	if err != nil {
		return nil, fmt.Errorf("registry at %s: %w", base, err)
	}
	var info infoResponse
	if err := c.do(req, &info); err != nil {
		return nil, fmt.Errorf("registry at %s: %w", base, err)
	}
	c.namespace = info.Namespace
	return c, nil
}

// call posts in as method name and decodes the answer into out; path is
// the node the call concerns, for errors.
func (c *Client) call(ctx context.Context, name, path string, in, out any) error {
	select {
	case <-c.closed:
		return &reg.OpError{Op: name, Path: path, Err: reg.ErrClosed}
	default:
	}
	body, err := json.Marshal(in)
	if err != nil {
		return &reg.OpError{Op: name, Path: path, Err: fmt.Errorf("%v: %w", err, reg.ErrInvalidArgument)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+PathPrefix+name, bytes.NewReader(body))
	if err != nil {
		return &reg.OpError{Op: name, Path: path, Err: fmt.Errorf("%v: %w", err, reg.ErrInvalidArgument)}
	}
	req.Header.Set("Content-Type", "application/json")
	if err := c.do(req, out); err != nil {
		var oe *reg.OpError
		if errors.As(err, &oe) {
			return err
		}
		if ctx.Err() != nil {
			return &reg.OpError{Op: name, Path: path, Err: context.Cause(ctx)}
		}
		return &reg.OpError{Op: name, Path: path, Err: fmt.Errorf("%v: %w", err, reg.ErrConnectionLoss)}
	}
	return nil
}

// do sends req and decodes a 200 answer into out, or returns the error
// the answer describes.
func (c *Client) do(req *http.Request, out any) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := jsonhttp.ReadAnswer(resp, maxResponse)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e errorResponse
		if json.Unmarshal(data, &e) != nil || e.Error == nil {
			return jsonhttp.Unexpected(resp, data)
		}
		return fromWire(e.Error)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	return nil
}

// Get implements reg.Reader.
func (c *Client) Get(ctx context.Context, path string) ([]byte, reg.Stat, error) {
	var out getResponse
	if err := c.call(ctx, "get", path, pathRequest{Path: path}, &out); err != nil {
		return nil, reg.Stat{}, err
	}
	return out.Data, out.Stat, nil
}

// Exists implements reg.Reader.
func (c *Client) Exists(ctx context.Context, path string) (reg.Stat, bool, error) {
	var out existsResponse
	if err := c.call(ctx, "exists", path, pathRequest{Path: path}, &out); err != nil {
		return reg.Stat{}, false, err
	}
	return out.Stat, out.Exists, nil
}

// Children implements reg.Reader.
func (c *Client) Children(ctx context.Context, path string) ([]string, error) {
	var out childrenResponse
	if err := c.call(ctx, "children", path, pathRequest{Path: path}, &out); err != nil {
		return nil, err
	}
	return out.Children, nil
}

// MultiRead implements reg.MultiReader: one request for every op.
func (c *Client) MultiRead(ctx context.Context, ops ...reg.ReadOp) ([]reg.ReadResult, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	in := multiReadRequest{Ops: make([]readOp, len(ops))}
	for i, o := range ops {
		in.Ops[i] = readOp{Kind: o.Kind, Path: o.Path}
	}
	var out multiReadResponse
	if err := c.call(ctx, "multiread", ops[0].Path, in, &out); err != nil {
		return nil, err
	}
	if len(out.Results) != len(ops) {
		return nil, unexpected("multiread", ops[0].Path, "%d results for %d ops", len(out.Results), len(ops))
	}
	res := make([]reg.ReadResult, len(ops))
	for i, r := range out.Results {
		res[i] = reg.ReadResult{Data: r.Data, Stat: r.Stat, Children: r.Children}
		if r.Error != nil {
			res[i].Err = fromWire(r.Error)
		}
	}
	return res, nil
}

// Create implements reg.Writer. Ephemeral modes are refused by the
// handler.
func (c *Client) Create(ctx context.Context, path string, data []byte, mode reg.CreateMode, opts ...reg.CreateOption) (string, error) {
	if data == nil {
		data = []byte{} // never ZooKeeper's null (see reg.Writer)
	}
	var out createResponse
	in := createRequest{Path: path, Data: data, Mode: mode, Parents: reg.ApplyCreateOptions(opts).Parents}
	if err := c.call(ctx, "create", path, in, &out); err != nil {
		return "", err
	}
	return out.Path, nil
}

// Set implements reg.Writer.
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (reg.Stat, error) {
	if data == nil {
		data = []byte{}
	}
	var out statResponse
	if err := c.call(ctx, "set", path, setRequest{Path: path, Data: data, Version: version}, &out); err != nil {
		return reg.Stat{}, err
	}
	return out.Stat, nil
}

// Delete implements reg.Writer.
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	return c.call(ctx, "delete", path, deleteRequest{Path: path, Version: version}, &struct{}{})
}

// Multi implements reg.Writer: the transaction is applied by the
// registry behind the handler, all or nothing.
func (c *Client) Multi(ctx context.Context, ops ...reg.Op) ([]reg.OpResult, error) {
	in := multiRequest{Ops: make([]op, len(ops))}
	for i, o := range ops {
		in.Ops[i] = op{Kind: o.Kind, Path: o.Path, Data: o.Data, Version: o.Version, Mode: o.Mode}
		if o.Kind == reg.OpCreate || o.Kind == reg.OpSet {
			if o.Data == nil {
				in.Ops[i].Data = []byte{}
			}
		}
	}
	var out multiResponse
	if err := c.call(ctx, "multi", "", in, &out); err != nil {
		return nil, err
	}
	return out.Results, nil
}

// errNoWatches is what the watch methods return.
func errNoWatches(name, path string) error {
	return &reg.OpError{Op: name, Path: path, Err: fmt.Errorf("watches are not served to another process: %w", reg.ErrUnimplemented)}
}

// GetW implements reg.Watcher: it fails with reg.ErrUnimplemented.
func (c *Client) GetW(_ context.Context, path string) ([]byte, reg.Stat, <-chan reg.WatchEvent, error) {
	return nil, reg.Stat{}, nil, errNoWatches("getw", path)
}

// ExistsW implements reg.Watcher: it fails with reg.ErrUnimplemented.
func (c *Client) ExistsW(_ context.Context, path string) (reg.Stat, bool, <-chan reg.WatchEvent, error) {
	return reg.Stat{}, false, nil, errNoWatches("existsw", path)
}

// ChildrenW implements reg.Watcher: it fails with reg.ErrUnimplemented.
func (c *Client) ChildrenW(_ context.Context, path string) ([]string, reg.Stat, <-chan reg.WatchEvent, error) {
	return nil, reg.Stat{}, nil, errNoWatches("childrenw", path)
}

// Session implements reg.Client: the client's own session, which ends
// when it closes.
func (c *Client) Session() *reg.Session { return c.session }

// WatchConnection implements reg.Client: Connected, then nothing until
// ctx ends or the client closes.
func (c *Client) WatchConnection(ctx context.Context) <-chan reg.ConnEvent {
	ch := make(chan reg.ConnEvent, 1)
	ch <- reg.ConnEvent{State: reg.StateConnected, Session: c.session}
	go func() {
		defer close(ch)
		select {
		case <-ctx.Done():
		case <-c.closed:
		}
	}()
	return ch
}

// Namespace implements reg.Client: the namespace of the registry behind
// the handler.
func (c *Client) Namespace() string { return c.namespace }

// Close implements reg.Client. It releases the idle connections; later
// calls fail with reg.ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return nil
	default:
	}
	close(c.closed)
	c.session.End(fmt.Errorf("client closed: %w", reg.ErrClosed))
	c.http.CloseIdleConnections()
	return nil
}
