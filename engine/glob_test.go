package engine_test

import (
	"testing"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/jepsen/testkit"
)

// globCases are Redis's documented glob rules (KEYS: "h?llo", "h*llo",
// "h[ae]llo", "h[^e]llo", "h[a-b]llo", "\" escapes) and the corners of
// stringmatchlen. TestGlobMatchAgainstRedis checks the case-sensitive ones
// against redis-server.
var globCases = []struct {
	p, s   string
	nocase bool
	ok     bool
}{
	{"h?llo", "hello", false, true}, {"h?llo", "hallo", false, true}, {"h?llo", "hxllo", false, true},
	{"h?llo", "hllo", false, false}, {"h?llo", "heello", false, false},
	{"h*llo", "hllo", false, true}, {"h*llo", "heeeello", false, true}, {"h*llo", "hellO", false, false},
	{"h[ae]llo", "hello", false, true}, {"h[ae]llo", "hallo", false, true}, {"h[ae]llo", "hillo", false, false},
	{"h[^e]llo", "hallo", false, true}, {"h[^e]llo", "hbllo", false, true}, {"h[^e]llo", "hello", false, false},
	{"h[a-b]llo", "hallo", false, true}, {"h[a-b]llo", "hbllo", false, true}, {"h[a-b]llo", "hcllo", false, false},
	{"h[b-a]llo", "hallo", false, true}, // a range's ends in either order
	{"h\\*llo", "h*llo", false, true}, {"h\\*llo", "hello", false, false},
	{"h\\?llo", "h?llo", false, true}, {"h\\?llo", "hallo", false, false},
	{"h[\\]]llo", "h]llo", false, true}, {"h[\\-]llo", "h-llo", false, true}, {"h[\\-]llo", "hallo", false, false},
	{"h[ae", "ha", false, true}, {"h[ae", "hb", false, false}, // a '[' without ']' ends at the pattern's end
	{"*", "", false, true}, {"*", "anything", false, true}, {"**", "x", false, true}, {"a**b", "ab", false, true},
	{"", "", false, true}, {"", "a", false, false}, {"a*", "a", false, true}, {"a?", "a", false, false},
	{"a\\", "a\\", false, true}, {"*a", "ba", false, true}, {"*a", "ab", false, false},
	// nocase (CONFIG GET, SCAN-like internal uses): letters fold, sets and ranges too.
	{"H?LLO", "hello", true, true}, {"h[A-B]llo", "HBLLO", true, true}, {"h[^E]llo", "HELLO", true, false},
	{"H?LLO", "hello", false, false},
	// Kept from resp's copy of the matcher (CONFIG GET patterns).
	{"*", "anything", false, true}, {"stream*", "stream-node-max-bytes", false, true}, {"s?ream", "stream", false, true},
	{"h[ae]llo", "hello", false, true}, {"h[^e]llo", "hello", false, false}, {"h[a-b]llo", "hbllo", false, true},
	{"a\\*b", "a*b", false, true}, {"a\\*b", "axb", false, false}, {"*max*", "maxmemory", false, true}, {"x", "y", false, false},
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range globCases {
		if got := engine.GlobMatch(tc.p, tc.s, tc.nocase); got != tc.ok {
			t.Errorf("GlobMatch(%q, %q, %v) = %v", tc.p, tc.s, tc.nocase, got)
		}
		if got := engine.GlobMatch([]byte(tc.p), []byte(tc.s), tc.nocase); got != tc.ok {
			t.Errorf("GlobMatch([]byte(%q), []byte(%q), %v) = %v", tc.p, tc.s, tc.nocase, got)
		}
	}
}

// TestGlobMatchAgainstRedis: redis-server's KEYS agrees with every
// case-sensitive row of globCases.
func TestGlobMatchAgainstRedis(t *testing.T) {
	c, err := testkit.Dial(testkit.StartRedis(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range globCases {
		if tc.nocase {
			continue
		}
		if r, err := c.Do("FLUSHALL"); err != nil || string(r) != "+OK\r\n" {
			t.Fatalf("FLUSHALL: %q %v", r, err)
		}
		if r, err := c.Do("SET", tc.s, "v"); err != nil || string(r) != "+OK\r\n" {
			t.Fatalf("SET %q: %q %v", tc.s, r, err)
		}
		r, err := c.Do("KEYS", tc.p)
		if err != nil {
			t.Fatal(err)
		}
		if redis := string(r) != "*0\r\n"; redis != tc.ok {
			t.Errorf("KEYS %q with key %q: redis-server matches: %v, the table says %v", tc.p, tc.s, redis, tc.ok)
		}
	}
}
