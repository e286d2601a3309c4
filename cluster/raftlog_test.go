package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/fsm"
)

// logRecorder records the level and message of every log record.
type logRecorder struct {
	mu     sync.Mutex
	levels map[slog.Level]int
	msgs   []string
}

func newLogRecorder() *logRecorder { return &logRecorder{levels: map[slog.Level]int{}} }

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.levels[r.Level]++
	h.msgs = append(h.msgs, fmt.Sprintf("%s %s", r.Level, r.Message))
	h.mu.Unlock()
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// TestRaftLogsThroughSlogWithoutDebug: a shard's raft messages reach the
// slog logger the adapter wraps, at INFO and above when INFO is the level
// asked for, never DEBUG.
func TestRaftLogsThroughSlogWithoutDebug(t *testing.T) {
	rec := newLogRecorder()
	addr, tr := raft.NewInmemTransport("")
	fc := fsm.DefaultConfig()
	fc.Dir, fc.LocalID, fc.Transport = t.TempDir(), "a", tr
	fc.Logger = slog.New(slog.DiscardHandler)
	fc.RaftLogger = newHCLogger(slog.New(rec), slog.LevelInfo)
	s, err := fsm.Open(fc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.BootstrapIfEmpty([]raft.Server{{ID: "a", Address: addr}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !s.IsLeader() {
		select {
		case <-ctx.Done():
			t.Fatal("no leader")
		case <-time.After(5 * time.Millisecond):
		}
	}
	unit := fsm.Unit{{[]byte("XADD"), []byte("s"), []byte("*"), []byte("f"), []byte("v")}}
	if _, err := s.Submit(unit).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.levels[slog.LevelInfo] == 0 {
		t.Fatalf("no INFO records from raft: %v", rec.levels)
	}
	if rec.levels[slog.LevelDebug] != 0 {
		t.Fatalf("DEBUG records with the level at INFO: %v", rec.levels)
	}
}

// The adapter drops records below its level, prefixes names, and
// shutdownQuiet demotes "transport shutting down" errors to DEBUG.
func TestHCLoggerLevelsNamesAndQuietShutdown(t *testing.T) {
	rec := newLogRecorder()
	l := newHCLogger(slog.New(rec), slog.LevelWarn).Named("a").Named("b")
	l.Info("dropped")
	l.Warn("kept")
	q := shutdownQuiet{newHCLogger(slog.New(rec), slog.LevelDebug)}
	q.Error("closing", "err", fmt.Errorf("conn: %w", raft.ErrTransportShutdown))
	q.Error("real", "err", fmt.Errorf("boom"))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if got, want := strings.Join(rec.msgs, "|"), "WARN a.b: kept|DEBUG closing|ERROR real"; got != want {
		t.Fatalf("records %q, want %q", got, want)
	}
	if l.IsInfo() || !l.IsWarn() {
		t.Errorf("IsInfo %v IsWarn %v at WARN", l.IsInfo(), l.IsWarn())
	}
}
