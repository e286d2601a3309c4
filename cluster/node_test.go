package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/slots"
)

// testConfig is a fast single-node config in dir with the bus on a free
// loopback port.
func testConfig(t testing.TB, dir string) Config {
	t.Helper()
	c := DefaultConfig()
	c.Dir = dir
	c.AnnouncePort = testkit.FreePort(t)
	c.BindAddr = "127.0.0.1:0"
	c.AdvertiseBus = "127.0.0.1:0"
	c.HeartbeatTimeout = 100 * time.Millisecond
	c.ElectionTimeout = 100 * time.Millisecond
	c.LeaderLeaseTimeout = 50 * time.Millisecond
	c.BalanceInterval = 200 * time.Millisecond
	if testing.Verbose() {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return c
}

func startNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		n.Close()
		t.Fatal(err)
	}
	if err := n.WaitLeaders(ctx); err != nil {
		n.Close()
		t.Fatal(err)
	}
	return n
}

// setEntries replicates CONFIG SET stream-node-max-entries v on shard.
func setEntries(ctx context.Context, n *Node, shard, v int) error {
	unit := fsm.Unit{{[]byte("CONFIG"), []byte("SET"), []byte("stream-node-max-entries"), []byte(strconv.Itoa(v))}}
	rs, err := n.Submit(shard, unit).Wait(ctx)
	if err != nil {
		return err
	}
	if len(rs) != 1 {
		return fmt.Errorf("%d replies", len(rs))
	}
	if isErr(rs[0]) {
		return fmt.Errorf("reply error %v", rs[0])
	}
	return nil
}

func isErr(r engine.Reply) bool { _, ok := r.(*engine.Error); return ok }

func readEntries(ctx context.Context, n *Node, shard int, stale bool) (int, error) {
	var v int
	err := n.Read(ctx, shard, stale, func(e *engine.Engine) { v = e.Config().NodeMaxEntries })
	return v, err
}

func TestSingleNodeDefaultsToOneShard(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	defer n.Close()
	if n.NumShards() != 1 {
		t.Fatalf("NumShards = %d, want 1", n.NumShards())
	}
	top := n.Topology()
	if len(top.Nodes) != 1 || top.Nodes[0].ID != n.ID() || !top.Nodes[0].Up || top.MyID != n.ID() {
		t.Fatalf("topology nodes %+v", top.Nodes)
	}
	if s := top.Shards[0]; len(s.Slots) != 1 || s.Slots[0] != (slots.Range{First: 0, Last: 16383}) || s.Leader != n.ID() {
		t.Fatalf("shard 0 = %+v", s)
	}
	if !validNodeID(n.ID()) {
		t.Fatalf("bad node id %q", n.ID())
	}
	st, ok := n.ShardStatus(0)
	if !ok || st.Role != "leader" || st.Leader != n.ID() {
		t.Fatalf("ShardStatus = %+v %v", st, ok)
	}
	if _, ok := n.ShardStatus(1); ok {
		t.Fatal("ShardStatus(1) reported a shard that does not exist")
	}
	// The single-node controller group is seeded with the membership.
	deadline := time.Now().Add(10 * time.Second)
	for n.ControllerMembers() == nil {
		if time.Now().After(deadline) {
			t.Fatal("controller never seeded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m := n.ControllerMembers(); len(m.Nodes) != 1 || m.Nodes[0].ID != n.ID() || m.Epoch != 1 || top.Epoch != 1 {
		t.Fatalf("controller membership %+v, topology epoch %d", m, top.Epoch)
	}
}

func TestNodeRestartKeepsDataAndID(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Shards = 4
	n := startNode(t, cfg)
	id := n.ID()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for s := 0; s < 4; s++ {
		if err := setEntries(ctx, n, s, 10+s); err != nil {
			t.Fatalf("shard %d: %v", s, err)
		}
	}
	// Entries appended through Submit wake the notify callback with the
	// stream's key and shard.
	notified := make(chan string, 64)
	n.SetNotify(func(shard int, keys []string) {
		for _, k := range keys {
			select {
			case notified <- fmt.Sprintf("%d/%s", shard, k):
			default:
			}
		}
	})
	sk := n.ShardOfKey([]byte("s"))
	for i := 0; i < 3; i++ {
		add := fsm.Unit{{[]byte("XADD"), []byte("s"), []byte(fmt.Sprintf("%d-1", i+1)), []byte("f"), []byte("v")}}
		if rs, err := n.Submit(sk, add).Wait(ctx); err != nil || len(rs) != 1 || isErr(rs[0]) {
			t.Fatalf("XADD: %v %v", rs, err)
		}
	}
	select {
	case got := <-notified:
		if want := fmt.Sprintf("%d/s", sk); got != want {
			t.Fatalf("notified %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("notify callback not called after XADD")
	}
	n.SetNotify(nil)

	// A stream with a consumer group, on the shard of its key.
	mk := fsm.Unit{{[]byte("XGROUP"), []byte("CREATE"), []byte("k"), []byte("g"), []byte("$"), []byte("MKSTREAM")}}
	if rs, err := n.Submit(n.ShardOfKey([]byte("k")), mk).Wait(ctx); err != nil || len(rs) != 1 || isErr(rs[0]) {
		t.Fatalf("XGROUP CREATE: %v %v", rs, err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	cfg2 := testConfig(t, dir) // another RESP port and bus port
	n2 := startNode(t, cfg2)   // Shards 0: whatever was persisted
	defer n2.Close()
	if n2.ID() != id {
		t.Fatalf("node ID changed across restart: %s → %s", id, n2.ID())
	}
	if n2.NumShards() != 4 {
		t.Fatalf("NumShards after restart = %d", n2.NumShards())
	}
	if top := n2.Topology(); top.Nodes[0].Port != cfg2.AnnouncePort {
		t.Fatalf("topology announces port %d after restart on %d", top.Nodes[0].Port, cfg2.AnnouncePort)
	}
	for s := 0; s < 4; s++ {
		for _, stale := range []bool{false, true} {
			v, err := readEntries(ctx, n2, s, stale)
			if err != nil || v != 10+s {
				t.Fatalf("shard %d stale=%v after restart: %d, %v; want %d", s, stale, v, err, 10+s)
			}
		}
	}
	var groups engine.Reply
	err := n2.Read(ctx, n2.ShardOfKey([]byte("k")), false, func(e *engine.Engine) {
		groups = e.Exec(0, [][]byte{[]byte("XINFO"), []byte("GROUPS"), []byte("k")})
	})
	if err != nil || groups == nil || isErr(groups) {
		t.Fatalf("XINFO GROUPS k after restart: %v %v", groups, err)
	}
	var xlen engine.Reply
	err = n2.Read(ctx, n2.ShardOfKey([]byte("s")), false, func(e *engine.Engine) {
		xlen = e.Exec(0, [][]byte{[]byte("XLEN"), []byte("s")})
	})
	if err != nil || xlen != engine.Integer(3) {
		t.Fatalf("XLEN s after restart: %#v %v", xlen, err)
	}
}

func TestWrongShardCountOnReopen(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Shards = 2
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	cfg.Shards = 3
	if n, err := Open(cfg); err == nil {
		n.Close()
		t.Fatal("reopen with another shard count succeeded")
	} else if !strings.Contains(err.Error(), "2 shards") {
		t.Fatalf("error does not name the persisted count: %v", err)
	}
}

func TestWipedDirGetsNewID(t *testing.T) {
	dir := t.TempDir()
	n, err := Open(testConfig(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	id := n.ID()
	n.Close()
	os.RemoveAll(dir)
	n2, err := Open(testConfig(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	if n2.ID() == id {
		t.Fatal("wiped data dir reused the old node ID")
	}
}

func TestSubmitToMissingShardFailsNotLeader(t *testing.T) {
	n, err := Open(testConfig(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	// Not started: no shard is hosted yet.
	_, err = n.Submit(0, fsm.Unit{{[]byte("PING")}}).Wait(context.Background())
	var nl *fsm.NotLeaderError
	if !errors.As(err, &nl) {
		t.Fatalf("Submit before Start = %v, want NotLeaderError", err)
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "Dir") {
		t.Fatalf("missing Dir: %v", err)
	}
	c.Dir = t.TempDir()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.BindAddr != "127.0.0.1:16379" || c.AdvertiseBus != c.BindAddr {
		t.Fatalf("derived bus %q %q", c.BindAddr, c.AdvertiseBus)
	}
	if c.defaultShards() != 1 {
		t.Fatalf("single node default shards %d", c.defaultShards())
	}
	c.BootstrapExpect = 3
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "Join") {
		t.Fatalf("BootstrapExpect without Join: %v", err)
	}
	c.Join = []string{"127.0.0.1:16380"}
	if err := c.Validate(); err != nil || c.defaultShards() != 3 {
		t.Fatalf("cluster config: %v, shards %d", err, c.defaultShards())
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.AnnouncePort = 0 },
		func(c *Config) { c.Shards = 16385 },
		func(c *Config) { c.ReplicationFactor = -1 },
		func(c *Config) { c.BindAddr = "0.0.0.0:7000"; c.AdvertiseBus = "" },
		func(c *Config) { c.Join = []string{"nohostport"} },
	} {
		c2 := DefaultConfig()
		c2.Dir = "x"
		bad(&c2)
		if err := c2.Validate(); err == nil {
			t.Errorf("invalid config accepted: %+v", c2)
		}
	}
}
