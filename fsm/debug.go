package fsm

import (
	"fmt"
	"sync/atomic"

	"github.com/raftstream/raftstream/engine"
)

// Known bugs Config.InjectBug can inject, for the jepsen/ harness's
// self-test ONLY (raftstream --debug-inject-bug): each must be flagged by a
// checker. Never set in production.
const (
	// DebugBugAckBeforeCommit acknowledges writes whose commit failed
	// (leadership lost, apply timeout) as if they had committed, with a
	// made-up reply: what a broker replying before commit shows clients.
	DebugBugAckBeforeCommit = "ack-before-commit"
	// DebugBugStaleRead serves Read from the local engine without the read
	// fence (no proof of leadership, no wait for earlier writes).
	DebugBugStaleRead = "stale-read"
	// DebugBugDropPEL proposes XREADGROUP with NOACK added: entries are
	// delivered but the pending entries list is not updated.
	DebugBugDropPEL = "drop-pel-update"
)

// ValidDebugBug reports whether name is "" or a known injectable bug.
func ValidDebugBug(name string) error {
	switch name {
	case "", DebugBugAckBeforeCommit, DebugBugStaleRead, DebugBugDropPEL:
		return nil
	}
	return fmt.Errorf("unknown bug %q (want %s, %s or %s)", name, DebugBugAckBeforeCommit, DebugBugStaleRead, DebugBugDropPEL)
}

// debugHooks are the injected bug's entry points into the shard, resolved
// once from Config.InjectBug when the shard opens. In production every field
// is zero: the batcher pays one nil or false check where a bug could act, and
// compares no strings.
type debugHooks struct {
	// rewrite replaces each command of a submitted unit before validation
	// (DebugBugDropPEL).
	rewrite func(argv [][]byte) [][]byte
	// fakeAcks makes up the replies a write whose commit failed is
	// acknowledged with, instead of its error (DebugBugAckBeforeCommit).
	fakeAcks func(unit Unit, ts int64) []engine.Reply
	// unfencedReads serves Read from the local engine without the read
	// fence (DebugBugStaleRead).
	unfencedReads bool
}

// newDebugHooks resolves a ValidDebugBug name; "" gives no hooks.
func newDebugHooks(bug string) debugHooks {
	switch bug {
	case DebugBugAckBeforeCommit:
		return debugHooks{fakeAcks: debugFakeAcks}
	case DebugBugStaleRead:
		return debugHooks{unfencedReads: true}
	case DebugBugDropPEL:
		return debugHooks{rewrite: debugDropPEL}
	}
	return debugHooks{}
}

// debugDropPEL rewrites XREADGROUP … STREAMS … to XREADGROUP … NOACK
// STREAMS … (DebugBugDropPEL); other commands are returned unchanged.
func debugDropPEL(argv [][]byte) [][]byte {
	if len(argv) == 0 || !engine.EqFold(argv[0], "XREADGROUP") {
		return argv
	}
	for i, a := range argv {
		if engine.EqFold(a, "STREAMS") {
			out := append(append(append([][]byte(nil), argv[:i]...), []byte("NOACK")), argv[i:]...)
			return out
		}
		if engine.EqFold(a, "NOACK") {
			return argv
		}
	}
	return argv
}

// debugSeq numbers made-up XADD IDs (DebugBugAckBeforeCommit).
var debugSeq atomic.Int64

// debugFakeAcks makes up a successful reply per command of a unit whose
// commit failed (DebugBugAckBeforeCommit): XADD gets an ID at ts, others OK.
func debugFakeAcks(unit Unit, ts int64) []engine.Reply {
	out := make([]engine.Reply, len(unit))
	for i, argv := range unit {
		if len(argv) > 0 && engine.EqFold(argv[0], "XADD") {
			out[i] = engine.BulkString(fmt.Sprintf("%d-%d", ts, 1<<20+debugSeq.Add(1)))
			continue
		}
		out[i] = engine.SimpleString("OK")
	}
	return out
}
