package cluster

import (
	"errors"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

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
