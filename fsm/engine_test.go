package fsm

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftstream/raftstream/engine"
)

// Tests that drive the real engine's stream commands through the FSM.

// view renders the replies of read-only commands run against s's engine
// (linearizably if lin, else locally) in Go syntax, for comparisons.
func view(t *testing.T, s *Shard, lin bool, cmds ...[][]byte) []byte {
	t.Helper()
	var out []byte
	fn := func(e *engine.Engine) {
		for _, c := range cmds {
			out = fmt.Appendf(out, "%#v\n", e.Exec(0, c))
		}
	}
	if !lin {
		s.StaleRead(fn)
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Read(ctx, fn); err != nil {
		t.Fatal(err)
	}
	return out
}

var streamView = [][][]byte{
	cmd("XRANGE", "s", "-", "+"),
	cmd("XLEN", "s"),
	cmd("XINFO", "GROUPS", "s"),
	cmd("XPENDING", "s", "g", "-", "+", "100"),
}

// fillStream writes n entries with auto IDs, a group and some deliveries.
func fillStream(t *testing.T, s *Shard, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		apply(t, s, unit(cmd("XADD", "s", "*", "i", strconv.Itoa(i), "pad", "xxxxxxxxxxxxxxxx")))
	}
	if rs := apply(t, s, unit(cmd("XGROUP", "CREATE", "s", "g", "0"))); rs[0] != engine.OK {
		t.Fatalf("XGROUP CREATE: %v", rs)
	}
	apply(t, s, unit(cmd("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "s", ">")))
}

func TestAutoIDsUseTheLeaderClock(t *testing.T) {
	s := singleVoter(t, func(c *Config) { c.Now = func() time.Time { return time.UnixMilli(1234) } })
	rs := apply(t, s.Shard, unit(cmd("XADD", "s", "*", "f", "v"), cmd("XADD", "s", "*", "f", "v")))
	if string(rs[0].(engine.BulkString)) != "1234-0" || string(rs[1].(engine.BulkString)) != "1234-1" {
		t.Fatalf("auto IDs %v, want 1234-0 1234-1", rs)
	}
}

func TestSnapshotRestoresStreams(t *testing.T) {
	s := singleVoter(t, func(c *Config) { c.TrailingLogs = 1 })
	fillStream(t, s.Shard, 300)
	if err := s.TakeSnapshot(); err != nil {
		t.Fatal(err)
	}
	apply(t, s.Shard, unit(cmd("XADD", "s", "*", "after", "snapshot")))
	apply(t, s.Shard, unit(cmd("XACK", "s", "g", "0-1")))
	want := view(t, s.Shard, true, streamView...)
	s.close(t)
	r := openReplica(t, s.dir, s.id, string(s.addr), nil)
	waitLeader(t, r)
	if got := view(t, r.Shard, true, streamView...); !bytes.Equal(got, want) {
		t.Fatalf("after restart from snapshot + log:\n got %q\nwant %q", got, want)
	}
}

func TestDebugReloadKeepsState(t *testing.T) {
	s := singleVoter(t, nil)
	fillStream(t, s.Shard, 150)
	apply(t, s.Shard, unit(cmd("CONFIG", "SET", "stream-node-max-entries", "7")))
	want := view(t, s.Shard, true, streamView...)
	if rs := apply(t, s.Shard, unit(cmd("debug", "reload"))); rs[0] != engine.OK {
		t.Fatalf("DEBUG RELOAD: %v", rs)
	}
	if got := view(t, s.Shard, true, streamView...); !bytes.Equal(got, want) {
		t.Fatalf("after DEBUG RELOAD:\n got %q\nwant %q", got, want)
	}
	var cfg engine.Config
	s.StaleRead(func(e *engine.Engine) { cfg = e.Config() })
	if cfg.NodeMaxEntries != 7 {
		t.Fatalf("DEBUG RELOAD lost the configuration: %+v", cfg)
	}
}

func TestNotifyAfterApply(t *testing.T) {
	got := make(chan []string, 16)
	var sh *Shard
	ready := make(chan struct{})
	s := singleVoter(t, func(c *Config) {
		c.ShardID = 7
		c.Notify = func(shard int, keys []string) {
			if shard != 7 {
				t.Errorf("notify shard %d", shard)
			}
			<-ready
			// The FSM lock is not held here: a read does not deadlock.
			sh.StaleRead(func(*engine.Engine) {})
			got <- keys
		}
	})
	sh = s.Shard
	close(ready)
	apply(t, s.Shard, unit(cmd("XADD", "b", "*", "f", "v"), cmd("XADD", "a", "*", "f", "v"), cmd("XADD", "b", "*", "f", "v")))
	select {
	case keys := <-got:
		if len(keys) != 2 || keys[0] != "b" || keys[1] != "a" {
			t.Fatalf("notified %q, want [b a]", keys)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
}

// TestReplicasConverge: every replica of a 3-voter group ends with
// byte-identical streams, including after a replicated DEBUG RELOAD and
// CONFIG SET.
func TestReplicasConverge(t *testing.T) {
	rs := clusterOf3(t)
	l := leaderOf(t, rs)
	fillStream(t, l.Shard, 120)
	apply(t, l.Shard, unit(cmd("CONFIG", "SET", "stream-node-max-entries", "5")))
	apply(t, l.Shard, unit(cmd("DEBUG", "RELOAD")))
	for i := 0; i < 20; i++ {
		apply(t, l.Shard, unit(cmd("XADD", "s", "*", "late", strconv.Itoa(i))))
	}
	want := view(t, l.Shard, true, streamView...)
	last := l.Raft().AppliedIndex()
	for _, r := range rs {
		waitFor(t, 5*time.Second, string(r.id)+" to catch up", func() bool { return r.Raft().AppliedIndex() >= last })
		if got := view(t, r.Shard, false, streamView...); !bytes.Equal(got, want) {
			t.Fatalf("%s differs from the leader:\n got %q\nwant %q", r.id, got, want)
		}
		var cfg engine.Config
		r.StaleRead(func(e *engine.Engine) { cfg = e.Config() })
		if cfg.NodeMaxEntries != 5 {
			t.Fatalf("%s: config %+v", r.id, cfg)
		}
	}
}

// TestConcurrentReads: linearizable and stale reads run engine read commands
// concurrently with each other and with applies (the FSM read lock is
// shared); -race checks that the engine's read paths tolerate that.
func TestConcurrentReads(t *testing.T) {
	s := singleVoter(t, nil)
	fillStream(t, s.Shard, 50)
	reads := [][][]byte{
		cmd("XRANGE", "s", "-", "+", "COUNT", "10"),
		cmd("XREVRANGE", "s", "+", "-", "COUNT", "10"),
		cmd("XLEN", "s"),
		cmd("XREAD", "COUNT", "5", "STREAMS", "s", "0"),
		cmd("XINFO", "STREAM", "s"),
		cmd("XPENDING", "s", "g"),
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				fn := func(e *engine.Engine) {
					for _, c := range reads {
						if r, ok := e.Exec(0, c).(*engine.Error); ok {
							t.Errorf("%q: %v", c, r)
						}
					}
				}
				if g%2 == 0 {
					s.StaleRead(fn)
				} else if err := s.Read(context.Background(), fn); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := 0; i < 30; i++ {
		apply(t, s.Shard, unit(cmd("XADD", "s", "*", "k", "v")))
	}
	wg.Wait()
}

// TestSnapshotWhileApplying: Persist runs while writes keep applying (the
// engine snapshot must be a true point-in-time view; -race checks sharing),
// and a restart from the last snapshot + log reproduces the state.
func TestSnapshotWhileApplying(t *testing.T) {
	s := singleVoter(t, func(c *Config) { c.TrailingLogs = 1 })
	fillStream(t, s.Shard, 40)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			u := unit(cmd("XADD", "s", "*", "i", strconv.Itoa(i)), cmd("XADD", "t", "*", "j", strconv.Itoa(i)))
			if i%7 == 0 {
				u = append(u, cmd("XTRIM", "t", "MAXLEN", "20"), cmd("XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">"))
			}
			if _, err := s.Submit(u).Wait(context.Background()); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 5; i++ {
		if err := s.TakeSnapshot(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	views := append(streamView, cmd("XRANGE", "t", "-", "+"), cmd("XINFO", "STREAM", "s", "FULL"))
	want := view(t, s.Shard, true, views...)
	s.close(t)
	r := openReplica(t, s.dir, s.id, string(s.addr), nil)
	waitLeader(t, r)
	if got := view(t, r.Shard, true, views...); !bytes.Equal(got, want) {
		t.Fatalf("after restart:\n got %q\nwant %q", got, want)
	}
}

// TestIdmpConfigSurvivesSnapshot: the Redis 8.6 stream-idmp-* settings are
// replicated by CONFIG SET, range-checked with Redis's wording, and kept by a
// restart from a snapshot (the FSM header must not reset them).
func TestIdmpConfigSurvivesSnapshot(t *testing.T) {
	s := singleVoter(t, nil)
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"stream-idmp-duration", "0"}, "ERR CONFIG SET failed (possibly related to argument 'stream-idmp-duration') - argument must be between 1 and 86400 inclusive"},
		{[]string{"stream-idmp-maxsize", "10001"}, "ERR CONFIG SET failed (possibly related to argument 'stream-idmp-maxsize') - argument must be between 1 and 10000 inclusive"},
		{[]string{"stream-idmp-maxsize", "x"}, "ERR CONFIG SET failed (possibly related to argument 'stream-idmp-maxsize') - argument couldn't be parsed into an integer"},
	} {
		rs := apply(t, s.Shard, unit(cmd(append([]string{"CONFIG", "SET"}, c.argv...)...)))
		if e, ok := rs[0].(*engine.Error); !ok || e.Msg != c.want {
			t.Fatalf("CONFIG SET %q = %v, want %q", c.argv, rs[0], c.want)
		}
	}
	apply(t, s.Shard, unit(cmd("CONFIG", "SET", "stream-idmp-duration", "300", "stream-idmp-maxsize", "42")))
	if err := s.TakeSnapshot(); err != nil {
		t.Fatal(err)
	}
	s.close(t)
	r := openReplica(t, s.dir, s.id, string(s.addr), nil)
	waitLeader(t, r)
	var cfg engine.Config
	r.StaleRead(func(e *engine.Engine) { cfg = e.Config() })
	if cfg.IdmpDuration != 300 || cfg.IdmpMaxSize != 42 {
		t.Fatalf("after restart from snapshot: %+v, want idmp 300 s / 42", cfg)
	}
}
