package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/slots"
)

// TestClusterClientFollowsMoved drives a 3-node, 6-shard cluster through
// go-redis's ClusterClient: it discovers slots with CLUSTER SLOTS and
// follows MOVED; after a node is killed, writes resume on the new leaders.
func TestClusterClientFollowsMoved(t *testing.T) {
	redis.SetLogger(quietLogger{}) // dial retries to the killed node are expected
	nodes := startCluster(t, 3, 6)
	addrs := addrsOf(nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// A plain client on one node is redirected for keys led elsewhere,
	// once another node leads a shard (the first elections can all go to
	// one node before leaders are spread).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		leaders := shardLeaders(addrs)
		elsewhere := 0
		for _, a := range leaders {
			if a != addrs[0] {
				elsewhere++
			}
		}
		if len(leaders) == 6 && elsewhere > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no shard led by a node other than %s within 30 s: %v", addrs[0], leaders)
		}
	}
	moved := 0
	plain := dial(t, addrs[0])
	for i := 0; i < 30; i++ {
		if r := do(t, plain, "XADD", fmt.Sprint("probe:", i), "*", "f", "v"); strings.HasPrefix(r, "-MOVED ") {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("no MOVED from a node for 30 keys spread over 6 shards of 3 nodes")
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 8})
	defer cc.Close()
	write := func(round, keys int) {
		for k := 0; k < keys; k++ {
			key := fmt.Sprintf("cc:%d", k)
			var err error
			for attempt := 0; attempt < 100; attempt++ {
				err = cc.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: fmt.Sprintf("%d-%d", round+1, 0), Values: []string{"r", fmt.Sprint(round)}}).Err()
				if err == nil || strings.Contains(err.Error(), "equal or smaller") {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				t.Fatalf("round %d XADD %s: %v", round, key, err)
			}
		}
	}
	write(0, 40)
	for k := 0; k < 40; k++ {
		if n, err := cc.XLen(ctx, fmt.Sprintf("cc:%d", k)).Result(); err != nil || n != 1 {
			t.Fatalf("XLEN cc:%d = %d, %v", k, n, err)
		}
	}
	// Kill one node: its shards elect new leaders on the other two, and the
	// client follows (TRYAGAIN / MOVED / connection errors are retried).
	nodes[2].Kill()
	write(1, 40)
	for k := 0; k < 40; k++ {
		var n int64
		var err error
		for attempt := 0; attempt < 100; attempt++ {
			if n, err = cc.XLen(ctx, fmt.Sprintf("cc:%d", k)).Result(); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil || n != 2 {
			t.Fatalf("after failover XLEN cc:%d = %d, %v", k, n, err)
		}
	}
}

// quietLogger drops go-redis's internal log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// TestForwardingForPlainClients: with --forwarding a client that knows
// nothing of the cluster uses one node for every key; commands for shards
// led elsewhere are relayed to their leaders (writes, reads, MULTI/EXEC,
// blocking reads) and never answered MOVED.
func TestForwardingForPlainClients(t *testing.T) {
	addrs := addrsOf(startCluster(t, 3, 6, "--forwarding"))
	c := dial(t, addrs[0])
	for i := 0; i < 30; i++ {
		key := fmt.Sprint("fw:", i)
		if got := do(t, c, "XADD", key, "1-1", "f", "v"); got != "$3\r\n1-1\r\n" {
			t.Fatalf("XADD %s through node 0: %q", key, got)
		}
		if got := do(t, c, "XLEN", key); got != ":1\r\n" {
			t.Fatalf("XLEN %s through node 0: %q", key, got)
		}
		do(t, c, "MULTI")
		do(t, c, "XADD", key, "2-1", "f", "v")
		do(t, c, "XLEN", key)
		if got := do(t, c, "EXEC"); got != "*2\r\n$3\r\n2-1\r\n:2\r\n" {
			t.Fatalf("EXEC on %s through node 0: %q", key, got)
		}
	}
	// RESP3 replies are relayed in the client's protocol.
	do(t, c, "HELLO", "3")
	for i := 0; i < 30; i++ {
		key := fmt.Sprint("fw:", i)
		if got := do(t, c, "XREAD", "STREAMS", key, "1-1"); got != "%1\r\n$"+fmt.Sprint(len(key))+"\r\n"+key+"\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n" {
			t.Fatalf("RESP3 XREAD %s: %q", key, got)
		}
	}
	// A blocking read forwarded to a remote leader is woken by a write
	// arriving through another node.
	leaderOf := slotLeaders(t, addrs[0])
	for i := 0; i < 30; i++ {
		key := fmt.Sprint("fw:", i)
		if leaderOf(key) == addrs[0] {
			continue
		}
		b := dial(t, addrs[0])
		if err := b.Send("XREAD", "BLOCK", "10000", "STREAMS", key, "$"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		w := dial(t, addrs[1])
		do(t, w, "XADD", key, "3-1", "g", "w")
		r, err := b.ReadReply()
		if err != nil || !strings.Contains(string(r), "3-1") {
			t.Fatalf("forwarded blocking XREAD %s: %q %v", key, r, err)
		}
		return
	}
	t.Fatal("no key led by another node among 30")
}

// TestForwardingHidesAFailover: a plain client writing through a node that
// forwards sees no error while the shard's leader is killed and another is
// elected. The forwarding node's pooled connection to the dead leader is
// not used (the command would leave on it and its outcome could not be
// told), and the command waits for the new leader instead of answering
// TRYAGAIN. Every write is then in the stream, once.
func TestForwardingHidesAFailover(t *testing.T) {
	nodes := startCluster(t, 3, 3, "--forwarding")
	addrs := addrsOf(nodes)
	const key = "failover:{7}"
	leader := leaderIndex(t, addrs, key)
	via := dial(t, addrs[(leader+1)%3])
	// Through the leader once, so the forwarding node keeps a connection
	// to it.
	if got := do(t, via, "XADD", key, "*", "n", "0"); !strings.HasPrefix(got, "$") {
		t.Fatalf("XADD before the kill: %q", got)
	}
	// Writes from clients that start one after another over the election,
	// through the forwarding node's own leaderless replica and to the
	// dead leader.
	conns := make([]*testkit.Conn, 12)
	for i := range conns {
		conns[i] = dial(t, addrs[(leader+1)%3])
	}
	nodes[leader].Kill()
	killed := time.Now()
	got := make([]string, len(conns))
	took := make([]time.Duration, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 80 * time.Millisecond)
			start := time.Now()
			r, err := c.Do("XADD", key, "*", "n", fmt.Sprint(i+1))
			got[i], took[i] = fmt.Sprintf("%q %v", r, err), time.Since(start)
			if err == nil && len(r) > 0 && r[0] == '$' {
				got[i] = ""
			}
		}()
	}
	wg.Wait()
	for i, g := range got {
		if g != "" {
			t.Errorf("XADD sent %v after the leader was killed (took %v): %s", time.Duration(i)*80*time.Millisecond, took[i], g)
		}
	}
	t.Logf("the XADDs after the kill took %v (all done %v after it)", took, time.Since(killed))
	if got := do(t, via, "XLEN", key); got != fmt.Sprintf(":%d\r\n", len(conns)+1) {
		t.Fatalf("XLEN after the failover: %q, want %d", got, len(conns)+1)
	}
}

// TestForwardingWaitsOutAnElection: a shard loses its quorum for a moment
// (its leader killed, a second replica stopped); a write sent through the
// third replica, which forwards, finds no leader there and waits instead
// of answering TRYAGAIN. Once the stopped replica runs again a leader is
// elected and the write is applied, once.
func TestForwardingWaitsOutAnElection(t *testing.T) {
	nodes := startCluster(t, 3, 3, "--forwarding")
	addrs := addrsOf(nodes)
	const key = "election:{3}"
	leader := leaderIndex(t, addrs, key)
	via, stopped := (leader+1)%3, (leader+2)%3
	c := dial(t, addrs[via])
	if got := do(t, c, "XADD", key, "*", "n", "0"); !strings.HasPrefix(got, "$") {
		t.Fatalf("XADD before the faults: %q", got)
	}
	pid := nodes[stopped].Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume := func() {
		once.Do(func() {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		})
	}
	defer resume()
	nodes[leader].Kill()
	go func() {
		time.Sleep(1500 * time.Millisecond)
		resume()
	}()
	// Past the heartbeat timeout (300 ms; raft waits up to twice that):
	// the replica asked knows it has no leader.
	time.Sleep(700 * time.Millisecond)
	start := time.Now()
	if got := do(t, c, "XADD", key, "*", "n", "1"); !strings.HasPrefix(got, "$") {
		t.Fatalf("XADD while the shard elected (%v): %q", time.Since(start), got)
	}
	t.Logf("the XADD took %v", time.Since(start))
	if got := do(t, c, "XLEN", key); got != ":2\r\n" {
		t.Fatalf("XLEN after the election: %q, want 2", got)
	}
}

// leaderIndex is the index in addrs of the node that leads key's shard, as
// CLUSTER SLOTS of addrs[0] says.
func leaderIndex(t *testing.T, addrs []string, key string) int {
	t.Helper()
	leader := slotLeaders(t, addrs[0])(key)
	for i, a := range addrs {
		if a == leader {
			return i
		}
	}
	t.Fatalf("the leader of %s's slot, %q, is none of %v", key, leader, addrs)
	return -1
}

// slotLeaders reads CLUSTER SLOTS from addr once and returns the address
// of the master it lists for a key's slot ("" for a slot it does not list).
func slotLeaders(t *testing.T, addr string) func(key string) string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ranges, err := rdb.ClusterSlots(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return func(key string) string {
		slot := int(slots.Of([]byte(key)))
		for _, r := range ranges {
			if slot >= r.Start && slot <= r.End {
				return r.Nodes[0].Addr
			}
		}
		return ""
	}
}

// TestForwardingTutorialWithPlainRedisCLI: with --forwarding, plain
// redis-cli (no -c) pointed at one node of a 3-node cluster runs the
// tutorial examples with output identical to redis-server's, although that
// node follows the shards of some of the tutorial's keys.
func TestForwardingTutorialWithPlainRedisCLI(t *testing.T) {
	addrs := addrsOf(startCluster(t, 3, 6, "--forwarding"))
	leaderOf := slotLeaders(t, addrs[0])
	keys := map[string]bool{}
	for _, step := range tutorialSteps {
		f := strings.Fields(step)
		switch strings.ToUpper(f[0]) {
		case "XREAD", "XREADGROUP":
			for i := range f {
				if strings.EqualFold(f[i], "STREAMS") {
					keys[f[i+1]] = true
				}
			}
		case "XGROUP":
			keys[f[2]] = true
		default:
			keys[f[1]] = true
		}
	}
	// The node that leads the fewest of the tutorial's keys.
	node, remote := "", -1
	for _, a := range addrs {
		n := 0
		for k := range keys {
			if leaderOf(k) != a {
				n++
			}
		}
		if n > remote {
			node, remote = a, n
		}
	}
	if remote == 0 {
		t.Fatalf("every tutorial key is led by %s; nothing would be forwarded", node)
	}
	t.Logf("tutorial through %s: %d of %d keys led by other nodes", node, remote, len(keys))
	ref := testkit.StartRedis(t)
	for _, step := range tutorialSteps {
		args := strings.Fields(step)
		got, want := redisCLI(t, node, args...), redisCLI(t, ref, args...)
		if got != want {
			t.Errorf("%s\n raftstream (forwarding):\n%s\n redis-server:\n%s", step, got, want)
		}
	}
}
