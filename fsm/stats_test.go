package fsm

import (
	"context"
	"testing"
	"time"
)

// TestStatsCountBatchesCommitsAndSnapshots drives a single-voter shard and
// checks each counter moves by what was done to it.
func TestStatsCountBatchesCommitsAndSnapshots(t *testing.T) {
	r := singleVoter(t, nil)
	before := r.Stats()
	if before.LeaderChanges == 0 {
		t.Errorf("LeaderChanges = 0 after an election")
	}
	const n = 20
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		if _, err := r.Submit(unit(cmd("XADD", "s", "*", "f", "v"), cmd("XLEN", "s"))).Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st := r.Stats()
	if got := st.Entries - before.Entries; got != n {
		t.Errorf("Entries grew by %d, want %d (one entry per sequential submit)", got, n)
	}
	if got := st.BatchCommands.Count - before.BatchCommands.Count; got != n {
		t.Errorf("BatchCommands.Count grew by %d, want %d", got, n)
	}
	if got := st.BatchCommands.Sum - before.BatchCommands.Sum; got != 2*n {
		t.Errorf("BatchCommands.Sum grew by %v, want %d commands", got, 2*n)
	}
	if st.CommitSeconds.Count-before.CommitSeconds.Count != n || st.CommitSeconds.Sum <= 0 {
		t.Errorf("CommitSeconds = %+v", st.CommitSeconds)
	}
	if st.Queued != 0 || st.InFlight != 0 {
		t.Errorf("idle shard has Queued=%d InFlight=%d", st.Queued, st.InFlight)
	}
	if !st.LastSnapshotAt.IsZero() {
		t.Errorf("LastSnapshotAt = %v before any snapshot", st.LastSnapshotAt)
	}
	taken := time.Now()
	if err := r.TakeSnapshot(); err != nil {
		t.Fatal(err)
	}
	st = r.Stats()
	if st.Snapshots != 1 || st.SnapshotSeconds.Count != 1 || st.LastSnapshotBytes <= 0 {
		t.Errorf("after one snapshot: Snapshots=%d SnapshotSeconds=%+v LastSnapshotBytes=%d",
			st.Snapshots, st.SnapshotSeconds, st.LastSnapshotBytes)
	}
	if at := st.LastSnapshotAt; at.Before(taken.Add(-time.Millisecond)) || at.After(time.Now()) {
		t.Errorf("LastSnapshotAt = %v, want the snapshot's time (between %v and now)", at, taken)
	}
}
