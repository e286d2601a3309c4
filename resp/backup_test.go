package resp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/resp/wire"
)

// backupAll runs a whole RAFTSTREAM BACKUP of shard on c: the header's
// fields and the concatenated chunks, and how many chunks there were.
func backupAll(t *testing.T, c *wire.Client, shard int) (map[string]any, []byte, int) {
	t.Helper()
	v := parse(t, do(t, c, "RAFTSTREAM", "BACKUP", fmt.Sprint(shard)))
	a, ok := v.([]any)
	if !ok || len(a)%2 != 0 {
		t.Fatalf("RAFTSTREAM BACKUP %d: %v", shard, v)
	}
	hdr := map[string]any{}
	for i := 0; i < len(a); i += 2 {
		hdr[a[i].(string)] = a[i+1]
	}
	var data bytes.Buffer
	chunks := 0
	for {
		v := parse(t, do(t, c, "RAFTSTREAM", "BACKUP", "NEXT"))
		if v == nil {
			return hdr, data.Bytes(), chunks
		}
		s, ok := v.(string)
		if !ok || len(s) == 0 || len(s) > backupChunk {
			t.Fatalf("RAFTSTREAM BACKUP NEXT: %.100v", v)
		}
		data.WriteString(s)
		chunks++
	}
}

func parse(t *testing.T, raw string) any {
	t.Helper()
	v, err := wire.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestBackupSession: a shard's backup arrives in chunks of at most
// backupChunk and decodes to the shard's state at the time BACKUP was
// answered, whatever is written after; the header names the shard's log
// position and slot ranges.
func TestBackupSession(t *testing.T) {
	be := newFakeBackend(2)
	addr := startServer(t, be, DefaultConfig())
	c, w := dial(t, addr), dial(t, addr)
	payload := strings.Repeat("x", 1000)
	for i := range 3000 {
		do(t, w, "XADD", "{a}s", "*", "n", fmt.Sprint(i), "p", payload)
	}
	do(t, w, "SET", "{a}str", "v")
	do(t, w, "XGROUP", "CREATE", "{a}s", "g", "0")
	do(t, w, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "5", "STREAMS", "{a}s", ">")
	shard := be.ShardOfSlot(slotOf([]byte("{a}s")))

	// Start the backup, then write more: the backup keeps its point.
	v := parse(t, do(t, c, "RAFTSTREAM", "BACKUP", fmt.Sprint(shard)))
	hdrArr := v.([]any)
	for i := range 100 {
		do(t, w, "XADD", "{a}s", "*", "late", fmt.Sprint(i))
	}
	var data bytes.Buffer
	chunks := 0
	for {
		v := parse(t, do(t, c, "RAFTSTREAM", "BACKUP", "NEXT"))
		if v == nil {
			break
		}
		data.WriteString(v.(string))
		chunks++
	}
	if chunks < 3 {
		t.Errorf("%d bytes came in %d chunks, want several of at most %d", data.Len(), chunks, backupChunk)
	}
	e, err := engine.Restore(&data)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Exec(0, argv("XLEN", "{a}s")); got != engine.Integer(3000) {
		t.Errorf("backup's XLEN %v, want 3000 (the 100 later entries are not in it)", got)
	}
	if got, _ := e.Exec(0, argv("GET", "{a}str")).(engine.BulkString); string(got) != "v" {
		t.Errorf("backup's GET %v", got)
	}
	if got := e.Exec(0, argv("XPENDING", "{a}s", "g")); fmt.Sprint(got.(engine.Array)[0]) != "5" {
		t.Errorf("backup's XPENDING %v", got)
	}
	want := fmt.Sprintf("[shard %d index 3003 term 1 time %v shards 2 slots [[%d %d]]]", shard, hdrArr[7],
		be.slotMap.RangesOf(shard)[0].First, be.slotMap.RangesOf(shard)[0].Last)
	if got := fmt.Sprint(hdrArr); got != want {
		t.Errorf("header %s, want %s", got, want)
	}
	// The session ended with its last chunk.
	if got := do(t, c, "RAFTSTREAM", "BACKUP", "NEXT"); !strings.HasPrefix(got, "-ERR no backup in progress") {
		t.Errorf("NEXT after the end: %q", got)
	}
	// The other shard (empty) is a short backup of its own.
	_, empty, n := backupAll(t, c, 1-shard)
	if _, err := engine.Restore(bytes.NewReader(empty)); err != nil || n != 1 {
		t.Errorf("empty shard: %d chunks, %v", n, err)
	}
}

func argv(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// TestBackupErrors: bad arguments, a shard this node does not lead, ABORT
// and the session limit, which a closed connection frees.
func TestBackupErrors(t *testing.T) {
	be := newFakeBackend(2)
	addr := startServer(t, be, DefaultConfig())
	c := dial(t, addr)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"RAFTSTREAM", "BACKUP"}, "-ERR wrong number of arguments for 'raftstream|backup' command\r\n"},
		{[]string{"RAFTSTREAM", "BACKUP", "7"}, "-ERR invalid shard '7' (0..1)\r\n"},
		{[]string{"RAFTSTREAM", "BACKUP", "0", "x"}, "-ERR syntax error\r\n"},
		{[]string{"RAFTSTREAM", "BACKUP", "NEXT"}, "-ERR no backup in progress on this connection (RAFTSTREAM BACKUP <shard> starts one)\r\n"},
		{[]string{"RAFTSTREAM", "BACKUP", "ABORT"}, "-ERR no backup in progress on this connection (RAFTSTREAM BACKUP <shard> starts one)\r\n"},
	} {
		if got := do(t, c, tc.args...); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
	be.fail(1, &fsm.NotLeaderError{LeaderID: strings.Repeat("b", 40)})
	if got, want := do(t, c, "RAFTSTREAM", "BACKUP", "1"), "-TRYAGAIN this node does not lead shard 1 (its leader: 127.0.0.1:7002); send RAFTSTREAM BACKUP to the leader\r\n"; got != want {
		t.Errorf("backup of a shard led elsewhere: %q, want %q", got, want)
	}
	if got := do(t, c, "RAFTSTREAM", "BACKUP", "0"); !strings.HasPrefix(got, "*12\r\n") {
		t.Fatalf("BACKUP 0: %q", got)
	}
	if got := do(t, c, "RAFTSTREAM", "BACKUP", "ABORT"); got != "+OK\r\n" {
		t.Errorf("ABORT: %q", got)
	}

	conns := make([]*wire.Client, maxBackupSessions)
	for i := range conns {
		conns[i] = dial(t, addr)
		if got := do(t, conns[i], "RAFTSTREAM", "BACKUP", "0"); !strings.HasPrefix(got, "*12\r\n") {
			t.Fatalf("session %d: %q", i, got)
		}
	}
	if got := do(t, c, "RAFTSTREAM", "BACKUP", "0"); !strings.HasPrefix(got, "-ERR 8 backups are in progress on this node") {
		t.Errorf("one session too many: %q", got)
	}
	conns[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := do(t, c, "RAFTSTREAM", "BACKUP", "0")
		if strings.HasPrefix(got, "*12\r\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed connection's session was not freed: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
