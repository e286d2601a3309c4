package cluster

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// earlyLogs are entries first..last of term.
func earlyLogs(term, first, last uint64) []*raft.Log {
	var logs []*raft.Log
	for i := first; i <= last; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: fmt.Appendf(nil, "entry %d", i)})
	}
	return logs
}

// waitBus polls cond (bounded) for what a goroutine of the bus records.
func waitBus(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestEarlyAppendStandsForRaftsOwn walks one follower through early
// replication on the bus, with the follower's raft played by the test:
//   - nothing goes early to a follower raft has not replicated to;
//   - once it answered raft's own AppendEntries, the leader's next entries
//     reach it early, as the AppendEntries raft would send (the leader's
//     header and term, the previous entry, the commit index);
//   - raft's own request for those entries is then answered with the
//     follower's answer to the early one, without reaching the follower;
//   - an early request that fails turns early sends off, and raft's own
//     request for its entries is sent as usual; a batch that does not
//     continue what the follower has is not sent early, nor one while the
//     last early request is unanswered, nor one of another term.
func TestEarlyAppendStandsForRaftsOwn(t *testing.T) {
	a, b := newBusNode(t, 5*time.Second, 3), newBusNode(t, 5*time.Second, 3)
	tr, follower := a.trs[3], b.trs[3].Consumer()
	target := raft.ServerAddress(b.mux.Addr().String())
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("a"), Addr: []byte("a:1")}
	okUpTo := func(last uint64) *raft.AppendEntriesResponse {
		return &raft.AppendEntriesResponse{RPCHeader: raft.RPCHeader{ID: []byte("b"), Addr: []byte("b:1")}, Term: 5, LastLog: last, Success: true}
	}
	raftsOwn := func(prev uint64, logs []*raft.Log, commit uint64) *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 5, Leader: []byte("a:1"), PrevLogEntry: prev, PrevLogTerm: 5, Entries: logs, LeaderCommitIndex: commit}
	}
	send := func(req *raft.AppendEntriesRequest) *raft.AppendEntriesResponse {
		t.Helper()
		var resp raft.AppendEntriesResponse
		if err := tr.AppendEntries("b", target, req, &resp); err != nil {
			t.Fatal(err)
		}
		return &resp
	}
	early := func(prevTerm, commit uint64, logs []*raft.Log, want int) {
		t.Helper()
		if n := tr.replicateEarly(prevTerm, commit, logs); n != want {
			t.Fatalf("entries %d-%d of term %d went early to %d followers, want %d", logs[0].Index, logs[len(logs)-1].Index, logs[0].Term, n, want)
		}
	}

	early(5, 9, earlyLogs(5, 10, 10), 0) // raft never replicated to b

	// raft's own AppendEntries of entry 10, answered: b matches up to 10.
	got := answer(t, follower, okUpTo(10))
	send(raftsOwn(9, earlyLogs(5, 10, 10), 9))
	if r := <-got; r == nil {
		t.Fatal("raft's own request never reached the follower")
	}

	// The leader is about to write 11 and 12: they go at once.
	logs := earlyLogs(5, 11, 12)
	got = answer(t, follower, okUpTo(12))
	early(5, 10, logs, 1)
	r := <-got
	if want := raftsOwn(10, logs, 10); !reflect.DeepEqual(r, want) {
		t.Fatalf("early request %+v, want %+v", r, want)
	}

	// raft's own request for 11-12, after the leader's write: the early
	// answer is its answer, and nothing more reaches the follower.
	recv := b.bus.Stats().Received
	if resp := send(raftsOwn(10, logs, 10)); !reflect.DeepEqual(resp, okUpTo(12)) {
		t.Fatalf("raft's request answered %+v, want the early answer %+v", resp, okUpTo(12))
	}
	if n := b.bus.Stats().Received; n != recv {
		t.Fatalf("the follower received %d requests after the early one, want none", n-recv)
	}
	if n := a.bus.Stats().EarlyAnswered; n != 1 {
		t.Fatalf("EarlyAnswered %d, want 1", n)
	}

	// A batch that skips an entry (14 while b has 12) is not sent early.
	early(5, 12, earlyLogs(5, 14, 14), 0)

	// An early request refused (say b's log lost its match) turns early
	// sends off; raft's own request for the entry goes to the follower.
	got = answer(t, follower, &raft.AppendEntriesResponse{Term: 5, LastLog: 12, Success: false})
	early(5, 12, earlyLogs(5, 13, 13), 1)
	if r := <-got; r == nil || r.PrevLogEntry != 12 {
		t.Fatalf("early request for 13: %+v", r)
	}
	waitBus(t, "the refused early request counted", func() bool { return a.bus.Stats().EarlyFailed == 1 })
	early(5, 12, earlyLogs(5, 14, 14), 0)
	got = answer(t, follower, okUpTo(13))
	if resp := send(raftsOwn(12, earlyLogs(5, 13, 13), 12)); !resp.Success || resp.LastLog != 13 {
		t.Fatalf("raft's own request for 13 answered %+v", resp)
	}
	if r := <-got; r == nil || r.PrevLogEntry != 12 || r.LeaderCommitIndex != 12 {
		t.Fatalf("raft's own request for 13 reached the follower as %+v", r)
	}

	// That success turns them on again. One early request is in flight
	// per follower: while 14 is unanswered, 15 waits for raft's own.
	early(5, 13, earlyLogs(5, 14, 14), 1)
	early(5, 13, earlyLogs(5, 15, 15), 0)
	got = answer(t, follower, okUpTo(14))
	if r := <-got; r == nil || r.PrevLogEntry != 13 {
		t.Fatalf("early request for 14 after raft's success: %+v", r)
	}
	waitBus(t, "the early request for 14 answered", func() bool {
		tr.early.mu.Lock()
		defer tr.early.mu.Unlock()
		return !tr.early.peers["b"].pending.unanswered()
	})
	early(5, 13, earlyLogs(5, 15, 15), 1)
	got = answer(t, follower, okUpTo(15))
	<-got

	// Only in the term raft replicated in.
	early(5, 14, earlyLogs(6, 16, 16), 0)
	waitBus(t, "4 early requests counted, 1 refused", func() bool {
		st := a.bus.Stats()
		return st.Early == 4 && st.EarlyFailed == 1
	})
}

// TestEarlyStalledFollowerHoldsUpNoOther: with one follower answering and
// three whose raft has stalled (their early requests go unanswered), raft's
// own request to the answering follower gets its early answer at once, not
// after the stalled ones' bus timeout; in each of three rounds, once the
// stalled ones answer, all four get the next batch early again.
func TestEarlyStalledFollowerHoldsUpNoOther(t *testing.T) {
	const busTimeout = 5 * time.Second
	a := newBusNode(t, busTimeout, 3)
	tr := a.trs[3]
	names := []raft.ServerID{"b", "c", "d", "e"} // b answers; c, d, e stall
	followers := map[raft.ServerID]*busNode{}
	for _, id := range names {
		followers[id] = newBusNode(t, busTimeout, 3)
	}
	target := func(id raft.ServerID) raft.ServerAddress {
		return raft.ServerAddress(followers[id].mux.Addr().String())
	}
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("a"), Addr: []byte("a:1")}
	okUpTo := func(last uint64) *raft.AppendEntriesResponse {
		return &raft.AppendEntriesResponse{Term: 5, LastLog: last, Success: true}
	}
	raftsOwn := func(prev uint64, logs []*raft.Log) *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 5, Leader: []byte("a:1"), PrevLogEntry: prev, PrevLogTerm: 5, Entries: logs, LeaderCommitIndex: prev}
	}
	send := func(id raft.ServerID, req *raft.AppendEntriesRequest) (*raft.AppendEntriesResponse, time.Duration) {
		t.Helper()
		var resp raft.AppendEntriesResponse
		t0 := time.Now()
		if err := tr.AppendEntries(id, target(id), req, &resp); err != nil {
			t.Fatal(err)
		}
		return &resp, time.Since(t0)
	}
	// raft's own AppendEntries of entry 10 to each: all match up to 10.
	for _, id := range names {
		got := answer(t, followers[id].trs[3].Consumer(), okUpTo(10))
		send(id, raftsOwn(9, earlyLogs(5, 10, 10)))
		if r := <-got; r == nil {
			t.Fatalf("raft's own request never reached %s", id)
		}
	}
	for round, last := 0, uint64(10); round < 3; round, last = round+1, last+1 {
		logs := earlyLogs(5, last+1, last+1)
		stalled := map[raft.ServerID]raft.RPC{} // early requests held unanswered
		got := answer(t, followers["b"].trs[3].Consumer(), okUpTo(last+1))
		if n := tr.replicateEarly(5, last, logs); n != len(names) {
			t.Fatalf("round %d: entry %d went early to %d followers, want %d", round, last+1, n, len(names))
		}
		if r := <-got; r == nil {
			t.Fatalf("round %d: no early request reached b", round)
		}
		for _, id := range names[1:] {
			select {
			case rpc := <-followers[id].trs[3].Consumer():
				stalled[id] = rpc
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: no early request reached %s", round, id)
			}
		}
		resp, took := send("b", raftsOwn(last, logs))
		if !reflect.DeepEqual(resp, okUpTo(last+1)) {
			t.Fatalf("round %d: raft's request to b answered %+v, want the early answer", round, resp)
		}
		if took > busTimeout/2 {
			t.Fatalf("round %d: raft's request to b took %v: held up by the stalled followers", round, took)
		}
		for id, rpc := range stalled { // they wake up and answer
			rpc.Respond(okUpTo(last+1), nil)
			waitBus(t, fmt.Sprintf("%s's early answer recorded", id), func() bool {
				tr.early.mu.Lock()
				defer tr.early.mu.Unlock()
				return !tr.early.peers[id].pending.unanswered()
			})
		}
	}
}

// TestEarlyReplicationInACluster: in a 3-node cluster on the raft bus
// with early replication, a shard's writes reach its followers early and
// raft's own AppendEntries are answered by those early requests, while
// every replica ends with every write; without it, nothing goes early.
func TestEarlyReplicationInACluster(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("EarlyReplication=%v", on), func(t *testing.T) {
			tc := startCluster(t, 3, 1, func(c *Config) { c.RaftBus, c.EarlyReplication = true, on })
			defer tc.close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			const writes = 30
			for v := 1; v <= writes; v++ {
				if err := tc.submitFollowing(ctx, 0, v); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range tc.nodes {
				if err := waitStale(ctx, n, 0, writes); err != nil {
					t.Fatal(err)
				}
			}
			var sum RaftBusStats
			for _, n := range tc.nodes {
				st := n.BusStats().RaftBus
				sum.Early += st.Early
				sum.EarlyAnswered += st.EarlyAnswered
				sum.EarlyFailed += st.EarlyFailed
			}
			t.Logf("early %d, answered %d, failed %d", sum.Early, sum.EarlyAnswered, sum.EarlyFailed)
			if !on {
				if sum.Early != 0 || sum.EarlyAnswered != 0 {
					t.Fatalf("early replication off, yet %+v", sum)
				}
				return
			}
			// Each write goes to two followers; the first after each
			// follower's first success may not go early.
			if sum.Early < writes || sum.EarlyAnswered < writes {
				t.Fatalf("%d writes: %d early requests, %d raft requests answered by them", writes, sum.Early, sum.EarlyAnswered)
			}
		})
	}
}
