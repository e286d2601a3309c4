package resp

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestWaitAsksAboutTheLastWrite checks which log position WAIT asks the
// backend about, on every path a write takes: a single write, a pipeline
// (one unit), a blocking XREADGROUP that is served, EXEC (after the
// transaction, not inside it), and a connection that wrote nothing (index
// 0 of the first shard led here). The fake backend numbers each shard's
// units 1, 2, 3, ….
func TestWaitAsksAboutTheLastWrite(t *testing.T) {
	be := newFakeBackend(2)
	addr := startServer(t, be, Config{})
	var key0, key1 string // keys of shards 0 and 1
	for i := 0; key0 == "" || key1 == ""; i++ {
		k := fmt.Sprintf("k%d", i)
		if be.ShardOfSlot(slotOf([]byte(k))) == 0 {
			key0 = k
		} else {
			key1 = k
		}
	}
	c := dial(t, addr)
	asked := func(step string, shard int, index uint64) {
		t.Helper()
		if r := do(t, c, "WAIT", "0", "0"); r != ":0\r\n" {
			t.Fatalf("%s: WAIT 0 0 = %q", step, r)
		}
		be.mu.Lock()
		got := be.waited
		be.mu.Unlock()
		if got.shard != shard || got.index != index {
			t.Errorf("%s: WAIT asked about shard %d index %d, want shard %d index %d", step, got.shard, got.index, shard, index)
		}
	}

	asked("nothing written", 0, 0)
	do(t, c, "XADD", key1, "*", "f", "v")
	asked("one write", 1, 1)
	do(t, c, "XADD", key0, "*", "f", "v")
	asked("a write to another shard", 0, 1)

	// A pipeline: the two writes are one unit (index 2 on shard 1).
	if err := c.WriteRaw(append(testkit.EncodeCommand("XADD", key1, "*", "f", "v"), testkit.EncodeCommand("XGROUP", "CREATE", key1, "g", "0")...)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.ReadReply(); err != nil {
			t.Fatal(err)
		}
	}
	asked("a pipeline", 1, 2)

	// A blocking read served at once is proposed (XREADGROUP changes the
	// group): index 3.
	do(t, c, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "100", "STREAMS", key1, ">")
	asked("XREADGROUP BLOCK", 1, 3)

	// Inside the transaction WAIT answers at once about the position
	// before it, even when it would have to wait; after EXEC, about it.
	do(t, c, "MULTI")
	do(t, c, "XADD", key0, "*", "f", "v")
	do(t, c, "WAIT", "1", "0")
	t0 := time.Now()
	if r := do(t, c, "EXEC"); len(r) < 4 || r[:4] != "*2\r\n" || r[len(r)-4:] != ":0\r\n" || time.Since(t0) > time.Second {
		t.Fatalf("EXEC with WAIT 1 0 = %q after %v", r, time.Since(t0))
	}
	be.mu.Lock()
	inside := be.waited
	be.mu.Unlock()
	if inside.shard != 1 || inside.index != 3 {
		t.Errorf("WAIT inside EXEC asked about shard %d index %d, want the position before it (1, 3)", inside.shard, inside.index)
	}
	asked("after EXEC", 0, 2)

	// A write refused before proposing moves nothing.
	do(t, c, "XADD", key1, "0-0", "f", "v")
	asked("a refused write", 0, 2)
}
