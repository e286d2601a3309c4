package fsm

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
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
		"LogStore":         func(c *Config) { c.LogStore = "tape" },
		"InjectBug":        func(c *Config) { c.InjectBug = "lose-everything" },
	} {
		c := good
		mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: Validate() = %v, want an error naming it", field, err)
		}
	}
}

// TestRaftLogsReachRaftLogger: raft's own messages, and its snapshot
// store's, go to Config.RaftLogger under their names, not to Logger.
func TestRaftLogsReachRaftLogger(t *testing.T) {
	var mu sync.Mutex // hclog writes each record under it
	var buf bytes.Buffer
	s := singleVoter(t, func(c *Config) {
		c.RaftLogger = hclog.New(&hclog.LoggerOptions{Output: &buf, Mutex: &mu, Level: hclog.Info})
	})
	apply(t, s.Shard, incr)
	if err := s.TakeSnapshot(); err != nil {
		t.Fatal(err)
	}
	s.close(t)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if !strings.Contains(out, " raft: ") || !strings.Contains(out, " snapshot: ") {
		t.Fatalf("no raft or snapshot-store records in Config.RaftLogger:\n%s", out)
	}
}
