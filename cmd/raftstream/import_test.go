package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// Tests of `raftstream import`: a real redis-server (or Redis Cluster) as
// the source, real raftstream processes as the target, the import run as
// the raftstream binary.

// importFixture is the source data of an import test.
type importFixture struct {
	streams   int // streams holding entries
	entries   int // entries over all of them
	valueSize int // bytes of each entry's payload field
	// history adds two consumer groups per stream with PELs, deleted and
	// trimmed entries, and two streams with no entries (seedStreams).
	history bool
	seed    uint64
}

// fixtureKey names the fixture's i-th stream.
func fixtureKey(i int) string { return fmt.Sprintf("imp:%02d", i) }

// seedStreams writes f into c and returns every key written, sorted. Each
// stream has entries with IDs of several sequence numbers per millisecond
// and a few with another field set. With f.history, group g1 has read it
// all with four consumers and acknowledged about 90%, some pending entries
// claimed by another consumer and some delivered several times, and g2
// has read 40% with two consumers, acknowledged half, and has a consumer
// with no pending entry; then about 2% of the entries are deleted (pending
// ones among them), every eighth stream is trimmed by a quarter (so that
// trimmed entries stay pending), and three streams more are there, with no
// entries: one with a group, one whose entries were all deleted while
// pending, one trimmed to nothing with no group.
func seedStreams(t testing.TB, ctx context.Context, c redis.UniversalClient, f importFixture) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(f.seed, 7))
	t.Logf("import fixture: %d streams, %d entries of %d bytes, history %v, seed %d", f.streams, f.entries, f.valueSize, f.history, f.seed)
	must := func(err error) {
		t.Helper()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
	}
	payload := func() string {
		b := make([]byte, f.valueSize)
		for i := range b {
			b[i] = 'a' + byte(rng.IntN(26))
		}
		return string(b)
	}
	var keys []string
	per := f.entries / f.streams
	for i := range f.streams {
		key := fixtureKey(i)
		keys = append(keys, key)
		base := 1700000000000 + int64(i)*10_000_000
		ids := make([]string, per)
		for j := 0; j < per; j += 1000 {
			p := c.Pipeline()
			for k := j; k < min(per, j+1000); k++ {
				ids[k] = fmt.Sprintf("%d-%d", base+int64(k/4), k%4)
				args := []any{"XADD", key, ids[k], "n", k, "payload", payload()}
				if k%50 == 0 {
					args = append(args, "extra", "yes")
				}
				p.Do(ctx, args...)
			}
			_, err := p.Exec(ctx)
			must(err)
		}
		if !f.history {
			continue
		}
		if i%8 != 1 {
			seedGroups(t, ctx, c, key, per, rng)
		}
		p := c.Pipeline()
		for range per / 50 {
			p.XDel(ctx, key, ids[rng.IntN(per)])
		}
		_, err := p.Exec(ctx)
		must(err)
		if i%8 == 0 {
			must(c.XTrimMaxLen(ctx, key, int64(per*3/4)).Err())
		}
	}
	if f.history {
		must(c.XGroupCreateMkStream(ctx, "imp:empty", "g", "$").Err())
		for k := range 3 {
			must(c.XAdd(ctx, &redis.XAddArgs{Stream: "imp:gone", ID: fmt.Sprintf("5-%d", k), Values: []string{"k", "v"}}).Err())
		}
		must(c.XGroupCreate(ctx, "imp:gone", "g", "0").Err())
		must(c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"imp:gone", ">"}}).Err())
		must(c.XDel(ctx, "imp:gone", "5-0", "5-1", "5-2").Err())
		for k := range 3 {
			must(c.XAdd(ctx, &redis.XAddArgs{Stream: "imp:trimmed", ID: fmt.Sprintf("7-%d", k), Values: []string{"k", "v"}}).Err())
		}
		must(c.XTrimMaxLen(ctx, "imp:trimmed", 0).Err())
		keys = append(keys, "imp:empty", "imp:gone", "imp:trimmed")
	}
	slices.Sort(keys)
	return keys
}

// seedGroups gives key its groups g1 and g2 (see seedStreams).
func seedGroups(t testing.TB, ctx context.Context, c redis.UniversalClient, key string, n int, rng *rand.Rand) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
	}
	read := func(group, consumer string, count int64, id string) []string {
		res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: consumer,
			Streams: []string{key, id}, Count: count, Block: -1}).Result()
		must(err)
		var ids []string
		for _, s := range res {
			for _, m := range s.Messages {
				ids = append(ids, m.ID)
			}
		}
		return ids
	}
	ack := func(group string, ids []string, p float64) {
		var acks []string
		for _, id := range ids {
			if rng.Float64() < p {
				acks = append(acks, id)
			}
		}
		if len(acks) > 0 {
			must(c.XAck(ctx, key, group, acks...).Err())
		}
	}
	must(c.XGroupCreate(ctx, key, "g1", "0").Err())
	must(c.XGroupCreate(ctx, key, "g2", "0").Err())
	for r := 0; ; r++ {
		ids := read("g1", fmt.Sprintf("c%d", r%4), 100, ">")
		if len(ids) == 0 {
			break
		}
		ack("g1", ids, 0.9)
	}
	for r := 0; r*250 < n*4/10; r++ {
		ack("g2", read("g2", fmt.Sprintf("w%d", r%2), 250, ">"), 0.5)
	}
	// Claimed by another consumer (delivery count +1)…
	pend, err := c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: key, Group: "g1", Start: "-", End: "+", Count: 60}).Result()
	must(err)
	var claim []string
	for _, p := range pend[10:] {
		claim = append(claim, p.ID)
	}
	must(c.XClaim(ctx, &redis.XClaimArgs{Stream: key, Group: "g1", Consumer: "rescuer", Messages: claim}).Err())
	// …delivered again to their owner (twice), and a consumer with none.
	read("g1", "c0", 20, "0")
	read("g1", "c0", 10, "0")
	must(c.XGroupCreateConsumer(ctx, key, "g2", "idle").Err())
}

// importUncompared are the XINFO STREAM FULL fields the import leaves
// different (seen-time, active-time, radix-tree-*, IDMP state: see
// cmd/raftstream/importer) or that only raftstream reports (active-time,
// nacked-count and the IDMP fields are newer than Redis 7.0).
var importUncompared = map[string]bool{"radix-tree-keys": true, "radix-tree-nodes": true, "seen-time": true,
	"active-time": true, "nacked-count": true, "idmp-duration": true, "idmp-maxsize": true,
	"pids-tracked": true, "iids-tracked": true, "iids-added": true, "iids-duplicates": true}

// streamFull is XINFO STREAM key FULL COUNT 0 (everything), with the
// fields of drop removed from every map in it.
func streamFull(t testing.TB, ctx context.Context, c redis.UniversalClient, key string, drop map[string]bool) any {
	t.Helper()
	v, err := c.Do(ctx, "XINFO", "STREAM", key, "FULL", "COUNT", 0).Result()
	if err != nil {
		t.Fatalf("XINFO STREAM %s FULL: %v", key, err)
	}
	var strip func(v any) any
	strip = func(v any) any {
		a, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, 0, len(a))
		for i := 0; i < len(a); i++ {
			if name, ok := a[i].(string); ok && len(a)%2 == 0 && i%2 == 0 && drop[name] {
				i++
				continue
			}
			out = append(out, strip(a[i]))
		}
		return out
	}
	return strip(v)
}

// compareFull fails the test where src's and dst's XINFO STREAM FULL of a
// key differ outside importUncompared.
func compareFull(t testing.TB, ctx context.Context, src, dst redis.UniversalClient, keys []string) {
	t.Helper()
	for _, k := range keys {
		a, b := streamFull(t, ctx, src, k, importUncompared), streamFull(t, ctx, dst, k, importUncompared)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("XINFO STREAM %s FULL differs:\nsource %.3000v\ntarget %.3000v", k, a, b)
		}
	}
}

// entriesChecksum is a SHA-256 over every entry (ID, fields, values) of
// keys, read with XRANGE in chunks.
func entriesChecksum(t testing.TB, ctx context.Context, c redis.UniversalClient, keys []string) string {
	t.Helper()
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s\n", k)
		start := "-"
		for {
			es, err := c.Do(ctx, "XRANGE", k, start, "+", "COUNT", 1000).Slice()
			if err != nil {
				t.Fatalf("XRANGE %s: %v", k, err)
			}
			for _, e := range es {
				fmt.Fprintf(h, "%v\n", e)
			}
			if len(es) < 1000 {
				break
			}
			start = "(" + es[len(es)-1].([]any)[0].(string)
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// totalLen is the sum of XLEN of keys.
func totalLen(t testing.TB, ctx context.Context, c redis.UniversalClient, keys []string) int64 {
	t.Helper()
	var n int64
	for _, k := range keys {
		l, err := c.XLen(ctx, k).Result()
		if err != nil {
			t.Fatalf("XLEN %s: %v", k, err)
		}
		n += l
	}
	return n
}

// plainClient and clusterClient speak RESP2, so that map replies keep the
// server's field order.
func plainClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

func clusterClient(t testing.TB, addrs ...string) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Protocol: 2, DisableIdentity: true,
		MaxRedirects: 16, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// runImport runs `raftstream import args...` and returns its stdout,
// stderr and exit status; a data race it reports (a binary built with
// -race) fails the test.
func runImport(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, testkit.Server(t), append([]string{"import"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("raftstream import: %v", err)
	}
	if i := strings.Index(errb.String(), "WARNING: DATA RACE"); i >= 0 {
		t.Errorf("data race in raftstream import:\n%s", errb.String()[i:])
	}
	return out.String(), errb.String(), code
}

// mustImport runs an import that must succeed.
func mustImport(t testing.TB, args ...string) string {
	t.Helper()
	out, errs, code := runImport(t, args...)
	if code != 0 {
		t.Fatalf("raftstream import %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
	}
	return out
}

// TestImportFromRedis imports 100k entries in 16 streams with groups,
// PELs and deleted entries from redis-server into a raftstream node; the
// target's XINFO STREAM FULL equals the source's but for the fields the
// import documents, and --verify agrees. A second import writes nothing
// (XINFO STREAM FULL, seen-times included, and an XRANGE checksum are the
// same before and after); an import killed after a while and run again
// gives the same result; a pending entry acknowledged on the target comes
// back; a difference the import does not repair fails --verify.
func TestImportFromRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 100k entries")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	srcAddr := testkit.StartRedis(t)
	src := plainClient(t, srcAddr)
	keys := seedStreams(t, ctx, src, importFixture{streams: 16, entries: 100_000, valueSize: 40, history: true, seed: 1})
	total := totalLen(t, ctx, src, keys)
	sum := entriesChecksum(t, ctx, src, keys)
	checkFixture(t, ctx, src)

	node := startNode(t, "")
	dst := plainClient(t, node.Addr)
	out := mustImport(t, "--from", srcAddr, "--to", node.Addr, "--verify")
	t.Logf("first import:\n%s", out)
	if !strings.Contains(out, " 0 differences") {
		t.Errorf("--verify found differences:\n%s", out)
	}
	compareFull(t, ctx, src, dst, keys)
	if got := entriesChecksum(t, ctx, dst, keys); got != sum {
		t.Errorf("entries checksum: target %s, source %s", got, sum)
	}

	// A second import changes nothing, not even a consumer's seen-time.
	before := map[string]any{}
	for _, k := range keys {
		before[k] = streamFull(t, ctx, dst, k, nil)
	}
	out = mustImport(t, "--from", srcAddr, "--to", node.Addr)
	if want := fmt.Sprintf("streams: 0 imported, %d already complete, 0 failed,", len(keys)); !strings.Contains(out, want) {
		t.Errorf("second import: want %q in\n%s", want, out)
	}
	for _, k := range keys {
		if after := streamFull(t, ctx, dst, k, nil); !reflect.DeepEqual(before[k], after) {
			t.Errorf("second import changed %s:\nbefore %.2000v\nafter  %.2000v", k, before[k], after)
		}
	}
	if got := entriesChecksum(t, ctx, dst, keys); got != sum {
		t.Errorf("entries checksum after the second import: %s, want %s", got, sum)
	}

	// A pending entry acknowledged on the target only is pending again
	// after the next import.
	pend, err := dst.XPending(ctx, fixtureKey(2), "g1").Result()
	if err != nil || pend.Count == 0 {
		t.Fatalf("XPENDING: %v %v", pend, err)
	}
	if err := dst.XAck(ctx, fixtureKey(2), "g1", pend.Lower).Err(); err != nil {
		t.Fatal(err)
	}
	mustImport(t, "--from", srcAddr, "--to", node.Addr, "--match", fixtureKey(2))
	compareFull(t, ctx, src, dst, []string{fixtureKey(2)})

	// A group only the target has is a difference --verify reports.
	if err := dst.XGroupCreate(ctx, fixtureKey(3), "extra", "0").Err(); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runImport(t, "--from", srcAddr, "--to", node.Addr, "--verify", "--match", fixtureKey(3))
	if code != 1 || !strings.Contains(out, "DIFF imp:03 groups[extra]: source missing, target present") {
		t.Errorf("--verify with an extra group on the target: exit %d, want 1 and the difference in\n%s", code, out)
	}

	// An entry missing on the target below its last one (a gap, as a failed
	// pipeline could leave) makes the import copy that stream anew.
	gapKey := fixtureKey(4)
	mid, err := dst.XRangeN(ctx, gapKey, "-", "+", 100).Result()
	if err != nil || len(mid) < 100 {
		t.Fatalf("XRANGE %s: %d entries, %v", gapKey, len(mid), err)
	}
	if err := dst.XDel(ctx, gapKey, mid[99].ID).Err(); err != nil {
		t.Fatal(err)
	}
	out, errs, code = runImport(t, "--from", srcAddr, "--to", node.Addr, "--match", gapKey)
	if code != 0 || !strings.Contains(errs, "a gap in the target stream") {
		t.Errorf("import over a gap: exit %d, want 0 and the repair logged\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	compareFull(t, ctx, src, dst, []string{gapKey})
	if got, want := entriesChecksum(t, ctx, dst, []string{gapKey}), entriesChecksum(t, ctx, src, []string{gapKey}); got != want {
		t.Errorf("%s after the gap was repaired: checksum %s, want %s", gapKey, got, want)
	}

	// Entries appended and delivered on the source after the import are
	// copied by the next run.
	grown := fixtureKey(5)
	for k := range 500 {
		if err := src.XAdd(ctx, &redis.XAddArgs{Stream: grown, Values: []string{"late", fmt.Sprint(k)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "late", Streams: []string{grown, ">"}, Count: 100}).Err(); err != nil {
		t.Fatal(err)
	}
	mustImport(t, "--from", srcAddr, "--to", node.Addr, "--match", grown)
	compareFull(t, ctx, src, dst, []string{grown})
	if got, want := entriesChecksum(t, ctx, dst, []string{grown}), entriesChecksum(t, ctx, src, []string{grown}); got != want {
		t.Errorf("%s after entries were appended: checksum %s, want %s", grown, got, want)
	}

	// Killed after a while, then run again: the same result.
	total, sum = totalLen(t, ctx, src, keys), entriesChecksum(t, ctx, src, keys)
	node2 := startNode(t, "")
	dst2 := plainClient(t, node2.Addr)
	cmd := exec.Command(testkit.Server(t), "import", "--from", srcAddr, "--to", node2.Addr, "--parallel", "2", "--chunk", "200")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for totalLen(t, ctx, dst2, keys) < total/3 {
		select {
		case err := <-exited:
			t.Fatalf("the import to be interrupted ended first (%v)", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the import copied less than a third of the entries in 2 minutes")
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	partial := totalLen(t, ctx, dst2, keys)
	if partial >= total {
		t.Fatalf("killed import had copied everything (%d entries)", partial)
	}
	t.Logf("import killed with %d of %d entries copied", partial, total)
	out = mustImport(t, "--from", srcAddr, "--to", node2.Addr, "--verify")
	t.Logf("resumed import:\n%s", out)
	compareFull(t, ctx, src, dst2, keys)
	if got := entriesChecksum(t, ctx, dst2, keys); got != sum {
		t.Errorf("entries checksum after the resumed import: %s, want %s", got, sum)
	}
}

// checkFixture fails the test when the source lacks what the import must
// reproduce: entries delivered several times, claimed by another
// consumer, and pending entries whose stream entry is gone (trimmed from
// imp:00, deleted from imp:gone).
func checkFixture(t *testing.T, ctx context.Context, src redis.UniversalClient) {
	t.Helper()
	pend, err := src.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: fixtureKey(2), Group: "g1", Start: "-", End: "+", Count: 100_000}).Result()
	if err != nil {
		t.Fatal(err)
	}
	redelivered, claimed := 0, 0
	for _, p := range pend {
		if p.RetryCount > 1 {
			redelivered++
		}
		if p.Consumer == "rescuer" {
			claimed++
		}
	}
	first, err := src.XRangeN(ctx, fixtureKey(0), "-", "+", 1).Result()
	if err != nil || len(first) == 0 {
		t.Fatalf("XRANGE %s: %v %v", fixtureKey(0), first, err)
	}
	trimmed, err := src.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: fixtureKey(0), Group: "g1", Start: "-", End: "(" + first[0].ID, Count: 100_000}).Result()
	if err != nil {
		t.Fatal(err)
	}
	gone, err := src.XPending(ctx, "imp:gone", "g").Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s g1: %d pending, %d delivered more than once, %d claimed; %s: %d pending entries trimmed; imp:gone: %d pending",
		fixtureKey(2), len(pend), redelivered, claimed, fixtureKey(0), len(trimmed), gone.Count)
	if len(pend) < 100 || redelivered == 0 || claimed == 0 || len(trimmed) == 0 || gone.Count != 3 {
		t.Fatal("the fixture lacks pending entries of some kind")
	}
}

// startRedisCluster starts a Redis Cluster of n masters (no replicas) on
// free loopback ports and waits until every node says cluster_state:ok.
func startRedisCluster(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = testkit.StartRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	}
	out, err := exec.Command("redis-cli", append(append([]string{"--cluster", "create"}, addrs...), "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range addrs {
		c := plainClient(t, a)
		for {
			info, _ := c.ClusterInfo(ctx).Result()
			if strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redis cluster node %s not ok:\n%s", a, info)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return addrs
}

// TestImportFromRedisCluster imports streams spread over a 3-master Redis
// Cluster into a 3-node raftstream cluster with --cluster.
func TestImportFromRedisCluster(t *testing.T) {
	redis.SetLogger(quietLogger{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srcAddrs := startRedisCluster(t, 3)
	src := clusterClient(t, srcAddrs...)
	keys := seedStreams(t, ctx, src, importFixture{streams: 12, entries: 12_000, valueSize: 40, history: true, seed: 2})
	masters := map[string]bool{}
	for _, k := range keys {
		slot, err := src.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		masters[fmt.Sprint(slot*3/16384)] = true
	}
	if len(masters) < 2 {
		t.Fatalf("the fixture's keys are on %d of 3 masters", len(masters))
	}

	nodes := startCluster(t, 3, 6)
	dst := clusterClient(t, addrsOf(nodes)...)
	out := mustImport(t, "--from", srcAddrs[1], "--cluster", "--to", nodes[0].Addr, "--verify")
	t.Logf("import:\n%s", out)
	if want := fmt.Sprintf("streams: %d imported, 0 already complete, 0 failed,", len(keys)); !strings.Contains(out, want) {
		t.Errorf("want %q in\n%s", want, out)
	}
	compareFull(t, ctx, src, dst, keys)
	if a, b := entriesChecksum(t, ctx, src, keys), entriesChecksum(t, ctx, dst, keys); a != b {
		t.Errorf("entries checksum: target %s, source %s", b, a)
	}

	// Without --cluster the source is refused, with the reason.
	_, errs, code := runImport(t, "--from", srcAddrs[0], "--to", nodes[0].Addr)
	if code != 1 || !strings.Contains(errs, "is a Redis Cluster node: add --cluster") {
		t.Errorf("import from a cluster node without --cluster: exit %d, stderr:\n%s", code, errs)
	}
}

// BenchmarkImport measures the import's throughput: 100k entries of about
// 100 bytes (ID, two fields, a 72-byte payload) from redis-server into a
// single raftstream node, in 16 streams (imported 4 at a time, the
// default) and in one. Run:
//
//	go test -run '^$' -bench Import -benchtime 1x ./cmd/raftstream
func BenchmarkImport(b *testing.B) {
	for _, streams := range []int{16, 1} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			for range b.N {
				ctx := context.Background()
				srcAddr := testkit.StartRedis(b)
				keys := seedStreams(b, ctx, plainClient(b, srcAddr), importFixture{streams: streams, entries: 100_000, valueSize: 72, seed: 3})
				node := startNode(b, "")
				start := time.Now()
				mustImport(b, "--from", srcAddr, "--to", node.Addr)
				el := time.Since(start)
				n := totalLen(b, ctx, plainClient(b, node.Addr), keys)
				if n != 100_000 {
					b.Fatalf("imported %d entries, want 100000", n)
				}
				b.ReportMetric(float64(n)/el.Seconds(), "entries/s")
				b.Logf("%d streams: %d entries in %v (whole command): %.0f entries/s", streams, n, el.Round(time.Millisecond), float64(n)/el.Seconds())
			}
		})
	}
}
