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
