package cluster

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
)

// heldKeys is how many keys the shard's engine holds, expired or not
// (DBSIZE at time 0 counts every key with an expiry after 0, i.e. all).
func heldKeys(t *testing.T, n *Node, shard int) int64 {
	t.Helper()
	var r engine.Reply
	if err := n.Read(context.Background(), shard, true, func(e *engine.Engine) {
		r = e.Exec(0, [][]byte{[]byte("DBSIZE")})
	}); err != nil {
		t.Fatal(err)
	}
	return int64(r.(engine.Integer))
}

// TestExpireCycleRemovesExpiredKeys: keys with a short TTL are removed by
// the leader's cycle through the log, a batch at a time, while keys without
// one (or with a long one) stay.
func TestExpireCycleRemovesExpiredKeys(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const short = 3*expireBatch + 17 // several proposals
	var unit fsm.Unit
	for i := range short {
		unit = append(unit, [][]byte{[]byte("SET"), []byte("k" + strconv.Itoa(i)), []byte("v"), []byte("PX"), []byte("100")})
	}
	unit = append(unit, [][]byte{[]byte("SET"), []byte("keep"), []byte("v")},
		[][]byte{[]byte("SET"), []byte("later"), []byte("v"), []byte("EX"), []byte("1000")})
	if _, err := n.Submit(0, unit).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := heldKeys(t, n, 0); got != short+2 {
		t.Fatalf("held %d keys, want %d", got, short+2)
	}
	deadline := time.Now().Add(10 * time.Second)
	for heldKeys(t, n, 0) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("still %d keys held 10s later", heldKeys(t, n, 0))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRetentionCycleTrimsGovernedStreams: a MAXLEN policy set through the
// log keeps governed streams near their limit while writers and readers
// run (under -race: the cycle reads the engine beside them), and leaves
// other streams alone.
func TestRetentionCycleTrimsGovernedStreams(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := func(args ...string) fsm.Unit {
		argv := make([][]byte, len(args))
		for i, a := range args {
			argv[i] = []byte(a)
		}
		return fsm.Unit{argv}
	}
	if rs, err := n.Submit(0, cmd(engine.RetentionCommand, "SET", "kept:*", "MAXLEN", "50")).Wait(ctx); err != nil || isErr(rs[0]) {
		t.Fatalf("RETENTION SET: %v %v", rs, err)
	}
	xlen := func(key string) int64 {
		var r engine.Reply
		if err := n.Read(ctx, 0, true, func(e *engine.Engine) {
			r = e.Exec(e.ReadTime(time.Now().UnixMilli()), [][]byte{[]byte("XLEN"), []byte(key)})
		}); err != nil {
			t.Fatal(err)
		}
		return int64(r.(engine.Integer))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			var unit fsm.Unit
			for _, k := range []string{"kept:a", "kept:b", "other"} {
				unit = append(unit, cmd("XADD", k, "*", "f", strconv.Itoa(i))[0])
			}
			if _, err := n.Submit(0, unit).Wait(ctx); err != nil {
				t.Error(err)
				return
			}
			if i%50 == 0 {
				_ = n.Read(ctx, 0, true, func(e *engine.Engine) {
					e.Exec(e.ReadTime(time.Now().UnixMilli()), [][]byte{[]byte("XINFO"), []byte("STREAM"), []byte("kept:a")})
				})
			}
		}
	}()
	<-done
	for deadline := time.Now().Add(5 * time.Second); xlen("kept:a") > 150 || xlen("kept:b") > 150; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("XLEN kept:a %d kept:b %d, want about 50 (whole nodes of 100)", xlen("kept:a"), xlen("kept:b"))
		}
	}
	if got := xlen("other"); got != 2000 {
		t.Fatalf("XLEN other = %d: a stream no policy governs was trimmed", got)
	}
}
