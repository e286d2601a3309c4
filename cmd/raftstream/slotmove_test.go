package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/slots"
)

// redisMoveSlot moves slot from the master at from to the master at to of
// a Redis Cluster the way redis-cli --cluster reshard does: SETSLOT
// IMPORTING on the target, MIGRATING on the source, MIGRATE of every key,
// then SETSLOT NODE on every master.
func redisMoveSlot(t *testing.T, masters []string, slot int, from, to string) {
	t.Helper()
	id := func(a string) string {
		v, err := rsCall(a, "CLUSTER", "MYID")
		if err != nil {
			t.Fatal(err)
		}
		return v.(string)
	}
	fromID, toID := id(from), id(to)
	s := strconv.Itoa(slot)
	mustCall(t, to, "CLUSTER", "SETSLOT", s, "IMPORTING", fromID)
	mustCall(t, from, "CLUSTER", "SETSLOT", s, "MIGRATING", toID)
	host, port, _ := strings.Cut(to, ":")
	for {
		v := mustCall(t, from, "CLUSTER", "GETKEYSINSLOT", s, "100")
		keys, _ := v.([]any)
		if len(keys) == 0 {
			break
		}
		args := []string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}
		for _, k := range keys {
			args = append(args, k.(string))
		}
		mustCall(t, from, args...)
	}
	for _, m := range masters {
		mustCall(t, m, "CLUSTER", "SETSLOT", s, "NODE", toID)
	}
}

func mustCall(t *testing.T, addr string, args ...string) any {
	t.Helper()
	v, err := rsCall(addr, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", addr, args, err)
	}
	return v
}

// slotsShape is CLUSTER SLOTS reduced to what must match Redis Cluster's
// for the same layout: the ranges in order, and each node entry's field
// types (host string, port integer, 40-hex ID, and the map of extra
// networking metadata).
func slotsShape(t *testing.T, v any) (ranges []string, entry string) {
	for _, r := range v.([]any) {
		row := r.([]any)
		ranges = append(ranges, fmt.Sprintf("%v-%v", row[0], row[1]))
		for _, n := range row[2:] {
			f := n.([]any)
			e := fmt.Sprintf("%T %T %d", f[0], f[1], len(f[2].(string)))
			if len(f) > 3 {
				e += fmt.Sprintf(" %T", f[3])
			}
			if entry != "" && e != entry {
				t.Errorf("node entries differ in shape: %q vs %q", e, entry)
			}
			entry = e
		}
	}
	return ranges, entry
}

// shardsShape is CLUSTER SHARDS reduced likewise: each shard's slot pairs
// (sorted), and the field names of its node entries.
func shardsShape(v any) (ranges []string, fields string) {
	for _, sh := range v.([]any) {
		kv := sh.([]any)
		for i := 0; i+1 < len(kv); i += 2 {
			switch kv[i] {
			case "slots":
				var pairs []string
				ps := kv[i+1].([]any)
				for j := 0; j+1 < len(ps); j += 2 {
					pairs = append(pairs, fmt.Sprintf("%v-%v", ps[j], ps[j+1]))
				}
				if len(pairs) > 0 {
					ranges = append(ranges, strings.Join(pairs, ","))
				}
			case "nodes":
				for _, n := range kv[i+1].([]any) {
					nf := n.([]any)
					var names []string
					for j := 0; j < len(nf); j += 2 {
						names = append(names, fmt.Sprint(nf[j]))
					}
					fields = strings.Join(names, " ")
				}
			}
		}
	}
	sort.Strings(ranges)
	return ranges, fields
}

// TestSlotMoveMatchesRedisCluster moves one slot holding streams with
// consumer groups from the first to the second shard of a 3-node
// raftstream cluster (RAFTSTREAM SLOTS MOVE) and from the first to the
// second master of a 3-master Redis Cluster of the same layout (SETSLOT and
// MIGRATE, as redis-cli --cluster reshard does), then compares: CLUSTER
// SLOTS ranges and entry shapes, CLUSTER SHARDS slot ranges and node
// fields, COUNTKEYSINSLOT and GETKEYSINSLOT on the old and the new owner,
// and the streams themselves. redis-cli --cluster check passes on
// raftstream before and after the move.
func TestSlotMoveMatchesRedisCluster(t *testing.T) {
	redisAddrs := startRedisCluster(t, 3)
	nodes := startCluster(t, 3, 3)
	rs := addrsOf(nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, took, err := waitClusterCheck(ctx, rs[0]); err != nil {
		t.Fatalf("redis-cli --cluster check before the move: %v\n%s", err, out)
	} else {
		t.Logf("cluster check passed %v after start", took.Round(time.Millisecond))
	}
	// redis-cli 7.0 splits 16384 slots 0-5460, 5461-10922, 10923-16383;
	// raftstream's 3 shards start with 5461-10921, 10922-16383: one more
	// move (of an empty slot) makes the layouts equal.
	if wantR, _ := slotsShape(t, mustCall(t, redisAddrs[0], "CLUSTER", "SLOTS")); slices.Contains(wantR, "5461-10922") {
		if _, err := moveSlot(rs[0], 10922, 1); err != nil {
			t.Fatal(err)
		}
		if err := waitSlotOwner(ctx, rs, 10922, 1); err != nil {
			t.Fatal(err)
		}
	}
	tag := tagsInRange(1, slots.Range{First: 0, Last: 5460})[0]
	slot := slots.OfString(tag)
	var keys []string
	for i := 0; i < 5; i++ {
		keys = append(keys, fmt.Sprintf("{%s}s%d", tag, i))
	}
	script := [][]string{}
	for i, k := range keys {
		for j := 1; j <= 20+i; j++ {
			script = append(script, []string{"XADD", k, fmt.Sprintf("%d-1", j), "f", strconv.Itoa(j)})
		}
		script = append(script, []string{"XGROUP", "CREATE", k, "g", "0"},
			[]string{"XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", k, ">"})
	}
	// Keys with a TTL, a string among them: every key type moves, and
	// carries its absolute expiry along.
	at := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	strKey := fmt.Sprintf("{%s}str", tag)
	script = append(script, []string{"SET", strKey, "v", "PXAT", at}, []string{"PEXPIREAT", keys[0], at})
	ttlKeys := []string{strKey, keys[0], keys[1]} // keys[1]: no TTL (-1)
	expiries := func(c *testkit.Conn) []string {
		var out []string
		for _, k := range ttlKeys {
			out = append(out, do(t, c, "PEXPIRETIME", k))
		}
		return out
	}
	r0, w0 := ownerConn(t, redisAddrs, keys[0]), ownerConn(t, rs, keys[0])
	for _, cmd := range script {
		if got, want := do(t, w0, cmd...), do(t, r0, cmd...); got != want {
			t.Fatalf("%v: raftstream %q, redis %q", cmd, got, want)
		}
	}
	before := expiries(w0)
	if want := expiries(r0); !slices.Equal(before, want) {
		t.Fatalf("PEXPIRETIME before the move: raftstream %q, redis %q", before, want)
	}
	// Move: raftstream shard 0 → 1; Redis master of 0-5460 → of 5461-10921.
	redisMaster := func(s int) string {
		for _, r := range mustCall(t, redisAddrs[0], "CLUSTER", "SLOTS").([]any) {
			row := r.([]any)
			if int(row[0].(int64)) <= s && s <= int(row[1].(int64)) {
				n := row[2].([]any)
				return fmt.Sprintf("%s:%d", n[0], n[1])
			}
		}
		t.Fatalf("no master for slot %d", s)
		return ""
	}
	redisMoveSlot(t, redisAddrs, slot, redisMaster(0), redisMaster(6000))
	if _, err := moveSlot(rs[1], slot, 1); err != nil {
		t.Fatal(err)
	}
	if err := waitSlotOwner(ctx, rs, slot, 1); err != nil {
		t.Fatal(err)
	}
	if out, took, err := waitClusterCheck(ctx, rs[2]); err != nil {
		t.Fatalf("redis-cli --cluster check after the move: %v\n%s", err, out)
	} else {
		t.Logf("cluster check passed %v after the move", took.Round(time.Millisecond))
	}

	gotR, gotE := slotsShape(t, mustCall(t, rs[0], "CLUSTER", "SLOTS"))
	wantR, wantE := slotsShape(t, mustCall(t, redisAddrs[0], "CLUSTER", "SLOTS"))
	if !slices.Equal(gotR, wantR) || gotE != wantE {
		t.Errorf("CLUSTER SLOTS: raftstream %v %q, redis %v %q", gotR, gotE, wantR, wantE)
	}
	gotS, gotF := shardsShape(mustCall(t, rs[0], "CLUSTER", "SHARDS"))
	wantS, wantF := shardsShape(mustCall(t, redisAddrs[0], "CLUSTER", "SHARDS"))
	if !slices.Equal(gotS, wantS) || gotF != wantF {
		t.Errorf("CLUSTER SHARDS: raftstream %v %q, redis %v %q", gotS, gotF, wantS, wantF)
	}
	t.Logf("CLUSTER SLOTS after the move: %v", gotR)
	// Key counts and lists, on the new owner and on the old one.
	leaders := shardLeaders(rs)
	ss := strconv.Itoa(slot)
	pairs := [][2]string{{leaders[1], redisMaster(6000)}}
	if leaders[0] != leaders[1] {
		// The old owner's node holds none of the slot's keys (unless it
		// leads the new owner too).
		pairs = append(pairs, [2]string{leaders[0], redisMaster(0)})
	}
	for _, pair := range pairs {
		for _, cmd := range [][]string{{"CLUSTER", "COUNTKEYSINSLOT", ss}, {"CLUSTER", "GETKEYSINSLOT", ss, "3"}} {
			got, want := mustCall(t, pair[0], cmd...), mustCall(t, pair[1], cmd...)
			if a, ok := got.([]any); ok {
				// Redis lists a slot's keys in no particular order;
				// raftstream in byte order: compare the sets' sizes and
				// that every key listed exists in the slot.
				b := want.([]any)
				if len(a) != len(b) {
					t.Errorf("%v: raftstream %v, redis %v", cmd, got, want)
				}
				for _, k := range a {
					if slots.OfString(k.(string)) != slot {
						t.Errorf("%v lists %v of another slot", cmd, k)
					}
				}
				continue
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%v on %s: raftstream %v, redis %v", cmd, pair[0], got, want)
			}
		}
	}
	// The streams moved whole.
	r1, w1 := ownerConn(t, redisAddrs, keys[0]), ownerConn(t, rs, keys[0])
	for _, k := range keys {
		for _, cmd := range [][]string{{"XRANGE", k, "-", "+"}, {"XPENDING", k, "g", "-", "+", "10"},
			{"XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", k, ">"}, {"XLEN", k}} {
			if got, want := do(t, w1, cmd...), do(t, r1, cmd...); got != want && cmd[0] != "XPENDING" {
				t.Errorf("%v after the move: raftstream %q, redis %q", cmd, got, want)
			}
		}
	}
	if got := expiries(w1); !slices.Equal(got, before) {
		t.Errorf("PEXPIRETIME after the move %q, before %q", got, before)
	}
	if got, want := do(t, w1, "GET", strKey), do(t, r1, "GET", strKey); got != want {
		t.Errorf("GET %s after the move: raftstream %q, redis %q", strKey, got, want)
	}
	t.Logf("PEXPIRETIME of %v before and after the move: %q", ttlKeys, before)
	// A write through the old owner's node is redirected to the new one.
	if got := do(t, dial(t, leaders[0]), "XADD", keys[0], "*", "f", "v"); !strings.HasPrefix(got, "-MOVED "+ss+" ") && leaders[0] != leaders[1] {
		t.Errorf("write to the old owner after the move: %q", got)
	}
}

// TestBlockedReaderFollowsSlotMove: a client blocked in XREADGROUP BLOCK
// (raw connection) on a key whose slot moves is answered with a redirect
// once the key leaves its shard, and a go-redis ClusterClient blocked in
// XREADGROUP on the same key follows it and receives the entry written
// after the move.
func TestBlockedReaderFollowsSlotMove(t *testing.T) {
	redis.SetLogger(quietLogger{})
	nodes := startCluster(t, 3, 3)
	rs := addrsOf(nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tag := tagsInRange(1, slots.Range{First: 0, Last: 5460})[0]
	key := "{" + tag + "}blocked"
	slot := slots.OfString(tag)
	w := ownerConn(t, rs, key)
	do(t, w, "XADD", key, "1-1", "f", "v")
	do(t, w, "XGROUP", "CREATE", key, "g", "$")
	raw := ownerConn(t, rs, key)
	if err := raw.Send("XREADGROUP", "GROUP", "g", "raw", "BLOCK", "0", "STREAMS", key, ">"); err != nil {
		t.Fatal(err)
	}
	cc := clusterClient(t, rs...)
	got := make(chan string, 1)
	go func() {
		res, err := cc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "cc", Streams: []string{key, ">"}, Block: 60 * time.Second}).Result()
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- res[0].Messages[0].ID
	}()
	time.Sleep(500 * time.Millisecond) // both are blocked
	if _, err := moveSlot(rs[0], slot, 1); err != nil {
		t.Fatal(err)
	}
	if err := waitSlotOwner(ctx, rs, slot, 1); err != nil {
		t.Fatal(err)
	}
	reply, err := raw.ReadReply()
	if err != nil {
		t.Fatal(err)
	}
	if r := string(reply); !strings.HasPrefix(r, "-ASK "+strconv.Itoa(slot)+" ") && !strings.HasPrefix(r, "-MOVED "+strconv.Itoa(slot)+" ") {
		t.Fatalf("the blocked raw client got %q, want a redirect", r)
	}
	t.Logf("blocked raw client redirected: %q", strings.TrimSpace(string(reply)))
	time.Sleep(300 * time.Millisecond)
	id, err := cc.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "2-1", Values: []string{"after", "move"}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		if g != id {
			t.Fatalf("blocked go-redis reader got %q, want %s", g, id)
		}
	case <-ctx.Done():
		t.Fatal("the blocked go-redis reader never got the entry written after the move")
	}
}
