package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
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
	waitShow(a, "[auto yes per-node 1 fit-hosts yes]")
	owner, _, _, err := slotMapOf(a)
	if err != nil {
		t.Fatal(err)
	}
	if n := shardsOwning(owner); n != 3 {
		t.Fatalf("a default 3-node cluster has %d shards owning slots, want 3", n)
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
	waitShow(a, "[auto no per-node 2 fit-hosts no]")
	if out, err := runCLI(t, "shard", "policy", "--addr", a, "--set", "auto", "--per-node", "1"); err != nil || strings.TrimSpace(out) != "OK" {
		t.Fatalf("raftstream shard policy --set auto: %q %v", out, err)
	}
	waitShow(b, "[auto yes per-node 1 fit-hosts no]")
	if out, err := runCLI(t, "shard", "policy", "--addr", b); err != nil || out != "auto yes\nper-node 1\nfit-hosts no\n" {
		t.Fatalf("raftstream shard policy: %q %v", out, err)
	}
	// An operator's move turns the policy off, so it does not undo it.
	to := (owner[0] + 1) % 3
	if _, err := moveSlot(a, 0, to); err != nil {
		t.Fatal(err)
	}
	waitShow(a, "[auto no per-node 1 fit-hosts no]")
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
	// Sent to every node, as to a Redis Cluster's masters. A leader that
	// moves between two of the calls can leave its shard out: send the
	// round again until every shard has the parameters.
	setAll := func() bool {
		for _, n := range nodes {
			if _, err := rsCallRetry(n.Addr, "CONFIG", "SET", "stream-node-max-entries", "7", "stream-idmp-maxsize", "55"); err != nil {
				t.Fatal(err)
			}
		}
		for sh := range 3 {
			v, err := rsCall(a, "RAFTSTREAM", "SHARD", "CONFIG", fmt.Sprint(sh), "GET", "stream-node-max-entries")
			if err != nil || fmt.Sprint(v) != "[stream-node-max-entries 7]" {
				return false
			}
		}
		return true
	}
	for round := 0; !setAll(); round++ {
		if round == 5 {
			t.Fatal("CONFIG SET on every node, 5 times, did not reach every shard")
		}
	}
	if _, err := rsCallRetry(a, "RAFTSTREAM", "RETENTION", "SET", "orders:*", "MAXLEN", "1000"); err != nil {
		t.Fatal(err)
	}
	if _, err := rsCallRetry(a, "RAFTSTREAM", "SHARD", "POLICY", "AUTO", "PER-NODE", "2"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		owner, moves, _, err := slotMapOf(a)
		if err == nil && shardsOwning(owner) == 6 && moves == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("6 shards owning slots not within 90 s: %d shards, %d moves, %v", shardsOwning(owner), moves, err)
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

// TestDefaultClusterFitsTheHosts: three nodes on one host of 2 CPUs
// (--host-id, --host-cpus) formed without a shard count have one shard,
// which a cluster client writes every slot through, and a policy that
// fits the hosts. A node that joins from another host of 2 CPUs counts as
// a unit of its own: the policy adds a shard, which owns slots and which
// the newcomer leads.
func TestDefaultClusterFitsTheHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	nodes := testkit.NewCluster(t, 3, clusterArgs(0, "--host-id", "one-host", "--host-cpus", "2")...)
	testkit.StartAll(t, nodes...)
	addrs := addrsOf(nodes)
	a := addrs[0]
	if v, err := rsCall(a, "RAFTSTREAM", "SHARD", "POLICY"); err != nil || fmt.Sprint(v) != "[auto yes per-node 1 fit-hosts yes]" {
		t.Fatalf("SHARD POLICY: %v %v", v, err)
	}
	// owners counts the shards owning slots, as every node of addrs says
	// once no move is in flight (0 until then).
	owners := func(addrs []string) int {
		n := -1
		for _, addr := range addrs {
			owner, inFlight, _, err := slotMapOf(addr)
			if err != nil || inFlight > 0 || (n >= 0 && shardsOwning(owner) != n) {
				return 0
			}
			n = shardsOwning(owner)
		}
		return n
	}
	if got := owners(addrs); got != 1 {
		t.Fatalf("%d shards own slots, want 1", got)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 8})
	defer cc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for i := range 16 {
		if err := cc.XAdd(ctx, &redis.XAddArgs{Stream: fmt.Sprintf("orders:{%d}", i), Values: []any{"n", i}}).Err(); err != nil {
			t.Fatalf("XADD orders:{%d}: %v", i, err)
		}
	}

	n4 := testkit.NewNode(t, "n4", "", clusterArgs(0, "--join", nodes[0].BusAddr(), "--host-id", "another-host", "--host-cpus", "2")...)
	n4.Start()
	addrs = append(addrs, n4.Addr)
	for deadline := time.Now().Add(90 * time.Second); owners(addrs) != 2; time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d shards own slots 90 s after a node of another host joined, want 2", owners(addrs))
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		led := 0
		for _, addr := range shardLeaders(addrs) {
			if addr == n4.Addr {
				led++
			}
		}
		if led == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node from another host leads %d shards, want 1 (leaders %v)", led, shardLeaders(addrs))
		}
	}
	for i := range 16 {
		if n, err := cc.XLen(ctx, fmt.Sprintf("orders:{%d}", i)).Result(); err != nil || n != 1 {
			t.Fatalf("XLEN orders:{%d} = %d, %v after the shard was added; want 1", i, n, err)
		}
	}
}

// shardsOwning counts the distinct shards of a slot map (slotMapOf).
func shardsOwning(owner []int) int {
	distinct := map[int]bool{}
	for _, s := range owner {
		distinct[s] = true
	}
	return len(distinct)
}
