package fsm

import (
	"io"

	"github.com/raftstream/raftstream/engine"
)

// snapshotEngine takes the engine's cheap point-in-time view; its WriteTo may
// run while later entries apply.
func snapshotEngine(e *engine.Engine) engineSnapshot { return e.Snapshot() }

// restoreEngine decodes an engine written by (*engine.Snapshot).WriteTo.
func restoreEngine(r io.Reader) (*engine.Engine, error) { return engine.Restore(r) }
