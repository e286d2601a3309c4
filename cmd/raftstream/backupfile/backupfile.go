// Package backupfile is the file `raftstream backup` writes and
// `raftstream restore` reads: the engine state of every shard of a
// cluster, each at one log position, with a manifest that says what the
// file holds. A reader refuses a file that is partial, truncated or
// damaged, and names the part that is wrong: the file, its header, the
// trailer, the manifest, or a shard.
//
// # Layout (version 1)
//
//	header    16 bytes: "RSBACKUP", version (1 byte, 1), 7 zero bytes
//	shards    each shard's engine snapshot encoding, in shard order,
//	          back to back: (*engine.Snapshot).WriteTo's bytes, which
//	          engine.Restore decodes (the engine's own format and
//	          version, so a new engine format needs no change here)
//	manifest  JSON (Manifest): versions, times, the source's nodes, and
//	          per shard its slots, log index and term, offset, size and
//	          SHA-256
//	trailer   56 bytes: manifest offset (8, little endian), manifest
//	          length (8), SHA-256 of the manifest (32), "RSBAKEND"
//
// Every byte is covered by a check: the header and the end marker by
// value, the manifest by the trailer's SHA-256, each shard by the
// manifest's SHA-256 (and by the engine's CRC when it is decoded), and the
// offsets by the manifest's shards having to follow the header and each
// other up to the manifest, leaving no byte out. A writer builds the file
// beside its name (name + ".partial") and renames it once complete, so a
// file under the name is either complete or refused.
package backupfile

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/raftstream/raftstream/slots"
)

const (
	// Format and Version are the manifest's format name and the layout
	// version this package writes and reads.
	Format  = "raftstream-backup"
	Version = 1

	headerMagic = "RSBACKUP"
	headerLen   = 16
	endMarker   = "RSBAKEND"
	trailerLen  = 8 + 8 + 32 + 8 // manifest offset, length, SHA-256, endMarker
	// maxManifest bounds the manifest a reader loads.
	maxManifest = 64 << 20
)

// Manifest describes a backup file.
type Manifest struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Created is when the backup began (its first shard was asked for);
	// Completed when its last shard was written.
	Created   time.Time `json:"created"`
	Completed time.Time `json:"completed"`
	// RaftstreamVersion is the source's (INFO server raftstream_version);
	// Tool the build of the raftstream binary that wrote the file.
	RaftstreamVersion string `json:"raftstream_version"`
	Tool              string `json:"tool"`
	// Source is the node or cluster the backup was taken from.
	Source Source `json:"source"`
	// Cut says what the shards' points have in common: "per-shard", each
	// shard at its own linearizable point (deploy/OPERATIONS.md).
	Cut        string  `json:"cut"`
	ShardCount int     `json:"shard_count"`
	Shards     []Shard `json:"shards"`
}

// Source is where a backup was taken. A raftstream cluster has no ID of its
// own: its members' node IDs identify it.
type Source struct {
	Addr  string `json:"addr"` // the address the backup was asked through
	Nodes []Node `json:"nodes"`
}

// Node is one member of the source.
type Node struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

// Shard is one shard's copy.
type Shard struct {
	Shard int `json:"shard"`
	// Slots are the hash slot ranges the shard served, [first, last].
	Slots [][2]int `json:"slots"`
	// Index and Term are the log position the copy is the state at; Time
	// the shard's clock there (unix ms); Node the ID of the leader it was
	// read from.
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	Time  int64  `json:"time_unix_ms"`
	Node  string `json:"node"`
	// Offset and Bytes place the shard's engine state in the file; SHA256
	// is its digest (hex).
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Error is a backup file refused: Part names what is wrong ("file", "file
// header", "trailer", "manifest", "shard 3") and Reason how.
type Error struct {
	Path, Part, Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s: %s", e.Path, e.Part, e.Reason) }

func refuse(path, part, format string, args ...any) error {
	return &Error{Path: path, Part: part, Reason: fmt.Sprintf(format, args...)}
}

// ---- writing ----

// Writer builds a backup file, one shard after another.
type Writer struct {
	path, tmp string
	f         *os.File
	bw        *bufio.Writer
	off       int64
	shards    []Shard
	// cur is the shard being written, nil between shards.
	cur *shardWriter
}

// shardWriter counts and hashes one shard's bytes on their way to the file.
type shardWriter struct {
	w     *Writer
	info  Shard
	sum   hash.Hash
	bytes int64
}

func (s *shardWriter) Write(p []byte) (int, error) {
	n, err := s.w.bw.Write(p)
	s.sum.Write(p[:n])
	s.bytes += int64(n)
	return n, err
}

// Create starts a backup file to be named path: it is written to path +
// ".partial" and renamed by Finish. An existing path is refused.
func Create(path string) (*Writer, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("%s exists: remove it or choose another name", path)
	}
	tmp := path + ".partial"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	w := &Writer{path: path, tmp: tmp, f: f, bw: bufio.NewWriterSize(f, 1<<20)}
	var hdr [headerLen]byte
	copy(hdr[:], headerMagic)
	hdr[len(headerMagic)] = Version
	if _, err := w.bw.Write(hdr[:]); err != nil {
		w.Abort()
		return nil, err
	}
	w.off = headerLen
	return w, nil
}

// BeginShard starts the next shard's bytes, which the caller writes to the
// returned writer. info's Offset, Bytes and SHA256 are filled in by
// EndShard. Shards must come in shard order, each once.
func (w *Writer) BeginShard(info Shard) (io.Writer, error) {
	if w.cur != nil {
		return nil, fmt.Errorf("backupfile: shard %d begun before shard %d ended", info.Shard, w.cur.info.Shard)
	}
	if info.Shard != len(w.shards) {
		return nil, fmt.Errorf("backupfile: shard %d written after %d shards", info.Shard, len(w.shards))
	}
	info.Offset = w.off
	w.cur = &shardWriter{w: w, info: info, sum: sha256.New()}
	return w.cur, nil
}

// RestartShard drops what was written of the current shard (a copy cut
// off half way) and begins it again with info.
func (w *Writer) RestartShard(info Shard) (io.Writer, error) {
	if w.cur == nil {
		return nil, errors.New("backupfile: no shard to restart")
	}
	if err := w.bw.Flush(); err != nil {
		return nil, err
	}
	if err := w.f.Truncate(w.off); err != nil {
		return nil, err
	}
	if _, err := w.f.Seek(w.off, io.SeekStart); err != nil {
		return nil, err
	}
	w.cur = nil
	return w.BeginShard(info)
}

// EndShard completes the current shard and returns its manifest entry.
func (w *Writer) EndShard() (Shard, error) {
	s := w.cur
	if s == nil {
		return Shard{}, errors.New("backupfile: no shard to end")
	}
	s.info.Bytes = s.bytes
	s.info.SHA256 = hex.EncodeToString(s.sum.Sum(nil))
	w.off += s.bytes
	w.shards = append(w.shards, s.info)
	w.cur = nil
	return s.info, nil
}

// Finish writes the manifest (m, with the format, version and the shards
// written) and the trailer, syncs the file to disk and gives it its name.
// It returns the manifest written.
func (w *Writer) Finish(m Manifest) (Manifest, error) {
	if w.cur != nil {
		return m, fmt.Errorf("backupfile: shard %d not ended", w.cur.info.Shard)
	}
	m.Format, m.Version, m.Shards = Format, Version, w.shards
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, err
	}
	js = append(js, '\n')
	if err := checkManifest(&m, w.off); err != nil {
		return m, fmt.Errorf("backupfile: the manifest would be refused: %s", err)
	}
	var tr [trailerLen]byte
	binary.LittleEndian.PutUint64(tr[0:], uint64(w.off))
	binary.LittleEndian.PutUint64(tr[8:], uint64(len(js)))
	sum := sha256.Sum256(js)
	copy(tr[16:], sum[:])
	copy(tr[16+sha256.Size:], endMarker)
	for _, b := range [][]byte{js, tr[:]} {
		if _, err := w.bw.Write(b); err != nil {
			return m, err
		}
	}
	if err := w.bw.Flush(); err != nil {
		return m, err
	}
	if err := w.f.Sync(); err != nil {
		return m, err
	}
	if err := w.f.Close(); err != nil {
		return m, err
	}
	w.f = nil
	if err := os.Rename(w.tmp, w.path); err != nil {
		return m, err
	}
	if d, err := os.Open(filepath.Dir(w.path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return m, nil
}

// Abort removes the partial file.
func (w *Writer) Abort() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	os.Remove(w.tmp)
}

// ---- reading ----

// Backup is an opened backup file whose framing and manifest were checked
// (Open); Verify checks the shards' bytes.
type Backup struct {
	Manifest Manifest
	path     string
	f        *os.File
}

// Open opens a backup file and checks everything but the shards' bytes:
// the header, the trailer, the manifest's digest and what it says (every
// shard of the count present once, in order, their bytes following each
// other from the header to the manifest, their slots covering every slot
// once). Errors are *Error.
func Open(path string) (*Backup, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	b := &Backup{path: path, f: f}
	if err := b.open(); err != nil {
		f.Close()
		return nil, err
	}
	return b, nil
}

func (b *Backup) open() error {
	st, err := b.f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	var hdr [headerLen]byte
	if n, _ := b.f.ReadAt(hdr[:], 0); n < headerLen || string(hdr[:len(headerMagic)]) != headerMagic {
		return refuse(b.path, "file header", "not a raftstream backup (it does not start with %q)", headerMagic)
	}
	if v := hdr[len(headerMagic)]; v != Version {
		return refuse(b.path, "file header", "layout version %d; this raftstream reads version %d", v, Version)
	}
	if !bytes.Equal(hdr[len(headerMagic)+1:], make([]byte, headerLen-len(headerMagic)-1)) {
		return refuse(b.path, "file header", "damaged (its reserved bytes are not zero)")
	}
	var tr [trailerLen]byte
	if size < headerLen+trailerLen {
		return refuse(b.path, "file", "truncated: %d bytes, too short for a backup (a backup that did not finish is left as FILE.partial, never under its name)", size)
	}
	if _, err := b.f.ReadAt(tr[:], size-trailerLen); err != nil {
		return err
	}
	if string(tr[16+sha256.Size:]) != endMarker {
		return refuse(b.path, "file", "truncated or its end damaged: it does not end with the backup end marker %q (%d bytes; a backup that did not finish is left as FILE.partial, never under its name)", endMarker, size)
	}
	mOff, mLen := binary.LittleEndian.Uint64(tr[0:]), binary.LittleEndian.Uint64(tr[8:])
	if mLen > maxManifest || mOff < headerLen || mOff+mLen != uint64(size-trailerLen) {
		return refuse(b.path, "trailer", "damaged: the manifest's place (offset %d, %d bytes) does not fit the file's %d bytes", mOff, mLen, size)
	}
	js := make([]byte, mLen)
	if _, err := b.f.ReadAt(js, int64(mOff)); err != nil {
		return err
	}
	if sum := sha256.Sum256(js); !bytes.Equal(sum[:], tr[16:16+sha256.Size]) {
		return refuse(b.path, "manifest", "damaged: its SHA-256 is not the one the trailer records")
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b.Manifest); err != nil {
		return refuse(b.path, "manifest", "unreadable: %v", err)
	}
	if err := checkManifest(&b.Manifest, int64(mOff)); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Path = b.path
		}
		return err
	}
	return nil
}

// checkManifest checks what m says against itself and the file's layout,
// the shards ending at end (the manifest's offset).
func checkManifest(m *Manifest, end int64) error {
	bad := func(part, format string, args ...any) error { return refuse("", part, format, args...) }
	switch {
	case m.Format != Format:
		return bad("manifest", "format %q, want %q", m.Format, Format)
	case m.Version != Version:
		return bad("manifest", "version %d; this raftstream reads version %d", m.Version, Version)
	case m.ShardCount < 1 || m.ShardCount > slots.Count:
		return bad("manifest", "shard count %d", m.ShardCount)
	}
	var missing []int
	for i, j := 0, 0; i < m.ShardCount; i++ {
		if j < len(m.Shards) && m.Shards[j].Shard == i {
			j++
		} else {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 || len(m.Shards) != m.ShardCount {
		return bad("manifest", "partial backup: it holds %d shards of %d (missing: %v); shards must be listed once each, in order",
			len(m.Shards), m.ShardCount, missing)
	}
	off := int64(headerLen)
	for _, s := range m.Shards {
		part := fmt.Sprintf("shard %d", s.Shard)
		if s.Offset != off || s.Bytes < 0 {
			return bad("manifest", "%s is at offset %d (%d bytes); the bytes before it end at %d", part, s.Offset, s.Bytes, off)
		}
		off += s.Bytes
		if d, err := hex.DecodeString(s.SHA256); err != nil || len(d) != sha256.Size {
			return bad("manifest", "%s: SHA-256 %q is not 64 hex digits", part, s.SHA256)
		}
	}
	if off != end {
		return bad("manifest", "the shards end at offset %d, the manifest begins at %d", off, end)
	}
	if err := CheckSlots(m.Shards); err != nil {
		return bad("manifest", "%s", err)
	}
	return nil
}

// CheckSlots checks that shards' slot ranges are valid and cover every
// slot once: what a backup's shards, each cut at its own point, hold only
// when no slot moved between their cuts.
func CheckSlots(shards []Shard) error {
	var owner [slots.Count]int
	for i := range owner {
		owner[i] = -1
	}
	for _, s := range shards {
		for _, r := range s.Slots {
			if r[0] < 0 || r[1] >= slots.Count || r[0] > r[1] {
				return fmt.Errorf("shard %d: slot range %d-%d", s.Shard, r[0], r[1])
			}
			for sl := r[0]; sl <= r[1]; sl++ {
				if owner[sl] >= 0 {
					return fmt.Errorf("slot %d is in shard %d and shard %d", sl, owner[sl], s.Shard)
				}
				owner[sl] = s.Shard
			}
		}
	}
	for sl, o := range owner {
		if o < 0 {
			return fmt.Errorf("partial backup: slot %d is in no shard", sl)
		}
	}
	return nil
}

// Verify reads every shard's bytes and checks them against the manifest's
// SHA-256; the first damaged shard is refused (an *Error naming it).
func (b *Backup) Verify() error {
	buf := make([]byte, 1<<20)
	for _, s := range b.Manifest.Shards {
		h := sha256.New()
		if _, err := io.CopyBuffer(h, io.NewSectionReader(b.f, s.Offset, s.Bytes), buf); err != nil {
			return err
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != s.SHA256 {
			return refuse(b.path, fmt.Sprintf("shard %d", s.Shard), "damaged: the SHA-256 of its %d bytes is %s, the manifest records %s", s.Bytes, got, s.SHA256)
		}
	}
	return nil
}

// Shard returns a reader of shard i's engine state (engine.Restore reads
// it).
func (b *Backup) Shard(i int) io.Reader {
	s := b.Manifest.Shards[i]
	return io.NewSectionReader(b.f, s.Offset, s.Bytes)
}

// Size is the total of the shards' bytes.
func (b *Backup) Size() int64 {
	var n int64
	for _, s := range b.Manifest.Shards {
		n += s.Bytes
	}
	return n
}

// Close closes the file.
func (b *Backup) Close() error { return b.f.Close() }
