package command

import (
	"sort"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/engine"
)

// TestEngineExecutesWhatTheTableRoutesToIt holds every KindRead and
// KindWrite row to the engine's registry, and the registry to the table:
// a command the table sends to the engine must be one the engine
// implements, and a command the engine implements must be reachable.
func TestEngineExecutesWhatTheTableRoutesToIt(t *testing.T) {
	routed := map[string]bool{}
	for _, c := range All() {
		if c.Kind != KindRead && c.Kind != KindWrite {
			continue
		}
		name, _, _ := strings.Cut(c.Name, "|")
		routed[name] = true
		if !engine.Has(name) {
			t.Errorf("the table routes %q to the engine, which does not implement %q", c.Name, name)
		}
	}
	var unreachable []string
	for _, name := range engine.Commands() {
		// The engine's own log commands (RAFTSTREAM.EXPIRED, ...) are
		// proposed by the shard leader, never sent by clients.
		if !routed[name] && !strings.HasPrefix(name, "raftstream.") {
			unreachable = append(unreachable, name)
		}
	}
	sort.Strings(unreachable)
	// The keyspace fan-out commands run on every shard's engine from the
	// server's own handlers (KindLocal rows), which also propose the
	// replicated CONFIG SET and DEBUG RELOAD to every shard they lead.
	want := []string{"config", "dbsize", "debug", "flushall", "flushdb", "keys", "scan"}
	if strings.Join(unreachable, " ") != strings.Join(want, " ") {
		t.Errorf("engine commands not routed by the table: %v, want exactly the fan-out and replicated server commands %v", unreachable, want)
	}
}

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		line, name, err string
	}{
		{"XADD s * f v", "xadd", ""},
		{"xAdD s * f v", "xadd", ""},
		{"xgroup CREATE s g $", "xgroup|create", ""},
		{"COMMAND", "command", ""},
		{"COMMAND COUNT", "command|count", ""},
		{"XADD s", "", "ERR wrong number of arguments for 'xadd' command"},
		{"XGROUP", "", "ERR wrong number of arguments for 'xgroup' command"},
		{"XGROUP NOPE", "", "ERR unknown subcommand 'NOPE'. Try XGROUP HELP."},
		{"XGROUP CREATE s", "", "ERR wrong number of arguments for 'xgroup|create' command"},
		{"NOSUCH a b", "", "ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' "},
		// Redis compares names ASCII-case-insensitively: no Unicode folding.
		{"\u212aEYS *", "", "ERR unknown command '\u212aEYS', with args beginning with: '*' "},
	} {
		var argv [][]byte
		for _, f := range strings.Fields(tc.line) {
			argv = append(argv, []byte(f))
		}
		cmd, er := Lookup(argv)
		switch {
		case tc.err != "" && (er == nil || er.Msg != tc.err):
			t.Errorf("%q: error %v, want %q", tc.line, er, tc.err)
		case tc.err == "" && (er != nil || cmd.Name != tc.name):
			t.Errorf("%q: %v %v, want %s", tc.line, cmd, er, tc.name)
		}
	}
}

func TestIDsAreDense(t *testing.T) {
	for i, c := range All() {
		if c.ID != i {
			t.Fatalf("row %q has ID %d at %d", c.Name, c.ID, i)
		}
		if Get(c.Name) != c {
			t.Errorf("Get(%q) does not find the row", c.Name)
		}
	}
}

func TestLookupAllocatesNothing(t *testing.T) {
	argv := [][]byte{[]byte("XADD"), []byte("s"), []byte("*"), []byte("f"), []byte("v")}
	sub := [][]byte{[]byte("XGROUP"), []byte("CREATECONSUMER"), []byte("s"), []byte("g"), []byte("c")}
	if n := testing.AllocsPerRun(100, func() { Lookup(argv); Lookup(sub) }); n != 0 {
		t.Errorf("Lookup allocates %.0f times per call", n)
	}
}
