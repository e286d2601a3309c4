package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestShardPolicyCommands: RAFTSTREAM SHARD POLICY shows the policy of a
// default cluster (auto, one shard per node: 3 shards for 3 nodes), refuses
// bad arguments with an error, and is set through any node (also with
// `raftstream shard policy`); an operator's own SLOTS MOVE turns it off.
func TestShardPolicyCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	nodes := startCluster(t, 3, 0)
	a, b := nodes[0].Addr, nodes[1].Addr
	show := func(addr string) string {
		t.Helper()
		v, err := rsCall(addr, "RAFTSTREAM", "SHARD", "POLICY")
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(v)
	}
	// waitShow waits until addr shows want (a node adopts the controller's
	// change a moment later).
	waitShow := func(addr, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for show(addr) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: SHARD POLICY %s, want %s", addr, show(addr), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitShow(a, "[auto yes per-node 1]")
	owner, _, _, err := slotMapOf(a)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[int]bool{}
	for _, s := range owner {
		distinct[s] = true
	}
	if len(distinct) != 3 {
		t.Fatalf("a default 3-node cluster has %d shards owning slots, want 3", len(distinct))
	}
	for _, bad := range [][]string{
		{"BOGUS"}, {"AUTO", "PER-NODE"}, {"AUTO", "PER-NODE", "0"}, {"AUTO", "PER-NODE", "x"},
		{"OFF", "PER-NODE", "65"}, {"AUTO", "EXTRA", "1"}, {"AUTO", "PER-NODE", "1", "more"},
	} {
		_, err := rsCall(a, append([]string{"RAFTSTREAM", "SHARD", "POLICY"}, bad...)...)
		if err == nil || !strings.HasPrefix(err.Error(), "ERR ") {
			t.Errorf("SHARD POLICY %v: %v, want an ERR reply", bad, err)
		}
	}
	if _, err := rsCall(b, "RAFTSTREAM", "SHARD", "POLICY", "OFF", "PER-NODE", "2"); err != nil {
		t.Fatal(err)
	}
	waitShow(a, "[auto no per-node 2]")
	if out, err := runCLI(t, "shard", "policy", "--addr", a, "--set", "auto", "--per-node", "1"); err != nil || strings.TrimSpace(out) != "OK" {
		t.Fatalf("raftstream shard policy --set auto: %q %v", out, err)
	}
	waitShow(b, "[auto yes per-node 1]")
	if out, err := runCLI(t, "shard", "policy", "--addr", b); err != nil || out != "auto yes\nper-node 1\n" {
		t.Fatalf("raftstream shard policy: %q %v", out, err)
	}
	// An operator's move turns the policy off, so it does not undo it.
	to := (owner[0] + 1) % 3
	if _, err := moveSlot(a, 0, to); err != nil {
		t.Fatal(err)
	}
	waitShow(a, "[auto no per-node 1]")
	if err := waitSlotOwner(t.Context(), []string{a}, 0, to); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // the policy's settle time and more
	if o, _, _, err := slotMapOf(a); err != nil || o[0] != to {
		t.Fatalf("slot 0 owned by %v (%v) after the operator moved it to %d", o[0], err, to)
	}
}

// TestAddedShardsTakeTheSettings: shards the policy adds (K raised from 1
// to 2 on 3 nodes: 3 more) carry the engine parameters set with CONFIG SET
// on every node and the retention policies of the others, as
// RAFTSTREAM SHARD CONFIG <n> GET shows through any node and RETENTION
// SHARD <n> LIST on n's leader; SHARD CONFIG refuses bad arguments and
// sets one shard through any node.
func TestAddedShardsTakeTheSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	nodes := startCluster(t, 3, 0)
	a := nodes[0].Addr
	// CONFIG SET covers the shards a node leads: once each leads one.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		leaders := map[string]bool{}
		for _, l := range shardLeaders(addrsOf(nodes)) {
			leaders[l] = true
		}
		if len(leaders) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every node leads a shard: %v", shardLeaders(addrsOf(nodes)))
		}
	}
	for _, n := range nodes {
		if _, err := rsCall(n.Addr, "CONFIG", "SET", "stream-node-max-entries", "7", "stream-idmp-maxsize", "55"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rsCall(a, "RAFTSTREAM", "RETENTION", "SET", "orders:*", "MAXLEN", "1000"); err != nil {
		t.Fatal(err)
	}
	if _, err := rsCall(a, "RAFTSTREAM", "SHARD", "POLICY", "AUTO", "PER-NODE", "2"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		owner, moves, _, err := slotMapOf(a)
		distinct := map[int]bool{}
		for _, s := range owner {
			distinct[s] = true
		}
		if err == nil && len(distinct) == 6 && moves == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("6 shards owning slots not within 90 s: %d shards, %d moves, %v", len(distinct), moves, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for sh := range 6 {
		for _, n := range nodes {
			v, err := rsCall(n.Addr, "RAFTSTREAM", "SHARD", "CONFIG", fmt.Sprint(sh), "GET", "stream-*")
			if got := fmt.Sprint(v); err != nil || !strings.Contains(got, "stream-node-max-entries 7") || !strings.Contains(got, "stream-idmp-maxsize 55") {
				t.Errorf("shard %d through %s: %q %v", sh, n.Name, got, err)
			}
		}
		// RETENTION SHARD <n> is read on n's leader.
		v, err := rsCall(shardLeaders(addrsOf(nodes))[sh], "RAFTSTREAM", "RETENTION", "SHARD", fmt.Sprint(sh), "LIST")
		if got := fmt.Sprint(v); err != nil || !strings.Contains(got, "orders:*") {
			t.Errorf("shard %d retention: %q %v", sh, got, err)
		}
	}
	for _, bad := range [][]string{
		{"9"}, {"9", "GET", "*"}, {"x", "GET", "*"}, {"0", "PUT", "a"}, {"0", "GET", "a", "b"},
		{"0", "SET", "stream-node-max-entries"}, {"0", "SET", "maxmemory", "1"}, {"0", "SET", "stream-idmp-maxsize", "0"},
	} {
		_, err := rsCall(a, append([]string{"RAFTSTREAM", "SHARD", "CONFIG"}, bad...)...)
		if err == nil || !strings.HasPrefix(err.Error(), "ERR ") {
			t.Errorf("SHARD CONFIG %v: %v, want an ERR reply", bad, err)
		}
	}
	if _, err := rsCall(nodes[2].Addr, "RAFTSTREAM", "SHARD", "CONFIG", "4", "SET", "stream-node-max-entries", "9"); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		v, err := rsCall(n.Addr, "RAFTSTREAM", "SHARD", "CONFIG", "4", "GET", "stream-node-max-entries")
		if fmt.Sprint(v) != "[stream-node-max-entries 9]" || err != nil {
			t.Errorf("shard 4 through %s after SET: %v %v", n.Name, v, err)
		}
	}
}
