package cluster

import (
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Every Raft group of the node (its shards, the controller) and their
// transports, snapshot stores and log stores log through hashicorp's
// hclog.Logger; the node logs through log/slog. This file adapts the one to
// the other.

// newHCLogger adapts l to hclog.Logger, dropping messages below min.
// Key/value arguments pass through unchanged; both libraries use
// alternating key/value pairs.
func newHCLogger(l *slog.Logger, min slog.Level) hclog.Logger {
	if l == nil {
		l = slog.Default()
	}
	return &hcLogger{l: l, min: min}
}

// hcLogger is the hclog.Logger over slog. Immutable except SetLevel, which
// raft never calls after construction.
type hcLogger struct {
	l    *slog.Logger
	min  slog.Level
	name string
	args []any
}

func toSlog(lv hclog.Level) slog.Level {
	switch {
	case lv <= hclog.Debug:
		return slog.LevelDebug
	case lv == hclog.Info:
		return slog.LevelInfo
	case lv == hclog.Warn:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

func toHC(lv slog.Level) hclog.Level {
	switch {
	case lv < slog.LevelInfo:
		return hclog.Debug
	case lv < slog.LevelWarn:
		return hclog.Info
	case lv < slog.LevelError:
		return hclog.Warn
	default:
		return hclog.Error
	}
}

func (h *hcLogger) Log(level hclog.Level, msg string, args ...any) {
	sl := toSlog(level)
	if level == hclog.Off || sl < h.min {
		return
	}
	if h.name != "" {
		msg = h.name + ": " + msg
	}
	h.l.Log(context.Background(), sl, msg, args...)
}

func (h *hcLogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hcLogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hcLogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hcLogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hcLogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }
func (h *hcLogger) IsTrace() bool                 { return false }
func (h *hcLogger) IsDebug() bool                 { return h.min <= slog.LevelDebug }
func (h *hcLogger) IsInfo() bool                  { return h.min <= slog.LevelInfo }
func (h *hcLogger) IsWarn() bool                  { return h.min <= slog.LevelWarn }
func (h *hcLogger) IsError() bool                 { return h.min <= slog.LevelError }
func (h *hcLogger) ImpliedArgs() []any            { return h.args }

func (h *hcLogger) With(args ...any) hclog.Logger {
	c := *h
	c.l = h.l.With(args...)
	c.args = append(append([]any(nil), h.args...), args...)
	return &c
}

func (h *hcLogger) Name() string { return h.name }

func (h *hcLogger) Named(name string) hclog.Logger {
	c := *h
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	return &c
}

func (h *hcLogger) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

func (h *hcLogger) SetLevel(level hclog.Level) { h.min = toSlog(level) }
func (h *hcLogger) GetLevel() hclog.Level      { return toHC(h.min) }

func (h *hcLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hcLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return lineWriter{h}
}

// lineWriter logs each write from a standard *log.Logger as one INFO message.
type lineWriter struct{ h *hcLogger }

func (w lineWriter) Write(p []byte) (int, error) {
	w.h.Info(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// shutdownQuiet wraps a transport's logger so that errors which only say
// "the transport is shutting down" (raft.ErrTransportShutdown among the
// key/value arguments) are logged at DEBUG: on a clean Close every open
// connection would otherwise report one ERROR.
type shutdownQuiet struct{ hclog.Logger }

func (l shutdownQuiet) Error(msg string, args ...any) {
	for _, a := range args {
		if err, ok := a.(error); ok && errors.Is(err, raft.ErrTransportShutdown) {
			l.Logger.Debug(msg, args...)
			return
		}
	}
	l.Logger.Error(msg, args...)
}
