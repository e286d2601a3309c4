package engine

import (
	"fmt"
	"testing"
)

// XNACK (8.8) and XREADGROUP ... CLAIM (8.4), following the documentation.

// https://redis.io/docs/latest/commands/xnack/ and t_stream.c xnackCommand:
// released entries lose their owner (XPENDING shows "" and idle -1), their
// delivery time becomes 0, and the delivery count follows the mode.
func TestXNackModes(t *testing.T) {
	e := newPolicyEngine(t, 5, 4) // c read 1-1..4-1 at now=2
	fatal := fmt.Sprint(int64(nackFatalCount))
	runSteps(t, e, []step{
		{10, "XCLAIM s g c 0 1-1 2-1 3-1", "[[1-1 [f 1]] [2-1 [f 2]] [3-1 [f 3]]]"}, // counts 2
		{20, "XNACK s g SILENT IDS 1 1-1", "1"},
		{20, "XNACK s g FAIL IDS 2 2-1 9-1", "1"},
		{20, "XNACK s g FATAL IDS 1 3-1", "1"},
		{20, "XNACK s g SILENT IDS 1 4-1 RETRYCOUNT 7", "1"},
		// The documented XPENDING view of released entries.
		{20, "XPENDING s g - + 10", "[[1-1  -1 1] [2-1  -1 2] [3-1  -1 " + fatal + "] [4-1  -1 7]]"},
		// IDLE filters owned entries only; released ones always show.
		{20, "XPENDING s g IDLE 100000 - + 10", "[[1-1  -1 1] [2-1  -1 2] [3-1  -1 " + fatal + "] [4-1  -1 7]]"},
		// The summary form counts them but lists no consumer for them.
		{20, "XPENDING s g", "[4 1-1 4-1 []]"},
		{20, "XINFO CONSUMERS s g", "[[name c pending 0 idle 10 inactive 10]]"},
		// SILENT saturates at 0; releasing again is counted again.
		{20, "XNACK s g SILENT IDS 1 1-1", "1"},
		{20, "XNACK s g SILENT IDS 1 1-1", "1"},
		{20, "XPENDING s g - + 1", "[[1-1  -1 0]]"},
		// FORCE creates an owner-less entry, count 0, for a live entry not
		// pending; a missing entry is skipped even with FORCE.
		{20, "XNACK s g FAIL IDS 2 5-1 9-1 FORCE", "1"},
		{20, "XPENDING s g 5-1 5-1 1", "[[5-1  -1 0]]"},
		{20, "XNACK s g FATAL IDS 1 5-1 FORCE", "1"},
		{20, "XPENDING s g 5-1 5-1 1", "[[5-1  -1 " + fatal + "]]"},
		// XINFO STREAM FULL: consumer "", delivery time 0, nacked-count.
		{20, "XINFO STREAM s FULL COUNT 1", "[length 5 radix-tree-keys 2 radix-tree-nodes 6 last-generated-id 5-1 max-deleted-entry-id 0-0 entries-added 5 recorded-first-entry-id 1-1 idmp-duration 100 idmp-maxsize 100 pids-tracked 0 iids-tracked 0 iids-added 0 iids-duplicates 0 entries [[1-1 [f 1]]] groups [[name g last-delivered-id 4-1 entries-read 4 lag 1 pel-count 5 nacked-count 5 pending [[1-1  0 0]] consumers [[name c seen-time 10 active-time 10 pel-count 0 pending []]]]]]"},
		// XAUTOCLAIM takes owner-less entries whatever the min-idle-time.
		{21, "XAUTOCLAIM s g d 3600000 0 COUNT 1", "[2-1 [[1-1 [f 1]]] []]"},
		{21, "XPENDING s g - + 1", "[[1-1 d 0 1]]"},
		// So does XCLAIM.
		{21, "XCLAIM s g d 3600000 2-1 JUSTID", "[2-1]"},
		{21, "XPENDING s g 2-1 2-1 1 d", "[[2-1 d 0 2]]"},
		{21, "XNACK s nogroup FAIL IDS 1 1-1", "-NOGROUP No such key 's' or consumer group 'nogroup'"},
		{21, "XNACK nokey g FAIL IDS 1 1-1", "-NOGROUP No such key 'nokey' or consumer group 'g'"},
	})
}

// Released entries are claimed before every other pending entry, in release
// order (the "NACK zone" at the head of Redis's time-ordered PEL); the idle
// time XREADGROUP ... CLAIM reports for them is now minus delivery time 0.
func TestXNackZoneOrder(t *testing.T) {
	e := newPolicyEngine(t, 4, 4)
	runSteps(t, e, []step{
		{100, "XNACK s g FAIL IDS 2 3-1 1-1", "2"},
		{100, "XNACK s g FAIL IDS 1 2-1", "1"},
		// Releasing again moves 3-1 to the end of the zone.
		{100, "XNACK s g FAIL IDS 1 3-1", "1"},
		{200, "XREADGROUP GROUP g d COUNT 3 CLAIM 50 STREAMS s >", "[s [[1-1 [f 1] 200 1] [2-1 [f 2] 200 1] [3-1 [f 3] 200 1]]]"},
		{200, "XPENDING s g - + 10", "[[1-1 d 0 2] [2-1 d 0 2] [3-1 d 0 2] [4-1 c 198 1]]"},
	})
}

// Error replies follow t_stream.c xnackCommand: WRONGTYPE, then NOGROUP
// before any other argument is read, then mode, options, IDs. Redis passes
// most of these messages with their "ERR " to addReplyError, which adds its
// own: the server's replies carry the prefix twice.
func TestXNackErrors(t *testing.T) {
	e := newPolicyEngine(t, 2, 2)
	run(e, 2, "SET str v")
	for _, c := range []struct{ cmd, want string }{
		{"XNACK s g FAIL IDS 1", "-ERR wrong number of arguments for 'xnack' command"},
		{"XNACK str g MAYBE IDS 1 1-1", "-" + ErrWrongType.Msg},
		{"XNACK s nogroup MAYBE IDS x y", "-NOGROUP No such key 's' or consumer group 'nogroup'"},
		{"XNACK s g MAYBE IDS 1 1-1", "-ERR ERR mode must be SILENT, FAIL, or FATAL"},
		{"XNACK s g FAIL IDS 0 1-1", "-ERR numids must be a positive integer"},
		{"XNACK s g FAIL IDS x 1-1", "-ERR numids must be a positive integer"},
		{"XNACK s g FAIL IDS 2 1-1", "-ERR ERR number of IDs doesn't match numids"},
		{"XNACK s g FAIL IDS 1 1-1 RETRYCOUNT -1", "-ERR ERR Invalid RETRYCOUNT value, must be >= 0"},
		{"XNACK s g FAIL IDS 1 1-1 RETRYCOUNT x", "-ERR value is not an integer or out of range"},
		{"XNACK s g FAIL IDS 1 1-1 BOGUS", "-ERR ERR Unrecognized XNACK option 'BOGUS'"},
		{"XNACK s g FAIL FORCE RETRYCOUNT 1 x", "-ERR ERR Unrecognized XNACK option 'x'"},
		{"XNACK s g FAIL FORCE RETRYCOUNT 1 FORCE", "-ERR ERR syntax error, expected IDS keyword"},
		{"XNACK s g FAIL IDS 1 zz FORCE", "-" + ErrInvalidStreamID.Msg},
	} {
		if got := run(e, 3, c.cmd); got != c.want {
			t.Errorf("%s: got %s want %s", c.cmd, got, c.want)
		}
	}
	// Only the arity error is certain whatever the keyspace holds.
	if v := Validate(3, argvOf("XNACK s g FAIL IDS 1")); v == nil || v.Msg != "ERR wrong number of arguments for 'xnack' command" {
		t.Errorf("Validate(arity) = %v", v)
	}
	if v := Validate(3, argvOf("XNACK s g MAYBE IDS 1 1-1")); v != nil {
		t.Errorf("Validate(bad mode) = %v, want nil (NOGROUP would come first)", v)
	}
	// A later IDS block replaces an earlier one, as in Redis.
	if got := run(e, 3, "XNACK s g FAIL IDS 1 9-9 IDS 2 1-1 2-1"); got != "2" {
		t.Errorf("two IDS blocks: got %s want 2", got)
	}
}

// https://redis.io/docs/latest/commands/xreadgroup/ and t_stream.c
// streamReplyWithRange: with CLAIM every entry has four elements, new ones
// with idle time 0 and delivery count 0.
func TestXReadGroupClaim(t *testing.T) {
	e := newPolicyEngine(t, 3, 0)
	runSteps(t, e, []step{
		{100, "XREADGROUP GROUP g a COUNT 1 STREAMS s >", "[s [[1-1 [f 1]]]]"},
		{150, "XREADGROUP GROUP g a COUNT 1 STREAMS s >", "[s [[2-1 [f 2]]]]"},
		// Nothing idle for 100 ms yet: only the new entry, with 0 0.
		{160, "XREADGROUP GROUP g b CLAIM 100 STREAMS s >", "[s [[3-1 [f 3] 0 0]]]"},
		// At 260, 1-1 (idle 160) and 2-1 (110) qualify, longest idle first;
		// 3-1 (idle 100) too. Delivery counts before this read.
		{260, "XREADGROUP GROUP g b CLAIM 101 STREAMS s >", "[s [[1-1 [f 1] 160 1] [2-1 [f 2] 110 1]]]"},
		{260, "XPENDING s g - + 10", "[[1-1 b 0 2] [2-1 b 0 2] [3-1 b 100 1]]"},
		{261, "XADD s 4-1 f 4", "4-1"},
		// COUNT bounds claimed plus new.
		{400, "XREADGROUP GROUP g c COUNT 2 CLAIM 0 STREAMS s >", "[s [[3-1 [f 3] 240 1] [1-1 [f 1] 140 2]]]"},
		{400, "XREADGROUP GROUP g c COUNT 5 NOACK CLAIM 50 STREAMS s >", "[s [[2-1 [f 2] 140 2] [4-1 [f 4] 0 0]]]"},
		// NOACK does not apply to the claimed entry; it does to 4-1.
		{400, "XPENDING s g - + 10", "[[1-1 c 0 3] [2-1 c 0 3] [3-1 c 0 2]]"},
		// CLAIM is ignored with an ID other than '>': two elements.
		{500, "XREADGROUP GROUP g c CLAIM 0 STREAMS s 0", "[s [[1-1 [f 1]] [2-1 [f 2]] [3-1 [f 3]]]]"},
		// A deleted entry is skipped and stays pending (Redis drops it only
		// in XCLAIM/XAUTOCLAIM).
		{500, "XDEL s 1-1", "1"},
		{600, "XREADGROUP GROUP g d CLAIM 10 STREAMS s >", "[s [[2-1 [f 2] 100 4] [3-1 [f 3] 100 3]]]"},
		{600, "XPENDING s g", "[3 1-1 3-1 [[c 1] [d 2]]]"},
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
	// t_stream.c xreadCommand (XREAD is a read: no leader-side validation).
	if got, want := run(e, 3, "XREAD CLAIM 10 STREAMS s 0"), "-ERR The CLAIM option is only supported by XREADGROUP. You called XREAD instead."; got != want {
		t.Errorf("XREAD CLAIM: got %s want %s", got, want)
	}
}
