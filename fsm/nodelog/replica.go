package nodelog

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/raft"
)

// idFile names the file in a replica directory that holds its log ID.
const idFile = "nodelog.id"

// errNotFound is what raft expects from a StableStore for a missing key:
// it compares the error's text with "not found".
var errNotFound = errors.New("not found")

// Replica is one shard replica's view of the node log: its raft.LogStore
// and raft.StableStore. raft calls it from several goroutines.
type Replica struct {
	l   *Log
	id  uint64
	dir string
	r   *rlog

	smu    sync.Mutex
	stable map[string][]byte

	closeOnce sync.Once
}

var (
	_ raft.LogStore          = (*Replica)(nil)
	_ raft.StableStore       = (*Replica)(nil)
	_ raft.MonotonicLogStore = (*Replica)(nil)
)

func idName(id uint64) string { return fmt.Sprintf("%016x", id) }

// HasReplica reports whether dir holds a replica of a node log.
func HasReplica(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, idFile))
	return err == nil
}

// OpenReplica opens the replica log whose directory is dir, creating it
// (a new log ID) if dir has none. One Replica per directory at a time.
func (l *Log) OpenReplica(dir string) (*Replica, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("nodelog: %w", err)
	}
	id, err := readID(dir)
	if errors.Is(err, os.ErrNotExist) {
		id, err = l.newID(dir)
	}
	if err != nil {
		return nil, err
	}
	stable, err := readStable(dir)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.segs == nil {
		return nil, ErrClosed
	}
	if _, ok := l.open[id]; ok {
		return nil, fmt.Errorf("nodelog: the replica log in %s is already open", dir)
	}
	r := l.logs[id]
	if r == nil {
		r = &rlog{id: id}
		l.logs[id] = r
	}
	rep := &Replica{l: l, id: id, dir: dir, r: r, stable: stable}
	l.open[id] = rep
	return rep, nil
}

func readID(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, idFile))
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 16, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("nodelog: %s holds no log ID", filepath.Join(dir, idFile))
	}
	return id, nil
}

// newID gives dir a fresh log ID: first the owner file in the node log
// (so the ID is never orphaned while dir claims it), then dir's ID file.
func (l *Log) newID(dir string) (uint64, error) {
	var b [8]byte
	var id uint64
	for id == 0 {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, err
		}
		id = binary.LittleEndian.Uint64(b[:])
		l.mu.RLock()
		_, taken := l.logs[id]
		l.mu.RUnlock()
		if taken {
			id = 0
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return 0, err
	}
	rel, err := filepath.Rel(l.dir, abs)
	if err != nil {
		rel = abs
	}
	if err := writeSynced(filepath.Join(l.dir, "owners"), idName(id), []byte(rel+"\n")); err != nil {
		return 0, err
	}
	if err := writeSynced(dir, idFile, []byte(idName(id)+"\n")); err != nil {
		return 0, err
	}
	return id, nil
}

// claimed reports whether the directory recorded as the owner of log id
// still names it in its ID file.
func (l *Log) claimed(id uint64) bool {
	b, err := os.ReadFile(filepath.Join(l.dir, "owners", idName(id)))
	if err != nil {
		return false
	}
	dir := strings.TrimSpace(string(b))
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(l.dir, dir)
	}
	got, err := readID(dir)
	return err == nil && got == id
}

// writeSynced writes name in dir through a temporary file, fsyncs it,
// renames it into place and fsyncs dir.
func writeSynced(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("nodelog: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("nodelog: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("nodelog: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("nodelog: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("nodelog: %w", err)
	}
	return syncDir(dir)
}

// ID is the replica's log ID.
func (r *Replica) ID() uint64 { return r.id }

// IsMonotonic tells raft to clear the log after installing a snapshot
// rather than leave a gap (raft.MonotonicLogStore).
func (r *Replica) IsMonotonic() bool { return true }

// FirstIndex is the first entry's index, 0 when the log is empty.
func (r *Replica) FirstIndex() (uint64, error) {
	r.l.mu.RLock()
	defer r.l.mu.RUnlock()
	if len(r.r.locs) == 0 {
		return 0, nil
	}
	return r.r.first, nil
}

// SegmentsHeld is how many segments lie between the one holding the
// replica's first entry and the segment being written (0 for an empty log
// or one that starts in the current segment). None of them can be deleted
// while the entry is there. The writer carries small logs forward
// (relocateLogBytes); a larger one stays until raft compacts it, which only
// a snapshot of the replica's shard makes it do.
func (r *Replica) SegmentsHeld() int {
	r.l.mu.RLock()
	defer r.l.mu.RUnlock()
	if len(r.r.locs) == 0 || len(r.l.segs) == 0 {
		return 0
	}
	return int(r.l.segs[len(r.l.segs)-1].seq - r.r.locs[0].seq)
}

// LastIndex is the last entry's index, 0 when the log is empty.
func (r *Replica) LastIndex() (uint64, error) {
	r.l.mu.RLock()
	defer r.l.mu.RUnlock()
	return r.r.last(), nil
}

// GetLog reads entry index into out (raft.ErrLogNotFound if it is not in
// the log).
func (r *Replica) GetLog(index uint64, out *raft.Log) error {
	r.l.mu.RLock()
	rl := r.r
	if len(rl.locs) == 0 || index < rl.first || index > rl.last() {
		r.l.mu.RUnlock()
		return raft.ErrLogNotFound
	}
	lc := rl.locs[index-rl.first]
	seg := r.l.segLocked(lc.seq)
	if seg == nil {
		r.l.mu.RUnlock()
		return fmt.Errorf("nodelog: entry %d of log %s: segment %s is gone", index, idName(r.id), segName(lc.seq))
	}
	rec := make([]byte, lc.n)
	_, err := seg.f.ReadAt(rec, lc.off)
	r.l.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("nodelog: read entry %d of log %s: %w", index, idName(r.id), err)
	}
	if err := decodeEntry(rec, out); err != nil {
		return fmt.Errorf("%w (entry %d of log %s in %s at %d)", err, index, idName(r.id), segName(lc.seq), lc.off)
	}
	if out.Index != index || binary.LittleEndian.Uint64(rec[16:24]) != r.id {
		return fmt.Errorf("nodelog: entry %d of log %s: the record at %s:%d holds another entry", index, idName(r.id), segName(lc.seq), lc.off)
	}
	return nil
}

// segLocked finds segment seq. Caller holds mu.
func (l *Log) segLocked(seq uint64) *segment {
	segs := l.segs
	i, j := 0, len(segs)
	for i < j {
		h := (i + j) / 2
		if segs[h].seq < seq {
			i = h + 1
		} else {
			j = h
		}
	}
	if i < len(segs) && segs[i].seq == seq {
		return segs[i]
	}
	return nil
}

// StoreLog appends one entry.
func (r *Replica) StoreLog(lg *raft.Log) error { return r.StoreLogs([]*raft.Log{lg}) }

// StoreLogs appends logs, which must continue the log (any index may start
// an empty one) and each other, and returns once they are durable.
func (r *Replica) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	if err := r.l.Err(); err != nil {
		return err
	}
	r.l.mu.RLock()
	last, empty := r.r.last(), len(r.r.locs) == 0
	r.l.mu.RUnlock()
	if !empty && logs[0].Index != last+1 {
		return fmt.Errorf("nodelog: log %s: entry %d does not follow the last entry %d", idName(r.id), logs[0].Index, last)
	}
	o := &op{r: r.r, kind: kindEntry, logs: logs, recLen: make([]int32, len(logs))}
	size := 0
	for _, lg := range logs {
		size += headerLen + 33 + len(lg.Data) + len(lg.Extensions)
	}
	o.buf = getRecordBuf(size)
	defer func() { putRecordBuf(o.buf) }()
	for i, lg := range logs {
		if i > 0 && lg.Index != logs[i-1].Index+1 {
			return fmt.Errorf("nodelog: log %s: entries %d and %d are not consecutive", idName(r.id), logs[i-1].Index, lg.Index)
		}
		n := len(o.buf)
		o.buf = encodeEntry(o.buf, r.id, lg)
		o.recLen[i] = int32(len(o.buf) - n)
	}
	// submit returns once the writer has copied the records into its write
	// (or never took them): the buffer is free again when it does.
	return r.l.submit(o)
}

// Record buffers (StoreLogs encodes into one, the writer copies it into its
// write) are reused: at one StoreLogs per replica per Raft round, fresh ones
// were a tenth of a cluster node's allocated bytes. Buffers past
// maxPooledRecordBuf are left to the collector.
const maxPooledRecordBuf = 1 << 20

var recordBufs sync.Pool // of *[]byte, length 0

func getRecordBuf(size int) []byte {
	if p, ok := recordBufs.Get().(*[]byte); ok && cap(*p) >= size {
		return (*p)[:0]
	}
	return make([]byte, 0, size)
}

func putRecordBuf(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledRecordBuf {
		return
	}
	b = b[:0]
	recordBufs.Put(&b)
}

// DeleteRange deletes entries lo..hi. raft deletes a prefix (compaction,
// or everything after a snapshot install) or a suffix (a follower's
// conflicting entries); a range inside the log is refused.
//
// A prefix is recorded as "drop everything before hi+1", never as "drop
// everything", even when hi is the last entry: compaction runs on raft's
// snapshot goroutine while the raft goroutine may be appending hi+1.
func (r *Replica) DeleteRange(lo, hi uint64) error {
	if err := r.l.Err(); err != nil {
		return err
	}
	r.l.mu.RLock()
	first, last, empty := r.r.first, r.r.last(), len(r.r.locs) == 0
	r.l.mu.RUnlock()
	if empty || hi < first || lo > last || lo > hi {
		return nil
	}
	o := &op{r: r.r}
	switch {
	case lo <= first:
		o.kind, o.arg = kindHead, hi+1
	case hi >= last:
		o.kind, o.arg = kindTail, lo-1
	default:
		return fmt.Errorf("nodelog: log %s: cannot delete entries %d..%d from the middle of %d..%d", idName(r.id), lo, hi, first, last)
	}
	o.buf = encodeTrunc(nil, r.id, o.kind, o.arg)
	if testHookDeleteRange != nil {
		testHookDeleteRange()
	}
	return r.l.submit(o)
}

// testHookDeleteRange, set by tests only, runs between DeleteRange's look
// at the log and its write.
var testHookDeleteRange func()

// Close releases the replica; its log stays in the node log (a reopened
// replica finds it) until its directory stops claiming it.
func (r *Replica) Close() error {
	r.closeOnce.Do(func() {
		r.l.mu.Lock()
		if r.l.open[r.id] == r {
			delete(r.l.open, r.id)
		}
		r.l.mu.Unlock()
	})
	return nil
}

// Stable store: a small file of key/value pairs in the replica directory,
// rewritten (temporary file, fsync, rename, directory fsync) on every Set.
// raft writes it only when the term or the vote changes.

const stableFile = "stable"

// Set stores key = val durably.
func (r *Replica) Set(key, val []byte) error {
	r.smu.Lock()
	defer r.smu.Unlock()
	next := make(map[string][]byte, len(r.stable)+1)
	for k, v := range r.stable {
		next[k] = v
	}
	next[string(key)] = append([]byte(nil), val...)
	if err := writeSynced(r.dir, stableFile, encodeStable(next)); err != nil {
		return err
	}
	r.stable = next
	return nil
}

// Get returns key's value (error "not found" if unset).
func (r *Replica) Get(key []byte) ([]byte, error) {
	r.smu.Lock()
	defer r.smu.Unlock()
	v, ok := r.stable[string(key)]
	if !ok {
		return nil, errNotFound
	}
	return append([]byte(nil), v...), nil
}

// SetUint64 stores key = val.
func (r *Replica) SetUint64(key []byte, val uint64) error {
	return r.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns key's value (error "not found" if unset).
func (r *Replica) GetUint64(key []byte) (uint64, error) {
	v, err := r.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("nodelog: stable key %q holds %d bytes, not a uint64", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Stable file: "RSST" then pairs of (u32 key length, key, u32 value length,
// value), then the CRC-32C of everything before it.
func encodeStable(m map[string][]byte) []byte {
	b := []byte("RSST")
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(m[k])))
		b = append(b, m[k]...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

func readStable(dir string) (map[string][]byte, error) {
	path := filepath.Join(dir, stableFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("nodelog: %w", err)
	}
	bad := fmt.Errorf("nodelog: %s is damaged", path)
	if len(b) < 8 || string(b[:4]) != "RSST" || crc32.Checksum(b[:len(b)-4], crcTable) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, bad
	}
	m := map[string][]byte{}
	p := b[4 : len(b)-4]
	for len(p) > 0 {
		if len(p) < 4 {
			return nil, bad
		}
		n := int(binary.LittleEndian.Uint32(p))
		if len(p) < 4+n+4 {
			return nil, bad
		}
		k := string(p[4 : 4+n])
		p = p[4+n:]
		n = int(binary.LittleEndian.Uint32(p))
		if len(p) < 4+n {
			return nil, bad
		}
		m[k] = append([]byte(nil), p[4:4+n]...)
		p = p[4+n:]
	}
	return m, nil
}
