package importer

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"
)

// Config is one import. Only cmd/raftstream reads flags into it.
type Config struct {
	// From is the source: a redis-server, or any node of a Redis Cluster
	// when Cluster is set (host:port).
	From string
	// Cluster says the source is a Redis Cluster: its masters are found
	// with CLUSTER SLOTS and each is scanned for streams.
	Cluster bool
	// Match is the SCAN MATCH pattern selecting the streams to import.
	Match string
	// To is the target: a raftstream node, or any node of a raftstream
	// cluster (found out with INFO cluster; keys then go to their shard's
	// leader through a cluster client).
	To string
	// Password authenticates to the source (AUTH), ToPassword to the
	// target; empty sends no AUTH.
	Password, ToPassword string
	// Verify compares both sides after the import (verify.go).
	Verify bool
	// Label starts the progress lines ("import"; `raftstream restore`
	// names the shard).
	Label string

	// Parallel streams are imported at once.
	Parallel int
	// Chunk is the number of entries read with one XRANGE and written with
	// one pipeline of XADDs (also the pipeline size of group commands).
	Chunk int
	// Retries is how many times a stream is tried before the import gives
	// up on it; each try starts from what the target holds.
	Retries int
	// Timeout bounds each request (and each pipeline's reply).
	Timeout time.Duration

	// Progress receives the progress display (stderr); ProgressTTY says
	// it is a terminal (one line redrawn in place) rather than a file or
	// pipe (a plain line every ProgressEvery).
	Progress      io.Writer
	ProgressTTY   bool
	ProgressEvery time.Duration
	// Out receives the summary and the verification report (stdout).
	Out io.Writer
	// Logger receives retries and per-stream failures.
	Logger *slog.Logger
}

// DefaultConfig is the configuration with no flags given (From empty:
// Validate asks for it).
func DefaultConfig() Config {
	return Config{
		Match:         "*",
		Label:         "import",
		To:            "127.0.0.1:6379",
		Parallel:      4,
		Chunk:         1000,
		Retries:       5,
		Timeout:       30 * time.Second,
		Progress:      io.Discard,
		ProgressEvery: 5 * time.Second,
		Out:           io.Discard,
		Logger:        slog.New(slog.DiscardHandler),
	}
}

// Validate names the first field that cannot work, with its value.
func (c *Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.From); err != nil {
		return fmt.Errorf("From %q: want host:port", c.From)
	}
	if c.From == c.To {
		return fmt.Errorf("From and To are both %q: the source cannot be the target", c.From)
	}
	return c.validateCopy()
}

// validateCopy is Validate without the source (RunFrom reads from a
// Source of its own).
func (c *Config) validateCopy() error {
	if _, _, err := net.SplitHostPort(c.To); err != nil {
		return fmt.Errorf("To %q: want host:port", c.To)
	}
	switch {
	case c.Match == "":
		return fmt.Errorf("Match is empty: want a SCAN MATCH pattern (\"*\" for every stream)")
	case c.Parallel < 1:
		return fmt.Errorf("Parallel %d: want at least 1", c.Parallel)
	case c.Chunk < 1:
		return fmt.Errorf("Chunk %d: want at least 1", c.Chunk)
	case c.Retries < 1:
		return fmt.Errorf("Retries %d: want at least 1", c.Retries)
	case c.Timeout <= 0:
		return fmt.Errorf("Timeout %v: want a positive duration", c.Timeout)
	case c.ProgressEvery <= 0:
		return fmt.Errorf("ProgressEvery %v: want a positive duration", c.ProgressEvery)
	case c.Progress == nil || c.Out == nil || c.Logger == nil:
		return fmt.Errorf("Progress, Out and Logger must be set (io.Discard and a discarding logger to silence them)")
	}
	return nil
}
