// Package nodelog is a Raft log store shared by every shard replica of a
// node: one append-only, CRC-framed log in segment files, written by one
// goroutine that commits whatever all replicas handed it since its last
// write with a single write and a single fdatasync (group commit).
//
// With one bbolt file per replica, each replica's StoreLogs costs two fsyncs
// of its own, and a node with 16 or 64 replicas issues that many independent
// fsync streams to one disk. Here a write of 64 replicas' entries costs one.
//
// Layout of Options.Dir:
//
//	NNNNNNNNNNNNNNNN.seg   segment files, written in order; only the last grows
//	owners/ID              one file per replica log: the replica directory that owns it
//
// and of each replica directory: nodelog.id (the replica's log ID, 16 hex
// digits) and stable (the replica's term and vote, raft's StableStore).
//
// Every record names the replica log it belongs to. A replica's in-memory
// index maps each entry of its log to the record holding it; records of one
// replica are replayed in order on Open, so appends, tail truncations (a
// follower's conflicting suffix) and head truncations (compaction after a
// snapshot) come back exactly as they were applied. A segment is deleted when
// no live replica log has an entry in it or in an older segment. A replica
// log whose directory was deleted (the replica moved away) no longer holds
// segments: it is orphaned when its directory's nodelog.id is gone.
//
// The store is monotonic (raft.MonotonicLogStore): an append must continue
// the log (or start an empty one anywhere), so raft clears a replica's log
// after it installs a snapshot instead of leaving a gap.
package nodelog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// DefaultSegmentBytes is the size past which the writer starts a new
// segment file.
const DefaultSegmentBytes = 64 << 20

// Options configures Open.
type Options struct {
	// Dir holds the segment files. Created if missing.
	Dir string
	// SegmentBytes is the size past which a new segment is started (a batch
	// is never split, so a segment can exceed it by one batch). 0 means
	// DefaultSegmentBytes.
	SegmentBytes int64
	// NoSync skips the fdatasync after each write. Benchmarks only: an
	// acknowledged entry can be lost in a power failure.
	NoSync bool
	// Logger receives recovery and fault messages. nil means slog.Default().
	Logger *slog.Logger
	// NoPreallocate turns off zero-filling segment space ahead of the
	// writer (see preallocChunk).
	NoPreallocate bool

	noRelocate bool // tests: keep old segments that logs need
}

// preallocChunk is how much zero-filled space a background goroutine adds
// ahead of the writer, whenever less than half of it is left. An fdatasync
// after an append must also write the file's new size through the
// filesystem journal; one after an overwrite of space already allocated
// and written writes the data alone: on ext4 here 190–330 µs instead of
// 350–750 µs.
const preallocChunk = 4 << 20

// Record framing. Every record is a 24-byte header then the payload:
//
//	[0:4]   CRC-32C of bytes [4:24+len)
//	[4:8]   payload length
//	[8]     kind
//	[9:16]  zero
//	[16:24] replica log ID
const headerLen = 24

const (
	kindEntry byte = 1 // payload: an entry (see appendEntry)
	kindHead  byte = 2 // payload: u64 new first index (entries before it dropped)
	kindTail  byte = 3 // payload: u64 new last index (entries after it dropped)
	// kindCopy is an entry record carried forward out of an old segment
	// (relocate); it takes effect only with the kindMoved record after it.
	kindCopy byte = 5
	// kindMoved: payload u64 first index, u64 count: the log now consists of
	// the count kindCopy records of this log just before it.
	kindMoved byte = 6
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrClosed is returned by operations on a closed Log or Replica.
var ErrClosed = errors.New("nodelog: closed")

// Log is one node's shared log. Open it once per node, open a Replica on it
// for each shard replica, close the replicas, then the Log.
type Log struct {
	dir      string
	segBytes int64
	noSync   bool
	log      *slog.Logger

	// mu guards segs, logs and every replica log's index. Readers (GetLog,
	// FirstIndex, LastIndex) hold it shared; the writer holds it exclusively
	// only to publish a committed batch.
	mu   sync.RWMutex
	segs []*segment          // ascending; the last is the one written
	logs map[uint64]*rlog    // by replica log ID, replayed or opened
	open map[uint64]*Replica // replica logs currently opened

	// The writer's queue.
	qmu     sync.Mutex
	qcond   *sync.Cond
	queue   []*op
	closing bool
	done    chan struct{}

	failed atomic.Pointer[error] // the first write error: every later write fails with it
	wbuf   []byte                // the writer's batch buffer

	relocatedFor uint64 // the active segment when relocation was last planned
	noRelocate   bool

	prealloc bool
	pmu      sync.Mutex    // guards the active segment's zeroed and extending
	extDone  chan struct{} // closed when the running extension ends; nil if none

	stats struct {
		batches, ops, syncs, bytes, segmentsDeleted, writeNanos, relocated atomic.Uint64
	}
}

// segment is one segment file.
type segment struct {
	seq  uint64
	f    *os.File
	size int64 // end of the records
	// zeroed is the end of the space written so far (records, then zeros
	// up to here): writes below it overwrite, above it they extend the
	// file. Guarded by Log.pmu.
	zeroed int64
}

// loc is where an entry's record lies.
type loc struct {
	seq uint64 // segment
	off int64
	n   int32 // record length, header included
}

// rlog is one replica log's in-memory index: entries first..last are at
// locs[0..], or the log is empty (len(locs) == 0).
type rlog struct {
	id    uint64
	first uint64
	locs  []loc
}

func (r *rlog) last() uint64 {
	if len(r.locs) == 0 {
		return 0
	}
	return r.first + uint64(len(r.locs)) - 1
}

// op is one request to the writer.
type op struct {
	r      *rlog
	kind   byte
	arg    uint64      // kindHead: new first; kindTail: new last
	logs   []*raft.Log // kindEntry
	buf    []byte      // the encoded records of this op
	recLen []int32     // kindEntry: each record's length, in order
	err    error
	done   chan struct{}
}

// Open opens the log in opts.Dir, replaying its segments: a torn record at
// the end of the last segment (a write cut off by a crash: never
// acknowledged) is cut off; damage anywhere else fails Open.
func Open(opts Options) (*Log, error) {
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = DefaultSegmentBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, "owners"), 0o755); err != nil {
		return nil, fmt.Errorf("nodelog: %w", err)
	}
	l := &Log{
		dir: opts.Dir, segBytes: opts.SegmentBytes, noSync: opts.NoSync, log: opts.Logger, prealloc: !opts.NoPreallocate, noRelocate: opts.noRelocate,
		logs: make(map[uint64]*rlog), open: make(map[uint64]*Replica), done: make(chan struct{}),
	}
	l.qcond = sync.NewCond(&l.qmu)
	if err := l.replay(); err != nil {
		l.closeFiles()
		return nil, err
	}
	if len(l.segs) == 0 {
		if err := l.newSegment(1); err != nil {
			return nil, err
		}
	}
	go l.writer()
	return l, nil
}

func segName(seq uint64) string { return fmt.Sprintf("%016x.seg", seq) }

// replay reads every segment in order and rebuilds the replica logs.
func (l *Log) replay() error {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("nodelog: %w", err)
	}
	var seqs []uint64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".seg") {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(name, ".seg"), 16, 64)
		if err != nil || seq == 0 {
			return fmt.Errorf("nodelog: unexpected file %s in %s", name, l.dir)
		}
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	for i, seq := range seqs {
		last := i == len(seqs)-1
		flag := os.O_RDONLY
		if last {
			flag = os.O_RDWR
		}
		path := filepath.Join(l.dir, segName(seq))
		f, err := os.OpenFile(path, flag, 0)
		if err != nil {
			return fmt.Errorf("nodelog: %w", err)
		}
		seg := &segment{seq: seq, f: f}
		l.segs = append(l.segs, seg)
		good, err := l.replaySegment(seg)
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("nodelog: %w", err)
		}
		seg.size, seg.zeroed = good, st.Size()
		if good < st.Size() && !zeroFrom(f, good, st.Size()) {
			if !last {
				return fmt.Errorf("nodelog: %s is damaged at offset %d of %d (not the last segment: refusing to drop entries)", path, good, st.Size())
			}
			// A write cut off by a crash leaves nothing valid after it: the
			// space after the last write is zeros or the end of the file.
			// A whole record further on means acknowledged records follow
			// the bad one: damage, not a torn write.
			if at, ok := validRecordAfter(f, good, st.Size()); ok {
				return fmt.Errorf("nodelog: %s is damaged at offset %d: a valid record follows at offset %d, so this is not a write cut off by a crash (refusing to drop acknowledged entries; restore the node's directory from a backup or replace the node)", path, good, at)
			}
			l.log.Warn("log tail cut off: a write the crash interrupted (never acknowledged)", "segment", path, "offset", good, "bytes", st.Size()-good)
			if err := f.Truncate(good); err != nil {
				return fmt.Errorf("nodelog: cut torn tail of %s: %w", path, err)
			}
			if err := f.Sync(); err != nil {
				return fmt.Errorf("nodelog: %w", err)
			}
			seg.zeroed = good
		}
	}
	return nil
}

// validRecordAfter looks for a whole record with a good CRC that starts in
// (from, to) of f, and returns its offset.
func validRecordAfter(f *os.File, from, to int64) (int64, bool) {
	data := make([]byte, to-from)
	if _, err := f.ReadAt(data, from); err != nil && err != io.EOF {
		return 0, false
	}
	for i := 1; i+headerLen <= len(data); i++ {
		if data[i+8] < kindEntry || data[i+8] > kindMoved {
			continue
		}
		n := int(binary.LittleEndian.Uint32(data[i+4 : i+8]))
		if n > len(data)-i-headerLen || binary.LittleEndian.Uint64(data[i+16:i+24]) == 0 {
			continue
		}
		rec := data[i : i+headerLen+n]
		if crc32.Checksum(rec[4:], crcTable) == binary.LittleEndian.Uint32(rec[0:4]) {
			return from + int64(i), true
		}
	}
	return 0, false
}

// zeroFrom reports whether f holds only zero bytes in [from, to): space
// zero-filled ahead of the writer, not a torn write.
func zeroFrom(f *os.File, from, to int64) bool {
	buf := make([]byte, 64<<10)
	for off := from; off < to; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), to-off)], off)
		for _, b := range buf[:n] {
			if b != 0 {
				return false
			}
		}
		if err != nil && n == 0 {
			return false
		}
		off += int64(n)
	}
	return true
}

// waitExtension waits for a running extension of the active segment.
func (l *Log) waitExtension() {
	l.pmu.Lock()
	ch := l.extDone
	l.pmu.Unlock()
	if ch != nil {
		<-ch
	}
}

// maybeExtend starts zero-filling the next preallocChunk of seg (the
// active segment, written up to seg.size) in the background when less than
// half a chunk of zeroed space is left. The writer never writes into space
// being zeroed: a write that would reach past seg.zeroed first waits for
// the extension (writeSpace).
func (l *Log) maybeExtend(seg *segment) {
	l.pmu.Lock()
	defer l.pmu.Unlock()
	from := max(seg.zeroed, seg.size)
	if l.extDone != nil || from-seg.size >= preallocChunk/2 || from >= l.segBytes {
		return
	}
	n := min(int64(preallocChunk), l.segBytes-from)
	done := make(chan struct{})
	l.extDone = done
	go func() {
		defer close(done)
		err := writeZeros(seg.f, from, n)
		if err == nil && !l.noSync {
			err = fdatasync(seg.f)
		}
		l.pmu.Lock()
		if err == nil {
			seg.zeroed = max(seg.zeroed, from+n)
		} else {
			l.prealloc = false
			l.log.Warn("cannot zero-fill node log space ahead of the writer; writes extend the file instead", "segment", seg.f.Name(), "err", err)
		}
		l.extDone = nil
		l.pmu.Unlock()
	}()
}

// zeroPage is the source of writeZeros (read only).
var zeroPage [64 << 10]byte

func writeZeros(f *os.File, off, n int64) error {
	z := zeroPage[:]
	for n > 0 {
		k := min(n, int64(len(z)))
		if _, err := f.WriteAt(z[:k], off); err != nil {
			return err
		}
		off, n = off+k, n-k
	}
	return nil
}

// replaySegment applies seg's records and returns the offset after the last
// whole, valid one.
func (l *Log) replaySegment(seg *segment) (int64, error) {
	data, err := io.ReadAll(seg.f)
	if err != nil {
		return 0, fmt.Errorf("nodelog: read %s: %w", segName(seg.seq), err)
	}
	// The run of copies (of one log) whose kindMoved record has not been
	// seen yet. A relocation's copies and its kindMoved record are written
	// together, one log after another; any other record ends the run, so
	// copies a crash cut off from their kindMoved record are ignored (they
	// stay in the file before later records, and may even be followed by
	// the next relocation of the same log: kindMoved takes the last ones).
	var (
		pendID uint64
		pend   []loc
	)
	var off int64
	for {
		rest := data[off:]
		if len(rest) < headerLen {
			return off, nil
		}
		n := binary.LittleEndian.Uint32(rest[4:8])
		if uint64(n) > uint64(len(rest)-headerLen) {
			return off, nil
		}
		rec := rest[:headerLen+int(n)]
		if crc32.Checksum(rec[4:], crcTable) != binary.LittleEndian.Uint32(rec[0:4]) {
			return off, nil
		}
		id := binary.LittleEndian.Uint64(rec[16:24])
		r := l.logs[id]
		if r == nil {
			r = &rlog{id: id}
			l.logs[id] = r
		}
		kind, payload := rec[8], rec[headerLen:]
		if kind != kindMoved && (kind != kindCopy || id != pendID) {
			pendID, pend = 0, nil
		}
		switch kind {
		case kindCopy:
			pendID, pend = id, append(pend, loc{seq: seg.seq, off: off, n: int32(len(rec))})
		case kindMoved:
			// Its copies are the last count of the run: whole copies a
			// crash cut off from an earlier kindMoved may precede them.
			if len(payload) < 16 || id != pendID || uint64(len(pend)) < binary.LittleEndian.Uint64(payload[8:16]) {
				return 0, fmt.Errorf("nodelog: %s offset %d: relocation of log %016x does not match its copies", segName(seg.seq), off, id)
			}
			count := int(binary.LittleEndian.Uint64(payload[8:16]))
			r.first, r.locs = binary.LittleEndian.Uint64(payload[0:8]), append([]loc(nil), pend[len(pend)-count:]...)
			pendID, pend = 0, nil
		case kindEntry:
			if len(payload) < 8 {
				return off, nil
			}
			idx := binary.LittleEndian.Uint64(payload[0:8])
			if len(r.locs) > 0 && idx != r.last()+1 {
				return 0, fmt.Errorf("nodelog: %s offset %d: entry %d of log %016x does not follow %d", segName(seg.seq), off, idx, id, r.last())
			}
			r.push(idx, loc{seq: seg.seq, off: off, n: int32(len(rec))})
		case kindHead, kindTail:
			if len(payload) < 8 {
				return off, nil
			}
			r.apply(kind, binary.LittleEndian.Uint64(payload[0:8]))
		default:
			return off, nil
		}
		off += int64(len(rec))
	}
}

// push appends entry idx at lc.
func (r *rlog) push(idx uint64, lc loc) {
	if len(r.locs) == 0 {
		r.first = idx
		r.locs = r.locs[:0]
	}
	r.locs = append(r.locs, lc)
}

// apply applies a truncation.
func (r *rlog) apply(kind byte, arg uint64) {
	if len(r.locs) == 0 {
		return
	}
	switch kind {
	case kindHead:
		if arg <= r.first {
			return
		}
		if arg > r.last() {
			r.locs = nil
			return
		}
		drop := arg - r.first
		// Keep the backing array small: copy once half of it is dropped.
		if rest := r.locs[drop:]; int(drop) > len(rest) {
			r.locs = append(make([]loc, 0, len(rest)+len(rest)/2+16), rest...)
		} else {
			r.locs = rest
		}
		r.first = arg
	case kindTail:
		if arg < r.first {
			r.locs = r.locs[:0]
			return
		}
		if arg < r.last() {
			r.locs = r.locs[:arg-r.first+1]
		}
	}
}

// newSegment creates segment seq and makes it the one written.
func (l *Log) newSegment(seq uint64) error {
	path := filepath.Join(l.dir, segName(seq))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("nodelog: %w", err)
	}
	if err := syncDir(l.dir); err != nil {
		f.Close()
		return err
	}
	l.mu.Lock()
	l.segs = append(l.segs, &segment{seq: seq, f: f})
	l.mu.Unlock()
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("nodelog: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("nodelog: sync %s: %w", dir, err)
	}
	return nil
}

// Err is the write error that stopped the log, nil while healthy.
func (l *Log) Err() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// submit hands o to the writer and waits for its write to be durable.
func (l *Log) submit(o *op) error {
	o.done = make(chan struct{})
	l.qmu.Lock()
	if l.closing {
		l.qmu.Unlock()
		return ErrClosed
	}
	l.queue = append(l.queue, o)
	l.qmu.Unlock()
	l.qcond.Signal()
	<-o.done
	return o.err
}

// writer commits the queued ops, batch after batch: everything queued while
// a write and its fdatasync were under way goes into the next one.
func (l *Log) writer() {
	defer close(l.done)
	var batch []*op
	for {
		l.qmu.Lock()
		for len(l.queue) == 0 && !l.closing {
			l.qcond.Wait()
		}
		if len(l.queue) == 0 {
			l.qmu.Unlock()
			return
		}
		batch, l.queue = l.queue, batch[:0]
		l.qmu.Unlock()
		err := l.commit(batch)
		for i, o := range batch {
			o.err = err
			close(o.done)
			batch[i] = nil
		}
	}
}

// commit writes batch as one write and one fdatasync, then publishes it.
func (l *Log) commit(batch []*op) error {
	if err := l.Err(); err != nil {
		return err
	}
	size := 0
	for _, o := range batch {
		size += len(o.buf)
	}
	seg := l.segs[len(l.segs)-1] // only this goroutine appends to segs after Open
	gc := false
	if seg.size > 0 && seg.size+int64(size) > l.segBytes {
		l.waitExtension()
		if err := l.newSegment(seg.seq + 1); err != nil {
			return l.fail(err)
		}
		seg = l.segs[len(l.segs)-1]
		gc = true
	}
	buf := l.wbuf[:0]
	var moves []relocation
	if len(l.segs) > 2 && l.relocatedFor != seg.seq && !l.noRelocate {
		l.relocatedFor = seg.seq
		buf, moves = l.planRelocation(buf)
		gc = gc || len(moves) > 0
	}
	for _, o := range batch {
		buf = append(buf, o.buf...)
	}
	if cap(buf) <= 4<<20 {
		l.wbuf = buf
	} else {
		l.wbuf = nil
	}
	end := seg.size + int64(len(buf))
	l.pmu.Lock()
	beyond := end > seg.zeroed
	l.pmu.Unlock()
	if beyond {
		l.waitExtension() // never write into space being zeroed
	}
	start := time.Now()
	if _, err := seg.f.WriteAt(buf, seg.size); err != nil {
		return l.fail(fmt.Errorf("nodelog: write %s: %w", segName(seg.seq), err))
	}
	if !l.noSync {
		if err := fdatasync(seg.f); err != nil {
			return l.fail(&os.PathError{Op: "fdatasync", Path: seg.f.Name(), Err: err})
		}
		l.stats.syncs.Add(1)
	}
	l.stats.writeNanos.Add(uint64(time.Since(start)))
	l.stats.batches.Add(1)
	l.stats.ops.Add(uint64(len(batch)))
	l.stats.bytes.Add(uint64(len(buf)))

	// Publish: the records are durable, readers may see them.
	off := seg.size
	l.mu.Lock()
	for _, mv := range moves {
		locs := make([]loc, len(mv.lens))
		for i, n := range mv.lens {
			locs[i] = loc{seq: seg.seq, off: off, n: n}
			off += int64(n)
		}
		mv.r.first, mv.r.locs = mv.first, locs
		off += mv.tail
		l.stats.relocated.Add(uint64(len(locs)))
	}
	for _, o := range batch {
		switch o.kind {
		case kindEntry:
			p := off
			for i, lg := range o.logs {
				o.r.push(lg.Index, loc{seq: seg.seq, off: p, n: o.recLen[i]})
				p += int64(o.recLen[i])
			}
		default:
			o.r.apply(o.kind, o.arg)
			gc = true
		}
		off += int64(len(o.buf))
	}
	seg.size = off
	if gc && len(l.segs) > 1 {
		l.collectLocked()
	}
	l.mu.Unlock()
	l.pmu.Lock()
	seg.zeroed = max(seg.zeroed, off)
	pre := l.prealloc
	l.pmu.Unlock()
	if pre {
		l.maybeExtend(seg)
	}
	return nil
}

// Relocation. A replica log that stays small and idle (a quiet shard) is
// never compacted by raft: its few entries would hold the segment they are
// in, and every segment after it, forever. Once per segment, when the log
// has more than two segments, the writer carries every small replica log
// whose first entry lies before the previous segment forward into the
// current one: copies of its records (kindCopy) and a kindMoved record that
// makes them the log, written ahead of the batch's own records in the same
// write. Replay applies a relocation only with its kindMoved record, so a
// write cut off by a crash leaves the originals in force; the old segments
// go only after the relocation is durable.

// relocateLogBytes bounds the size of a replica log that is relocated
// (bigger logs belong to busy shards, which raft compacts after snapshots),
// relocateBytes the bytes relocated per segment.
const (
	relocateLogBytes = 4 << 20
	relocateBytes    = 16 << 20
)

// relocation is one replica log carried forward in a write.
type relocation struct {
	r     *rlog
	first uint64
	lens  []int32 // the copies' lengths, in order
	tail  int64   // the kindMoved record's length
}

// planRelocation appends the relocation records of the replica logs that
// hold old segments to buf. Called by the writer: no replica log changes
// meanwhile.
func (l *Log) planRelocation(buf []byte) ([]byte, []relocation) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	prev := l.segs[len(l.segs)-2].seq
	var moves []relocation
	budget := int64(relocateBytes)
	for id, r := range l.logs {
		if len(r.locs) == 0 || r.locs[0].seq >= prev {
			continue
		}
		var size int64
		for _, lc := range r.locs {
			size += int64(lc.n)
		}
		if size > relocateLogBytes || size > budget {
			continue
		}
		if _, ok := l.open[id]; !ok && !l.claimed(id) {
			continue // an orphan: collectLocked forgets it
		}
		start := len(buf)
		mv := relocation{r: r, first: r.first, lens: make([]int32, len(r.locs))}
		ok := true
		for i, lc := range r.locs {
			sg := l.segLocked(lc.seq)
			n := len(buf)
			buf = append(buf, make([]byte, lc.n)...)
			rec := buf[n:]
			if sg == nil {
				ok = false
				break
			}
			if _, err := sg.f.ReadAt(rec, lc.off); err != nil || crc32.Checksum(rec[4:], crcTable) != binary.LittleEndian.Uint32(rec[0:4]) || rec[8] != kindEntry && rec[8] != kindCopy {
				ok = false
				break
			}
			rec[8] = kindCopy
			binary.LittleEndian.PutUint32(rec[0:4], crc32.Checksum(rec[4:], crcTable))
			mv.lens[i] = lc.n
		}
		if !ok {
			l.log.Error("cannot carry a replica log forward: a record could not be read back", "log", idName(id))
			buf = buf[:start]
			continue
		}
		n := len(buf)
		buf = append(buf, make([]byte, headerLen)...)
		buf = binary.LittleEndian.AppendUint64(buf, r.first)
		buf = binary.LittleEndian.AppendUint64(buf, uint64(len(r.locs)))
		buf = frame(buf, n, kindMoved, id)
		mv.tail = int64(len(buf) - n)
		budget -= int64(len(buf) - start)
		moves = append(moves, mv)
	}
	return buf, moves
}

// fail records err as the log's permanent fault.
func (l *Log) fail(err error) error {
	if l.failed.CompareAndSwap(nil, &err) {
		l.log.Error("node log write failed: every later write fails (restart the node once the disk is fixed)", "err", err)
	}
	return *l.failed.Load()
}

// collectLocked deletes the segments no live replica log needs: those older
// than the oldest segment holding a live log's first entry. Replica logs
// not open whose directory no longer claims them are orphans and forgotten.
// Caller holds mu.
func (l *Log) collectLocked() {
	keep := l.segs[len(l.segs)-1].seq
	for id, r := range l.logs {
		if len(r.locs) == 0 {
			continue
		}
		if r.locs[0].seq >= keep {
			continue
		}
		if _, ok := l.open[id]; !ok && !l.claimed(id) {
			l.log.Info("forgetting the log of a replica whose directory is gone", "log", fmt.Sprintf("%016x", id), "entries", len(r.locs))
			delete(l.logs, id)
			os.Remove(filepath.Join(l.dir, "owners", idName(id)))
			continue
		}
		keep = r.locs[0].seq
	}
	n := 0
	for n < len(l.segs)-1 && l.segs[n].seq < keep {
		seg := l.segs[n]
		seg.f.Close()
		if err := os.Remove(seg.f.Name()); err != nil {
			l.log.Warn("cannot delete an unused log segment", "err", err)
		}
		l.stats.segmentsDeleted.Add(1)
		n++
	}
	if n > 0 {
		l.segs = append(l.segs[:0:0], l.segs[n:]...)
	}
}

// Stats are counters of the writer since Open.
type Stats struct {
	Batches         uint64        // writes (each one write + one fdatasync)
	Ops             uint64        // replica requests committed (appends and truncations)
	Syncs           uint64        // fdatasyncs
	Bytes           uint64        // bytes written
	WriteTime       time.Duration // spent in the writes and their fdatasyncs
	Segments        int           // segment files now
	SegmentsDeleted uint64
	Relocated       uint64 // entries carried forward out of old segments
	Logs            int    // replica logs known (open or not)
}

// Stats returns the writer's counters.
func (l *Log) Stats() Stats {
	l.mu.RLock()
	segs, logs := len(l.segs), len(l.logs)
	l.mu.RUnlock()
	return Stats{
		Batches: l.stats.batches.Load(), Ops: l.stats.ops.Load(), Syncs: l.stats.syncs.Load(),
		Bytes: l.stats.bytes.Load(), WriteTime: time.Duration(l.stats.writeNanos.Load()), Segments: segs, SegmentsDeleted: l.stats.segmentsDeleted.Load(), Relocated: l.stats.relocated.Load(), Logs: logs,
	}
}

// Close stops the writer once the queued writes are done and closes the
// segment files. Close the replicas first.
func (l *Log) Close() error {
	l.qmu.Lock()
	already := l.closing
	l.closing = true
	l.qmu.Unlock()
	if already {
		return nil
	}
	l.qcond.Broadcast()
	<-l.done
	l.waitExtension()
	return l.closeFiles()
}

func (l *Log) closeFiles() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, s := range l.segs {
		errs = append(errs, s.f.Close())
	}
	l.segs = nil
	return errors.Join(errs...)
}

// encodeEntry appends lg's record for log id to b.
func encodeEntry(b []byte, id uint64, lg *raft.Log) []byte {
	start := len(b)
	b = append(b, make([]byte, headerLen)...)
	b = binary.LittleEndian.AppendUint64(b, lg.Index)
	b = binary.LittleEndian.AppendUint64(b, lg.Term)
	b = append(b, byte(lg.Type))
	var at int64
	if !lg.AppendedAt.IsZero() {
		at = lg.AppendedAt.UnixNano()
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(at))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(lg.Data)))
	b = append(b, lg.Data...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(lg.Extensions)))
	b = append(b, lg.Extensions...)
	return frame(b, start, kindEntry, id)
}

// encodeTrunc appends a truncation record to b.
func encodeTrunc(b []byte, id uint64, kind byte, arg uint64) []byte {
	start := len(b)
	b = append(b, make([]byte, headerLen)...)
	b = binary.LittleEndian.AppendUint64(b, arg)
	return frame(b, start, kind, id)
}

// frame fills in the header of the record that starts at b[start:].
func frame(b []byte, start int, kind byte, id uint64) []byte {
	rec := b[start:]
	binary.LittleEndian.PutUint32(rec[4:8], uint32(len(rec)-headerLen))
	rec[8] = kind
	binary.LittleEndian.PutUint64(rec[16:24], id)
	binary.LittleEndian.PutUint32(rec[0:4], crc32.Checksum(rec[4:], crcTable))
	return b
}

// decodeEntry decodes an entry record into out. Data and Extensions alias rec.
func decodeEntry(rec []byte, out *raft.Log) error {
	if len(rec) < headerLen+33 || crc32.Checksum(rec[4:], crcTable) != binary.LittleEndian.Uint32(rec[0:4]) || rec[8] != kindEntry && rec[8] != kindCopy {
		return errors.New("nodelog: damaged entry record")
	}
	p := rec[headerLen:]
	out.Index = binary.LittleEndian.Uint64(p[0:8])
	out.Term = binary.LittleEndian.Uint64(p[8:16])
	out.Type = raft.LogType(p[16])
	if at := int64(binary.LittleEndian.Uint64(p[17:25])); at != 0 {
		out.AppendedAt = time.Unix(0, at)
	} else {
		out.AppendedAt = time.Time{}
	}
	n := int(binary.LittleEndian.Uint32(p[25:29]))
	p = p[29:]
	if len(p) < n+4 {
		return errors.New("nodelog: damaged entry record")
	}
	out.Data = nil
	if n > 0 {
		out.Data = p[:n:n]
	}
	p = p[n:]
	m := int(binary.LittleEndian.Uint32(p[0:4]))
	p = p[4:]
	if len(p) != m {
		return errors.New("nodelog: damaged entry record")
	}
	out.Extensions = nil
	if m > 0 {
		out.Extensions = p[:m:m]
	}
	return nil
}
