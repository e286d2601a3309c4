package cluster

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/raftstream/raftstream/slots"
)

// TestSlotMapUpgradesAndReplicates starts a node from a data dir whose
// node.json is version 1 (no slot map: routed by contiguous ranges), checks
// that it routes exactly as before, then has the controller assign a slot
// range to another shard: the node adopts the new map (routing, Topology,
// epoch), persists it as version 2, and a restart keeps it.
func TestSlotMapUpgradesAndReplicates(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Shards = 4
	n := startNode(t, cfg)
	// Rewrite node.json as version 1 did: no slots, version 1.
	n.Close()
	p := filepath.Join(dir, metaFile)
	var raw map[string]any
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	raw["version"] = 1
	delete(raw["members"].(map[string]any), "slots")
	b, _ = json.Marshal(raw)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}

	n = startNode(t, cfg)
	defer func() { n.Close() }()
	want := slots.NewMap(4)
	for s := 0; s < slots.Count; s += 97 {
		if n.ShardOfSlot(s) != want.Shard(s) {
			t.Fatalf("upgraded node routes slot %d to %d, contiguous ranges say %d", s, n.ShardOfSlot(s), want.Shard(s))
		}
	}
	if top := n.Topology(); top.SlotEpoch != 0 || len(top.Slots) != 4 || !slices.Equal(top.Shards[2].Slots, []slots.Range{{First: 8192, Last: 12287}}) {
		t.Fatalf("upgraded topology: epoch %d runs %v shard 2 %v", top.SlotEpoch, top.Slots, top.Shards[2].Slots)
	}

	// The controller changes the map: slots 100-199 to shard 3.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, err := n.ctrlPropose(func(m *Membership) error {
			t := m.slotTable().clone()
			sm, _ := slots.FromRuns(t.Runs)
			sm, _ = sm.Assign(slots.Range{First: 100, Last: 199}, 3)
			t.Runs, t.Epoch = sm.Runs(), t.Epoch+1
			m.Slots = t
			return nil
		})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitFor(t, ctx, "slot 150 routed to shard 3", func() bool { return n.ShardOfSlot(150) == 3 })
	top := n.Topology()
	if top.SlotEpoch != 1 || n.ShardOfSlot(99) != 0 || n.ShardOfSlot(200) != 0 ||
		!slices.Equal(top.Shards[3].Slots, []slots.Range{{First: 100, Last: 199}, {First: 12288, Last: 16383}}) {
		t.Fatalf("after the change: epoch %d, shard 3 %v", top.SlotEpoch, top.Shards[3].Slots)
	}
	b, _ = os.ReadFile(p)
	var m meta
	if err := json.Unmarshal(b, &m); err != nil || m.Version != metaVersion || m.Members.Slots == nil || m.Members.Slots.Epoch != 1 {
		t.Fatalf("node.json after the change: version %d slots %+v (%v)", m.Version, m.Members.Slots, err)
	}
	n.Close()
	n = startNode(t, cfg)
	if n.ShardOfSlot(150) != 3 || n.SlotEpoch() != 1 {
		t.Fatalf("after restart slot 150 → %d, epoch %d", n.ShardOfSlot(150), n.SlotEpoch())
	}
}

// TestSlotTableChecks: a table that leaves a slot unassigned, names a shard
// that does not exist or moves a slot twice is refused.
func TestSlotTableChecks(t *testing.T) {
	m := place(members(3), 3, 3)
	good := m.slotTable().clone()
	good.NextMove = 3
	good.Moves = []SlotMove{{ID: 1, First: 0, Last: 10, From: 0, To: 1}, {ID: 2, First: 11, Last: 20, From: 0, To: 2}}
	m.Slots = good
	if err := m.check(3); err != nil {
		t.Fatalf("good table refused: %v", err)
	}
	bad := []func(t *SlotTable){
		func(t *SlotTable) { t.Runs = t.Runs[1:] },
		func(t *SlotTable) { t.Runs[2].Shard = 7 },
		func(t *SlotTable) { t.Moves[1].First = 5 },
		func(t *SlotTable) { t.Moves[0].To = 0 },
		func(t *SlotTable) { t.Moves[1].ID = 9 },
	}
	for i, f := range bad {
		c := m.clone()
		f(c.Slots)
		if err := c.check(3); err == nil {
			t.Errorf("bad table %d accepted", i)
		}
	}
}

// waitFor polls cond every 10 ms until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestControllerEntriesOfEveryVersionDecode: the controller log holds
// Membership entries written before the controller voters and the slot map
// were replicated, with one of them, and with both. Each decodes; what an
// entry lacks takes its default (the first members as voters, contiguous
// ranges over its shards), and the two fields do not disturb each other.
func TestControllerEntriesOfEveryVersionDecode(t *testing.T) {
	const (
		nodes  = `"nodes":[{"id":"a","host":"127.0.0.1","port":7001,"bus":"127.0.0.1:17001"},{"id":"b","host":"127.0.0.1","port":7002,"bus":"127.0.0.1:17002"}]`
		shards = `"shards":[["a","b"],["b","a"]],"epoch":7`
		voters = `,"ctrl_voters":["b"]`
		table  = `,"slots":{"epoch":3,"runs":[{"first":0,"last":99,"shard":1},{"first":100,"last":16383,"shard":0}]}`
	)
	for _, c := range []struct {
		name, extra string
		voters      []string
		shardOf0    int
		slotEpoch   uint64
	}{
		{"neither", "", []string{"a", "b"}, 0, 0},
		{"voters", voters, []string{"b"}, 0, 0},
		{"slots", table, []string{"a", "b"}, 1, 3},
		{"both", voters + table, []string{"b"}, 1, 3},
	} {
		var e topoEntry
		if err := json.Unmarshal([]byte(`{"members":{`+nodes+`,`+shards+c.extra+`}}`), &e); err != nil || e.Members == nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		m := e.Members
		if err := m.check(2); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if got := ctrlVoterIDs(m); !slices.Equal(got, c.voters) {
			t.Errorf("%s: controller voters %v, want %v", c.name, got, c.voters)
		}
		st := m.slotTable()
		mp, err := slots.FromRuns(st.Runs)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if mp.Shard(0) != c.shardOf0 || st.Epoch != c.slotEpoch {
			t.Errorf("%s: slot 0 on shard %d at slot epoch %d, want %d at %d", c.name, mp.Shard(0), st.Epoch, c.shardOf0, c.slotEpoch)
		}
		// A round trip keeps both fields as they were.
		b, _ := json.Marshal(topoEntry{Members: m})
		var back topoEntry
		if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back.Members.CtrlVoters, m.CtrlVoters) || !back.Members.Slots.equal(m.Slots) {
			t.Errorf("%s: round trip %s", c.name, b)
		}
	}
}
