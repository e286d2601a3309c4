package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/cmd/raftstream/backupfile"
)

// Tests of `raftstream backup` and `raftstream restore`: real raftstream
// processes as source and target, the subcommands run in the test process.

// backupUncompared are the XINFO STREAM FULL fields a restore leaves
// different: how entries are packed into nodes, consumers' seen-time and
// active-time (the restore's XCLAIMs happen now) and the IDMP memory of
// producers (no command writes it).
var backupUncompared = map[string]bool{"radix-tree-keys": true, "radix-tree-nodes": true, "seen-time": true,
	"active-time": true, "pids-tracked": true, "iids-tracked": true, "iids-added": true, "iids-duplicates": true}

// runTool runs a subcommand in-process and returns stdout, stderr and
// its exit status.
func runTool(t testing.TB, cmd func([]string, io.Writer, io.Writer) int, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmd(args, &out, &errb)
	return out.String(), errb.String(), code
}

func mustRun(t testing.TB, cmd func([]string, io.Writer, io.Writer) int, args ...string) string {
	t.Helper()
	out, errs, code := runTool(t, cmd, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
	}
	return out
}

// expiresAt is the expiry seedExtras gives a string and a stream: 2100-01-01.
const expiresAt = int64(4102444800000)

// seedExtras adds to a source what the import fixture lacks and a backup
// must keep: per-stream IDMP settings and an IDMP producer, a dead-letter
// setting, an owner-less pending entry (XNACK), string keys, keys with an
// expiry.
func seedExtras(t testing.TB, ctx context.Context, c redis.UniversalClient) (streams, strs []string) {
	t.Helper()
	for _, cmd := range [][]any{
		{"XCFGSET", "imp:03", "IDMP-DURATION", 500, "IDMP-MAXSIZE", 50},
		{"XADD", "imp:04", "IDMP", "p1", "i1", "*", "f", "v"},
		{"XADD", "{dl}src", "1-1", "f", "a"},
		{"XADD", "{dl}src", "1-2", "f", "b"},
		{"XADD", "{dl}src", "1-3", "f", "c"},
		{"XGROUP", "CREATE", "{dl}src", "g", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "COUNT", 3, "STREAMS", "{dl}src", ">"},
		{"XNACK", "{dl}src", "g", "FAIL", "IDS", 1, "1-1"},
		{"XGROUP", "SETDLQ", "{dl}src", "g", 1, "{dl}:dlq"},
		{"SET", "str:1", "hello"},
		{"SET", "str:2", "\x00\xff binary"},
		{"ACL", "SETUSER", "reader", "on", ">secret", "~imp:*", "+@read"},
		// Times to live are state too (far enough ahead not to pass
		// during the test).
		{"PEXPIREAT", "str:2", expiresAt},
		{"PEXPIREAT", "{dl}src", expiresAt + 1},
	} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	return []string{"{dl}src", "__raftstream:acl:{06S}"}, []string{"str:1", "str:2"}
}

// TestBackupRestoreKeepsEveryState backs up a single node holding streams
// with groups, PELs (some entries deleted or trimmed while pending, one
// released by XNACK), consumers, IDMP and dead-letter settings and string
// keys, and restores it into a new node: XINFO STREAM FULL is the same on
// both (but for backupUncompared), so are every entry and string, the
// dead-letter setting acts alike, and restore --verify finds nothing. A
// second restore is refused (the target holds keys) unless --force, which
// then writes nothing.
func TestBackupRestoreKeepsEveryState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src, dst := startNode(t, ""), startNode(t, "")
	sc, dc := plainClient(t, src.Addr), plainClient(t, dst.Addr)
	keys := seedStreams(t, ctx, sc, importFixture{streams: 8, entries: 8000, valueSize: 40, history: true, seed: 5})
	extra, strs := seedExtras(t, ctx, sc)
	keys = append(keys, extra...)
	file := filepath.Join(t.TempDir(), "node.rsbk")
	out := mustRun(t, backupCmd, "--addr", src.Addr, "--out", file)
	t.Logf("%s", out)

	out = mustRun(t, restoreCmd, "--in", file, "--to", dst.Addr, "--verify")
	t.Logf("%s", out)
	for _, k := range []string{"str:1", "str:2", "{dl}src", keys[0]} {
		want, err := sc.PExpireTime(ctx, k).Result()
		if err != nil {
			t.Fatalf("source PEXPIRETIME %s: %v", k, err)
		}
		if got, err := dc.PExpireTime(ctx, k).Result(); err != nil || got != want {
			t.Errorf("PEXPIRETIME %s: restored %v (%v), source %v", k, got, err, want)
		}
	}
	if !strings.Contains(out, "verify: 13 streams compared (XINFO STREAM FULL and every entry): 0 differences") {
		t.Errorf("restore --verify:\n%s", out)
	}
	if strings.Contains(out, "target idmp") || strings.Contains(out, "source idmp") {
		t.Errorf("IDMP settings reported by one side only:\n%s", out)
	}
	for _, k := range keys {
		a, b := streamFull(t, ctx, sc, k, backupUncompared), streamFull(t, ctx, dc, k, backupUncompared)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("XINFO STREAM %s FULL differs:\nsource %.3000v\ntarget %.3000v", k, a, b)
		}
	}
	if a, b := entriesChecksum(t, ctx, sc, keys), entriesChecksum(t, ctx, dc, keys); a != b {
		t.Errorf("entries differ: checksum %s on the source, %s on the target", a, b)
	}
	for _, k := range strs {
		if a, b := sc.Get(ctx, k).Val(), dc.Get(ctx, k).Val(); a != b || a == "" {
			t.Errorf("GET %s: source %q, target %q", k, a, b)
		}
	}
	// ACL users are changes in a replicated stream (resp/acl_repl.go): the
	// restored node replays it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		users, _ := dc.Do(ctx, "ACL", "USERS").StringSlice()
		if slices.Contains(users, "reader") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ACL USERS on the target: %v, want reader among them", users)
		}
	}
	if a, b := sc.Do(ctx, "ACL", "GETUSER", "reader").Val(), dc.Do(ctx, "ACL", "GETUSER", "reader").Val(); !reflect.DeepEqual(a, b) {
		t.Errorf("ACL GETUSER reader: source %v, target %v", a, b)
	}
	// The dead-letter setting (max 1 delivery) holds on the target: a
	// second delivery of 1-2 moves it to {dl}:dlq on both.
	for _, c := range []*redis.Client{sc, dc} {
		if err := c.Do(ctx, "XCLAIM", "{dl}src", "g", "other", 0, "1-2").Err(); err != nil {
			t.Fatal(err)
		}
		if n := c.XLen(ctx, "{dl}:dlq").Val(); n != 1 {
			t.Errorf("%s: XLEN {dl}:dlq = %d after a second delivery, want 1 (dead-lettered)", c.Options().Addr, n)
		}
	}

	out, errs, code := runTool(t, restoreCmd, "--in", file, "--to", dst.Addr)
	if code != 1 || !strings.Contains(errs, "holds") || !strings.Contains(errs, "--force") {
		t.Errorf("restore into a target with keys: exit %d\n%s%s", code, out, errs)
	}
	// {dl}src and {dl}:dlq changed since: --force puts {dl}src back.
	out = mustRun(t, restoreCmd, "--in", file, "--to", dst.Addr, "--force")
	if !regexp.MustCompile(`restore: 1 shards, 13 streams \(1 written, 12 already there\)`).MatchString(out) {
		t.Errorf("restore --force over a restored target:\n%s", out)
	}
}

// TestRestoreRefusesADamagedBackup: a backup of a 4-shard node with one
// byte flipped in a shard's data, one flipped in the manifest, or its end
// cut off is refused with a message naming what is wrong, and nothing is
// written to the target.
func TestRestoreRefusesADamagedBackup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src, dst := startNode(t, "", "--shards", "4"), startNode(t, "")
	sc := plainClient(t, src.Addr)
	seedStreams(t, ctx, sc, importFixture{streams: 8, entries: 4000, valueSize: 40, history: true, seed: 6})
	file := filepath.Join(t.TempDir(), "four.rsbk")
	mustRun(t, backupCmd, "--addr", src.Addr, "--out", file)
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b, err := backupfile.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	m := b.Manifest
	b.Close()
	if m.ShardCount != 4 || len(m.Shards) != 4 {
		t.Fatalf("manifest of a 4-shard node: %+v", m)
	}
	sh := m.Shards[2]
	last := m.Shards[3]
	for _, tc := range []struct {
		name string
		data func() []byte
		want string
	}{
		{"a byte of shard 2 flipped", func() []byte {
			d := bytes.Clone(orig)
			d[sh.Offset+sh.Bytes/2] ^= 1
			return d
		}, "shard 2: damaged: the SHA-256 of its"},
		{"a byte of the manifest flipped", func() []byte {
			d := bytes.Clone(orig)
			d[last.Offset+last.Bytes+20] ^= 1
			return d
		}, "manifest: damaged: its SHA-256 is not the one the trailer records"},
		{"cut short", func() []byte { return orig[:len(orig)-100] }, "file: truncated"},
		{"cut inside shard 1", func() []byte { return orig[:m.Shards[1].Offset+10] }, "file: truncated"},
	} {
		bad := filepath.Join(t.TempDir(), "bad.rsbk")
		if err := os.WriteFile(bad, tc.data(), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errs, code := runTool(t, restoreCmd, "--in", bad, "--to", dst.Addr)
		if code != 1 || !strings.Contains(errs, "refused: "+bad+": "+tc.want) {
			t.Errorf("%s: exit %d, want 1 and %q in\n%s%s", tc.name, code, tc.want, out, errs)
		}
		t.Logf("%s: %s", tc.name, strings.TrimSpace(errs))
	}
	if n := plainClient(t, dst.Addr).DBSize(ctx).Val(); n != 0 {
		t.Errorf("the target holds %d keys after refused restores", n)
	}
}

// BenchmarkBackupRestore measures `raftstream backup` (MB/s of the file
// written) of a single node holding 500k entries of about 100 bytes in 16
// streams, and `raftstream restore` of that file (entries/s) into a new
// node, each as the whole command. Run:
//
//	go test -run '^$' -bench BackupRestore -benchtime 1x ./cmd/raftstream
func BenchmarkBackupRestore(b *testing.B) {
	const entries = 500_000
	for range b.N {
		ctx := context.Background()
		src := startNode(b, "")
		keys := seedStreams(b, ctx, plainClient(b, src.Addr), importFixture{streams: 16, entries: entries, valueSize: 72, seed: 3})
		file := filepath.Join(b.TempDir(), "bench.rsbk")
		start := time.Now()
		mustRun(b, backupCmd, "--addr", src.Addr, "--out", file)
		backupTook := time.Since(start)
		st, err := os.Stat(file)
		if err != nil {
			b.Fatal(err)
		}
		dst := startNode(b, "")
		start = time.Now()
		mustRun(b, restoreCmd, "--in", file, "--to", dst.Addr)
		restoreTook := time.Since(start)
		if n := totalLen(b, ctx, plainClient(b, dst.Addr), keys); n != entries {
			b.Fatalf("restored %d entries, want %d", n, entries)
		}
		mbs, eps := float64(st.Size())/1e6/backupTook.Seconds(), entries/restoreTook.Seconds()
		b.ReportMetric(mbs, "backup-MB/s")
		b.ReportMetric(eps, "restore-entries/s")
		b.Logf("backup: %d bytes in %v (%.1f MB/s); restore: %d entries in %v (%.0f entries/s)",
			st.Size(), backupTook.Round(time.Millisecond), mbs, entries, restoreTook.Round(time.Millisecond), eps)
	}
}
