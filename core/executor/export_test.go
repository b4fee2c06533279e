package executor

import (
	"context"

	"github.com/ejob-io/ejob/core/config"
)

// WithJobConfigForTest puts a config with props into ctx, as the pipeline
// does for item runners.
func WithJobConfigForTest(ctx context.Context, props map[string]string) context.Context {
	cfg := config.New("j", 1)
	cfg.Props = props
	return withJobConfig(ctx, cfg)
}

// Detail is detail, the error chain the error handler receives.
var Detail = detail
