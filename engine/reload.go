package engine

import "bytes"

// DEBUG RELOAD: serialise the engine and load it back in place, what Redis
// does with an RDB. It goes through the log like any write, so every replica
// round-trips its engine at the same point: a live check that the snapshot
// encoding (Snapshot, Restore) loses nothing. Replies +OK, or an error if
// the round trip fails (the engine is then unchanged).

func init() {
	register("debug", cmdDebug)
	registerValidator("debug", func(now int64, argv [][]byte) *Error { return checkDebug(argv) })
}

// checkDebug accepts DEBUG RELOAD, the one DEBUG subcommand the engine runs.
func checkDebug(argv [][]byte) *Error {
	if len(argv) == 2 && EqFold(argv[1], "reload") {
		return nil
	}
	return Errorf("ERR unknown subcommand '%.128s'. Try DEBUG HELP.", argAt(argv, 1))
}

func cmdDebug(e *Engine, now int64, argv [][]byte) Reply {
	if err := checkDebug(argv); err != nil {
		return err
	}
	return e.reload()
}

// reload replaces the engine's state with its own snapshot's decoding. Keys
// signalled by earlier commands of the same log entry stay signalled.
func (e *Engine) reload() Reply {
	var buf bytes.Buffer
	if _, err := e.Snapshot().WriteTo(&buf); err != nil {
		return Errorf("ERR DEBUG RELOAD failed: %v", err)
	}
	ne, err := Restore(&buf)
	if err != nil {
		return Errorf("ERR DEBUG RELOAD failed: %v", err)
	}
	ne.cfg, ne.logTime = e.cfg, e.logTime
	ne.signaled, ne.signaledSet = e.signaled, e.signaledSet
	*e = *ne
	return OK
}
