package fsm

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
)

func TestConfigValidateNamesTheField(t *testing.T) {
	_, tr := raft.NewInmemTransport("a")
	good := DefaultConfig()
	good.Dir, good.LocalID, good.Transport = t.TempDir(), "a", tr
	if err := good.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for field, mod := range map[string]func(*Config){
		"Dir":              func(c *Config) { c.Dir = "" },
		"LocalID":          func(c *Config) { c.LocalID = "" },
		"Transport":        func(c *Config) { c.Transport = nil },
		"MaxBatchCommands": func(c *Config) { c.MaxBatchCommands = 0 },
		"MaxBatchBytes":    func(c *Config) { c.MaxBatchBytes = 0 },
		"MaxInFlight":      func(c *Config) { c.MaxInFlight = 0 },
		"QueueDepth":       func(c *Config) { c.QueueDepth = -1 },
		"ApplyTimeout":     func(c *Config) { c.ApplyTimeout = 0 },
		"MaxLinger":        func(c *Config) { c.MaxLinger = -1 },
		"LogCacheEntries":  func(c *Config) { c.LogCacheEntries = 0 },
		"LogCacheBytes":    func(c *Config) { c.LogCacheBytes = 0 },
		"ElectionTimeout":  func(c *Config) { c.ElectionTimeout = c.HeartbeatTimeout / 2 },
	} {
		c := good
		mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: Validate() = %v, want an error naming it", field, err)
		}
	}
}

// levelRecorder records the levels of log records.
type levelRecorder struct {
	mu     sync.Mutex
	levels map[slog.Level]int
}

func (h *levelRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.levels[r.Level]++
	h.mu.Unlock()
	return nil
}
func (h *levelRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelRecorder) WithGroup(string) slog.Handler      { return h }

// TestRaftLogsThroughSlogWithoutDebug: raft's own messages reach the
// injected logger, at INFO and above by default.
func TestRaftLogsThroughSlogWithoutDebug(t *testing.T) {
	rec := &levelRecorder{levels: map[slog.Level]int{}}
	s := singleVoter(t, func(c *Config) { c.Logger = slog.New(rec) })
	apply(t, s.Shard, incr)
	s.close(t)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.levels[slog.LevelInfo] == 0 {
		t.Fatalf("no INFO records from raft: %v", rec.levels)
	}
	if rec.levels[slog.LevelDebug] != 0 {
		t.Fatalf("DEBUG records with the default level: %v", rec.levels)
	}
}
