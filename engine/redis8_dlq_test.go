package engine

import (
	"reflect"
	"testing"

	"github.com/raftstream/raftstream/slots"
)

// Dead-letter streams (raftstream extension, deadletter.go).

func TestDeadLetterOnRedelivery(t *testing.T) {
	e := New(DefaultConfig())
	runSteps(t, e, []step{
		{100, "XADD {o} 1-0 item a", "1-0"},
		{100, "XADD {o} 2-0 item b", "2-0"},
		{100, "XGROUP CREATE {o} g 0", "+OK"},
		{100, "XGROUP SETDLQ {o} g 2 {o}:dlq", "+OK"},
		{101, "XREADGROUP GROUP g c STREAMS {o} >", "[{o} [[1-0 [item a]] [2-0 [item b]]]]"},
		{102, "XREADGROUP GROUP g c STREAMS {o} 0", "[{o} [[1-0 [item a]] [2-0 [item b]]]]"}, // count 2
		{103, "XACK {o} g 2-0", "1"},
		// A third delivery of 1-0 would exceed 2: it moves and is acked.
		{104, "XREADGROUP GROUP g c STREAMS {o} 0", "[{o} []]"},
		{104, "XPENDING {o} g", "[0 nil nil nil[]]"},
		{104, "XRANGE {o}:dlq - +", "[[104-0 [item a dlq-source-id 1-0 dlq-group g dlq-deliveries 2]]]"},
		{104, "XLEN {o}", "2"},
	})
}

func TestDeadLetterOnClaims(t *testing.T) {
	e := New(DefaultConfig())
	runSteps(t, e, []step{
		{100, "XADD {o} 1-0 k 1", "1-0"},
		{100, "XADD {o} 2-0 k 2", "2-0"},
		{100, "XADD {o} 3-0 k 3", "3-0"},
		{100, "XGROUP CREATE {o} g 0", "+OK"},
		{100, "XGROUP SETDLQ {o} g 1 {o}:dlq", "+OK"},
		{100, "XREADGROUP GROUP g c STREAMS {o} >", "[{o} [[1-0 [k 1]] [2-0 [k 2]] [3-0 [k 3]]]]"},
		// XCLAIM with JUSTID or RETRYCOUNT does not dead-letter.
		{200, "XCLAIM {o} g d 0 1-0 JUSTID", "[1-0]"},
		{200, "XCLAIM {o} g d 0 1-0 RETRYCOUNT 5", "[[1-0 [k 1]]]"},
		{200, "XCLAIM {o} g d 0 1-0", "[]"},
		{200, "XAUTOCLAIM {o} g d 0 0", "[0-0 [] []]"},
		{200, "XLEN {o}:dlq", "3"},
		{200, "XADD {o} 4-0 k 4", "4-0"},
		{200, "XREADGROUP GROUP g c STREAMS {o} >", "[{o} [[4-0 [k 4]]]]"},
		// XNACK FATAL then CLAIM: dead-lettered instead of delivered.
		{300, "XNACK {o} g FATAL IDS 1 4-0", "1"},
		{300, "XREADGROUP GROUP g d CLAIM 0 STREAMS {o} >", "nil[]"},
		{300, "XRANGE {o}:dlq 300 +", "[[300-0 [k 4 dlq-source-id 4-0 dlq-group g dlq-deliveries 9223372036854775807]]]"},
		// OFF: back to Redis behaviour.
		{300, "XGROUP SETDLQ {o} g OFF", "+OK"},
		{300, "XADD {o} 5-0 k 5", "5-0"},
		{300, "XREADGROUP GROUP g c STREAMS {o} >", "[{o} [[5-0 [k 5]]]]"},
		{301, "XREADGROUP GROUP g c STREAMS {o} 0", "[{o} [[5-0 [k 5]]]]"},
		{302, "XREADGROUP GROUP g c STREAMS {o} 0", "[{o} [[5-0 [k 5]]]]"},
		// A DLQ key of another type: entries are delivered normally.
		{302, "SET {o}:bad x", "+OK"},
		{302, "XGROUP SETDLQ {o} g 1 {o}:bad", "+OK"},
		{303, "XREADGROUP GROUP g c STREAMS {o} 0", "[{o} [[5-0 [k 5]]]]"},
	})
}

func TestSetDLQErrors(t *testing.T) {
	if slots.Of([]byte("a")) == slots.Of([]byte("b")) {
		t.Fatal("test keys share a slot")
	}
	e := New(DefaultConfig())
	run(e, 1, "XGROUP CREATE a g $ MKSTREAM")
	for _, c := range []struct{ cmd, want string }{
		{"XGROUP SETDLQ a g 3 b", "-" + errDLQCrossSlot.Msg},
		{"XGROUP SETDLQ a g 3 a", "-" + errDLQSameKey.Msg},
		{"XGROUP SETDLQ a g 0 {a}x", "-" + errDLQMax.Msg},
		{"XGROUP SETDLQ a g x {a}x", "-" + errDLQMax.Msg},
		{"XGROUP SETDLQ a g ON", "-ERR syntax error"},
		{"XGROUP SETDLQ a g 1 {a}x y", "-ERR syntax error"},
		{"XGROUP SETDLQ a", "-ERR wrong number of arguments for 'xgroup|setdlq' command"},
	} {
		if got := run(e, 2, c.cmd); got != c.want {
			t.Errorf("%s: got %s want %s", c.cmd, got, c.want)
		}
		if v := Validate(2, argvOf(c.cmd)); v == nil || "-"+v.Msg != c.want {
			t.Errorf("Validate(%s) = %v, want %s", c.cmd, v, c.want)
		}
	}
	runSteps(t, e, []step{
		{2, "XGROUP SETDLQ a nogroup OFF", "-NOGROUP No such consumer group 'nogroup' for key name 'a'"},
		{2, "XGROUP SETDLQ {a}b g OFF", "-ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."},
		{2, "XGROUP SETDLQ a g 2 {a}:dlq", "+OK"},
	})
}

func TestDeadLetterSettings(t *testing.T) {
	e := New(DefaultConfig())
	runSteps(t, e, []step{
		{1, "XGROUP CREATE {a} g2 $ MKSTREAM", "+OK"},
		{1, "XGROUP CREATE {a} g1 $", "+OK"},
		{1, "XGROUP CREATE {a} g3 $", "+OK"},
		{2, "XGROUP SETDLQ {a} g2 5 {a}:dlq2", "+OK"},
		{2, "XGROUP SETDLQ {a} g1 3 {a}:dlq", "+OK"},
		{2, "SET {a}str v", "+OK"},
	})
	want := []DeadLetterSetting{{"g1", 3, "{a}:dlq"}, {"g2", 5, "{a}:dlq2"}}
	if got := e.DeadLetterSettings([]byte("{a}")); !reflect.DeepEqual(got, want) {
		t.Errorf("settings %v, want %v (g3 has none)", got, want)
	}
	run(e, 3, "XGROUP SETDLQ {a} g1 OFF")
	if got := e.DeadLetterSettings([]byte("{a}")); !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("after OFF: %v", got)
	}
	for _, k := range []string{"{a}str", "missing"} {
		if got := e.DeadLetterSettings([]byte(k)); got != nil {
			t.Errorf("%s: %v, want nil", k, got)
		}
	}
}
