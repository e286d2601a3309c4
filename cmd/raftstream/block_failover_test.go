package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/slots"
)

// leaderOfKey finds the node that leads key's shard: the one that accepts
// a read of it instead of answering MOVED.
func leaderOfKey(t *testing.T, addrs []string, key string) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, a := range addrs {
			c, err := testkit.Dial(a)
			if err != nil {
				continue
			}
			r, err := c.Do("XLEN", key)
			c.Close()
			if err == nil && strings.HasPrefix(string(r), ":") {
				return a
			}
		}
	}
	t.Fatalf("no node leads the shard of %s", key)
	return ""
}

// blockedRead sends a blocking read on its own connection and returns the
// first line of its reply when it comes.
func blockedRead(t *testing.T, addr string, args ...string) <-chan string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(testkit.EncodeCommand(args...)); err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 1)
	go func() {
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			line = "read error: " + err.Error()
		}
		out <- strings.TrimSpace(line)
	}()
	return out
}

// TestBlockedReadersFollowTheLeader: XREAD and XREADGROUP clients blocked
// with BLOCK 0 on the leader of their shard are redirected (MOVED to the
// new leader, or TRYAGAIN while none is known) within two election
// timeouts of the node losing the leadership: by a transfer, and by being
// cut off from the other replicas. A go-redis ClusterClient consumer loop
// keeps consuming across both without hanging.
func TestBlockedReadersFollowTheLeader(t *testing.T) {
	const election = 300 * time.Millisecond // startCluster's Raft timeouts
	nodes := startCluster(t, 3, 1)
	addrs := addrsOf(nodes)
	key := "blk:{1}"
	slot := slots.Of([]byte(key))
	leader := leaderOfKey(t, addrs, key)
	lc := dial(t, leader)
	if got := do(t, lc, "XGROUP", "CREATE", key, "g", "$", "MKSTREAM"); got != "+OK\r\n" {
		t.Fatalf("XGROUP CREATE: %q", got)
	}

	// A consumer loop through the cluster client, and a producer.
	redis.SetLogger(quietLogger{})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 16, ReadTimeout: -1})
	defer cc.Close()
	consumed := make(chan string, 1000)
	go func() {
		for ctx.Err() == nil {
			res, err := cc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "loop", Streams: []string{key, ">"}, Block: 0, Count: 10}).Result()
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			for _, s := range res {
				for _, m := range s.Messages {
					cc.XAck(ctx, key, "g", m.ID)
					consumed <- m.Values["n"].(string)
				}
			}
		}
	}()
	produced := 0
	produce := func(n int) {
		for i := 0; i < n; i++ {
			for attempt := 0; ; attempt++ {
				err := cc.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"n", fmt.Sprint(produced)}}).Err()
				if err == nil {
					break
				}
				if attempt == 200 {
					t.Fatalf("XADD %d: %v", produced, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			produced++
		}
	}
	awaitConsumed := func(stage string) {
		t.Helper()
		seen := map[string]bool{}
		for len(seen) < produced {
			select {
			case n := <-consumed:
				seen[n] = true
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: the consumer loop received %d of %d entries and then nothing for 30 s", stage, len(seen), produced)
			}
		}
		produced = 0
	}
	produce(20)
	awaitConsumed("before the failovers")

	expectRedirect := func(stage string, replies []<-chan string, within time.Duration) {
		t.Helper()
		for i, r := range replies {
			select {
			case got := <-r:
				if !strings.HasPrefix(got, fmt.Sprintf("-MOVED %d ", slot)) && !strings.HasPrefix(got, "-TRYAGAIN") {
					t.Errorf("%s: blocked client %d got %q, want MOVED or TRYAGAIN", stage, i, got)
				}
			case <-time.After(within):
				t.Fatalf("%s: blocked client %d still waiting %v after the node lost the leadership", stage, i, within)
			}
		}
	}

	// 1. A transfer.
	replies := []<-chan string{
		blockedRead(t, leader, "XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", key, ">"),
		blockedRead(t, leader, "XREAD", "BLOCK", "0", "STREAMS", key, "$"),
	}
	time.Sleep(300 * time.Millisecond) // let them block
	if got := do(t, lc, "RAFTSTREAM", "TRANSFER-LEADER", "0"); got != "+OK\r\n" {
		t.Fatalf("TRANSFER-LEADER: %q", got)
	}
	expectRedirect("transfer", replies, 2*election+time.Second)
	produce(20)
	awaitConsumed("after the transfer")

	// 2. The leader cut off from the other replicas (they are stopped: it
	// hears from neither and steps down).
	leader = leaderOfKey(t, addrs, key)
	replies = []<-chan string{
		blockedRead(t, leader, "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", key, ">"),
		blockedRead(t, leader, "XREAD", "BLOCK", "0", "STREAMS", key, "$"),
	}
	time.Sleep(300 * time.Millisecond)
	var stopped []int
	for i, a := range addrs {
		if a != leader {
			_ = syscall.Kill(nodes[i].Pid(), syscall.SIGSTOP)
			stopped = append(stopped, i)
		}
	}
	resume := func() {
		for _, i := range stopped {
			_ = syscall.Kill(nodes[i].Pid(), syscall.SIGCONT)
		}
		stopped = nil
	}
	defer resume()
	// Stepping down takes the leader lease (an election timeout) after the
	// last contact, then the poll notices.
	expectRedirect("cut off", replies, 3*election+time.Second)
	resume()
	produce(20)
	awaitConsumed("after the partition healed")
}
