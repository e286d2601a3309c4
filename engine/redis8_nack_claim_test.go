package engine

import (
	"fmt"
	"testing"
)

// XNACK (8.8) and XREADGROUP ... CLAIM (8.4), following the documentation.

func TestXNackModes(t *testing.T) {
	e := newPolicyEngine(t, 4, 4) // c read 1-1..4-1 at now=2
	fatal := fmt.Sprint(int64(nackFatalCount))
	runSteps(t, e, []step{
		{10, "XCLAIM s g c 0 1-1 2-1 3-1", "[[1-1 [f 1]] [2-1 [f 2]] [3-1 [f 3]]]"}, // counts 2
		{20, "XNACK s g SILENT IDS 1 1-1", "1"},
		{20, "XNACK s g FAIL IDS 2 2-1 9-1", "1"},
		{20, "XNACK s g FATAL IDS 1 3-1", "1"},
		{20, "XNACK s g SILENT IDS 1 4-1 RETRYCOUNT 7", "1"},
		// Idle is now maximal (delivery time 0); counts per mode.
		{20, "XPENDING s g - + 10", "[[1-1 c 20 1] [2-1 c 20 2] [3-1 c 20 " + fatal + "] [4-1 c 20 7]]"},
		{20, "XNACK s g SILENT IDS 1 1-1", "1"},
		{20, "XNACK s g SILENT IDS 1 1-1 FORCE", "1"},
		{20, "XPENDING s g - + 1", "[[1-1 c 20 0]]"},
		// Released entries are claimable at once, longest idle first.
		{21, "XAUTOCLAIM s g d 15 0 COUNT 1", "[2-1 [[1-1 [f 1]]] []]"},
		{21, "XNACK s nogroup FAIL IDS 1 1-1", "-NOGROUP No such key 's' or consumer group 'nogroup'"},
		{21, "XNACK nokey g FAIL IDS 1 1-1", "-NOGROUP No such key 'nokey' or consumer group 'g'"},
	})
}

func TestXNackErrors(t *testing.T) {
	e := newPolicyEngine(t, 2, 2)
	for _, c := range []struct{ cmd, want string }{
		{"XNACK s g FAIL IDS 1", "-ERR wrong number of arguments for 'xnack' command"},
		{"XNACK s g MAYBE IDS 1 1-1", "-" + errXNackMode.Msg},
		{"XNACK s g FAIL IDS 0 1-1", "-ERR Number of IDs must be a positive integer"},
		{"XNACK s g FAIL IDS 2 1-1", "-ERR The `numids` parameter must match the number of arguments"},
		{"XNACK s g FAIL IDS 1 1-1 RETRYCOUNT -1", "-ERR Invalid RETRYCOUNT option argument for XNACK"},
		{"XNACK s g FAIL IDS 1 1-1 RETRYCOUNT x", "-ERR Invalid RETRYCOUNT option argument for XNACK"},
		{"XNACK s g FAIL IDS 1 1-1 BOGUS", "-ERR syntax error"},
		{"XNACK s g FAIL FORCE RETRYCOUNT 1 x", "-ERR syntax error"},
		{"XNACK s g FAIL IDS 1 zz", "-" + ErrInvalidStreamID.Msg},
	} {
		if got := run(e, 3, c.cmd); got != c.want {
			t.Errorf("%s: got %s want %s", c.cmd, got, c.want)
		}
		if v := Validate(3, argvOf(c.cmd)); v == nil || "-"+v.Msg != c.want {
			t.Errorf("Validate(%s) = %v, want %s", c.cmd, v, c.want)
		}
	}
}

func TestXReadGroupClaim(t *testing.T) {
	e := newPolicyEngine(t, 3, 0)
	runSteps(t, e, []step{
		{100, "XREADGROUP GROUP g a COUNT 1 STREAMS s >", "[s [[1-1 [f 1]]]]"},
		{150, "XREADGROUP GROUP g a COUNT 1 STREAMS s >", "[s [[2-1 [f 2]]]]"},
		// Nothing idle for 100 ms yet: only the new entry, 2-element.
		{160, "XREADGROUP GROUP g b CLAIM 100 STREAMS s >", "[s [[3-1 [f 3]]]]"},
		// At 260, 1-1 (idle 160) and 2-1 (110) qualify, longest idle first;
		// 3-1 (idle 100) too. Delivery counts before this read.
		{260, "XREADGROUP GROUP g b CLAIM 101 STREAMS s >", "[s [[1-1 [f 1] 160 1] [2-1 [f 2] 110 1]]]"},
		{260, "XPENDING s g - + 10", "[[1-1 b 0 2] [2-1 b 0 2] [3-1 b 100 1]]"},
		{261, "XADD s 4-1 f 4", "4-1"},
		// COUNT bounds claimed plus new.
		{400, "XREADGROUP GROUP g c COUNT 2 CLAIM 0 STREAMS s >", "[s [[3-1 [f 3] 240 1] [1-1 [f 1] 140 2]]]"},
		{400, "XREADGROUP GROUP g c COUNT 5 NOACK CLAIM 50 STREAMS s >", "[s [[2-1 [f 2] 140 2] [4-1 [f 4]]]]"},
		// NOACK does not apply to the claimed entry; it does to 4-1.
		{400, "XPENDING s g - + 10", "[[1-1 c 0 3] [2-1 c 0 3] [3-1 c 0 2]]"},
		// CLAIM is ignored with an ID other than '>'.
		{500, "XREADGROUP GROUP g c CLAIM 0 STREAMS s 0", "[s [[1-1 [f 1]] [2-1 [f 2]] [3-1 [f 3]]]]"},
		// A deleted entry loses its NACK instead of being claimed.
		{500, "XDEL s 1-1", "1"},
		{600, "XREADGROUP GROUP g d CLAIM 10 STREAMS s >", "[s [[2-1 [f 2] 100 4] [3-1 [f 3] 100 3]]]"},
		{600, "XPENDING s g", "[2 2-1 3-1 [[d 2]]]"},
		{600, "XREADGROUP GROUP g d CLAIM 10 STREAMS s >", "nil[]"},
	})
}

func TestXReadGroupClaimErrors(t *testing.T) {
	e := newPolicyEngine(t, 2, 0)
	for _, c := range []struct{ cmd, want string }{
		{"XREADGROUP GROUP g c CLAIM -1 STREAMS s >", "-ERR min-idle-time must be a positive integer"},
		{"XREADGROUP GROUP g c CLAIM x STREAMS s >", "-ERR min-idle-time is not an integer or out of range"},
		{"XREADGROUP GROUP g c CLAIM STREAMS s >", "-ERR min-idle-time is not an integer or out of range"},
	} {
		if got := run(e, 3, c.cmd); got != c.want {
			t.Errorf("%s: got %s want %s", c.cmd, got, c.want)
		}
		if v := Validate(3, argvOf(c.cmd)); v == nil || "-"+v.Msg != c.want {
			t.Errorf("Validate(%s) = %v, want %s", c.cmd, v, c.want)
		}
	}
}
