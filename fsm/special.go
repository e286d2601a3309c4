package fsm

import (
	"bytes"
	"fmt"
	"math"

	"github.com/raftstream/raftstream/engine"
)

// Log commands the FSM executes itself instead of the engine. They go through
// the log like any write, so every replica runs them at the same point:
//
//   - DEBUG RELOAD: serialise the engine and load it back in place (what
//     Redis does with an RDB), on every replica: a live check that the
//     snapshot encoding round-trips. Replies +OK, or an error reply if the
//     round trip fails (the old engine is then kept).
//   - CONFIG SET param value [param value ...] for stream-node-max-bytes and
//     stream-node-max-entries: the engine configuration is replicated state.
//     Parameter names are case-insensitive; values are parsed and errors
//     worded exactly as Redis 7 does; all pairs apply or none.
//
//   - ASKING (a unit's marker) and RSSLOTS …: slot moves (migrate.go).
//
// Other CONFIG SET parameters are not replicated and must not be proposed;
// if one is, it fails here with Redis's unknown-option error on every
// replica alike.

// special runs argv if it is one of the FSM's own commands. m.mu is held.
func (m *machine) special(argv [][]byte) (engine.Reply, bool) {
	// Most commands are none: their names are not 5, 6 or 7 bytes long.
	if len(argv) == 0 || len(argv[0]) != len("DEBUG") && len(argv[0]) != len("CONFIG") && len(argv[0]) != len("RSSLOTS") {
		return nil, false
	}
	switch {
	case isAsking(argv):
		return engine.OK, true // a unit's ASKING marker (migrate.go)
	case len(argv) < 2:
		return nil, false
	case engine.EqFold(argv[0], "RSSLOTS"):
		return m.slotCommand(argv[1:]), true
	case len(argv) == 2 && engine.EqFold(argv[0], "DEBUG") && engine.EqFold(argv[1], "RELOAD"):
		return m.debugReload(), true
	case engine.EqFold(argv[0], "CONFIG") && engine.EqFold(argv[1], "SET"):
		return m.configSet(argv[2:]), true
	}
	return nil, false
}

// debugReload round-trips the engine through its snapshot encoding.
func (m *machine) debugReload() engine.Reply {
	es := snapshotEngine(m.eng)
	var buf bytes.Buffer
	if _, err := es.WriteTo(&buf); err != nil {
		return engine.Errorf("ERR DEBUG RELOAD failed: %v", err)
	}
	eng, err := restoreEngine(&buf)
	if err != nil {
		return engine.Errorf("ERR DEBUG RELOAD failed: %v", err)
	}
	eng.SetConfig(m.eng.Config())
	// Keys signalled by earlier commands of this entry still need waking.
	m.pendingSignals = append(m.pendingSignals, m.eng.TakeSignaled()...)
	m.eng = eng
	return engine.OK
}

// configSet applies CONFIG SET's parameter/value pairs atomically.
func (m *machine) configSet(args [][]byte) engine.Reply {
	if len(args) == 0 || len(args)%2 != 0 {
		return engine.Errorf("ERR wrong number of arguments for 'config|set' command")
	}
	// Redis checks every name (and duplicates) before any value.
	seen := make([]string, 0, len(args)/2)
	for i := 0; i < len(args); i += 2 {
		name := engine.Lower(args[i])
		if !replicatedConfig[name] {
			return engine.Errorf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", args[i])
		}
		for _, s := range seen {
			if s == name {
				return configErr(args[i], "duplicate parameter")
			}
		}
		seen = append(seen, name)
	}
	cfg := m.eng.Config()
	for i := 0; i < len(args); i += 2 {
		switch seen[i/2] {
		case "stream-node-max-bytes":
			v, msg := parseMemory(args[i+1])
			if msg != "" {
				return configErr(args[i], msg)
			}
			cfg.NodeMaxBytes = int(v)
		case "stream-node-max-entries":
			v, msg := parseBoundedInt(args[i+1], 0, math.MaxInt64)
			if msg != "" {
				return configErr(args[i], msg)
			}
			cfg.NodeMaxEntries = int(v)
		case "stream-idmp-duration":
			v, msg := parseBoundedInt(args[i+1], 1, 86400)
			if msg != "" {
				return configErr(args[i], msg)
			}
			cfg.IdmpDuration = int(v)
		case "stream-idmp-maxsize":
			v, msg := parseBoundedInt(args[i+1], 1, 10000)
			if msg != "" {
				return configErr(args[i], msg)
			}
			cfg.IdmpMaxSize = int(v)
		}
	}
	m.eng.SetConfig(cfg)
	return engine.OK
}

// replicatedConfig names the parameters CONFIG SET changes through the log
// (they are engine state, equal on every replica).
var replicatedConfig = map[string]bool{
	"stream-node-max-bytes":   true,
	"stream-node-max-entries": true,
	"stream-idmp-duration":    true, // Redis 8.6
	"stream-idmp-maxsize":     true, // Redis 8.6
}

// parseBoundedInt parses an integer config value in [lo, hi] with Redis's
// wording on failure.
func parseBoundedInt(b []byte, lo, hi int64) (int64, string) {
	v, ok := engine.ParseInt(b)
	if !ok {
		return 0, "argument couldn't be parsed into an integer"
	}
	if v < lo || v > hi {
		return 0, fmt.Sprintf("argument must be between %d and %d inclusive", lo, hi)
	}
	return v, ""
}

// parseMemory parses a memory config value (engine.ParseMemory) in
// [0, MaxInt64] with Redis's wording on failure.
func parseMemory(b []byte) (uint64, string) {
	v, ok := engine.ParseMemory(b)
	if !ok {
		return 0, "argument must be a memory value"
	}
	if v > math.MaxInt64 {
		return 0, "argument must be between 0 and 9223372036854775807 inclusive"
	}
	return v, ""
}

func configErr(param []byte, msg string) engine.Reply {
	return engine.Errorf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", param, msg)
}
