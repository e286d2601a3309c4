package backupfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/slots"
)

// shardEngines are small engines, one per shard, with streams, a group and
// a string.
func shardEngines(t *testing.T, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		e := engine.New(engine.DefaultConfig())
		for j := range 5 {
			e.Exec(1000, argv("XADD", fmt.Sprintf("s%d", i), fmt.Sprintf("%d-1", j+1), "f", fmt.Sprint(j)))
		}
		e.Exec(1000, argv("XGROUP", "CREATE", fmt.Sprintf("s%d", i), "g", "0"))
		e.Exec(1000, argv("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", fmt.Sprintf("s%d", i), ">"))
		e.Exec(1000, argv("SET", fmt.Sprintf("k%d", i), "v"))
		var b bytes.Buffer
		if _, err := e.Snapshot().WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		out = append(out, b.Bytes())
	}
	return out
}

func argv(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// writeBackup writes shards through a Writer, with the slot ranges of
// len(shards) shards.
func writeBackup(t *testing.T, path string, shards [][]byte) Manifest {
	t.Helper()
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rs := slots.Ranges(len(shards))
	for i, data := range shards {
		sw, err := w.BeginShard(Shard{Shard: i, Slots: [][2]int{{rs[i].First, rs[i].Last}}, Index: uint64(10 + i), Term: 2, Node: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			// A copy cut off half way is dropped and begun again.
			sw.Write(data[:len(data)/2])
			if sw, err = w.RestartShard(Shard{Shard: i, Slots: [][2]int{{rs[i].First, rs[i].Last}}, Index: uint64(10 + i), Term: 2, Node: "n1"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := sw.Write(data); err != nil {
			t.Fatal(err)
		}
		if _, err := w.EndShard(); err != nil {
			t.Fatal(err)
		}
	}
	m := Manifest{Created: time.Unix(1700000000, 0).UTC(), Completed: time.Unix(1700000001, 0).UTC(),
		RaftstreamVersion: "0.1.0", Tool: "test", Cut: "per-shard", ShardCount: len(shards),
		Source: Source{Addr: "127.0.0.1:1", Nodes: []Node{{ID: "n1", Addr: "127.0.0.1:1"}}}}
	m, err = w.Finish(m)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// check opens and verifies path; nil when it is accepted.
func check(path string) error {
	b, err := Open(path)
	if err != nil {
		return err
	}
	defer b.Close()
	return b.Verify()
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.rsbk")
	shards := shardEngines(t, 3)
	writeBackup(t, path, shards)
	if _, err := os.Stat(path + ".partial"); !os.IsNotExist(err) {
		t.Errorf("the partial file is left: %v", err)
	}
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Verify(); err != nil {
		t.Fatal(err)
	}
	m := b.Manifest
	if m.Format != Format || m.Version != Version || m.ShardCount != 3 || len(m.Shards) != 3 || m.Shards[2].Index != 12 {
		t.Fatalf("manifest %+v", m)
	}
	for i := range shards {
		e, err := engine.Restore(b.Shard(i))
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		if got := e.Exec(0, argv("XLEN", fmt.Sprintf("s%d", i))); got != engine.Integer(5) {
			t.Errorf("shard %d: XLEN %v", i, got)
		}
	}
	if _, err := Create(path); err == nil {
		t.Error("Create over an existing backup succeeded")
	}
}

// partOf names the part a byte at off belongs to, as a refusal names it.
func partOf(m Manifest, off, size int64) string {
	for _, s := range m.Shards {
		if off >= s.Offset && off < s.Offset+s.Bytes {
			return fmt.Sprintf("shard %d", s.Shard)
		}
	}
	switch tr := size - trailerLen; {
	case off < headerLen:
		return "file header"
	case off < tr:
		return "manifest"
	case off < tr+16:
		return "trailer"
	case off < tr+16+sha256.Size:
		return "manifest" // its digest
	}
	return "file" // the end marker
}

// TestEveryFlippedByteIsRefused flips each byte of a backup in turn: the
// file is refused each time, with an error naming the part the byte is in.
func TestEveryFlippedByteIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.rsbk")
	writeBackup(t, path, shardEngines(t, 3))
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m := b.Manifest
	b.Close()
	bad := filepath.Join(dir, "bad.rsbk")
	parts := map[string]int{}
	for off := range orig {
		data := bytes.Clone(orig)
		data[off] ^= 0x10
		if err := os.WriteFile(bad, data, 0o600); err != nil {
			t.Fatal(err)
		}
		err := check(bad)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("byte %d of %d flipped: %v, want a refusal", off, len(orig), err)
		}
		if want := partOf(m, int64(off), int64(len(orig))); e.Part != want {
			t.Fatalf("byte %d flipped: refused as %q (%v), want %q", off, e.Part, err, want)
		}
		parts[e.Part]++
	}
	t.Logf("%d bytes flipped one at a time, refusals by part: %v", len(orig), parts)
}

// TestTruncatedIsRefused cuts the file at every length.
func TestTruncatedIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.rsbk")
	writeBackup(t, path, shardEngines(t, 2))
	orig, _ := os.ReadFile(path)
	bad := filepath.Join(dir, "cut.rsbk")
	for n := range len(orig) {
		os.WriteFile(bad, orig[:n], 0o600)
		err := check(bad)
		var e *Error
		if !errors.As(err, &e) || (e.Part != "file" && e.Part != "file header") {
			t.Fatalf("cut to %d of %d bytes: %v", n, len(orig), err)
		}
		if n > headerLen+trailerLen && !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("cut to %d bytes: %v does not say truncated", n, err)
		}
	}
}

// TestPartialIsRefused: manifests that leave out a shard or a slot, or
// whose shards do not tile the file, are refused even when their digests
// match (a file put together by hand).
func TestPartialIsRefused(t *testing.T) {
	shards := shardEngines(t, 3)
	rs := slots.Ranges(3)
	full := func() Manifest {
		m := Manifest{Format: Format, Version: Version, ShardCount: 3, Cut: "per-shard"}
		off := int64(headerLen)
		for i, d := range shards {
			sum := sha256.Sum256(d)
			m.Shards = append(m.Shards, Shard{Shard: i, Slots: [][2]int{{rs[i].First, rs[i].Last}}, Offset: off,
				Bytes: int64(len(d)), SHA256: fmt.Sprintf("%x", sum)})
			off += int64(len(d))
		}
		return m
	}
	for _, tc := range []struct {
		name string
		edit func(*Manifest, *[][]byte)
		want string
	}{
		{"complete", func(*Manifest, *[][]byte) {}, ""},
		{"a shard left out", func(m *Manifest, d *[][]byte) {
			m.Shards = append(m.Shards[:1], m.Shards[2:]...)
			m.Shards[1].Offset = m.Shards[0].Offset + m.Shards[0].Bytes
			*d = append((*d)[:1], (*d)[2:]...)
		}, "partial backup: it holds 2 shards of 3 (missing: [1])"},
		{"a slot in no shard", func(m *Manifest, _ *[][]byte) { m.Shards[2].Slots[0][1]-- }, "partial backup: slot 16383 is in no shard"},
		{"a slot twice", func(m *Manifest, _ *[][]byte) { m.Shards[1].Slots[0][0]-- }, fmt.Sprintf("slot %d is in shard 0 and shard 1", rs[0].Last)},
		{"bytes left over", func(m *Manifest, d *[][]byte) { (*d)[2] = append((*d)[2], 0) }, "the shards end at offset"},
		{"a newer version", func(m *Manifest, _ *[][]byte) { m.Version = 2 }, "version 2; this raftstream reads version 1"},
	} {
		m, data := full(), append([][]byte(nil), shards...)
		tc.edit(&m, &data)
		path := filepath.Join(t.TempDir(), "b.rsbk")
		writeRaw(t, path, data, m)
		err := check(path)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// writeRaw lays a file out as Writer does, with no checks.
func writeRaw(t *testing.T, path string, shards [][]byte, m Manifest) {
	var f bytes.Buffer
	f.WriteString(headerMagic)
	f.WriteByte(Version)
	f.Write(make([]byte, headerLen-len(headerMagic)-1))
	for _, d := range shards {
		f.Write(d)
	}
	js, _ := json.Marshal(m)
	off := f.Len()
	f.Write(js)
	var tr [trailerLen]byte
	binary.LittleEndian.PutUint64(tr[0:], uint64(off))
	binary.LittleEndian.PutUint64(tr[8:], uint64(len(js)))
	sum := sha256.Sum256(js)
	copy(tr[16:], sum[:])
	copy(tr[16+sha256.Size:], endMarker)
	f.Write(tr[:])
	if err := os.WriteFile(path, f.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}
