//go:build !enginesnap

package fsm

import (
	"errors"
	"io"

	"github.com/raftstream/raftstream/engine"
)

// NB: stand-in until engine.Snapshot/engine.Restore land; engine_snapshot.go
// (build tag enginesnap) is the real binding. Remove this file and the tag then.

var errNoEngineSnapshot = errors.New("fsm: engine snapshots not available in this build")

// Variables so that tests can stand in a config-only engine snapshot.
var (
	snapshotEngine = func(*engine.Engine) (engineSnapshot, error) { return nil, errNoEngineSnapshot }
	restoreEngine  = func(io.Reader) (*engine.Engine, error) { return nil, errNoEngineSnapshot }
)
