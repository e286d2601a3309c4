package acl

import (
	"strings"
	"testing"

	"github.com/raftstream/raftstream/resp/command"
)

// user builds a user from ACL SETUSER modifiers, failing the test on a bad
// one.
func user(t *testing.T, rules string) *User {
	t.Helper()
	s := NewStore("")
	if er := s.SetUser("u", strings.Fields(rules)); er != nil {
		t.Fatalf("SETUSER u %s: %s", rules, er.Msg)
	}
	return s.Get("u")
}

func TestAllowed(t *testing.T) {
	// probe has a key but is neither a read nor a write: it needs read
	// access.
	probe := &command.Command{Name: "probe", First: 1, Last: 1, Step: 1, Categories: "@keyspace", Kind: command.KindLocal}
	for _, tc := range []struct {
		rules string
		cmd   string // request, split on spaces; its first word (or two, for a subcommand) names the row
		// want is "" when allowed, else "command:<name>" or "key:<key>".
		want string
	}{
		// Command rules by category, in order; the last match decides.
		{"on -@all +@read ~*", "xrange s - +", ""},
		{"on -@all +@read ~*", "xadd s * f v", "command:xadd"},
		{"on +@stream -@write ~*", "xlen s", ""},
		{"on +@stream -@write ~*", "xadd s * f v", "command:xadd"},
		{"on -@all +xadd -@stream ~*", "xadd s * f v", "command:xadd"},
		{"on -@all -@stream +xadd ~*", "xadd s * f v", ""},
		{"on +@all -xdel ~*", "xdel s 1-1", "command:xdel"},
		{"on +@all -xdel ~*", "xadd s * f v", ""},
		{"on -@all ~*", "ping", "command:ping"},
		{"on -@all +ping", "ping", ""},
		// A rule naming a container covers its subcommands; a subcommand
		// rule only itself.
		{"on -@all +xgroup ~*", "xgroup create s g $", ""},
		{"on +@all -xgroup|create ~*", "xgroup create s g $", "command:xgroup|create"},
		{"on +@all -xgroup|create ~*", "xgroup destroy s g", ""},
		// Keys: reads need read access, writes write access.
		{"on +@all %R~r:* %W~w:* ~rw:*", "xrange r:1 - +", ""},
		{"on +@all %R~r:* %W~w:* ~rw:*", "xrange w:1 - +", "key:w:1"},
		{"on +@all %R~r:* %W~w:* ~rw:*", "xadd w:1 * f v", ""},
		{"on +@all %R~r:* %W~w:* ~rw:*", "xadd r:1 * f v", "key:r:1"},
		{"on +@all %R~r:* %W~w:* ~rw:*", "xadd rw:1 * f v", ""},
		{"on +@all %R~r:* %W~w:* ~rw:*", "xlen other", "key:other"},
		// The first key refused is named.
		{"on +@all %R~r:*", "xread streams r:1 x:1 y:1 0 0 0", "key:x:1"},
		{"on +@all ~a ~b", "del a b c", "key:c"},
		// XREADGROUP moves its group: it needs both, from one pattern or
		// two together.
		{"on +@all %R~r:* %W~w:* ~rw:*", "xreadgroup group g c streams r:1 >", "key:r:1"},
		{"on +@all %R~r:* %W~w:* ~rw:*", "xreadgroup group g c streams w:1 >", "key:w:1"},
		{"on +@all %R~r:* %W~w:* ~rw:*", "xreadgroup group g c streams rw:1 >", ""},
		{"on +@all %R~s:* %W~s:*", "xreadgroup group g c streams s:1 >", ""},
		{"on +@all %R~s:* %W~s*", "xreadgroup group g c streams s:1 >", ""},
		{"on +@all %RW~s:*", "xreadgroup group g c streams s:1 >", ""},
		// Key patterns are globs.
		{"on +@all ~orders:[0-9]", "xlen orders:7", ""},
		{"on +@all ~orders:[0-9]", "xlen orders:x", "key:orders:x"},
		// Commands decide before keys; no keys, nothing to refuse.
		{"on -@all %R~r:*", "xadd w:1 * f v", "command:xadd"},
		{"on -@all +@stream", "xadd w:1 * f v", "key:w:1"},
		{"on -@all +@stream", "xread streams", ""},
		{"on +@all %W~w:*", "probe w:1", "key:w:1"},
		{"on +@all %R~r:*", "probe r:1", ""},
	} {
		argv := bytesOf(strings.Fields(tc.cmd))
		var cmd *command.Command
		if tc.cmd == "probe" || strings.HasPrefix(tc.cmd, "probe ") {
			cmd = probe
		} else if cmd = command.Get(string(argv[0])); cmd.Sub != nil {
			cmd = command.Get(string(argv[0]) + "|" + string(argv[1]))
		}
		got := ""
		if d := user(t, tc.rules).Allowed(cmd, argv); d != nil {
			got = d.Reason + ":" + d.Object
		}
		if got != tc.want {
			t.Errorf("%s: %q: got %q, want %q", tc.rules, tc.cmd, got, tc.want)
		}
	}
}

func TestAllowedUnrestricted(t *testing.T) {
	d := NewStore("").Get("default")
	if !d.Unrestricted() {
		t.Fatal("the default user is restricted")
	}
	if den := d.Allowed(command.Get("xadd"), bytesOf([]string{"xadd", "any", "*", "f", "v"})); den != nil {
		t.Errorf("default user refused: %+v", den)
	}
	if user(t, "on +@all ~*").Unrestricted() != true || user(t, "on +@all -xdel ~*").Unrestricted() ||
		user(t, "on +@all ~a").Unrestricted() {
		t.Error("Unrestricted disagrees with the rules")
	}
}

func bytesOf(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
