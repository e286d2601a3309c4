package engine

import (
	"fmt"
	"strings"
	"testing"
)

// Redis 8.2 reference policies: XDELEX, XACKDEL, and KEEPREF/DELREF/ACKED on
// XADD and XTRIM. Redis 7.0 (the differential oracle) lacks them, so these
// follow the documentation.

// newPolicyEngine has stream s with entries 1-1..n-1 and group g where
// consumer c has read the first `read` entries.
func newPolicyEngine(t *testing.T, n, read int) *Engine {
	t.Helper()
	e := New(Config{NodeMaxEntries: 3})
	for i := 1; i <= n; i++ {
		run(e, 1, fmt.Sprintf("XADD s %d-1 f %d", i, i))
	}
	run(e, 1, "XGROUP CREATE s g 0")
	if read > 0 {
		run(e, 2, fmt.Sprintf("XREADGROUP GROUP g c COUNT %d STREAMS s >", read))
	}
	return e
}

func TestXDelExReplies(t *testing.T) {
	e := newPolicyEngine(t, 4, 2)
	runSteps(t, e, []step{
		{3, "XDELEX nokey IDS 2 1-1 2-1", "[-1 -1]"},
		// ACKED: 1-1 is pending, 3-1 not yet delivered, 9-1 absent but
		// after the group's last-delivered-id: all three are "still
		// referenced" (t_stream.c xdelexCommand asks
		// streamEntryIsReferenced before looking for the entry).
		{3, "XDELEX s ACKED IDS 3 1-1 3-1 9-1", "[2 2 2]"},
		{3, "XDELEX s ACKED IDS 1 0-9", "[-1]"},
		{3, "XLEN s", "4"},
		{3, "XACK s g 1-1", "1"},
		{3, "XDELEX s ACKED IDS 1 1-1", "[1]"},
		// KEEPREF (default) deletes 2-1 and leaves the PEL reference.
		{3, "XDELEX s IDS 2 2-1 2-1", "[1 -1]"},
		{3, "XPENDING s g - + 10", "[[2-1 c 1 1]]"},
		// DELREF on an absent entry still clears dangling references.
		{3, "XDELEX s DELREF IDS 1 2-1", "[-1]"},
		{3, "XPENDING s g - + 10", "[]"},
		{3, "XLEN s", "2"},
		{3, "XINFO STREAM s", "[length 2 radix-tree-keys 2 radix-tree-nodes 6 last-generated-id 4-1 max-deleted-entry-id 2-1 entries-added 4 recorded-first-entry-id 3-1 idmp-duration 100 idmp-maxsize 100 pids-tracked 0 iids-tracked 0 iids-added 0 iids-duplicates 0 groups 1 first-entry [3-1 [f 3]] last-entry [4-1 [f 4]]]"},
		{3, "SET str x", "+OK"},
		{3, "XDELEX str IDS 1 1-1", "-" + ErrWrongType.Msg},
	})
	// The IDS block may precede the policy.
	e = newPolicyEngine(t, 2, 2)
	runSteps(t, e, []step{
		{3, "XDELEX s IDS 1 1-1 DELREF", "[1]"},
		{3, "XPENDING s g - + 10", "[[2-1 c 1 1]]"},
	})
}

func TestXDelExDelRefAllGroups(t *testing.T) {
	e := newPolicyEngine(t, 3, 3)
	runSteps(t, e, []step{
		{3, "XGROUP CREATE s h 0", "+OK"},
		{3, "XREADGROUP GROUP h d STREAMS s >", "[s [[1-1 [f 1]] [2-1 [f 2]] [3-1 [f 3]]]]"},
		{3, "XDELEX s DELREF IDS 2 1-1 3-1", "[1 1]"},
		{3, "XPENDING s g - + 10", "[[2-1 c 1 1]]"},
		{3, "XPENDING s h - + 10", "[[2-1 d 0 1]]"},
		{3, "XINFO CONSUMERS s h", "[[name d pending 1 idle 0 inactive 0]]"},
	})
}

func TestXAckDelReplies(t *testing.T) {
	e := newPolicyEngine(t, 4, 4)
	runSteps(t, e, []step{
		{3, "XGROUP CREATE s h 0", "+OK"},
		{3, "XREADGROUP GROUP h d COUNT 1 STREAMS s >", "[s [[1-1 [f 1]]]]"},
		{3, "XACKDEL nokey g IDS 1 1-1", "[-1]"},
		{3, "XACKDEL s nogroup IDS 1 1-1", "[-1]"},
		// ACKED: h still has 1-1 pending, and has not delivered 2-1.
		{3, "XACKDEL s g ACKED IDS 3 1-1 2-1 9-1", "[2 2 -1]"},
		{3, "XACKDEL s g ACKED IDS 1 1-1", "[-1]"},
		{3, "XLEN s", "4"},
		{3, "XACKDEL s h ACKED IDS 1 1-1", "[1]"},
		{3, "XLEN s", "3"},
		// KEEPREF deletes, leaving h's view intact (h has not read 3-1).
		{3, "XACKDEL s g IDS 1 3-1", "[1]"},
		{3, "XLEN s", "2"},
		// DELREF clears every group's reference.
		{3, "XREADGROUP GROUP h d STREAMS s >", "[s [[2-1 [f 2]] [4-1 [f 4]]]]"},
		{3, "XACKDEL s g DELREF IDS 1 4-1", "[1]"},
		{3, "XPENDING s h - + 10", "[[2-1 d 0 1]]"},
		{3, "XPENDING s g - + 10", "[]"},
		{3, "SET str x", "+OK"},
		{3, "XACKDEL str g IDS 1 1-1", "-" + ErrWrongType.Msg},
	})
}

func TestXDelExXAckDelErrors(t *testing.T) {
	e := newPolicyEngine(t, 2, 0)
	mismatch := "-ERR The `numids` parameter must match the number of arguments"
	numids := "-ERR Number of IDs must be a positive integer"
	for _, c := range []struct{ cmd, want string }{
		{"XDELEX s IDS 1", "-ERR wrong number of arguments for 'xdelex' command"},
		{"XDELEX s IDS 0 1-1", numids},
		{"XDELEX s IDS -1 1-1", numids},
		{"XDELEX s IDS x 1-1", numids},
		{"XDELEX s IDS 3 1-1 2-1", mismatch},
		{"XDELEX s IDS 1 1-1 2-1", "-ERR syntax error"},
		{"XDELEX s KEEPREF ACKED IDS 1 1-1", "-ERR syntax error"},
		{"XDELEX s DELREF IDS 1 1-1 KEEPREF", "-ERR syntax error"},
		{"XDELEX s IDS 1 1-1 IDS", "-ERR syntax error"},
		{"XDELEX s BOGUS IDS 1 1-1", "-ERR syntax error"},
		{"XDELEX s KEEPREF 1-1 2-1", "-ERR syntax error"},
		{"XDELEX s IDS 1 nope", "-" + ErrInvalidStreamID.Msg},
		{"XDELEX s IDS 1 +", "-" + ErrInvalidStreamID.Msg},
		{"XACKDEL s g IDS 1", "-ERR wrong number of arguments for 'xackdel' command"},
		{"XACKDEL s g IDS 0 1-1", numids},
		{"XACKDEL s g IDS 2 1-1", mismatch},
		{"XACKDEL s g ACKED DELREF IDS 1 1-1", "-ERR syntax error"},
		{"XACKDEL s g IDS 1 x-y", "-" + ErrInvalidStreamID.Msg},
	} {
		if got := run(e, 3, c.cmd); got != c.want {
			t.Errorf("%s: got %s want %s", c.cmd, got, c.want)
		}
		// WRONGTYPE precedes every error but arity (t_stream.c), so the
		// leader-side validator can only be sure of the arity.
		v := Validate(3, argvOf(c.cmd))
		if strings.Contains(c.want, "wrong number of arguments") {
			if v == nil || "-"+v.Msg != c.want {
				t.Errorf("Validate(%s) = %v, want %s", c.cmd, v, c.want)
			}
		} else if v != nil {
			t.Errorf("Validate(%s) = %v, want nil", c.cmd, v)
		}
	}
	run(e, 3, "SET str x")
	runSteps(t, e, []step{
		{3, "XLEN s", "2"},
		// Order of errors: WRONGTYPE first; a missing key (or group)
		// answers -1 per ID without parsing them.
		{3, "XDELEX str BOGUS IDS 1 1-1", "-" + ErrWrongType.Msg},
		{3, "XACKDEL str g BOGUS IDS 1 1-1", "-" + ErrWrongType.Msg},
		{3, "XDELEX nokey IDS 2 nope 1-1", "[-1 -1]"},
		{3, "XACKDEL nokey g IDS 1 nope", "[-1]"},
		{3, "XACKDEL s nogroup IDS 2 nope +", "[-1 -1]"},
		{3, "XDELEX nokey BOGUS IDS 1 1-1", "-ERR syntax error"},
		// A later IDS block replaces an earlier one.
		{3, "XDELEX s IDS 1 nope IDS 1 9-9", "[-1]"},
		{3, "XLEN s", "2"},
	})
}

func argvOf(line string) [][]byte {
	var out [][]byte
	for _, f := range splitFields(line) {
		out = append(out, []byte(f))
	}
	return out
}

func splitFields(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

func TestTrimPolicies(t *testing.T) {
	// 9 entries in nodes of 3 (stream-node-max-entries 3).
	e := newPolicyEngine(t, 9, 5)
	runSteps(t, e, []step{
		{3, "XACK s g 1-1 2-1", "2"},
		// ACKED exact MAXLEN: 1-1, 2-1 go; 3-1..5-1 pending, 6-1.. not
		// delivered: nothing else may go.
		{3, "XTRIM s MAXLEN 0 ACKED", "2"},
		{3, "XLEN s", "7"},
		{3, "XRANGE s - + COUNT 1", "[[3-1 [f 3]]]"},
		// KEEPREF (explicit) keeps the PEL references.
		{3, "XTRIM s MINID 4-1 KEEPREF", "1"},
		{3, "XPENDING s g - + 10", "[[3-1 c 1 1] [4-1 c 1 1] [5-1 c 1 1]]"},
		// DELREF removes references of what it trims (4-1), not others (3-1).
		{3, "XTRIM s DELREF MINID 5-1", "1"},
		{3, "XPENDING s g - + 10", "[[3-1 c 1 1] [5-1 c 1 1]]"},
		// XADD with a policy.
		{4, "XADD s ACKED MAXLEN 1 10-1 f 10", "10-1"},
		{4, "XLEN s", "6"},
		{4, "XREADGROUP GROUP g c STREAMS s >", "[s [[6-1 [f 6]] [7-1 [f 7]] [8-1 [f 8]] [9-1 [f 9]] [10-1 [f 10]]]]"},
		{4, "XACK s g 6-1 8-1", "2"},
		// ACKED skips pending 5-1 and 7-1 and deletes acked 6-1, 8-1.
		{4, "XTRIM s MAXLEN 0 ACKED", "2"},
		{4, "XRANGE s - +", "[[5-1 [f 5]] [7-1 [f 7]] [9-1 [f 9]] [10-1 [f 10]]]"},
	})
}

func TestTrimAckedApprox(t *testing.T) {
	e := New(Config{NodeMaxEntries: 2})
	for i := 1; i <= 9; i++ {
		run(e, 1, fmt.Sprintf("XADD s %d-1 f %d", i, i))
	}
	// Nodes: [1 2] [3 4] [5 6] [7 8] [9].
	runSteps(t, e, []step{
		{2, "XGROUP CREATE s g 0", "+OK"},
		{2, "XREADGROUP GROUP g c COUNT 5 STREAMS s >", "[s [[1-1 [f 1]] [2-1 [f 2]] [3-1 [f 3]] [4-1 [f 4]] [5-1 [f 5]]]]"},
		{2, "XTRIM s MAXLEN ~ 0 ACKED", "0"},
		{2, "XACK s g 1-1 2-1 3-1 4-1", "4"},
		// The first two nodes are fully acked: freed; the third has 5-1
		// pending and 6-1 undelivered: kept, and so are the later ones.
		{2, "XTRIM s MAXLEN ~ 0 ACKED", "4"},
		{2, "XACK s g 5-1", "1"},
		// "~" is ignored under ACKED (t_stream.c streamTrim): 5-1 goes on
		// its own though 6-1, in its node, stays.
		{2, "XTRIM s MAXLEN ~ 0 ACKED", "1"},
		{2, "XREADGROUP GROUP g c STREAMS s >", "[s [[6-1 [f 6]] [7-1 [f 7]] [8-1 [f 8]] [9-1 [f 9]]]]"},
		{2, "XACK s g 6-1 7-1 8-1 9-1", "4"},
		{2, "XTRIM s MAXLEN ~ 0 ACKED", "4"},
		{2, "XLEN s", "0"},
	})
	// With no groups ACKED trims as exact KEEPREF does: "~" is ignored.
	a, b := New(Config{NodeMaxEntries: 2}), New(Config{NodeMaxEntries: 2})
	for i := 1; i <= 20; i++ {
		run(a, 1, fmt.Sprintf("XADD s %d-1 f %d", i, i))
		run(b, 1, fmt.Sprintf("XADD s %d-1 f %d", i, i))
	}
	for _, trim := range []string{"MAXLEN ~ 15", "MINID 8-1", "MAXLEN 9", "MINID ~ 16-1"} {
		ga, gb := run(a, 2, "XTRIM s "+strings.Replace(trim, "~ ", "", 1)), run(b, 2, "XTRIM s "+trim+" ACKED")
		ra, rb := run(a, 2, "XRANGE s - +"), run(b, 2, "XRANGE s - +")
		if ga != gb || ra != rb {
			t.Fatalf("%s: KEEPREF %s %s, ACKED %s %s", trim, ga, ra, gb, rb)
		}
	}
	// Under DELREF "~" is ignored too: MAXLEN ~ 4 trims to exactly 4 where
	// KEEPREF frees whole nodes only.
	k, d := New(Config{NodeMaxEntries: 2}), New(Config{NodeMaxEntries: 2})
	for i := 1; i <= 9; i++ {
		run(k, 1, fmt.Sprintf("XADD s %d-1 f %d", i, i))
		run(d, 1, fmt.Sprintf("XADD s %d-1 f %d", i, i))
	}
	if got := run(k, 2, "XTRIM s MAXLEN ~ 4"); got == "5" {
		t.Fatalf("KEEPREF ~ trimmed exactly (%s): the case shows nothing", got)
	}
	if got := run(d, 2, "XTRIM s MAXLEN ~ 4 DELREF"); got != "5" {
		t.Fatalf("DELREF ~: trimmed %s, want 5", got)
	}
	if got := run(d, 2, "XRANGE s - +"); got != "[[6-1 [f 6]] [7-1 [f 7]] [8-1 [f 8]] [9-1 [f 9]]]" {
		t.Fatalf("DELREF ~ left %s", got)
	}
}

func TestTrimPolicyErrors(t *testing.T) {
	e := newPolicyEngine(t, 2, 0)
	for _, c := range []struct{ cmd, want string }{
		{"XTRIM s MAXLEN 0 ACKED DELREF", "-ERR syntax error"},
		{"XTRIM s KEEPREF KEEPREF MAXLEN 0", "-ERR syntax error"},
		// A second policy is read as XADD's ID (t_stream.c).
		{"XADD s ACKED KEEPREF * f v", "-" + ErrInvalidStreamID.Msg},
		{"XTRIM s ACKED", "-ERR wrong number of arguments for 'xtrim' command"},
		{"XTRIM s ACKED LIMIT 1", "-" + errLimitNoStrategy.Msg},
		{"XTRIM s ACKED KEEPREF", "-ERR syntax error"},
		{"XTRIM s DELREF x", "-ERR syntax error"},
	} {
		if got := run(e, 3, c.cmd); got != c.want {
			t.Errorf("%s: got %s want %s", c.cmd, got, c.want)
		}
	}
}
