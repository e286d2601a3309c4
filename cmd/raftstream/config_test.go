package main

import (
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/wire"
	"github.com/raftstream/raftstream/slots"
)

// TestConfigShowsTheFlags: what --maxmemory, --maxclients, --timeout,
// --proto-max-bulk-len and --log-level set is what CONFIG GET reports, and
// what CONFIG SET changes is in force at once.
func TestConfigShowsTheFlags(t *testing.T) {
	n := startNode(t, "", "--maxmemory", "100000000", "--maxclients", "50", "--timeout", "30s",
		"--proto-max-bulk-len", "2097152", "--log-level", "debug")
	c := dial(t, n.Addr)
	for name, want := range map[string]string{"maxmemory": "100000000", "maxclients": "50", "timeout": "30",
		"proto-max-bulk-len": "2097152", "loglevel": "debug", "appendonly": "yes", "appendfsync": "always", "save": "",
		"maxmemory-policy": "noeviction", "port": fmt.Sprint(n.Port), "dir": n.Dir} {
		if got := configValue(t, c, name); got != want {
			t.Errorf("CONFIG GET %s = %q, want %q", name, got, want)
		}
	}
	do(t, c, "CONFIG", "SET", "maxmemory", "1")
	if got := do(t, c, "XADD", "s", "*", "f", "v"); got != "-OOM command not allowed when used memory > 'maxmemory'.\r\n" {
		t.Errorf("XADD after CONFIG SET maxmemory 1: %q", got)
	}
	if info := do(t, c, "INFO", "memory"); !strings.Contains(info, "\r\nmaxmemory:1\r\n") {
		t.Errorf("INFO memory: %q", info)
	}
	if got := do(t, c, "CONFIG", "SET", "appendfsync", "everysec"); got != "-ERR CONFIG SET failed (possibly related to argument 'appendfsync') - can't set immutable config\r\n" {
		t.Errorf("CONFIG SET appendfsync everysec: %q", got)
	}
}

// configValue is CONFIG GET name's value.
func configValue(t *testing.T, c *testkit.Conn, name string) string {
	t.Helper()
	v, err := wire.Parse([]byte(do(t, c, "CONFIG", "GET", name)))
	kv, _ := v.([]any)
	if err != nil || len(kv) != 2 {
		t.Fatalf("CONFIG GET %s: %v %v", name, v, err)
	}
	return kv[1].(string)
}

// radixKeys is XINFO STREAM key's radix-tree-keys as the replica behind c
// (READONLY) has it.
func radixKeys(c *testkit.Conn, key string) string {
	r, err := c.Do("XINFO", "STREAM", key)
	if err != nil {
		return err.Error()
	}
	v, err := wire.Parse(r)
	kv, _ := v.([]any)
	for i := 0; err == nil && i+1 < len(kv); i += 2 {
		if kv[i] == "radix-tree-keys" {
			return fmt.Sprint(kv[i+1])
		}
	}
	return string(r)
}

// keyInShard returns a key of shard sh of a cluster of shards shards.
func keyInShard(sh, shards int) string {
	m := slots.NewMap(shards)
	for i := 0; ; i++ {
		if k := fmt.Sprintf("cfg:%d", i); m.Shard(slots.Of([]byte(k))) == sh {
			return k
		}
	}
}

// TestReplicatedConfigOnEveryReplica: CONFIG SET of the engine's
// parameters, sent to the leader of each shard (each node sets the shards it
// leads, as each master of a Redis Cluster sets itself), goes through the
// log: every replica of every shard applies it the same way (a stream's
// nodes hold 7 entries on all three nodes), CONFIG GET on every node reports
// it, and it survives a restart of the whole cluster, one shard having been
// snapshotted before.
func TestReplicatedConfigOnEveryReplica(t *testing.T) {
	const shards = 2
	nodes := startCluster(t, 3, shards)
	addrs := addrsOf(nodes)
	keys := []string{keyInShard(0, shards), keyInShard(1, shards)}
	for _, k := range keys {
		leader := leaderOfKey(t, addrs, k)
		c := dial(t, leader)
		if got := do(t, c, "CONFIG", "SET", "stream-node-max-entries", "7", "stream-idmp-maxsize", "42"); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET on %s: %q", leader, got)
		}
		for i := 1; i <= 20; i++ {
			if got := do(t, c, "XADD", k, fmt.Sprintf("%d-1", i), "f", "v"); strings.HasPrefix(got, "-") {
				t.Fatalf("XADD %s on %s: %q", k, leader, got)
			}
		}
		if got := do(t, c, "RAFTSTREAM", "SNAPSHOT"); strings.HasPrefix(got, "-") {
			t.Logf("RAFTSTREAM SNAPSHOT on %s: %q", leader, got)
		}
	}
	check := func(stage string, keys ...string) {
		t.Helper()
		for _, n := range nodes {
			c := dial(t, n.Addr)
			do(t, c, "READONLY")
			deadline := time.Now().Add(30 * time.Second)
			for _, k := range keys {
				// 20 entries in nodes of 7: 3 radix tree keys on every replica.
				for got := radixKeys(c, k); got != "3"; got = radixKeys(c, k) {
					if time.Now().After(deadline) {
						t.Fatalf("%s: %s's replica of %s: radix-tree-keys %s, want 3", stage, n.Name, k, got)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			for name, want := range map[string]string{"stream-node-max-entries": "7", "stream-idmp-maxsize": "42",
				"stream-node-max-bytes": "4096", "stream-idmp-duration": "100"} {
				for got := configValue(t, c, name); got != want; got = configValue(t, c, name) {
					if time.Now().After(deadline) {
						t.Fatalf("%s: CONFIG GET %s on %s = %q, want %q", stage, name, n.Name, got, want)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		}
	}
	check("applied", keys...)
	// INFO replication: each shard's leader lists the other two members
	// with the log index each acknowledged storing.
	leaderLine := regexp.MustCompile(`(?m)^shard(\d+):role=leader,term=\d+,commit_index=(\d+),applied_index=\d+,last_index=\d+,leader=\w+,voters=[\w|]+,nonvoters=[\w|]*,followers=(\w+)@(\d+)/(\w+)@(\d+)\r$`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		led := map[string]bool{}
		for _, n := range nodes {
			for _, m := range leaderLine.FindAllStringSubmatch(rawBulk(t, n.Addr, "INFO", "replication"), -1) {
				led[m[1]] = true
			}
		}
		if len(led) == shards {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("INFO replication of the leaders: %d of %d shards list both followers' applied index", len(led), shards)
		}
	}
	for _, n := range nodes {
		n.Kill()
	}
	testkit.StartAll(t, nodes...)
	check("after a restart", keys...)
	// Streams made after the restart get the configuration too.
	var fresh []string
	for _, k := range keys {
		k2 := "{" + k + "}:new"
		c := dial(t, leaderOfKey(t, addrs, k2))
		for i := 1; i <= 20; i++ {
			do(t, c, "XADD", k2, fmt.Sprintf("%d-1", i), "f", "v")
		}
		fresh = append(fresh, k2)
	}
	check("new streams after the restart", fresh...)
}

// TestInfoPersistenceCountsSnapshots: rdb_changes_since_last_save counts
// the writes applied since the last Raft snapshot of the local shards, and
// a snapshot (RAFTSTREAM SNAPSHOT) zeroes it and is counted as a save.
func TestInfoPersistenceCountsSnapshots(t *testing.T) {
	n := startNode(t, "")
	c := dial(t, n.Addr)
	do(t, c, "XADD", "s", "*", "f", "v")
	if got := do(t, c, "RAFTSTREAM", "SNAPSHOT"); got != ":1\r\n" {
		t.Fatalf("RAFTSTREAM SNAPSHOT: %q", got)
	}
	if got := infoField(t, n.Addr, "persistence", "rdb_changes_since_last_save"); got != 0 {
		t.Errorf("rdb_changes_since_last_save after a snapshot: %d", got)
	}
	saves := infoField(t, n.Addr, "persistence", "rdb_saves")
	for range 3 {
		do(t, c, "XADD", "s", "*", "f", "v")
	}
	do(t, c, "XADD", "s", "0-1", "f", "v") // refused: changes nothing
	if got := infoField(t, n.Addr, "persistence", "rdb_changes_since_last_save"); got != 3 {
		t.Errorf("rdb_changes_since_last_save after 3 writes: %d", got)
	}
	if saves < 1 || infoField(t, n.Addr, "persistence", "rdb_last_save_time") < time.Now().Add(-time.Minute).Unix() {
		t.Errorf("INFO persistence after a snapshot: %s", rawBulk(t, n.Addr, "INFO", "persistence"))
	}
}

// TestGatherSwitch: RAFTSTREAM_GATHER sets the shards' MaxGather, 0 turns
// the gather off, and anything but a duration of 0 or more is refused.
func TestGatherSwitch(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want time.Duration // cluster.Config.MaxGather; 0: fsm's default
		bad  bool
	}{{"", 0, false}, {"5ms", 5 * time.Millisecond, false}, {"0", -1, false}, {"-1ms", 0, true}, {"soon", 0, true}} {
		t.Setenv(gatherEnv, tc.env)
		t.Setenv(eventLoopEnv, "off") // the loop turns an unset gather off (TestEventLoopSwitch)
		var o options
		err := readEnvSwitches(&o)
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), gatherEnv) {
				t.Errorf("%s=%q: err %v, want one naming the variable", gatherEnv, tc.env, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s=%q: %v", gatherEnv, tc.env, err)
		}
		if got := clusterConfig(&o, slog.Default()).MaxGather; got != tc.want {
			t.Errorf("%s=%q: MaxGather %v, want %v", gatherEnv, tc.env, got, tc.want)
		}
	}
}

// TestEventLoopSwitch: a node started alone runs the event loop unless
// RAFTSTREAM_EVENT_LOOP=off; a node forming or joining a cluster runs it only
// with =on; --forwarding never does; the loop turns the gather off unless
// RAFTSTREAM_GATHER sets it; any other value is refused.
// TestIOURingSwitch: RAFTSTREAM_IO_URING=off makes the event loop read and
// write each connection with system calls of its own.
func TestIOURingSwitch(t *testing.T) {
	for _, tc := range []struct {
		env          string
		wantSyscalls bool
		bad          bool
	}{{env: ""}, {env: "on"}, {env: "off", wantSyscalls: true}, {env: "no", bad: true}} {
		t.Setenv(ioURingEnv, tc.env)
		var o options
		err := readEnvSwitches(&o)
		switch {
		case tc.bad:
			if err == nil || !strings.Contains(err.Error(), ioURingEnv) {
				t.Errorf("%s=%q: err %v, want one naming the variable", ioURingEnv, tc.env, err)
			}
		case err != nil:
			t.Fatalf("%s=%q: %v", ioURingEnv, tc.env, err)
		case o.loopSyscalls != tc.wantSyscalls:
			t.Errorf("%s=%q: syscalls %v, want %v", ioURingEnv, tc.env, o.loopSyscalls, tc.wantSyscalls)
		}
	}
}

func TestEventLoopSwitch(t *testing.T) {
	for _, tc := range []struct {
		env, gather string
		o           options
		want        bool
		wantGather  time.Duration
		bad         bool
	}{
		{env: "", o: options{}, want: true, wantGather: -1},
		{env: "", o: options{bootstrapExpect: 1}, want: true, wantGather: -1},
		{env: "", o: options{bootstrapExpect: 3}, want: false},
		{env: "", o: options{join: "127.0.0.1:7001"}, want: false},
		{env: "", o: options{forwarding: true}, want: false},
		{env: "on", o: options{bootstrapExpect: 3}, want: true, wantGather: -1},
		{env: "on", o: options{forwarding: true}, want: false},
		{env: "off", o: options{}, want: false},
		{env: "", gather: "2ms", o: options{}, want: true, wantGather: 2 * time.Millisecond},
		{env: "yes", bad: true},
	} {
		t.Setenv(eventLoopEnv, tc.env)
		t.Setenv(gatherEnv, tc.gather)
		o := tc.o
		err := readEnvSwitches(&o)
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), eventLoopEnv) {
				t.Errorf("%s=%q: err %v, want one naming the variable", eventLoopEnv, tc.env, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s=%q: %v", eventLoopEnv, tc.env, err)
		}
		if o.eventLoop != tc.want {
			t.Errorf("%s=%q with %+v: event loop %v, want %v", eventLoopEnv, tc.env, tc.o, o.eventLoop, tc.want)
		}
		if got := clusterConfig(&o, slog.Default()).MaxGather; got != tc.wantGather {
			t.Errorf("%s=%q with %+v: MaxGather %v, want %v", eventLoopEnv, tc.env, tc.o, got, tc.wantGather)
		}
	}
}

// TestEarlyReplicationSwitch: early replication is on unless
// RAFTSTREAM_EARLY_REPLICATION=off, and any other value is refused.
func TestEarlyReplicationSwitch(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want bool
		bad  bool
	}{{"", true, false}, {"on", true, false}, {"off", false, false}, {"no", false, true}} {
		t.Setenv(earlyReplicationEnv, tc.env)
		var o options
		err := readEnvSwitches(&o)
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), earlyReplicationEnv) {
				t.Errorf("%s=%q: err %v, want one naming the variable", earlyReplicationEnv, tc.env, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s=%q: %v", earlyReplicationEnv, tc.env, err)
		}
		if got := clusterConfig(&o, slog.Default()).EarlyReplication; got != tc.want {
			t.Errorf("%s=%q: EarlyReplication %v, want %v", earlyReplicationEnv, tc.env, got, tc.want)
		}
	}
}
