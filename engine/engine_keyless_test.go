package engine

import (
	"fmt"
	"strings"
	"testing"
)

// TestKeyless runs every keyless form the server hands to Keyless and
// compares it with the same command on a real (empty) engine.
func TestKeyless(t *testing.T) {
	for _, line := range []string{
		"XGROUP HELP",
		"XINFO HELP",
		"OBJECT HELP",
		"MEMORY HELP",
		"XREAD STREAMS",
		"XREAD COUNT 1 STREAMS a",
		"XREAD BLOCK 10 STREAMS a b c",
		"XREADGROUP GROUP g c STREAMS",
		"XREADGROUP GROUP g c STREAMS a",
		"XREADGROUP GROUP g c COUNT 1 STREAMS a b c",
	} {
		var argv [][]byte
		for _, f := range strings.Fields(line) {
			argv = append(argv, []byte(f))
		}
		got := Keyless(1000, argv)
		want := New(DefaultConfig()).Exec(1000, argv)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: Keyless = %v, engine = %v", line, got, want)
		}
	}
}
