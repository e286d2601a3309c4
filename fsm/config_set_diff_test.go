package fsm_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp"
)

// TestConfigSetMatchesRedis: the replicated CONFIG SET, applied from the log
// (engine/config.go), answers byte for byte as redis-server does and leaves
// the same configuration behind.
func TestConfigSetMatchesRedis(t *testing.T) {
	addr := testkit.StartRedis(t)
	c, err := testkit.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	script := [][]string{
		{"CONFIG", "SET", "stream-node-max-bytes", "1kb"},
		{"CONFIG", "SET", "stream-node-max-bytes", "2K"},
		{"config", "set", "STREAM-NODE-MAX-ENTRIES", "7"},
		{"config", "set", "STREAM-NODE-MAX-ENTRIES", "x"},
		{"CONFIG", "SET", "stream-node-max-entries", "1", "STREAM-node-max-entries", "2"},
		{"CONFIG", "SET", "stream-node-max-bytes", "-1"},
		{"CONFIG", "SET", "stream-node-max-bytes", "abc"},
		{"CONFIG", "SET", "stream-node-max-bytes", "1.5"},
		{"CONFIG", "SET", "stream-node-max-bytes", "3mb"},
		{"CONFIG", "SET", "stream-node-max-bytes", "1Gb"},
		{"CONFIG", "SET", "stream-node-max-bytes", "99999999999999999999"},
		{"CONFIG", "SET", "stream-node-max-bytes", "12b"},
		{"CONFIG", "SET", "stream-node-max-entries", "abc"},
		{"CONFIG", "SET", "stream-node-max-entries", "-5"},
		{"CONFIG", "SET", "stream-node-max-entries", "007"},
		{"CONFIG", "SET", "stream-node-max-entries", "+5"},
		{"CONFIG", "SET", "stream-node-max-entries", ""},
		{"CONFIG", "SET", "stream-node-max-entries", "99999999999999999999"},
		{"CONFIG", "SET", "stream-node-max-entries", "9223372036854775807"},
		{"CONFIG", "SET", "stream-node-max-entries", "0"},
		{"CONFIG", "SET", "stream-node-max-entries", "5", "stream-node-max-bytes", "7"},
		{"CONFIG", "SET", "stream-node-max-entries", "1", "stream-node-max-entries", "2"},
		{"CONFIG", "SET", "stream-node-max-entries", "1", "nosuchparam", "2"},
		{"CONFIG", "SET", "nosuchparam", "1"},
		{"CONFIG", "SET", "stream-node-max-entries"},
		// All or nothing: the valid first pair must not stick.
		{"CONFIG", "SET", "stream-node-max-entries", "11", "stream-node-max-bytes", "x"},
		{"CONFIG", "SET", "stream-node-max-entries", "12"},
	}
	cmds := make([][][]byte, len(script))
	for i, args := range script {
		for _, a := range args {
			cmds[i] = append(cmds[i], []byte(a))
		}
	}
	got, cfg := fsm.ExecSequenceForTest(1, cmds...)
	for i, args := range script {
		want, err := c.Do(args...)
		if err != nil {
			t.Fatal(err)
		}
		if g := resp.AppendReply(nil, got[i], 2); !bytes.Equal(g, want) {
			t.Errorf("%q:\n got %q\nwant %q", strings.Join(args, " "), g, want)
		}
	}
	for name, v := range map[string]int{"stream-node-max-bytes": cfg.NodeMaxBytes, "stream-node-max-entries": cfg.NodeMaxEntries} {
		raw, err := c.Do("CONFIG", "GET", name)
		if err != nil {
			t.Fatal(err)
		}
		if want := "$" + strconv.Itoa(len(strconv.Itoa(v))) + "\r\n" + strconv.Itoa(v) + "\r\n"; !bytes.HasSuffix(raw, []byte(want)) {
			t.Errorf("%s: redis has %q, we have %d", name, raw, v)
		}
	}
}
