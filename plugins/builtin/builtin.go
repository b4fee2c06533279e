package builtin

import (
	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
	errorhandlerbuiltin "github.com/ejob-io/ejob/plugins/errorhandler/builtin"
	"github.com/ejob-io/ejob/plugins/errorhandler/dingtalk"
	"github.com/ejob-io/ejob/plugins/errorhandler/email"
	"github.com/ejob-io/ejob/plugins/errorhandler/slack"
	"github.com/ejob-io/ejob/plugins/errorhandler/webhook"
	"github.com/ejob-io/ejob/plugins/errorhandler/wechat"
	joblistenerbuiltin "github.com/ejob-io/ejob/plugins/joblistener/builtin"
	httpjob "github.com/ejob-io/ejob/plugins/jobtype/http"
	"github.com/ejob-io/ejob/plugins/jobtype/script"
	shardingbuiltin "github.com/ejob-io/ejob/plugins/sharding/builtin"
	threadpoolbuiltin "github.com/ejob-io/ejob/plugins/threadpool/builtin"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/spi"
)

// Version is the plugin version the built-in implementations report.
const Version = "0.1.0-dev"

// Options configures the built-in implementations.
type Options struct {
	// Logger receives the LOG error handler's lines at ERROR level;
	// hclog.Logger (sdk.Logger()) and *slog.Logger fit. Nil means
	// slog.Default(). If it also has Debug, Info and Warn (hclog.Logger
	// and *slog.Logger do), the SCRIPT job type logs the scripts' output,
	// the HTTP job type the responses and the alerting error handlers
	// their sends through it; otherwise they use slog.Default().
	Logger errorhandlerbuiltin.Logger
}

// New returns a new instance of every built-in implementation, as one
// plugin set of Version: sharding AVG_ALLOCATION, ODEVITY, ROUND_ROBIN;
// error handlers LOG, THROW, IGNORE, EMAIL, WECHAT, DINGTALK, SLACK,
// WEBHOOK; job types SCRIPT, HTTP; thread pools
// CPU, SINGLE_THREAD; job listeners LOG, LOG_ONCE; tracing RDB. Type names are in their
// canonical spelling (spi.NormalizeType). The maps are the caller's to keep;
// the implementations are safe for concurrent use.
func New(opts Options) spi.Plugins {
	return spi.Plugins{
		Version:       Version,
		Sharding:      shardingbuiltin.Strategies(),
		ErrorHandlers: errorHandlers(opts.Logger),
		JobTypes:      jobTypes(opts.Logger),
		ThreadPools:   threadpoolbuiltin.Providers(),
		JobListeners:  joblistenerbuiltin.Listeners(listenerLogger(opts.Logger)),
		Tracing:       map[string]spi.Tracer{rdb.TypeName: rdb.New()},
	}
}

// listenerLogger returns l when it can log at INFO (hclog.Logger and
// *slog.Logger can), else nil (slog.Default()).
func listenerLogger(l errorhandlerbuiltin.Logger) joblistenerbuiltin.Logger {
	il, _ := l.(joblistenerbuiltin.Logger)
	return il
}

// jobLogger is what the job types log through.
type jobLogger interface {
	Debug(msg string, args ...any)
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
}

// jobTypes returns the job types, logging through l when it is a
// jobLogger (a nil jobLogger makes each use slog.Default()).
func jobTypes(l errorhandlerbuiltin.Logger) map[string]spi.JobExecutor {
	jl, _ := l.(jobLogger)
	return map[string]spi.JobExecutor{
		script.TypeName:  script.New(jl),
		httpjob.TypeName: httpjob.New(jl),
	}
}

// errorHandlers returns LOG, THROW, IGNORE and the alerting handlers, which
// log through l when it is an alert.Logger (else slog.Default()).
func errorHandlers(l errorhandlerbuiltin.Logger) map[string]spi.ErrorHandler {
	al, _ := l.(alert.Logger)
	opts := alert.Options{Logger: al}
	m := errorhandlerbuiltin.Handlers(l)
	m[email.TypeName] = email.New(opts)
	m[wechat.TypeName] = wechat.New(opts)
	m[dingtalk.TypeName] = dingtalk.New(opts)
	m[slack.TypeName] = slack.New(opts)
	m[webhook.TypeName] = webhook.New(opts)
	return m
}
