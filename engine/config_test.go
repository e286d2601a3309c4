package engine

import "testing"

// TestConfigSetValidatesAsItApplies: the leader's check (Validate) refuses
// exactly what Exec refuses, and a refused CONFIG SET changes nothing.
func TestConfigSetValidatesAsItApplies(t *testing.T) {
	for _, line := range []string{
		"CONFIG SET stream-node-max-entries 5",
		"CONFIG SET stream-node-max-entries 5 stream-idmp-maxsize 7",
		"CONFIG SET stream-node-max-entries 5 stream-idmp-maxsize 0",
		"CONFIG SET stream-node-max-bytes 1kb STREAM-NODE-MAX-BYTES 2",
		"CONFIG SET maxmemory 1",
		"CONFIG SET stream-idmp-duration",
		"CONFIG GET stream-idmp-duration",
		"DEBUG RELOAD",
		"DEBUG SLEEP 0",
	} {
		e := New(DefaultConfig())
		argv := argvOf(line)
		v := Validate(0, argv)
		r := e.Exec(0, argv)
		switch {
		case v == nil && r != OK:
			t.Errorf("%s: valid but Exec replied %v", line, r)
		case v != nil && r.(*Error).Msg != v.Msg:
			t.Errorf("%s: Validate %q, Exec %v", line, v.Msg, r)
		case v != nil && e.Config() != DefaultConfig():
			t.Errorf("%s: refused but the configuration changed to %+v", line, e.Config())
		}
	}
}

// TestDebugReloadKeepsSignals: keys signalled before DEBUG RELOAD in the same
// entry are still handed to the blocked readers after it.
func TestDebugReloadKeepsSignals(t *testing.T) {
	e := New(DefaultConfig())
	e.Exec(1, argvOf("CONFIG SET stream-node-max-entries 3"))
	e.Exec(1, argvOf("XADD s 1-1 f v"))
	if r := e.Exec(1, argvOf("DEBUG RELOAD")); r != OK {
		t.Fatalf("DEBUG RELOAD: %v", r)
	}
	if got := e.TakeSignaled(); len(got) != 1 || got[0] != "s" {
		t.Errorf("signalled keys after reload: %q", got)
	}
	if e.Config().NodeMaxEntries != 3 {
		t.Errorf("configuration after reload: %+v", e.Config())
	}
	if r := e.Exec(1, argvOf("XLEN s")); r != Integer(1) {
		t.Errorf("XLEN after reload: %v", r)
	}
}
