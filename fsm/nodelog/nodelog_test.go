package nodelog

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func openLog(t *testing.T, dir string, segBytes int64) *Log {
	t.Helper()
	l, err := Open(Options{Dir: dir, SegmentBytes: segBytes})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func openRep(t *testing.T, l *Log, dir string) *Replica {
	t.Helper()
	r, err := l.OpenReplica(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func entry(idx, term uint64, data string) *raft.Log {
	return &raft.Log{Index: idx, Term: term, Type: raft.LogCommand, Data: []byte(data),
		AppendedAt: time.Unix(1700000000, int64(idx))}
}

func entries(from, to, term uint64, tag string) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, entry(i, term, fmt.Sprintf("%s-%d", tag, i)))
	}
	return out
}

// model is what a replica log must hold.
type model struct {
	first uint64
	ents  []*raft.Log
}

func (m *model) last() uint64 {
	if len(m.ents) == 0 {
		return 0
	}
	return m.first + uint64(len(m.ents)) - 1
}

func (m *model) store(logs []*raft.Log) {
	if len(m.ents) == 0 {
		m.first = logs[0].Index
	}
	m.ents = append(m.ents, logs...)
}

func (m *model) deleteRange(lo, hi uint64) {
	if len(m.ents) == 0 || hi < m.first || lo > m.last() {
		return
	}
	var keep []*raft.Log
	for _, e := range m.ents {
		if e.Index < lo || e.Index > hi {
			keep = append(keep, e)
		}
	}
	m.ents = keep
	if len(keep) > 0 {
		m.first = keep[0].Index
	}
}

// check compares r with m entry by entry.
func check(t *testing.T, name string, r *Replica, m *model) {
	t.Helper()
	first, _ := r.FirstIndex()
	last, _ := r.LastIndex()
	wantFirst := m.first
	if len(m.ents) == 0 {
		wantFirst = 0
	}
	if first != wantFirst || last != m.last() {
		t.Fatalf("%s: log is %d..%d, want %d..%d", name, first, last, wantFirst, m.last())
	}
	for _, e := range m.ents {
		var got raft.Log
		if err := r.GetLog(e.Index, &got); err != nil {
			t.Fatalf("%s: GetLog(%d): %v", name, e.Index, err)
		}
		if got.Index != e.Index || got.Term != e.Term || got.Type != e.Type || !bytes.Equal(got.Data, e.Data) ||
			!got.AppendedAt.Equal(e.AppendedAt) || !bytes.Equal(got.Extensions, e.Extensions) {
			t.Fatalf("%s: entry %d = %+v, want %+v", name, e.Index, got, *e)
		}
	}
	var got raft.Log
	if err := r.GetLog(m.last()+1, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("%s: GetLog past the end: %v, want ErrLogNotFound", name, err)
	}
	if len(m.ents) > 0 && m.first > 1 {
		if err := r.GetLog(m.first-1, &got); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("%s: GetLog before the start: %v, want ErrLogNotFound", name, err)
		}
	}
}

func TestStoreGetDeleteAndReopen(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, filepath.Join(dir, "log"), 0)
	a := openRep(t, l, filepath.Join(dir, "a"))
	b := openRep(t, l, filepath.Join(dir, "b"))
	ma, mb := &model{}, &model{}
	do := func(r *Replica, m *model, logs []*raft.Log) {
		t.Helper()
		if err := r.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
		m.store(logs)
	}
	del := func(r *Replica, m *model, lo, hi uint64) {
		t.Helper()
		if err := r.DeleteRange(lo, hi); err != nil {
			t.Fatal(err)
		}
		m.deleteRange(lo, hi)
	}
	do(a, ma, entries(1, 10, 1, "a"))
	do(b, mb, entries(5, 7, 2, "b"))
	ext := entry(11, 1, "ext")
	ext.Extensions = []byte("x")
	ext.AppendedAt = time.Time{}
	do(a, ma, []*raft.Log{ext})
	del(a, ma, 9, 11) // a follower's conflicting suffix
	do(a, ma, entries(9, 12, 3, "a2"))
	del(a, ma, 1, 4) // compaction
	del(b, mb, 5, 7) // cleared after a snapshot install
	do(b, mb, entries(100, 101, 4, "b2"))
	check(t, "a", a, ma)
	check(t, "b", b, mb)

	if err := a.StoreLogs(entries(20, 20, 3, "gap")); err == nil {
		t.Fatal("an entry leaving a gap was stored")
	}
	if err := a.DeleteRange(6, 7); err == nil {
		t.Fatal("a range inside the log was deleted")
	}
	if !a.IsMonotonic() {
		t.Fatal("not monotonic")
	}

	for _, r := range []*Replica{a, b} {
		r.Close()
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, filepath.Join(dir, "log"), 0)
	defer l.Close()
	a = openRep(t, l, filepath.Join(dir, "a"))
	b = openRep(t, l, filepath.Join(dir, "b"))
	check(t, "a reopened", a, ma)
	check(t, "b reopened", b, mb)
	if _, err := l.OpenReplica(filepath.Join(dir, "a")); err == nil {
		t.Fatal("a replica was opened twice")
	}
}

// TestModelRandomOps runs random appends, tail and head truncations and
// clears on several replica logs with tiny segments, reopening the node log
// now and then, and compares every replica with a model after each step.
func TestModelRandomOps(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("NODELOG_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("NODELOG_SEED=%d", seed)
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	logDir := filepath.Join(dir, "log")
	l := openLog(t, logDir, 4096)
	const n = 5
	reps := make([]*Replica, n)
	models := make([]*model, n)
	for i := range reps {
		reps[i] = openRep(t, l, filepath.Join(dir, fmt.Sprint(i)))
		models[i] = &model{}
	}
	term := uint64(1)
	maxSegs := 0
	for step := 0; step < 1500; step++ {
		i := rng.Intn(n)
		r, m := reps[i], models[i]
		switch k := rng.Intn(20); {
		case k < 12:
			from := m.last() + 1
			if len(m.ents) == 0 {
				from = uint64(rng.Intn(50) + 1)
			}
			cnt := uint64(rng.Intn(8) + 1)
			logs := entries(from, from+cnt-1, term, fmt.Sprintf("s%d", step))
			for _, lg := range logs {
				lg.Data = append(lg.Data, bytes.Repeat([]byte{byte(step)}, rng.Intn(300))...)
			}
			if err := r.StoreLogs(logs); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			m.store(logs)
		case k < 15 && len(m.ents) > 0: // tail
			lo := m.first + uint64(rng.Intn(len(m.ents)))
			term++
			if err := r.DeleteRange(lo, m.last()); err != nil {
				t.Fatal(err)
			}
			m.deleteRange(lo, m.last())
		case k < 19 && len(m.ents) > 0: // head
			hi := m.first + uint64(rng.Intn(len(m.ents)))
			if err := r.DeleteRange(m.first, hi); err != nil {
				t.Fatal(err)
			}
			m.deleteRange(m.first, hi)
		case len(m.ents) > 0: // clear
			if err := r.DeleteRange(m.first, m.last()); err != nil {
				t.Fatal(err)
			}
			m.deleteRange(m.first, m.last())
		}
		check(t, fmt.Sprintf("step %d replica %d", step, i), r, m)
		if s := l.Stats().Segments; s > maxSegs {
			maxSegs = s
		}
		if rng.Intn(100) == 0 {
			for _, r := range reps {
				r.Close()
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, logDir, 4096)
			for j := range reps {
				reps[j] = openRep(t, l, filepath.Join(dir, fmt.Sprint(j)))
				check(t, fmt.Sprintf("step %d reopened %d", step, j), reps[j], models[j])
			}
		}
	}
	// Give every log a fresh entry, each filling a segment, and compact the
	// logs down to it: only the segments holding those entries may remain.
	for i, r := range reps {
		m := models[i]
		from := m.last() + 1
		if len(m.ents) == 0 {
			from = 1
		}
		logs := entries(from, from, term, "pad")
		logs[0].Data = bytes.Repeat([]byte{1}, 4096)
		if err := r.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
		m.store(logs)
		if err := r.DeleteRange(m.first, m.last()-1); err != nil {
			t.Fatal(err)
		}
		m.deleteRange(m.first, m.last()-1)
	}
	for i := range reps {
		check(t, fmt.Sprintf("compacted %d", i), reps[i], models[i])
	}
	st := l.Stats()
	t.Logf("stats %+v, at most %d segments", st, maxSegs)
	// Each pad fills a segment and its compaction record starts the next.
	if st.Segments > 2*n || st.SegmentsDeleted == 0 {
		t.Fatalf("%d segments remain for %d one-entry logs: %s", st.Segments, n, l.debugDump())
	}
	for _, r := range reps {
		r.Close()
	}
	l.Close()
}

// TestTornTailIsCutAndDamageElsewhereRefused: garbage or a cut-off record
// at the end of the last segment is dropped on Open (every acknowledged
// entry stays); damage in an older segment makes Open fail.
func TestTornTailIsCutAndDamageElsewhereRefused(t *testing.T) {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "log")
	// Without relocation, so that the entries stay in the older segments.
	openLog := func(t *testing.T, dir string, segBytes int64) *Log {
		l, err := Open(Options{Dir: dir, SegmentBytes: segBytes, noRelocate: true})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := openLog(t, logDir, 2048)
	r := openRep(t, l, filepath.Join(dir, "r"))
	m := &model{}
	for i := uint64(0); i < 40; i++ {
		logs := entries(i*5+1, i*5+5, 1, "x")
		if err := r.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
		m.store(logs)
	}
	r.Close()
	l.Close()
	segs, _ := filepath.Glob(filepath.Join(logDir, "*.seg"))
	if len(segs) < 3 {
		t.Fatalf("want several segments, have %d", len(segs))
	}
	lastSeg := segs[len(segs)-1]
	orig, _ := os.ReadFile(lastSeg)
	for _, tail := range [][]byte{
		bytes.Repeat([]byte{0}, 100),                   // zero-filled space ahead of the writer
		[]byte("garbage that is no record"),            // junk
		encodeEntry(nil, 1, entry(999, 1, "cut"))[:30], // a record cut off mid-write
	} {
		f, _ := os.OpenFile(lastSeg, os.O_WRONLY|os.O_APPEND, 0)
		f.Write(tail)
		f.Close()
		l = openLog(t, logDir, 2048)
		r = openRep(t, l, filepath.Join(dir, "r"))
		check(t, "after a torn tail", r, m)
		r.Close()
		l.Close()
		// The records are untouched; what follows them is zeros (kept as
		// preallocated space) or cut off.
		got, _ := os.ReadFile(lastSeg)
		if len(got) > len(orig)+len(tail) || !bytes.Equal(got[:min(len(got), len(orig))], orig[:min(len(got), len(orig))]) ||
			!bytes.Equal(bytes.Trim(got[min(len(got), len(orig)):], "\x00"), nil) {
			t.Fatalf("tail %q: the segment was not restored (%d bytes, had %d)", tail, len(got), len(orig))
		}
		if bytes.Contains(got, tail) && tail[0] != 0 {
			t.Fatalf("torn tail %q not cut", tail)
		}
	}
	// A flipped byte inside an older segment.
	b, _ := os.ReadFile(segs[0])
	b[headerLen+40] ^= 0xff
	os.WriteFile(segs[0], b, 0o644)
	if l, err := Open(Options{Dir: logDir, SegmentBytes: 2048, noRelocate: true}); err == nil {
		l.Close()
		t.Fatal("Open accepted a damaged older segment")
	}
}

// TestGroupCommit: replicas writing at once share writes and fdatasyncs.
func TestGroupCommit(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, filepath.Join(dir, "log"), 0)
	defer l.Close()
	const writers, each = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		r := openRep(t, l, filepath.Join(dir, fmt.Sprint(w)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(1); i <= each; i++ {
				if err := r.StoreLogs(entries(i, i, 1, "g")); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := l.Stats()
	t.Logf("%d appends in %d writes (%d fdatasyncs)", st.Ops, st.Batches, st.Syncs)
	l.waitExtension()
	segs, _ := filepath.Glob(filepath.Join(dir, "log", "*.seg"))
	if fi, err := os.Stat(segs[len(segs)-1]); err != nil || fi.Size() < int64(st.Bytes)+preallocChunk/2 {
		t.Fatalf("no zero-filled space ahead of the writer: segment %v, %d bytes written", fi, st.Bytes)
	}
	if st.Ops != writers*each || st.Syncs != st.Batches {
		t.Fatalf("stats %+v", st)
	}
	if st.Batches*2 > st.Ops {
		t.Fatalf("%d appends took %d writes: concurrent appends were not committed together", st.Ops, st.Batches)
	}
}

// TestOrphanedLogReleasesSegments: once a replica's directory is deleted,
// its entries stop holding segments; a closed replica whose directory is
// still there keeps its entries (carried forward as segments go).
func TestOrphanedLogReleasesSegments(t *testing.T) {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "log")
	l := openLog(t, logDir, 2048)
	gone := openRep(t, l, filepath.Join(dir, "gone"))
	kept := openRep(t, l, filepath.Join(dir, "kept"))
	live := openRep(t, l, filepath.Join(dir, "live"))
	mk := &model{}
	for i := uint64(1); i <= 20; i++ {
		if err := gone.StoreLogs(entries(i, i, 1, "gone")); err != nil {
			t.Fatal(err)
		}
		logs := entries(i, i, 1, "kept")
		if err := kept.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
		mk.store(logs)
	}
	gone.Close()
	kept.Close()
	if err := os.RemoveAll(filepath.Join(dir, "gone")); err != nil {
		t.Fatal(err)
	}
	// live writes and compacts; the oldest segments are held by kept only.
	for i := uint64(1); i <= 200; i++ {
		if err := live.StoreLogs(entries(i, i, 1, "live-padding-padding-padding")); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if err := live.DeleteRange(1, i-5); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := l.Stats()
	if st.Logs != 2 {
		t.Fatalf("the deleted replica's log is still known: %+v", st)
	}
	kept = openRep(t, l, filepath.Join(dir, "kept"))
	check(t, "kept", kept, mk)
	if err := kept.DeleteRange(1, 20); err != nil {
		t.Fatal(err)
	}
	if err := live.StoreLogs(entries(201, 201, 1, "x")); err != nil {
		t.Fatal(err)
	}
	for i := uint64(202); i < 260 && l.Stats().SegmentsDeleted == 0; i++ {
		if err := live.StoreLogs(entries(i, i, 1, "live-padding-padding-padding")); err != nil {
			t.Fatal(err)
		}
		if err := live.DeleteRange(1, i-5); err != nil {
			t.Fatal(err)
		}
	}
	if st := l.Stats(); st.SegmentsDeleted == 0 {
		t.Fatalf("no segment deleted once nothing needed them: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(logDir, "owners", idName(gone.ID()))); !os.IsNotExist(err) {
		t.Fatalf("owner file of the deleted replica remains: %v", err)
	}
	kept.Close()
	live.Close()
	l.Close()
}

func TestStableStore(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, filepath.Join(dir, "log"), 0)
	r := openRep(t, l, filepath.Join(dir, "r"))
	if _, err := r.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v, want raft's \"not found\"", err)
	}
	if _, err := r.Get([]byte("LastVoteCand")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v", err)
	}
	if err := r.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := r.Set([]byte("LastVoteCand"), []byte("node-2")); err != nil {
		t.Fatal(err)
	}
	if err := r.SetUint64([]byte("CurrentTerm"), 8); err != nil {
		t.Fatal(err)
	}
	r.Close()
	l.Close()
	l = openLog(t, filepath.Join(dir, "log"), 0)
	defer l.Close()
	r = openRep(t, l, filepath.Join(dir, "r"))
	defer r.Close()
	if v, err := r.GetUint64([]byte("CurrentTerm")); err != nil || v != 8 {
		t.Fatalf("CurrentTerm = %d, %v", v, err)
	}
	if v, err := r.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-2" {
		t.Fatalf("LastVoteCand = %q, %v", v, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "r", stableFile))
	b[6] ^= 1
	os.WriteFile(filepath.Join(dir, "r", stableFile), b, 0o644)
	if _, err := readStable(filepath.Join(dir, "r")); err == nil {
		t.Fatal("a damaged stable file was read")
	}
}

func (l *Log) debugDump() string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s := ""
	for _, sg := range l.segs {
		s += fmt.Sprintf("seg %d size %d; ", sg.seq, sg.size)
	}
	for id, r := range l.logs {
		if len(r.locs) > 0 {
			s += fmt.Sprintf("log %x first %d seq %d n %d; ", id, r.first, r.locs[0].seq, len(r.locs))
		}
	}
	return s
}

// TestCompactionRacingAnAppend: raft compacts on its snapshot goroutine
// while its main goroutine appends. A compaction up to what was the last
// entry must not take an entry appended in between with it.
func TestCompactionRacingAnAppend(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, filepath.Join(dir, "log"), 0)
	defer l.Close()
	r := openRep(t, l, filepath.Join(dir, "r"))
	defer r.Close()
	m := &model{}
	logs := entries(1, 10, 1, "a")
	if err := r.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	m.store(logs)
	next := entries(11, 11, 1, "b")
	testHookDeleteRange = func() {
		testHookDeleteRange = nil
		if err := r.StoreLogs(next); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookDeleteRange = nil }()
	if err := r.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	m.store(next)
	m.deleteRange(1, 10)
	check(t, "after the race", r, m)
	r.Close()
	l.Close()
	l = openLog(t, filepath.Join(dir, "log"), 0)
	r = openRep(t, l, filepath.Join(dir, "r"))
	check(t, "reopened", r, m)
}

// TestIdleLogIsCarriedForward: a replica that wrote a few entries and then
// stayed idle (never compacted) does not hold old segments: its entries are
// carried into newer segments while a busy replica writes and compacts, the
// node log stays a few segments long, and the idle entries read back, also
// after a reopen.
func TestIdleLogIsCarriedForward(t *testing.T) {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "log")
	l := openLog(t, logDir, 8192)
	idle := openRep(t, l, filepath.Join(dir, "idle"))
	busy := openRep(t, l, filepath.Join(dir, "busy"))
	mi, mb := &model{}, &model{}
	logs := entries(1, 12, 1, "idle")
	if err := idle.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	mi.store(logs)
	maxSegs := 0
	for i := uint64(1); i <= 600; i++ {
		lg := entries(i, i, 1, "busy")
		lg[0].Data = append(lg[0].Data, bytes.Repeat([]byte{'b'}, 200)...)
		if err := busy.StoreLogs(lg); err != nil {
			t.Fatal(err)
		}
		mb.store(lg)
		if i%20 == 0 {
			if err := busy.DeleteRange(mb.first, i-10); err != nil {
				t.Fatal(err)
			}
			mb.deleteRange(mb.first, i-10)
		}
		maxSegs = max(maxSegs, l.Stats().Segments)
	}
	st := l.Stats()
	t.Logf("%+v, at most %d segments", st, maxSegs)
	if st.Relocated == 0 || maxSegs > 5 {
		t.Fatalf("the idle log held old segments: at most %d segments, %d entries carried forward", maxSegs, st.Relocated)
	}
	check(t, "idle", idle, mi)
	check(t, "busy", busy, mb)
	idle.Close()
	busy.Close()
	l.Close()
	l = openLog(t, logDir, 8192)
	defer l.Close()
	idle = openRep(t, l, filepath.Join(dir, "idle"))
	busy = openRep(t, l, filepath.Join(dir, "busy"))
	check(t, "idle reopened", idle, mi)
	check(t, "busy reopened", busy, mb)
}

// TestTornRelocationKeepsTheOriginals: a relocation cut off by a crash
// before its kindMoved record leaves the log as it was.
func TestTornRelocationKeepsTheOriginals(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, filepath.Join(dir, "log"), 4096)
	idle := openRep(t, l, filepath.Join(dir, "idle"))
	busy := openRep(t, l, filepath.Join(dir, "busy"))
	mi, mb := &model{}, &model{}
	logs := entries(1, 5, 1, "idle")
	if err := idle.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	mi.store(logs)
	// Fill two more segments without relocating.
	l.noRelocate = true
	for i := uint64(1); l.Stats().Segments < 3; i++ {
		lg := entries(i, i, 1, "busy")
		lg[0].Data = append(lg[0].Data, bytes.Repeat([]byte{'b'}, 500)...)
		if err := busy.StoreLogs(lg); err != nil {
			t.Fatal(err)
		}
		mb.store(lg)
	}
	// What the writer would write for the relocation, cut before its end.
	buf, moves := l.planRelocation(nil)
	if len(moves) == 0 {
		t.Fatal("no relocation planned for the idle log")
	}
	end := l.segs[len(l.segs)-1].size // the records' end (zeros may follow)
	idle.Close()
	busy.Close()
	l.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "log", "*.seg"))
	f, err := os.OpenFile(segs[len(segs)-1], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for cut := int64(len(buf)) - 1; cut > 0; cut -= int64(len(buf)) / 3 {
		if err := f.Truncate(end); err != nil { // the previous round's write
			t.Fatal(err)
		}
		if _, err := f.WriteAt(buf[:cut], end); err != nil {
			t.Fatal(err)
		}
		f.Sync()
		l = openLog(t, filepath.Join(dir, "log"), 4096)
		idle = openRep(t, l, filepath.Join(dir, "idle"))
		busy = openRep(t, l, filepath.Join(dir, "busy"))
		check(t, fmt.Sprintf("idle, relocation cut at %d of %d bytes", cut, len(buf)), idle, mi)
		check(t, fmt.Sprintf("busy, relocation cut at %d of %d bytes", cut, len(buf)), busy, mb)
		idle.Close()
		busy.Close()
		l.Close()
	}
	// Complete copies without their kindMoved record stay in the file
	// before later records; a later relocation of the same logs must not
	// take them for its own.
	if err := f.Truncate(end); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(buf[:len(buf)-int(moves[len(moves)-1].tail)], end); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Larger segments from here, so that the next relocation lands in the
	// segment holding the stale copies, right after them.
	l = openLog(t, filepath.Join(dir, "log"), 1<<20)
	idle = openRep(t, l, filepath.Join(dir, "idle"))
	busy = openRep(t, l, filepath.Join(dir, "busy"))
	for i := mb.last() + 1; l.Stats().Relocated == 0 && i < 200; i++ {
		lg := entries(i, i, 1, "busy")
		lg[0].Data = append(lg[0].Data, bytes.Repeat([]byte{'b'}, 500)...)
		if err := busy.StoreLogs(lg); err != nil {
			t.Fatal(err)
		}
		mb.store(lg)
	}
	if l.Stats().Relocated == 0 {
		t.Fatal("nothing was relocated")
	}
	idle.Close()
	busy.Close()
	l.Close()
	l = openLog(t, filepath.Join(dir, "log"), 1<<20)
	defer l.Close()
	idle = openRep(t, l, filepath.Join(dir, "idle"))
	busy = openRep(t, l, filepath.Join(dir, "busy"))
	check(t, "idle after a later relocation", idle, mi)
	check(t, "busy after a later relocation", busy, mb)
}

// TestDamageBeforeValidRecordsRefusesToOpen: a bad record in the last
// segment with whole records after it is damage (those records were
// acknowledged), not a write cut off by a crash: Open fails, naming the
// segment and offset, instead of cutting acknowledged entries off.
func TestDamageBeforeValidRecordsRefusesToOpen(t *testing.T) {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "log")
	l := openLog(t, logDir, 0)
	r := openRep(t, l, filepath.Join(dir, "r"))
	for i := uint64(1); i <= 20; i++ {
		if err := r.StoreLogs(entries(i, i, 1, "x")); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	l.Close()
	segs, _ := filepath.Glob(filepath.Join(logDir, "*.seg"))
	if len(segs) != 1 {
		t.Fatalf("want one segment, have %d", len(segs))
	}
	f, err := os.OpenFile(segs[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xde, 0xad, 0xbe, 0xef}, 300); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Open(Options{Dir: logDir})
	if err == nil || !strings.Contains(err.Error(), segs[0]) || !strings.Contains(err.Error(), "damaged at offset") {
		t.Fatalf("Open over a damaged record followed by valid ones: %v", err)
	}
}

// TestSegmentsHeld: a replica log counts the segments written since the
// one holding its first entry, and none once compaction moves its first
// entry into the current segment.
func TestSegmentsHeld(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: filepath.Join(dir, "log"), SegmentBytes: 4096, noRelocate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	quiet := openRep(t, l, filepath.Join(dir, "quiet"))
	busy := openRep(t, l, filepath.Join(dir, "busy"))
	if n := quiet.SegmentsHeld(); n != 0 {
		t.Fatalf("empty log: SegmentsHeld = %d, want 0", n)
	}
	if err := quiet.StoreLogs(entries(1, 3, 1, "quiet")); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{'b'}, 1500)
	prev := 0
	for i := uint64(1); i <= 40; i++ {
		lg := entries(i, i, 1, "busy")
		lg[0].Data = append(lg[0].Data, big...)
		if err := busy.StoreLogs(lg); err != nil {
			t.Fatal(err)
		}
		n := quiet.SegmentsHeld()
		if n < prev || n != l.Stats().Segments-1 {
			t.Fatalf("after %d busy entries: SegmentsHeld = %d (before: %d), %d segments", i, n, prev, l.Stats().Segments)
		}
		prev = n
	}
	if prev < 10 {
		t.Fatalf("SegmentsHeld = %d after 60 KB in 4 KB segments, want 10 or more", prev)
	}
	// Compaction up to the last entry leaves it in the current segment
	// (raft keeps the last entry).
	if err := quiet.StoreLogs(entries(4, 4, 1, "quiet")); err != nil {
		t.Fatal(err)
	}
	if err := quiet.DeleteRange(1, 3); err != nil {
		t.Fatal(err)
	}
	if n := quiet.SegmentsHeld(); n != 0 {
		t.Fatalf("compacted to its newest entry: SegmentsHeld = %d, want 0", n)
	}
}
