package fsm

import (
	"strings"
	"testing"

	"github.com/raftstream/raftstream/engine"
)

func join(argv [][]byte) string {
	var s []string
	for _, a := range argv {
		s = append(s, string(a))
	}
	return strings.Join(s, " ")
}

func argv(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

// TestDebugBugs: the self-test injections do what they claim and are off by
// default; unknown names are refused.
func TestDebugBugs(t *testing.T) {
	if got := join(debugDropPEL(argv("XREADGROUP GROUP g c COUNT 5 STREAMS s >"))); got != "XREADGROUP GROUP g c COUNT 5 NOACK STREAMS s >" {
		t.Errorf("drop-pel-update rewrite: %s", got)
	}
	for _, same := range []string{"XADD s * f v", "xreadgroup GROUP g c NOACK STREAMS s >"} {
		if got := join(debugDropPEL(argv(same))); got != same {
			t.Errorf("%q rewritten to %q", same, got)
		}
	}
	acks := debugFakeAcks(Unit{argv("XADD s * v 1"), argv("XACK s g 1-1")}, 1000)
	id, _ := acks[0].(engine.BulkString)
	if len(acks) != 2 || !strings.HasPrefix(string(id), "1000-") || acks[1] != engine.SimpleString("OK") {
		t.Errorf("fake acks %#v", acks)
	}
	if DefaultConfig().InjectBug != "" {
		t.Error("a bug is injected by default")
	}
	for _, ok := range []string{"", DebugBugAckBeforeCommit, DebugBugStaleRead, DebugBugDropPEL} {
		if ValidDebugBug(ok) != nil {
			t.Errorf("%q refused", ok)
		}
	}
	if ValidDebugBug("lose-everything") == nil {
		t.Error("unknown bug accepted")
	}
}

// TestDebugHooksResolvedOnce: each bug name sets exactly its own hook, and
// no name (production) sets none; a shard keeps what it resolved at Open.
func TestDebugHooksResolvedOnce(t *testing.T) {
	if h := newDebugHooks(""); h.rewrite != nil || h.fakeAcks != nil || h.unfencedReads {
		t.Errorf("hooks without a bug: %+v", h)
	}
	if h := newDebugHooks(DebugBugDropPEL); h.rewrite == nil || h.fakeAcks != nil || h.unfencedReads {
		t.Errorf("%s: %+v", DebugBugDropPEL, h)
	}
	if h := newDebugHooks(DebugBugAckBeforeCommit); h.rewrite != nil || h.fakeAcks == nil || h.unfencedReads {
		t.Errorf("%s: %+v", DebugBugAckBeforeCommit, h)
	}
	if h := newDebugHooks(DebugBugStaleRead); h.rewrite != nil || h.fakeAcks != nil || !h.unfencedReads {
		t.Errorf("%s: %+v", DebugBugStaleRead, h)
	}
	s := singleVoter(t, func(c *Config) { c.InjectBug = DebugBugStaleRead })
	if !s.debug.unfencedReads {
		t.Error("the shard did not resolve its InjectBug")
	}
}
