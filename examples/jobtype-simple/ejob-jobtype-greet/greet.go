package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

// PropName is the prop naming who greets. Required.
const PropName = "greet.name"

// Logger is the part of sdk.Logger() GREET uses.
type Logger interface {
	Info(msg string, args ...any)
}

// NewGreet returns the GREET job type, logging to log. It is stateless and
// safe for concurrent use.
func NewGreet(log Logger) spi.JobExecutor {
	return sdk.SimpleJobTypeWithValidate(
		func(ctx context.Context, sc spi.ShardingContext, props map[string]string) error {
			log.Info("greeting", "job", sc.JobName, "item", sc.ShardingItem, "text", Greeting(sc, props[PropName]))
			return nil
		},
		Validate,
	)
}

// Greeting is the text GREET logs for one item.
func Greeting(sc spi.ShardingContext, name string) string {
	whom := "item " + strconv.Itoa(sc.ShardingItem)
	if p := sc.ShardingParameter; p != nil && *p != "" {
		whom = *p
	}
	return fmt.Sprintf("Hello, %s! -- %s", whom, name)
}

// Validate requires a non-blank greet.name.
func Validate(_ context.Context, req spi.ValidatePropsRequest) error {
	if strings.TrimSpace(req.Props[PropName]) == "" {
		return fmt.Errorf("property %s is required (who greets): %w", PropName, spi.ErrInvalidConfig)
	}
	return nil
}
