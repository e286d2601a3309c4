package main

import (
	"strings"
	"testing"
)

func TestParseTakesCompleteCommandsOnly(t *testing.T) {
	cmd := "*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n$1\r\nf\r\n$1\r\nv\r\n"
	in := cmd + cmd + cmd[:len(cmd)-3]
	n, used, rec, err := parse([]byte(in), nil)
	if err != nil || n != 2 || used != 2*len(cmd) || string(rec) != "XADDs*fvXADDs*fv" {
		t.Fatalf("parse = %d commands, %d bytes, %q, %v", n, used, rec, err)
	}
	// Each cut of one command is incomplete: nothing is taken.
	for i := range len(cmd) {
		if n, used, _, err := parse([]byte(cmd[:i]), nil); n != 0 || used != 0 || err != nil {
			t.Fatalf("cut at %d: %d commands, %d bytes, %v", i, n, used, err)
		}
	}
	if _, _, _, err := parse([]byte("PING\r\n"), nil); err == nil {
		t.Fatal("an inline command must be refused")
	}
}

func TestRepliesAreIncreasingStreamIDs(t *testing.T) {
	var g ids
	out := g.reply(nil, 1700000000000)
	out = g.reply(out, 1700000000000)
	out = g.reply(out, 1699999999999) // the clock went back: the ID does not
	out = g.reply(out, 1700000000001)
	want := []string{"1700000000000-1", "1700000000000-2", "1700000000000-3", "1700000000001-1"}
	var b strings.Builder
	for _, id := range want {
		b.WriteString("$15\r\n" + id + "\r\n")
	}
	if string(out) != b.String() {
		t.Fatalf("replies %q, want %q", out, b.String())
	}
}
