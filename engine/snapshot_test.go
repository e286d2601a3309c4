package engine

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// snapBytes encodes e's snapshot.
func snapBytes(t *testing.T, e *Engine) []byte {
	t.Helper()
	var b bytes.Buffer
	n, err := e.Snapshot().WriteTo(&b)
	if err != nil || n != int64(b.Len()) {
		t.Fatalf("WriteTo: n=%d len=%d err=%v", n, b.Len(), err)
	}
	return b.Bytes()
}

// TestSnapshotRoundTrip: random state → encode → decode → encode gives the
// same bytes, and the same commands on original and restored engines give
// the same replies (and the same bytes again).
func TestSnapshotRoundTrip(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
			rnd := rand.New(rand.NewSource(seed))
			r := newModelRun(t, rnd)
			for i := 0; i < 400; i++ {
				r.step()
			}
			r.exec("SET", "str", "hello")
			r.exec("SET", "num", "12345")
			r.exec("XGROUP", "CREATE", "s1", "g1", "0")
			r.exec("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", "s1", ">")
			b1 := snapBytes(t, r.e)
			e2, err := Restore(bytes.NewReader(b1))
			if err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if b2 := snapBytes(t, e2); !bytes.Equal(b1, b2) {
				t.Fatalf("re-encoding differs (%d vs %d bytes)", len(b1), len(b2))
			}
			if e2.Config() != r.e.Config() {
				t.Fatalf("config %v vs %v", e2.Config(), r.e.Config())
			}
			// Continue identically on both engines.
			for i := 0; i < 200; i++ {
				k := modelKeys[rnd.Intn(len(modelKeys))]
				argv := [][]byte{[]byte("XADD"), []byte(k), []byte("MAXLEN"), []byte("~"), []byte("20"), []byte("*"), []byte("f"), []byte(strconv.Itoa(i))}
				if rnd.Intn(3) == 0 {
					argv = [][]byte{[]byte("XDEL"), []byte(k), []byte(r.randomID(r.m[k]).String())}
				}
				now := int64(1_900_000_000_000 + i)
				if a, b := replyText(r.e.Exec(now, argv)), replyText(e2.Exec(now, argv)); a != b {
					t.Fatalf("%q: original %s restored %s", argv, a, b)
				}
			}
			if !bytes.Equal(snapBytes(t, r.e), snapBytes(t, e2)) {
				t.Fatal("snapshots differ after identical commands")
			}
		})
	}
}

// TestSnapshotContinue: commands applied to an engine and to its restored
// copy give identical replies and identical snapshots.
func TestSnapshotContinue(t *testing.T) {
	rnd := rand.New(rand.NewSource(99))
	r := newModelRun(t, rnd)
	for i := 0; i < 300; i++ {
		r.step()
	}
	e2, err := Restore(bytes.NewReader(snapBytes(t, r.e)))
	if err != nil {
		t.Fatal(err)
	}
	cmds := [][]string{}
	for i := 0; i < 300; i++ {
		k := modelKeys[rnd.Intn(len(modelKeys))]
		switch rnd.Intn(5) {
		case 0, 1:
			cmds = append(cmds, []string{"XADD", k, "*", "f", strconv.Itoa(i)})
		case 2:
			cmds = append(cmds, []string{"XDEL", k, r.randomID(r.m[k]).String()})
		case 3:
			cmds = append(cmds, []string{"XTRIM", k, "MAXLEN", "~", strconv.Itoa(rnd.Intn(50))})
		default:
			cmds = append(cmds, []string{"XRANGE", k, "-", "+", "COUNT", "5"})
		}
	}
	for i, c := range cmds {
		argv := make([][]byte, len(c))
		for j := range c {
			argv[j] = []byte(c[j])
		}
		now := int64(1_800_000_000_000 + i)
		a, b := replyText(r.e.Exec(now, argv)), replyText(e2.Exec(now, argv))
		if a != b {
			t.Fatalf("%v: original %s restored %s", c, a, b)
		}
	}
	if !bytes.Equal(snapBytes(t, r.e), snapBytes(t, e2)) {
		t.Fatal("snapshots differ after identical commands")
	}
}

// TestSnapshotIsolation: a snapshot taken before further writes still
// encodes the state at the time it was taken (copy on write).
func TestSnapshotIsolation(t *testing.T) {
	e := New(Config{NodeMaxEntries: 4, NodeMaxBytes: 4096})
	x := func(args ...string) {
		argv := make([][]byte, len(args))
		for i := range args {
			argv[i] = []byte(args[i])
		}
		e.Exec(1, argv)
	}
	for i := 1; i <= 10; i++ {
		x("XADD", "s", strconv.Itoa(i)+"-1", "f", "v")
	}
	want := snapBytes(t, e)
	sn := e.Snapshot()
	x("XADD", "s", "11-1", "f", "v")
	x("XDEL", "s", "2-1", "10-1")
	x("XTRIM", "s", "MAXLEN", "3")
	x("SET", "s2", "x")
	var b bytes.Buffer
	if _, err := sn.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatal("snapshot changed after later writes")
	}
}

// TestSnapshotCorrupt: flipped bytes and truncation are rejected.
func TestSnapshotCorrupt(t *testing.T) {
	r := newModelRun(t, rand.New(rand.NewSource(5)))
	for i := 0; i < 200; i++ {
		r.step()
	}
	b := snapBytes(t, r.e)
	for _, i := range []int{0, 5, len(b) / 2, len(b) - 1} {
		c := bytes.Clone(b)
		c[i] ^= 0x40
		if _, err := Restore(bytes.NewReader(c)); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("flip at %d: err %v", i, err)
		}
	}
	if _, err := Restore(bytes.NewReader(b[:len(b)-3])); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("truncated: err %v", err)
	}
}

var updateGolden = flag.Bool("update", false, "rewrite testdata golden files")

// goldenSnapEngine builds the golden snapshot state of a version: 1 is
// strings and one stream; 2 adds a group with a dead-letter setting and IDMP
// history; 3 adds keys with expiries and retention policies.
func goldenSnapEngine(version int) *Engine {
	e := New(Config{NodeMaxBytes: 4096, NodeMaxEntries: 3})
	execS(e, 1, "SET", "str", "hello")
	execS(e, 1, "SET", "n", "-42")
	for i := 1; i <= 7; i++ {
		execS(e, 1, "XADD", "s", strconv.Itoa(i)+"-"+strconv.Itoa(i), "customer", "c"+strconv.Itoa(i), "amount", strconv.Itoa(i*100))
	}
	execS(e, 1, "XADD", "s", "8-0", "other", "field")
	execS(e, 1, "XDEL", "s", "2-2", "8-0")
	execS(e, 1, "XTRIM", "s", "MAXLEN", "5")
	if version >= 2 {
		e.cfg.IdmpDuration, e.cfg.IdmpMaxSize = 60, 50
		execS(e, 10, "XGROUP", "CREATE", "{s}", "g", "0", "MKSTREAM")
		execS(e, 10, "XGROUP", "SETDLQ", "{s}", "g", "3", "{s}:dlq")
		execS(e, 11, "XADD", "{s}", "IDMP", "p1", "a", "*", "f", "1")
		execS(e, 12, "XADD", "{s}", "IDMP", "p1", "a", "*", "f", "1")
		execS(e, 13, "XADD", "{s}", "IDMPAUTO", "p0", "*", "f", "2", "g", "3")
		execS(e, 14, "XCFGSET", "s", "IDMP-MAXSIZE", "7")
	}
	if version >= 3 {
		execS(e, 20, "SET", "ttl:str", "v", "PX", "1000")
		execS(e, 20, "PEXPIREAT", "{s}", "1700000000000")
		execS(e, 20, "SET", "ttl:gone", "v", "PX", "5") // expired at 25, still held
		execS(e, 20, RetentionCommand, "SET", "s*", "MAXLEN", "100", "ACKED")
		execS(e, 20, RetentionCommand, "SET", "{s}", "MAXAGE", "1000", "MAXBYTES", "1mb")
	}
	return e
}

// goldenSnapshot compares e's encoding with testdata/name, which -update
// rewrites, and returns the golden bytes.
func goldenSnapshot(t *testing.T, e *Engine, name string) []byte {
	t.Helper()
	got := hex.EncodeToString(snapBytes(t, e)) + "\n"
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if got != string(want) {
		t.Fatalf("snapshot encoding changed:\n got  %s want %s", got, want)
	}
	b, _ := hex.DecodeString(string(want[:len(want)-1]))
	return b
}

// TestSnapshotGolden pins the snapshot encoding: a format change must bump
// snapVersion, keep older versions decodable (TestSnapshotV1Decodes,
// TestSnapshotV2Decodes) and write a new golden file with -update.
func TestSnapshotGolden(t *testing.T) {
	e := goldenSnapEngine(3)
	b := goldenSnapshot(t, e, "snapshot_v3.hex")
	e2, err := Restore(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("golden does not restore: %v", err)
	}
	for _, cmd := range [][]string{{"XRANGE", "s", "-", "+"}, {"XINFO", "STREAM", "s"}, {"XINFO", "STREAM", "{s}"},
		{"PTTL", "ttl:str"}, {"PEXPIRETIME", "{s}"}, {"EXISTS", "ttl:gone"}, {"DBSIZE"}, {RetentionCommand, "LIST"}} {
		if r := replyText(execS(e2, 21, cmd...)); r != replyText(execS(e, 21, cmd...)) {
			t.Fatalf("restored golden %v: %s", cmd, r)
		}
	}
	if r := replyText(execS(e2, 21, "PTTL", "ttl:str")); r != "999" {
		t.Fatalf("restored PTTL %s, want 999", r)
	}
	if !bytes.Equal(snapBytes(t, e2), b) {
		t.Fatal("restored golden re-encodes differently")
	}
}

// restoreGolden restores the engine of an older version's golden file.
func restoreGolden(t *testing.T, name string) *Engine {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := hex.DecodeString(string(want[:len(want)-1]))
	e, err := Restore(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s does not restore: %v", name, err)
	}
	return e
}

// TestSnapshotV2Decodes keeps version 2 snapshots (before expiries)
// readable: they restore to the same state, without expiries.
func TestSnapshotV2Decodes(t *testing.T) {
	e2 := restoreGolden(t, "snapshot_v2.hex")
	if !bytes.Equal(snapBytes(t, e2), snapBytes(t, goldenSnapEngine(2))) {
		t.Fatal("v2 restore differs from the state it was taken from")
	}
}

// TestSnapshotV1Decodes keeps version 1 snapshots (before IDMP and
// dead-letter settings) readable.
func TestSnapshotV1Decodes(t *testing.T) {
	e2 := restoreGolden(t, "snapshot_v1.hex")
	e := goldenSnapEngine(1)
	// Version 1 has no per-stream IDMP settings (taken at creation since
	// version 2, idmp.go): its streams follow the configuration.
	for _, v := range e.keys {
		if v.Kind == KindStream {
			v.Stream.idmp = nil
		}
	}
	if r := replyText(execS(e2, 1, "XRANGE", "s", "-", "+")); r != replyText(execS(e, 1, "XRANGE", "s", "-", "+")) {
		t.Fatalf("restored v1 XRANGE %s", r)
	}
	if !bytes.Equal(snapBytes(t, e2), snapBytes(t, e)) {
		t.Fatal("v1 restore differs from the state it was taken from")
	}
}
