package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/slots"
)

// testKeysOf knows the keys of the commands the cluster tests send.
func testKeysOf(argv [][]byte) []int {
	switch strings.ToUpper(string(argv[0])) {
	case "XADD", "XLEN", "XRANGE", "XACK", "XPENDING", "DEL", "EXISTS":
		return []int{1}
	case "XGROUP":
		return []int{2}
	}
	return nil
}

// tagInRange returns a hash tag whose slot lies in r, the i-th such.
func tagInRange(r slots.Range, i int) string {
	for j := 0; ; j++ {
		tag := fmt.Sprintf("m%d", j)
		if r.Contains(slots.OfString(tag)) {
			if i == 0 {
				return tag
			}
			i--
		}
	}
}

// leaderOf returns the node leading shard.
func (tc *testCluster) leaderOf(shard int) *Node {
	for _, n := range tc.nodes {
		if n != nil {
			if ls := n.shard(shard); ls != nil && ls.s.IsLeader() {
				return n
			}
		}
	}
	return nil
}

// submitFollowing proposes argv for key's slot where the cluster says it
// goes, following MOVED, ASK (with the ASKING marker) and TRYAGAIN like a
// cluster client, until it applies or ctx ends.
func (tc *testCluster) submitKey(ctx context.Context, key string, argv ...string) (engine.Reply, error) {
	cmd := make([][]byte, len(argv))
	for i, a := range argv {
		cmd[i] = []byte(a)
	}
	shard := tc.nodes[0].ShardOfKey([]byte(key))
	asking := false
	for ctx.Err() == nil {
		n := tc.leaderOf(shard)
		if n == nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		unit := fsm.Unit{cmd}
		if asking {
			unit = fsm.AskingUnit(unit)
		}
		rs, err := n.Submit(shard, unit).Wait(ctx)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		r := rs[len(rs)-1]
		rd, ok := fsm.AsRedirect(r)
		if !ok {
			return r, nil
		}
		switch rd.Kind {
		case fsm.RedirectAsk:
			shard, asking = rd.Shard, true
			continue
		case fsm.RedirectMoved:
			shard = rd.Shard
		default:
			time.Sleep(10 * time.Millisecond)
		}
		asking = false
	}
	return nil, ctx.Err()
}

// TestSlotMoveInProcess moves a slot range holding small streams, a large
// one (sent in chunks) and consumer groups from shard 0 to shard 1 of a
// 3-node cluster while a writer appends to every stream: every
// acknowledged entry is on shard 1 exactly once and in order afterwards,
// groups and PELs moved with their streams, the source holds no key of
// the slots and redirects to the target, and every node routes the slots
// to shard 1 with a higher slot epoch.
func TestSlotMoveInProcess(t *testing.T) {
	tc := startCluster(t, 3, 2, func(c *Config) {
		c.KeysOf = testKeysOf
		c.MigrateChunk = 4096
		c.MigrateRate = -1
	})
	ctx, cancel := context.WithTimeout(context.Background(), workBudget)
	defer cancel()
	r := slots.Range{First: 0, Last: 299}
	var keys []string
	for i := 0; i < 12; i++ {
		keys = append(keys, "{"+tagInRange(r, i)+"}s")
	}
	big := keys[0]
	for i := 0; i < 3000; i++ {
		if _, err := tc.submitKey(ctx, big, "XADD", big, "*", "f", strings.Repeat("v", 20)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		if _, err := tc.submitKey(ctx, k, "XGROUP", "CREATE", k, "g", "0", "MKSTREAM"); err != nil {
			t.Fatal(err)
		}
	}
	acked := make([][]string, len(keys))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i, k := range keys[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				rep, err := tc.submitKey(ctx, k, "XADD", k, "*", "n", fmt.Sprint(j))
				if err != nil {
					return
				}
				if id, ok := rep.(engine.BulkString); ok {
					acked[i+1] = append(acked[i+1], string(id))
				} else {
					t.Errorf("XADD %s: %v", k, rep)
					return
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	epoch := tc.nodes[0].SlotEpoch()
	ids, err := tc.nodes[2].MoveSlots(ctx, r, 1)
	if err != nil || len(ids) != 1 {
		t.Fatalf("MoveSlots: %v %v", ids, err)
	}
	waitFor(t, ctx, "the move to complete on every node", func() bool {
		for _, n := range tc.nodes {
			if n.SlotEpoch() <= epoch || n.ShardOfSlot(r.First) != 1 || len(n.SlotMoves()) != 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

	// Everything is on shard 1.
	l1 := tc.leaderOf(1)
	err = l1.Read(ctx, 1, false, func(e *engine.Engine) {
		for i, k := range keys {
			got := e.Exec(0, [][]byte{[]byte("XRANGE"), []byte(k), []byte("-"), []byte("+")}).(engine.Array)
			want := len(acked[i])
			if i == 0 {
				want = 3000
			}
			if len(got) != want {
				t.Errorf("%s: %d entries on the target, %d acknowledged", k, len(got), want)
				continue
			}
			for j, id := range acked[i] {
				if gid := entryID(got[j]); gid != id {
					t.Errorf("%s entry %d: %s, acknowledged %s", k, j, gid, id)
					break
				}
			}
			if g, _ := e.Exec(0, [][]byte{[]byte("XINFO"), []byte("GROUPS"), []byte(k)}).(engine.Array); len(g) != 1 {
				t.Errorf("%s: group lost: %v", k, g)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	l0 := tc.leaderOf(0)
	_ = l0.Read(ctx, 0, false, func(e *engine.Engine) {
		for s := r.First; s <= r.Last; s++ {
			if e.CountKeysInSlot(s) != 0 {
				t.Errorf("source still holds %d keys of slot %d", e.CountKeysInSlot(s), s)
			}
		}
	})
	rs, err := l0.Submit(0, fsm.Unit{{[]byte("XADD"), []byte(keys[1]), []byte("*"), []byte("f"), []byte("v")}}).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rd, ok := fsm.AsRedirect(rs[0]); !ok || rd.Kind != fsm.RedirectMoved || rd.Shard != 1 {
		t.Fatalf("a write to the source after the move: %v", rs[0])
	}
	total := 0
	for _, a := range acked {
		total += len(a)
	}
	t.Logf("moved %d streams (one of 3000 entries) with %d appends during the move", len(keys), total)
}

// entryID is the ID of an entry of an XRANGE reply.
func entryID(r engine.Reply) string {
	switch v := r.(type) {
	case *engine.EntryReply:
		return v.ID.String()
	case engine.Array:
		if b, ok := v[0].(engine.BulkString); ok {
			return string(b)
		}
	}
	return fmt.Sprint(r)
}

// TestShardAddMoveRemove adds a shard to a 3-node cluster of 2 shards, moves
// a slot range holding streams to it and back, and retires it: the added
// shard elects a leader from its recorded voters, owns nothing until the
// move, takes keys and serves them, cannot be removed while it owns slots,
// and once retired every node has closed and deleted its replica.
func TestShardAddMoveRemove(t *testing.T) {
	tc := startCluster(t, 3, 2, func(c *Config) {
		c.KeysOf = testKeysOf
		c.MigrateRate = -1
	})
	ctx, cancel := context.WithTimeout(context.Background(), workBudget)
	defer cancel()
	shard, err := tc.nodes[1].AddShard(ctx, nil)
	if err != nil || shard != 2 {
		t.Fatalf("AddShard = %d, %v", shard, err)
	}
	waitFor(t, ctx, "the added shard's leader", func() bool { return tc.leaderOf(2) != nil })
	for _, n := range tc.nodes {
		waitFor(t, ctx, "every node hosting the added shard", func() bool { return n.shard(2) != nil })
	}
	if top := tc.nodes[0].Topology(); len(top.Shards) != 3 || len(top.Shards[2].Slots) != 0 {
		t.Fatalf("after ADD: %d shards, shard 2 slots %v", len(top.Shards), top.Shards[2].Slots)
	}
	r := slots.Range{First: 100, Last: 199}
	var keys []string
	for i := 0; i < 5; i++ {
		k := "{" + tagInRange(r, i) + "}s"
		keys = append(keys, k)
		for j := 0; j < 20; j++ {
			if _, err := tc.submitKey(ctx, k, "XADD", k, "*", "f", "v"); err != nil {
				t.Fatal(err)
			}
		}
	}
	moveAndWait := func(to int) {
		t.Helper()
		if _, err := tc.nodes[0].MoveSlots(ctx, r, to); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, fmt.Sprintf("slots %d-%d on shard %d", r.First, r.Last, to), func() bool {
			for _, n := range tc.nodes {
				if n.ShardOfSlot(r.First) != to || len(n.SlotMoves()) != 0 {
					return false
				}
			}
			return true
		})
	}
	moveAndWait(2)
	if err := tc.nodes[2].RemoveShard(ctx, 2); err == nil || !strings.Contains(err.Error(), "keys") {
		t.Fatalf("RemoveShard of a shard holding keys: %v", err)
	}
	for _, k := range keys {
		if rep, err := tc.submitKey(ctx, k, "XLEN", k); err != nil || rep != engine.Integer(20) {
			t.Fatalf("XLEN %s on the added shard: %v %v", k, rep, err)
		}
	}
	moveAndWait(0)
	if err := tc.nodes[2].RemoveShard(ctx, 2); err != nil {
		t.Fatalf("RemoveShard: %v", err)
	}
	for _, n := range tc.nodes {
		waitFor(t, ctx, "the retired shard's replica closed and deleted", func() bool {
			_, err := os.Stat(filepath.Join(n.dir, "shards", "2"))
			return n.shard(2) == nil && os.IsNotExist(err)
		})
	}
	if err := tc.nodes[0].RemoveShard(ctx, 2); err == nil {
		t.Fatal("a retired shard was removed twice")
	}
	if _, err := tc.nodes[0].MoveSlots(ctx, r, 2); err == nil {
		t.Fatal("slots moved to a retired shard")
	}
	for _, k := range keys {
		if rep, err := tc.submitKey(ctx, k, "XLEN", k); err != nil || rep != engine.Integer(20) {
			t.Fatalf("XLEN %s after moving back: %v %v", k, rep, err)
		}
	}
	// A retired shard has no leader to wait for: a node (re)starting waits
	// for the live shards only.
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	for _, n := range tc.nodes {
		if err := n.WaitLeaders(wctx); err != nil {
			t.Fatalf("%s: WaitLeaders with a retired shard: %v", n.cfg.NodeName, err)
		}
	}
}
