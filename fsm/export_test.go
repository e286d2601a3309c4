package fsm

import (
	"log/slog"

	"github.com/raftstream/raftstream/engine"
)

// ExecSequenceForTest runs cmds in order against a fresh machine (Redis's
// default engine configuration) the way Apply does, and returns the replies
// and the final engine configuration. For the differential tests in fsm_test.
func ExecSequenceForTest(now int64, cmds ...[][]byte) ([]engine.Reply, engine.Config) {
	m := newMachine(0, engine.DefaultConfig(), nil, slog.Default())
	out := make([]engine.Reply, len(cmds))
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, argv := range cmds {
		out[i] = m.execLocked(now, argv)
	}
	return out, m.eng.Config()
}
