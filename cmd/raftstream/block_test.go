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
)

// waitBlocked waits until INFO reports n blocked clients.
func waitBlocked(t *testing.T, addr string, n int) {
	t.Helper()
	c := dial(t, addr)
	want := fmt.Sprintf("blocked_clients:%d\r\n", n)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(do(t, c, "INFO", "clients"), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: never reached %q", addr, want)
}

// blockThenWrite blocks a client with blockCmd, then runs the writes on a
// second connection, and returns the blocked client's reply.
func blockThenWrite(t *testing.T, addr string, setup [][]string, blockCmd []string, writes [][]string) string {
	t.Helper()
	a, b := dial(t, addr), dial(t, addr)
	for _, s := range setup {
		do(t, b, s...)
	}
	if err := a.Send(blockCmd...); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, addr, 1)
	for _, w := range writes {
		do(t, b, w...)
	}
	r, err := a.ReadReply()
	if err != nil {
		t.Fatal(err)
	}
	return string(r)
}

func TestBlockingReadsMatchRedis(t *testing.T) {
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	cases := []struct {
		name   string
		setup  [][]string
		block  []string
		writes [][]string
	}{
		{"xread-dollar", [][]string{{"XADD", "b1", "1-1", "old", "x"}},
			[]string{"XREAD", "BLOCK", "5000", "STREAMS", "b1", "$"},
			[][]string{{"XADD", "b1", "2-1", "new", "y"}}},
		{"xread-missing-key", nil,
			[]string{"XREAD", "COUNT", "5", "BLOCK", "0", "STREAMS", "b2", "b3", "$", "0"},
			[][]string{{"XADD", "b3", "7-7", "f", "v"}}},
		{"xreadgroup", [][]string{{"XADD", "b4", "1-1", "a", "1"}, {"XGROUP", "CREATE", "b4", "g", "$"}},
			[]string{"XREADGROUP", "GROUP", "g", "c1", "BLOCK", "5000", "STREAMS", "b4", ">"},
			[][]string{{"XADD", "b4", "3-3", "b", "2"}}},
		// A stream replaced by a string keeps its reader blocked; the
		// stream written again under that name serves it.
		{"xread-key-becomes-string", [][]string{{"XADD", "b5", "1-1", "a", "1"}},
			[]string{"XREAD", "BLOCK", "0", "STREAMS", "b5", "$"},
			[][]string{{"SET", "b5", "str"}, {"DEL", "b5"}, {"XADD", "b5", "5-1", "f", "v"}}},
		{"xreadgroup-group-destroyed", [][]string{{"XGROUP", "CREATE", "b6", "g", "$", "MKSTREAM"}},
			[]string{"XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "b6", ">"},
			[][]string{{"XGROUP", "DESTROY", "b6", "g"}}},
		{"xreadgroup-key-deleted", [][]string{{"XGROUP", "CREATE", "b7", "g", "$", "MKSTREAM"}},
			[]string{"XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "b7", ">"},
			[][]string{{"DEL", "b7"}}},
		{"xreadgroup-key-becomes-string", [][]string{{"XGROUP", "CREATE", "b8", "g", "$", "MKSTREAM"}},
			[]string{"XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "b8", ">"},
			[][]string{{"SET", "b8", "str"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := blockThenWrite(t, rs.Addr, tc.setup, tc.block, tc.writes)
			want := blockThenWrite(t, redis, tc.setup, tc.block, tc.writes)
			if got != want {
				t.Fatalf("raftstream %q, redis %q", got, want)
			}
		})
	}
}

func TestBlockingTimeoutNullReply(t *testing.T) {
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	runDiff(t, rs.Addr, redis, script(
		"XREAD BLOCK 50 STREAMS nothing $",
		"XGROUP CREATE tg g $ MKSTREAM",
		"XREADGROUP GROUP g c BLOCK 50 STREAMS tg >",
		"HELLO 3",
		"XREAD BLOCK 50 STREAMS nothing $",
		"XREADGROUP GROUP g c BLOCK 50 STREAMS tg >",
	)[:3])
	for _, addr := range []string{rs.Addr, redis} {
		c := dial(t, addr)
		do(t, c, "HELLO", "3")
		if got := do(t, c, "XREAD", "BLOCK", "50", "STREAMS", "nothing", "$"); got != "_\r\n" {
			t.Errorf("%s: RESP3 timeout reply %q", addr, got)
		}
	}
}

func TestBlockedClientDisconnectIsCleanedUp(t *testing.T) {
	rs := startNode(t, "")
	c, err := testkit.Dial(rs.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send("XREAD", "BLOCK", "0", "STREAMS", "gone", "$"); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, rs.Addr, 1)
	c.Close()
	waitBlocked(t, rs.Addr, 0)
	// The server still serves the key normally.
	w := dial(t, rs.Addr)
	if got := do(t, w, "XADD", "gone", "1-1", "f", "v"); got != "$3\r\n1-1\r\n" {
		t.Fatalf("XADD after disconnect: %q", got)
	}
}

// TestConsumerGroupUnderConcurrentWriters runs blocked XREADGROUP consumers
// while several writers append: every entry is delivered exactly once.
func TestConsumerGroupUnderConcurrentWriters(t *testing.T) {
	rs := startNode(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr, PoolSize: 16})
	defer rdb.Close()
	if err := rdb.XGroupCreateMkStream(ctx, "work", "g", "$").Err(); err != nil {
		t.Fatal(err)
	}
	const writers, perWriter, consumers = 4, 100, 3
	total := writers * perWriter
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i := 0; i < consumers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: fmt.Sprint("c", i),
					Streams: []string{"work", ">"}, Count: 10, Block: 200 * time.Millisecond}).Result()
				if err == redis.Nil {
					continue
				}
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("XREADGROUP: %v", err)
					}
					return
				}
				for _, s := range res {
					for _, m := range s.Messages {
						mu.Lock()
						seen[m.Values["w"].(string)+"/"+m.Values["n"].(string)]++
						mu.Unlock()
						rdb.XAck(ctx, "work", "g", m.ID)
					}
				}
			}
		}(i)
	}
	var ww sync.WaitGroup
	for w := 0; w < writers; w++ {
		ww.Add(1)
		go func(w int) {
			defer ww.Done()
			for n := 0; n < perWriter; n++ {
				if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "work", Values: []string{"w", fmt.Sprint(w), "n", fmt.Sprint(n)}}).Err(); err != nil {
					t.Errorf("XADD: %v", err)
					return
				}
			}
		}(w)
	}
	ww.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == total {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != total {
		t.Fatalf("delivered %d distinct entries, want %d", len(seen), total)
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("entry %s delivered %d times", k, c)
		}
	}
	if p, err := rdb.XPending(ctx, "work", "g").Result(); err != nil || p.Count != 0 {
		t.Fatalf("XPENDING after acks: %+v %v", p, err)
	}
}

// TestBlockedGroupReadersServedFIFO: two consumers block on the same group;
// each new entry goes to the one that blocked first, as in Redis.
func TestBlockedGroupReadersServedFIFO(t *testing.T) {
	rs := startNode(t, "")
	redisAddr := testkit.StartRedis(t)
	for round := 0; round < 3; round++ {
		var got [2]string
		for i, addr := range []string{rs.Addr, redisAddr} {
			key := fmt.Sprint("fifo", round)
			w := dial(t, addr)
			do(t, w, "XGROUP", "CREATE", key, "g", "$", "MKSTREAM")
			c1, c2 := dial(t, addr), dial(t, addr)
			if err := c1.Send("XREADGROUP", "GROUP", "g", "first", "BLOCK", "5000", "STREAMS", key, ">"); err != nil {
				t.Fatal(err)
			}
			waitBlocked(t, addr, 1)
			if err := c2.Send("XREADGROUP", "GROUP", "g", "second", "BLOCK", "5000", "STREAMS", key, ">"); err != nil {
				t.Fatal(err)
			}
			waitBlocked(t, addr, 2)
			do(t, w, "XADD", key, "1-1", "n", "1")
			r1, err := c1.ReadReply()
			if err != nil {
				t.Fatal(err)
			}
			waitBlocked(t, addr, 1) // the second consumer is still waiting
			do(t, w, "XADD", key, "2-1", "n", "2")
			r2, err := c2.ReadReply()
			if err != nil {
				t.Fatal(err)
			}
			got[i] = string(r1) + "|" + string(r2)
		}
		if got[0] != got[1] {
			t.Fatalf("round %d: raftstream %q, redis %q", round, got[0], got[1])
		}
	}
}
