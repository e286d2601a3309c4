package resp

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/slots"
)

func (b *fakeBackend) ReadChecked(ctx context.Context, shard int, stale bool, fn func(e *engine.Engine, check fsm.Checker)) error {
	return b.Read(ctx, shard, stale, func(e *engine.Engine) {
		fn(e, func(argv [][]byte, asking bool) engine.Reply {
			if b.check == nil {
				return nil
			}
			return b.check(shard, argv, asking)
		})
	})
}

func (b *fakeBackend) SlotMoving(slot int) (int, int, bool) {
	mv, ok := b.moving[slot]
	return mv[0], mv[1], ok
}

func (b *fakeBackend) ImportingShard(slot int) (int, bool) {
	mv, ok := b.moving[slot]
	return mv[1], ok
}

func (b *fakeBackend) MoveSlots(ctx context.Context, r slots.Range, to int) ([]uint64, error) {
	return nil, errors.New("no controller")
}

func (b *fakeBackend) SlotsStatus(ctx context.Context) []cluster.MoveStatus { return nil }

// AddShard adds an empty shard owning no slot when addShards is set.
func (b *fakeBackend) AddShard(ctx context.Context, nodes []string) (int, error) {
	if !b.addShards {
		return 0, errors.New("no controller")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.engines = append(b.engines, engine.New(engine.DefaultConfig()))
	b.applied = append(b.applied, 0)
	b.top.Shards = append(b.top.Shards, cluster.ShardInfo{Leader: b.top.MyID, Replicas: []string{b.top.MyID}})
	return len(b.engines) - 1, nil
}

func (b *fakeBackend) RemoveShard(ctx context.Context, shard int) error {
	return errors.New("no controller")
}

func (b *fakeBackend) ShardPolicy() *cluster.ShardPolicy { return nil }

func (b *fakeBackend) SetShardPolicy(ctx context.Context, auto bool, perNode float64) error {
	return errors.New("no controller")
}

// TestRedirectReplies: the FSM's redirects become Redis's -ASK, -MOVED and
// -TRYAGAIN with the address of the named shard's leader, for reads
// (checked under the read) and transactions.
func TestRedirectReplies(t *testing.T) {
	b := newFakeBackend(2)
	b.top.Shards[1].Leader = strings.Repeat("b", 40)
	key := "{k}x"
	sl := slots.OfString(key)
	b.check = func(shard int, argv [][]byte, asking bool) engine.Reply {
		if shard == 0 && len(argv) > 1 && string(argv[1]) == key && !asking {
			return fsm.Redirect{Kind: fsm.RedirectAsk, Slot: sl, Shard: 1}.Reply()
		}
		if len(argv) > 1 && string(argv[1]) == "{k}busy" {
			return fsm.Redirect{Kind: fsm.RedirectTryAgain, Slot: sl, Shard: -1}.Reply()
		}
		return nil
	}
	b.moving = map[int][2]int{sl: {0, 1}}
	addr := startServer(t, b, Config{ClusterMode: true})
	c := dial(t, addr)
	if got := do(t, c, "XLEN", key); got != "-ASK "+itoa(sl)+" 127.0.0.1:7002\r\n" {
		t.Errorf("read of a key moved: %q", got)
	}
	if got := do(t, c, "XLEN", "{k}busy"); !strings.HasPrefix(got, "-TRYAGAIN ") {
		t.Errorf("read of a key in transit: %q", got)
	}
	// ASKING routes the next command to the importing shard (1), once.
	if got := do(t, c, "ASKING"); got != "+OK\r\n" {
		t.Fatalf("ASKING: %q", got)
	}
	if got := do(t, c, "XLEN", key); got != ":0\r\n" {
		t.Errorf("read after ASKING: %q", got)
	}
	if got := do(t, c, "XLEN", key); !strings.HasPrefix(got, "-ASK ") {
		t.Errorf("the ASKING flag outlived one command: %q", got)
	}
	do(t, c, "MULTI")
	do(t, c, "XLEN", key)
	if got := do(t, c, "EXEC"); !strings.HasPrefix(got, "-ASK ") {
		t.Errorf("EXEC of a read of a moved key: %q", got)
	}
	// CLUSTER SETSLOT and MIGRATE name the way raftstream moves slots.
	for _, cmd := range [][]string{{"CLUSTER", "SETSLOT", "1", "NODE", "x"}, {"CLUSTER", "ADDSLOTS", "1"}, {"MIGRATE", "h", "1", "k", "0", "1"}} {
		if got := do(t, c, cmd...); !strings.Contains(got, "RAFTSTREAM SLOTS MOVE") {
			t.Errorf("%v: %q", cmd, got)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestShardAddSeedsRetention: a shard added later gets the retention
// policies RETENTION SET gave the shards that existed, so a stream moved
// there is still governed by its policy.
func TestShardAddSeedsRetention(t *testing.T) {
	b := newFakeBackend(2)
	b.addShards = true
	c := dial(t, startServer(t, b, Config{}))
	for _, cmd := range [][]string{
		{"RAFTSTREAM", "RETENTION", "SET", "orders:*", "MAXAGE", "86400000", "MAXLEN", "1000", "ACKED"},
		{"RAFTSTREAM", "RETENTION", "SET", "audit", "MAXBYTES", "512mb"},
	} {
		if got := do(t, c, cmd...); got != "+OK\r\n" {
			t.Fatalf("%v: %q", cmd, got)
		}
	}
	if got := do(t, c, "RAFTSTREAM", "SHARD", "ADD"); got != ":2\r\n" {
		t.Fatalf("SHARD ADD: %q", got)
	}
	want := do(t, c, "RAFTSTREAM", "RETENTION", "SHARD", "0", "LIST")
	if got := do(t, c, "RAFTSTREAM", "RETENTION", "SHARD", "2", "LIST"); got != want {
		t.Errorf("the new shard's policies %q, shard 0's %q", got, want)
	}
	if !strings.Contains(want, "orders:*") || !strings.Contains(want, "acked") {
		t.Errorf("shard 0's policies %q", want)
	}
}
