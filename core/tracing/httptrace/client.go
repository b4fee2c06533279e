package httptrace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ejob-io/ejob/core/jsonhttp"
	"github.com/ejob-io/ejob/spi"
)

// maxResponse bounds an answer the client reads: a page of 10,000 rows
// with their excerpts and causes stays well below it.
const maxResponse = 64 << 20

// Client is an spi.Tracer whose read calls and Purge a Handler serves.
type Client struct {
	http *http.Client
	base string
}

var _ spi.Tracer = (*Client)(nil)

// New returns a client of the handler at base (a URL without PathPrefix,
// e.g. "http://ejob") over hc. It does not call the handler: the first
// query fails when it cannot be reached.
func New(hc *http.Client, base string) *Client { return &Client{http: hc, base: base} }

// call posts in as method name and decodes the answer into out.
func (c *Client) call(ctx context.Context, name string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("history %s: %w", name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+PathPrefix+name, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("history %s: %w", name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("history %s: %w", name, err)
	}
	defer resp.Body.Close()
	data, err := jsonhttp.ReadAnswer(resp, maxResponse)
	if err != nil {
		return fmt.Errorf("history %s: %w", name, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorResponse
		if json.Unmarshal(data, &e) != nil || e.Error == nil {
			return fmt.Errorf("history %s: %w", name, jsonhttp.Unexpected(resp, data))
		}
		return fromWire(e.Error)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("history %s: decode the answer: %w", name, err)
	}
	return nil
}

// Validate implements spi.Tracer: the store is the serving host's, its
// settings checked there.
func (c *Client) Validate(context.Context, spi.TraceValidateRequest) error { return nil }

// Write implements spi.Tracer: it fails with spi.ErrUnsupported (see the
// package doc).
func (c *Client) Write(context.Context, spi.TraceWriteRequest) (spi.TraceWriteResponse, error) {
	return spi.TraceWriteResponse{}, fmt.Errorf("history: events are not written from another process: %w", spi.ErrUnsupported)
}

// QueryExecutions implements spi.Tracer.
func (c *Client) QueryExecutions(ctx context.Context, q spi.ExecutionQuery) (spi.ExecutionPage, error) {
	q.Config = nil
	var out spi.ExecutionPage
	err := c.call(ctx, "executions", q, &out)
	return out, err
}

// QueryStatuses implements spi.Tracer.
func (c *Client) QueryStatuses(ctx context.Context, q spi.StatusQuery) (spi.StatusPage, error) {
	q.Config = nil
	var out spi.StatusPage
	err := c.call(ctx, "statuses", q, &out)
	return out, err
}

// QueryOutput implements spi.Tracer.
func (c *Client) QueryOutput(ctx context.Context, q spi.OutputQuery) (spi.OutputResult, error) {
	q.Config = nil
	var out spi.OutputResult
	err := c.call(ctx, "output", q, &out)
	return out, err
}

// Distinct implements spi.Tracer.
func (c *Client) Distinct(ctx context.Context, q spi.DistinctQuery) (spi.DistinctValues, error) {
	q.Config = nil
	var out spi.DistinctValues
	err := c.call(ctx, "distinct", q, &out)
	return out, err
}

// Purge implements spi.Tracer.
func (c *Client) Purge(ctx context.Context, req spi.TracePurgeRequest) (spi.TracePurgeResponse, error) {
	req.Config = nil
	var out spi.TracePurgeResponse
	err := c.call(ctx, "purge", req, &out)
	return out, err
}
