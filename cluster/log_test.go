package cluster

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for the node's concurrent loggers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestJSONLogsNameTheShardOnce: every JSON log line of a node names its
// shard at most once (a repeated key is ambiguous JSON, and log pipelines
// keep one or the other), and the shards' own lines do name it.
func TestJSONLogsNameTheShardOnce(t *testing.T) {
	var buf syncBuffer
	cfg := testConfig(t, t.TempDir())
	cfg.Shards = 2
	cfg.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n := startNode(t, cfg)
	n.Close()
	withShard := 0
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if c := strings.Count(line, `"shard":`); c > 1 {
			t.Errorf("%d shard keys: %s", c, line)
		} else if c == 1 {
			withShard++
		}
		if !json.Valid([]byte(line)) {
			t.Errorf("not JSON: %s", line)
		}
	}
	if withShard == 0 {
		t.Fatalf("no log line names a shard:\n%s", buf.String())
	}
}
