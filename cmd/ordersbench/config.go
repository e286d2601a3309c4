package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Config is one ordersbench run. Only main reads flags; run takes a Config.
type Config struct {
	// Addrs are the server endpoints. With Cluster they seed a cluster
	// client. Without it, producers and consumers are spread round-robin over
	// one plain client per address, so every address must serve every key
	// (one server, or nodes of one raftstream cluster run with -forwarding).
	Addrs    []string
	Cluster  bool
	Password string
	// Protocol is the RESP version go-redis negotiates (2 or 3).
	Protocol int

	// Prefix names the streams: Prefix:{0} … Prefix:{Partitions-1}. The
	// braces are a hash tag, so a cluster client routes each partition alone.
	Prefix     string
	Partitions int

	// Producers XADD concurrently, each with Pipeline commands in flight.
	Producers int
	Pipeline  int
	// Duration and Count bound production; whichever is reached first ends
	// it (0 = no bound; at least one must be set).
	Duration time.Duration
	Count    int64
	// Rate caps the total XADDs per second (0 = unlimited).
	Rate float64
	// MaxLen adds MAXLEN ~ MaxLen to every XADD (0 = no trimming).
	MaxLen int64
	// ValueSize is the size of the padding field added to each order.
	ValueSize int

	// Groups each get Consumers workers; partitions are assigned to workers
	// round-robin.
	Groups    []string
	Consumers int
	// ReadCount and Block are XREADGROUP's COUNT and BLOCK.
	ReadCount int64
	Block     time.Duration
	// MinIdle is XAUTOCLAIM's min-idle-time for stale pending entries.
	MinIdle time.Duration
	// DrainTimeout bounds how long consumers keep reading after production
	// ends before the run is declared finished.
	DrainTimeout time.Duration
	// ConsumeAfter starts the consumers only when production has ended, so
	// they drain a backlog of known size: consumed/s is then measured over
	// the drain alone (the consumer-side throughput of XREADGROUP + XACK).
	ConsumeAfter bool

	// Reset deletes the streams before the run.
	Reset bool
	// Verify records every XADD and delivery and, at the end, checks the
	// history with jepsen/checker (see Verify).
	Verify bool
	// JSONPath and HTMLPath, when set, receive the report.
	JSONPath string
	HTMLPath string
	// Seed makes the order contents reproducible.
	Seed uint64
	// Progress writes a progress line to stderr once a second.
	Progress bool
}

// DefaultConfig is the configuration with no flags given.
func DefaultConfig() Config {
	return Config{
		Addrs:        []string{"127.0.0.1:6379"},
		Protocol:     3,
		Prefix:       "orders",
		Partitions:   16,
		Producers:    50,
		Pipeline:     1,
		Duration:     10 * time.Second,
		ValueSize:    32,
		Groups:       []string{"billing", "analytics"},
		Consumers:    4,
		ReadCount:    100,
		Block:        200 * time.Millisecond,
		MinIdle:      5 * time.Second,
		DrainTimeout: 30 * time.Second,
		Seed:         1,
		Progress:     true,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case len(c.Addrs) == 0:
		return errors.New("addr: at least one address is required")
	case c.Protocol != 2 && c.Protocol != 3:
		return fmt.Errorf("protocol: %d is not 2 or 3", c.Protocol)
	case c.Prefix == "" || strings.ContainsAny(c.Prefix, "{}"):
		return fmt.Errorf("prefix: %q must be non-empty without braces", c.Prefix)
	case c.Partitions < 1:
		return fmt.Errorf("partitions: %d < 1", c.Partitions)
	case c.Producers < 1 || c.Producers >= 1<<24:
		return fmt.Errorf("producers: %d out of range [1, 2^24)", c.Producers)
	case c.Pipeline < 1:
		return fmt.Errorf("pipeline: %d < 1", c.Pipeline)
	case c.Duration < 0 || c.Count < 0:
		return fmt.Errorf("duration/count: negative (%v, %d)", c.Duration, c.Count)
	case c.Duration == 0 && c.Count == 0:
		return errors.New("duration/count: one of them must bound the run")
	case c.Rate < 0:
		return fmt.Errorf("rate: %v < 0", c.Rate)
	case c.MaxLen < 0:
		return fmt.Errorf("maxlen: %d < 0", c.MaxLen)
	case c.ValueSize < 0:
		return fmt.Errorf("value-size: %d < 0", c.ValueSize)
	case c.Consumers < 0:
		return fmt.Errorf("consumers: %d < 0", c.Consumers)
	case c.Consumers > 0 && len(c.Groups) == 0:
		return errors.New("groups: consumers need at least one group")
	case c.ReadCount < 1:
		return fmt.Errorf("read-count: %d < 1", c.ReadCount)
	case c.Block < time.Millisecond:
		return fmt.Errorf("block: %v < 1ms (BLOCK 0 would wait forever)", c.Block)
	case c.MinIdle < time.Millisecond:
		return fmt.Errorf("min-idle: %v < 1ms", c.MinIdle)
	case c.DrainTimeout <= 0:
		return fmt.Errorf("drain-timeout: %v <= 0", c.DrainTimeout)
	case c.Verify && c.Consumers == 0:
		return errors.New("verify: needs consumers")
	}
	seen := map[string]bool{}
	for _, g := range c.Groups {
		if g == "" || seen[g] {
			return fmt.Errorf("groups: empty or repeated group %q", g)
		}
		seen[g] = true
	}
	return nil
}

// ParseFlags builds a Config from command-line arguments (without the
// program name).
func ParseFlags(args []string, stderr io.Writer) (Config, error) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("ordersbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addrs := fs.String("addr", strings.Join(c.Addrs, ","), "server address(es), comma-separated; without -cluster every address must serve every key")
	groups := fs.String("groups", strings.Join(c.Groups, ","), "consumer groups, comma-separated")
	fs.BoolVar(&c.Cluster, "cluster", c.Cluster, "use a Redis Cluster client (MOVED/ASK, per-slot routing)")
	fs.StringVar(&c.Password, "password", c.Password, "AUTH password")
	fs.IntVar(&c.Protocol, "protocol", c.Protocol, "RESP protocol version (2 or 3)")
	fs.StringVar(&c.Prefix, "prefix", c.Prefix, "stream name prefix: <prefix>:{N}")
	fs.IntVar(&c.Partitions, "partitions", c.Partitions, "number of partitions (streams)")
	fs.IntVar(&c.Producers, "producers", c.Producers, "concurrent producers")
	fs.IntVar(&c.Pipeline, "pipeline", c.Pipeline, "XADDs in flight per producer (like redis-benchmark -P)")
	fs.IntVar(&c.Pipeline, "P", c.Pipeline, "shorthand for -pipeline")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "production time (0 = bounded by -count only; default 10s unless -count is given)")
	fs.Int64Var(&c.Count, "count", c.Count, "total orders to produce (0 = bounded by -duration only)")
	fs.Float64Var(&c.Rate, "rate", c.Rate, "total XADD/s cap (0 = unlimited)")
	fs.Int64Var(&c.MaxLen, "maxlen", c.MaxLen, "XADD MAXLEN ~ n (0 = no trimming)")
	fs.IntVar(&c.ValueSize, "value-size", c.ValueSize, "bytes of padding per order")
	fs.IntVar(&c.Consumers, "consumers", c.Consumers, "consumers per group")
	fs.Int64Var(&c.ReadCount, "read-count", c.ReadCount, "XREADGROUP COUNT")
	fs.DurationVar(&c.Block, "block", c.Block, "XREADGROUP BLOCK")
	fs.DurationVar(&c.MinIdle, "min-idle", c.MinIdle, "XAUTOCLAIM min-idle-time for stale entries")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "how long consumers may drain after production")
	fs.BoolVar(&c.ConsumeAfter, "consume-after", c.ConsumeAfter, "start the consumers when production ends and measure consumed/s over the drain alone")
	fs.BoolVar(&c.Reset, "reset", c.Reset, "delete the streams before the run")
	fs.BoolVar(&c.Verify, "verify", c.Verify, "check the history of XADDs and deliveries with the fault-injection checkers (exit 1 on a lost, stray, duplicated or reordered order)")
	fs.StringVar(&c.JSONPath, "json", c.JSONPath, "write the report as JSON to this file")
	fs.StringVar(&c.HTMLPath, "html", c.HTMLPath, "write a self-contained HTML report to this file")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed for order contents")
	fs.BoolVar(&c.Progress, "progress", c.Progress, "write a progress line to stderr every second")
	fs.StringVar(&cpuProfile, "cpuprofile", cpuProfile, "write a CPU profile of ordersbench itself to this file")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	// -count alone bounds the run by count: the default duration applies
	// only when no -count is given or -duration is given explicitly.
	durationSet := false
	fs.Visit(func(f *flag.Flag) { durationSet = durationSet || f.Name == "duration" })
	if c.Count > 0 && !durationSet {
		c.Duration = 0
	}
	c.Addrs = splitList(*addrs)
	c.Groups = splitList(*groups)
	return c, c.Validate()
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
