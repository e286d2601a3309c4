package fsm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/fsm/nodelog"
)

// walCrashChildEnv makes TestWALCrashKeepsAcknowledgedLogs's child process
// append to the WAL in that directory until it is killed;
// walCrashKindEnv names the log store kind.
const (
	walCrashChildEnv = "FSM_TEST_WAL_CRASH_DIR"
	walCrashKindEnv  = "FSM_TEST_WAL_CRASH_KIND"
)

// nodeLogStore is a shard's store on a node log of its own, closed together.
type nodeLogStore struct {
	raftStore
	nl *nodelog.Log
}

func (s *nodeLogStore) Close() error { return errors.Join(s.raftStore.Close(), s.nl.Close()) }

// openTestStore opens a log store of kind in dir; for LogStoreNode with a
// node log of its own in dir/nodelog and the shard in dir/shard.
func openTestStore(kind, dir string) (raftStore, error) {
	log := slog.New(slog.DiscardHandler)
	if kind != LogStoreNode {
		return openRaftStore(kind, dir, false, nil, hclog.NewNullLogger())
	}
	nl, err := nodelog.Open(nodelog.Options{Dir: filepath.Join(dir, "nodelog"), SegmentBytes: 4 << 20, Logger: log})
	if err != nil {
		return nil, err
	}
	st, err := openRaftStore(kind, filepath.Join(dir, "shard"), false, nl, hclog.NewNullLogger())
	if err != nil {
		nl.Close()
		return nil, err
	}
	return &nodeLogStore{raftStore: st, nl: nl}, nil
}

// walTestEntry is the deterministic payload of log index i (variable length,
// so records straddle pages and segment ends).
func walTestEntry(i uint64) []byte {
	n := 1 + int(i*7919%12000)
	return bytes.Repeat([]byte{byte(i), byte(i >> 8)}, n)
}

// TestWALCrashKeepsAcknowledgedLogs kills a process that appends batches to
// the WAL log store at random moments, several times over the same
// directory, and checks after each reopen that every StoreLogs the process
// reported as done is present and intact, and that the log is contiguous.
func TestWALCrashKeepsAcknowledgedLogs(t *testing.T) {
	if dir := os.Getenv(walCrashChildEnv); dir != "" {
		walCrashChild(os.Getenv(walCrashKindEnv), dir)
		return
	}
	for _, kind := range []string{LogStoreWAL, LogStoreNode} {
		t.Run(kind, func(t *testing.T) { testCrashKeepsAcknowledgedLogs(t, kind) })
	}
}

func testCrashKeepsAcknowledgedLogs(t *testing.T, kind string) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var acked uint64
	for round := 0; round < 4; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWALCrashKeepsAcknowledgedLogs$")
		cmd.Env = append(os.Environ(), walCrashChildEnv+"="+dir, walCrashKindEnv+"="+kind)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The kill comes at a random moment after the child's first
		// acknowledged write (a slow start under load must not use up
		// the round), and within 30 s whatever happens.
		kill := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
		started := false
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
				n, _ := strconv.ParseUint(v, 10, 64)
				acked = max(acked, n)
				if !started {
					started = true
					kill.Reset(time.Duration(rng.Intn(400)) * time.Millisecond)
				}
			}
		}
		kill.Stop()
		cmd.Process.Kill()
		cmd.Wait()

		st, err := openTestStore(kind, dir)
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		first, _ := st.FirstIndex()
		last, err := st.LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		if last < acked {
			t.Fatalf("round %d: last index %d < acknowledged %d", round, last, acked)
		}
		if last == 0 {
			// Killed before its first write (a slow start under -race).
			st.Close()
			t.Logf("round %d: killed before the first write", round)
			continue
		}
		for i := first; i <= last; i++ {
			var l raft.Log
			if err := st.GetLog(i, &l); err != nil {
				t.Fatalf("round %d: GetLog(%d) in [%d,%d]: %v", round, i, first, last, err)
			}
			if l.Index != i || !bytes.Equal(l.Data, walTestEntry(i)) {
				t.Fatalf("round %d: entry %d corrupt (index %d, %d bytes)", round, i, l.Index, len(l.Data))
			}
		}
		term, err := st.GetUint64([]byte("CurrentTerm"))
		if err != nil || term < acked || term > last {
			t.Fatalf("round %d: stable store holds %d (err %v), want in [acknowledged %d, last %d]", round, term, err, acked, last)
		}
		st.Close()
		t.Logf("round %d: %d acknowledged, log [%d,%d]", round, acked, first, last)
	}
	if acked == 0 {
		t.Fatal("the child never acknowledged a write")
	}
}

// walCrashChild appends batches of 1–16 entries, compacting the head now
// and then, and prints "acked N" after each StoreLogs returns. The stable
// store records the last index too, so it is checked alongside. Batches
// average about 100 KiB, so segments (16 MiB) rotate within a round.
func walCrashChild(kind, dir string) {
	st, err := openTestStore(kind, dir)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	last, _ := st.LastIndex()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	w := bufio.NewWriter(os.Stdout)
	for next := last + 1; next < last+1_000_000; {
		n := uint64(1 + rng.Intn(16))
		logs := make([]*raft.Log, n)
		for k := range logs {
			i := next + uint64(k)
			logs[k] = &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: walTestEntry(i)}
		}
		if err := st.StoreLogs(logs); err != nil {
			fmt.Println("store:", err)
			os.Exit(1)
		}
		next += n
		if err := st.SetUint64([]byte("CurrentTerm"), next-1); err != nil {
			fmt.Println("stable:", err)
			os.Exit(1)
		}
		fmt.Fprintf(w, "acked %d\n", next-1)
		w.Flush()
		if first, _ := st.FirstIndex(); next-first > 500 && rng.Intn(20) == 0 {
			if err := st.DeleteRange(first, next-300); err != nil {
				fmt.Println("compact:", err)
				os.Exit(1)
			}
		}
	}
	os.Exit(0)
}

// TestLogStoreKindIsKept refuses to open a shard directory as the other kind
// of log store (that would start from an empty log and a forgotten vote).
func TestLogStoreKindIsKept(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	nl, err := nodelog.Open(nodelog.Options{Dir: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	for _, kinds := range [][2]string{
		{LogStoreBolt, LogStoreWAL}, {LogStoreWAL, LogStoreBolt}, {"", LogStoreWAL},
		{LogStoreNode, LogStoreBolt}, {LogStoreNode, LogStoreWAL}, {LogStoreBolt, LogStoreNode}, {LogStoreWAL, LogStoreNode},
	} {
		dir := t.TempDir()
		st, err := openRaftStore(kinds[0], dir, false, nl, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Data: []byte("x")}}); err != nil {
			t.Fatal(err)
		}
		st.Close()
		if st, err := openRaftStore(kinds[1], dir, false, nl, hclog.NewNullLogger()); err == nil {
			st.Close()
			t.Fatalf("%q directory opened as %q", kinds[0], kinds[1])
		}
		// Reopened with its kind named, and with "" (the kind it has).
		for _, k := range []string{kinds[0], ""} {
			st, err = openRaftStore(k, dir, false, nl, hclog.NewNullLogger())
			if err != nil {
				t.Fatalf("reopen %q as %q: %v", kinds[0], k, err)
			}
			if last, _ := st.LastIndex(); last != 1 {
				t.Fatalf("%q: last index %d after reopen as %q, want 1", kinds[0], last, k)
			}
			st.Close()
		}
	}
	if _, err := openRaftStore("nope", t.TempDir(), false, nl, hclog.NewNullLogger()); err == nil {
		t.Fatal("unknown kind accepted")
	}
	if st, err := openRaftStore(LogStoreNode, t.TempDir(), false, nil, hclog.NewNullLogger()); err == nil {
		st.Close()
		t.Fatal("the node log store opened without a node log")
	}
	// The node log store is monotonic through the fault wrapper, so raft
	// clears a replica's log after a snapshot install instead of leaving
	// a gap the store refuses.
	st, err := openRaftStore(LogStoreNode, t.TempDir(), false, nl, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if m, ok := st.(raft.MonotonicLogStore); !ok || !m.IsMonotonic() {
		t.Fatal("the node log store does not report itself monotonic")
	}
}
