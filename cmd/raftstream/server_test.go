package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/slots"
)

// TestReadYourWritesAcrossConnections: once a write is acknowledged on one
// connection, a read on any other connection sees it.
func TestReadYourWritesAcrossConnections(t *testing.T) {
	rs := startNode(t, "")
	ctx := context.Background()
	const clients, rounds = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w := redis.NewClient(&redis.Options{Addr: rs.Addr, PoolSize: 1})
			r := redis.NewClient(&redis.Options{Addr: rs.Addr, PoolSize: 1})
			defer w.Close()
			defer r.Close()
			key := fmt.Sprintf("ryw:%d", i)
			for n := 1; n <= rounds; n++ {
				id, err := w.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"n", fmt.Sprint(n)}}).Result()
				if err != nil {
					errs <- err
					return
				}
				l, err := r.XLen(ctx, key).Result()
				if err != nil || l != int64(n) {
					errs <- fmt.Errorf("%s: XLEN after %d acknowledged XADDs = %d, %v", key, n, l, err)
					return
				}
				msgs, err := r.XRevRangeN(ctx, key, "+", "-", 1).Result()
				if err != nil || len(msgs) != 1 || msgs[0].ID != id {
					errs <- fmt.Errorf("%s: last entry %v, want %s (%v)", key, msgs, id, err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// keysInDifferentShards finds two keys whose slots map to different shards
// of an n-shard node (contiguous ranges, as slots.Ranges splits them).
func keysInDifferentShards(n int) (string, string) {
	rs := slots.Ranges(n)
	shardOf := func(k string) int {
		s := slots.Of([]byte(k))
		for i, r := range rs {
			if r.Contains(s) {
				return i
			}
		}
		return -1
	}
	a := "a"
	for i := 0; i < 1000; i++ {
		b := fmt.Sprintf("k%d", i)
		if shardOf(b) != shardOf(a) {
			return a, b
		}
	}
	panic("no keys in different shards")
}

func TestCrossSlotAcrossShards(t *testing.T) {
	rs := startNode(t, "", "--shards", "4")
	a, b := keysInDifferentShards(4)
	c := dial(t, rs.Addr)
	const crossslot = "-CROSSSLOT Keys in request don't hash to the same slot\r\n"
	if got := do(t, c, "DEL", a, b); got != crossslot {
		t.Errorf("DEL across shards: %q", got)
	}
	if got := do(t, c, "XREAD", "STREAMS", a, b, "0", "0"); got != crossslot {
		t.Errorf("XREAD across shards: %q", got)
	}
	// Same shard through a hash tag: allowed, and atomic in MULTI.
	do(t, c, "MULTI")
	do(t, c, "XADD", "{o}", "1-1", "f", "v")
	do(t, c, "XADD", "{o}:dlq", "1-1", "f", "v")
	if got := do(t, c, "EXEC"); got != "*2\r\n$3\r\n1-1\r\n$3\r\n1-1\r\n" {
		t.Errorf("EXEC on one shard: %q", got)
	}
	// A transaction spanning slots is queued and refused as a whole at
	// EXEC, as Redis Cluster does (TestCrossSlotMatchesRedisCluster).
	do(t, c, "MULTI")
	do(t, c, "XADD", a, "1-1", "f", "v")
	if got := do(t, c, "XADD", b, "1-1", "f", "v"); got != "+QUEUED\r\n" {
		t.Errorf("queueing a command of another slot: %q", got)
	}
	if got := do(t, c, "EXEC"); got != crossslot {
		t.Errorf("EXEC across slots: %q", got)
	}
	if got := do(t, c, "EXISTS", a); got != ":0\r\n" {
		t.Errorf("aborted transaction wrote: EXISTS %s = %q", a, got)
	}
	// Keyspace commands span every shard.
	do(t, c, "XADD", a, "1-1", "f", "v")
	do(t, c, "XADD", b, "1-1", "f", "v")
	if got := do(t, c, "DBSIZE"); got != ":4\r\n" {
		t.Errorf("DBSIZE over 4 shards: %q", got)
	}
	keys := do(t, c, "KEYS", "*")
	for _, k := range []string{a, b, "{o}", "{o}:dlq"} {
		if !strings.Contains(keys, "\r\n"+k+"\r\n") {
			t.Errorf("KEYS * = %q lacks %s", keys, k)
		}
	}
	// SCAN visits every shard exactly once.
	seen := map[string]int{}
	cursor := "0"
	for i := 0; i < 100; i++ {
		rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
		ks, next, err := rdb.Scan(context.Background(), parseCursor(cursor), "*", 2).Result()
		rdb.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			seen[k]++
		}
		cursor = fmt.Sprint(next)
		if next == 0 {
			break
		}
	}
	if len(seen) != 4 {
		t.Errorf("SCAN saw %v", seen)
	}
	if got := do(t, c, "FLUSHALL"); got != "+OK\r\n" {
		t.Errorf("FLUSHALL: %q", got)
	}
	if got := do(t, c, "DBSIZE"); got != ":0\r\n" {
		t.Errorf("DBSIZE after FLUSHALL: %q", got)
	}
}

func parseCursor(s string) uint64 {
	var n uint64
	fmt.Sscan(s, &n)
	return n
}

func TestMalformedProtocol(t *testing.T) {
	rs := startNode(t, "")
	redisAddr := testkit.StartRedis(t)
	for _, raw := range []string{"*1\r\n$x\r\n", "*a\r\n", "*1\r\n+PING\r\n",
		"*1\r\n$4\r\nPING\r\n*1\r\n$600000000\r\n", "*2147483648\r\n", "*1\r\n$-2\r\n"} {
		var got [2]string
		for i, addr := range []string{rs.Addr, redisAddr} {
			c := dial(t, addr)
			if err := c.WriteRaw([]byte(raw)); err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(3 * time.Second))
			r, _ := c.ReadReply()
			if string(r) == "+PONG\r\n" {
				r2, _ := c.ReadReply()
				r = append(r, r2...)
			}
			got[i] = string(r)
			// The server closes the connection after a protocol error.
			if _, err := c.ReadReply(); err == nil {
				t.Errorf("%s: connection still open after %q", addr, raw)
			}
		}
		if got[0] != got[1] {
			t.Errorf("%q: raftstream %q, redis %q", raw, got[0], got[1])
		}
	}
}

// TestEmptyMultibulkIgnored: Redis skips "*0" and "*-1" frames.
func TestEmptyMultibulkIgnored(t *testing.T) {
	rs := startNode(t, "")
	redisAddr := testkit.StartRedis(t)
	for _, addr := range []string{rs.Addr, redisAddr} {
		c := dial(t, addr)
		if err := c.WriteRaw([]byte("*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n")); err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(3 * time.Second))
		if r, err := c.ReadReply(); err != nil || string(r) != "+PONG\r\n" {
			t.Errorf("%s: %q %v", addr, r, err)
		}
	}
}

func TestQuitAndClientKill(t *testing.T) {
	rs := startNode(t, "")
	victim := dial(t, rs.Addr)
	id := strings.TrimSpace(strings.TrimPrefix(do(t, victim, "CLIENT", "ID"), ":"))
	killer := dial(t, rs.Addr)
	if got := do(t, killer, "CLIENT", "KILL", "ID", id); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL ID %s: %q", id, got)
	}
	victim.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := victim.Do("PING"); err == nil {
		t.Fatal("killed connection still answers")
	}
	if got := do(t, killer, "QUIT"); got != "+OK\r\n" {
		t.Fatalf("QUIT: %q", got)
	}
	if _, err := killer.Do("PING"); err == nil {
		t.Fatal("connection open after QUIT")
	}
}

// TestSIGTERMFinishesAndRestarts: SIGTERM exits cleanly (status 0) and the
// data is there after a restart.
func TestSIGTERMFinishesAndRestarts(t *testing.T) {
	rs := startNode(t, "")
	c := dial(t, rs.Addr)
	do(t, c, "XADD", "term", "1-1", "f", "v")
	if err := rs.Stop(stopTimeout); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	rs.Start()
	// A client blocked forever does not hold up a clean shutdown.
	b := dial(t, rs.Addr)
	if err := b.Send("XREAD", "BLOCK", "0", "STREAMS", "term", "$"); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, rs.Addr, 1)
	start := time.Now()
	if err := rs.Stop(stopTimeout); err != nil {
		t.Fatalf("SIGTERM with a blocked client: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown with a blocked client took %v", d)
	}
	rs.Start()
	c2 := dial(t, rs.Addr)
	if got := do(t, c2, "XLEN", "term"); got != ":1\r\n" {
		t.Fatalf("XLEN after restart: %q", got)
	}
}

func TestEnvironmentSetsFlags(t *testing.T) {
	t.Setenv("RAFTSTREAM_REQUIREPASS", "envpass")
	rs := startNode(t, "")
	c := dial(t, rs.Addr)
	if got := do(t, c, "PING"); got != "-NOAUTH Authentication required.\r\n" {
		t.Fatalf("PING without AUTH: %q", got)
	}
	if got := do(t, c, "AUTH", "envpass"); got != "+OK\r\n" {
		t.Fatalf("AUTH: %q", got)
	}
}

// TestReplicatedConfigAndDebugReload: CONFIG SET of stream-node-* goes
// through the log (it survives a crash), DEBUG RELOAD round-trips the data.
func TestReplicatedConfigAndDebugReload(t *testing.T) {
	rs := startNode(t, "")
	c := dial(t, rs.Addr)
	if got := do(t, c, "CONFIG", "SET", "stream-node-max-entries", "7", "stream-node-max-bytes", "2kb"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	for i := 1; i <= 20; i++ {
		do(t, c, "XADD", "cfg", fmt.Sprintf("%d-1", i), "f", "v")
	}
	if got := do(t, c, "DEBUG", "RELOAD"); got != "+OK\r\n" {
		t.Fatalf("DEBUG RELOAD: %q", got)
	}
	if got := do(t, c, "XLEN", "cfg"); got != ":20\r\n" {
		t.Fatalf("XLEN after DEBUG RELOAD: %q", got)
	}
	rs.Restart() // SIGKILL, then start on the same data
	c2 := dial(t, rs.Addr)
	want := "*4\r\n$21\r\nstream-node-max-bytes\r\n$4\r\n2048\r\n$23\r\nstream-node-max-entries\r\n$1\r\n7\r\n"
	if got := do(t, c2, "CONFIG", "GET", "stream-node-max-*"); got != want {
		t.Fatalf("CONFIG GET after crash: %q, want %q", got, want)
	}
	if got := do(t, c2, "XLEN", "cfg"); got != ":20\r\n" {
		t.Fatalf("XLEN after crash: %q", got)
	}
}
