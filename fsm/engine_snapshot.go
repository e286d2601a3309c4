//go:build enginesnap

package fsm

import (
	"io"

	"github.com/raftstream/raftstream/engine"
)

// snapshotEngine takes the engine's cheap point-in-time view; its WriteTo may
// run while later entries apply.
func snapshotEngine(e *engine.Engine) (engineSnapshot, error) { return e.Snapshot(), nil }

// restoreEngine decodes an engine written by (*engine.Snapshot).WriteTo.
func restoreEngine(r io.Reader) (*engine.Engine, error) { return engine.Restore(r) }
