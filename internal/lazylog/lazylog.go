// Package lazylog is an hclog.Logger that adds its two fields (With) only
// when it is first used to log.
//
// Every job of a scheduler had loggers of its own carrying the job's name
// and instance id: a With copies hclog's logger and sorts its fields, some
// 250 bytes each, three per job, for loggers an idle job may never use.
// A lazylog.Logger (64 bytes) keeps the base logger and the two fields and
// makes the With on first use; until then it answers the level questions
// from the base, whose level a With shares (hclog's IndependentLevels,
// which ejob does not use, would make a With keep the level the base had
// when it was made). A message below the level is dropped without making
// the With, as hclog drops it; except on an hclog.InterceptLogger, whose
// sinks have levels of their own. The output is the With's (hclog's
// IncludeLocation, which ejob does not use, would name this package as the
// caller).
package lazylog

import (
	"io"
	"log"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// Keys names the two fields of a Logger: one of a few pairs, so that a
// Logger does not hold the key strings (it takes 64 bytes, not 96).
type Keys uint8

// The pairs of keys ejob's per-job loggers use.
const (
	JobInstance   Keys = iota // "job", "instance" (scheduler, coord)
	JobInstanceID             // "job", "instance_id" (executor)
)

// names returns the two keys.
func (k Keys) names() (string, string) {
	if k == JobInstanceID {
		return "job", "instance_id"
	}
	return "job", "instance"
}

// Logger is base.With(k1, v1, k2, v2) for keys k1, k2, made on first use.
// It is safe for concurrent use.
type Logger struct {
	base   hclog.Logger
	v1, v2 string
	l      atomic.Pointer[hclog.Logger] // the With, once made
	keys   Keys
	sinks  bool // base is an InterceptLogger
}

var _ hclog.Logger = (*Logger)(nil)

// With returns base.With(k1, v1, k2, v2), made when first needed, where
// keys names k1 and k2.
func With(base hclog.Logger, keys Keys, v1, v2 string) *Logger {
	_, sinks := base.(hclog.InterceptLogger)
	return &Logger{base: base, keys: keys, v1: v1, v2: v2, sinks: sinks}
}

// logger returns the With, made now if need be (two goroutines may both
// make one; they are the same and the first stored is kept).
func (z *Logger) logger() hclog.Logger {
	if p := z.l.Load(); p != nil {
		return *p
	}
	k1, k2 := z.keys.names()
	l := z.base.With(k1, z.v1, k2, z.v2)
	z.l.CompareAndSwap(nil, &l)
	return *z.l.Load()
}

// levels is the With if it was made, else the base.
func (z *Logger) levels() hclog.Logger {
	if p := z.l.Load(); p != nil {
		return *p
	}
	return z.base
}

// drops reports whether a message at level would be dropped (see the
// package doc).
func (z *Logger) drops(level hclog.Level) bool {
	return !z.sinks && z.l.Load() == nil && level < z.base.GetLevel()
}

func (z *Logger) Log(level hclog.Level, msg string, args ...any) {
	if !z.drops(level) {
		z.logger().Log(level, msg, args...)
	}
}

// Trace to Error are Log at their level, as hclog's are.
func (z *Logger) Trace(msg string, args ...any) { z.Log(hclog.Trace, msg, args...) }
func (z *Logger) Debug(msg string, args ...any) { z.Log(hclog.Debug, msg, args...) }
func (z *Logger) Info(msg string, args ...any)  { z.Log(hclog.Info, msg, args...) }
func (z *Logger) Warn(msg string, args ...any)  { z.Log(hclog.Warn, msg, args...) }
func (z *Logger) Error(msg string, args ...any) { z.Log(hclog.Error, msg, args...) }

func (z *Logger) IsTrace() bool          { return z.levels().IsTrace() }
func (z *Logger) IsDebug() bool          { return z.levels().IsDebug() }
func (z *Logger) IsInfo() bool           { return z.levels().IsInfo() }
func (z *Logger) IsWarn() bool           { return z.levels().IsWarn() }
func (z *Logger) IsError() bool          { return z.levels().IsError() }
func (z *Logger) GetLevel() hclog.Level  { return z.levels().GetLevel() }
func (z *Logger) SetLevel(l hclog.Level) { z.logger().SetLevel(l) }
func (z *Logger) ImpliedArgs() []any     { return z.logger().ImpliedArgs() }
func (z *Logger) With(args ...any) hclog.Logger {
	return z.logger().With(args...)
}
func (z *Logger) Name() string                   { return z.logger().Name() }
func (z *Logger) Named(name string) hclog.Logger { return z.logger().Named(name) }
func (z *Logger) ResetNamed(name string) hclog.Logger {
	return z.logger().ResetNamed(name)
}
func (z *Logger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return z.logger().StandardLogger(opts)
}
func (z *Logger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return z.logger().StandardWriter(opts)
}
