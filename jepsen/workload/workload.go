package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/history"
)

// Conn runs one command; go-redis's *redis.Client satisfies it through
// Redis.
type Conn interface {
	Do(ctx context.Context, args ...any) (any, error)
}

// Redis adapts a go-redis client (use NewClient for the right options).
type Redis struct{ C redis.UniversalClient }

// Do runs args and returns the raw RESP2 reply.
func (r Redis) Do(ctx context.Context, args ...any) (any, error) {
	return r.C.Do(ctx, args...).Result()
}

// NewClient returns a go-redis client for the workload: RESP2 replies, no
// client-side retries (a retried XADD could append twice), bounded timeouts.
func NewClient(addr string, timeout time.Duration) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, PoolSize: 16,
		ContextTimeoutEnabled: true})
}

// Config sizes a run.
type Config struct {
	Keys    []string      // streams; default ["s0"]
	Group   string        // consumer group; default "g"
	Clients int           // concurrent processes; default 4
	Seed    int64         // seeds each process's operation choice (seed + process)
	Timeout time.Duration // per operation; default 1s
	// Mix is the operation mix of Run: MixAll (default), MixAppend,
	// MixGroup or MixIdempotent.
	Mix string
}

// Operation mixes.
const (
	MixAll        = "all"        // appends, reads and the consumer group
	MixAppend     = "append"     // XADD, XRANGE, XREAD
	MixGroup      = "group"      // a few appends, mostly XREADGROUP/XACK/XAUTOCLAIM/XPENDING
	MixIdempotent = "idempotent" // XADD IDMP retried while the outcome is unknown, XRANGE, XREAD
)

// Mixes lists the valid Config.Mix values.
var Mixes = []string{MixAll, MixAppend, MixGroup, MixIdempotent}

func (c *Config) defaults() {
	if len(c.Keys) == 0 {
		c.Keys = []string{"s0"}
	}
	if c.Group == "" {
		c.Group = "g"
	}
	if c.Clients == 0 {
		c.Clients = 4
	}
	if c.Timeout == 0 {
		c.Timeout = time.Second
	}
	if c.Mix == "" {
		c.Mix = MixAll
	}
}

// retryPause is how long a process waits after a failed command.
const retryPause = 10 * time.Millisecond

// Workload is one run's clients. Target(p) returns the connection process p
// uses for its next operation, so a nemesis can move clients (failover).
type Workload struct {
	cfg    Config
	target func(p int) Conn
	w      *history.Writer
	procs  []*proc
}

// proc is one client's private state; only its goroutine touches it.
type proc struct {
	p        history.Process
	rnd      *rand.Rand
	n        int
	lastRead map[string]string   // per key, last ID seen by XREAD
	unacked  map[string][]string // per key, IDs delivered to this consumer
	backoff  bool                // the last command failed: pause before the next
}

// New prepares a run recording to w.
func New(cfg Config, target func(p int) Conn, w *history.Writer) *Workload {
	cfg.defaults()
	wl := &Workload{cfg: cfg, target: target, w: w}
	for p := 0; p < cfg.Clients; p++ {
		wl.procs = append(wl.procs, &proc{p: history.Process(p), rnd: rand.New(rand.NewSource(cfg.Seed + int64(p))),
			lastRead: map[string]string{}, unacked: map[string][]string{}})
	}
	return wl
}

// Setup creates the consumer group on every stream at ID 0 (creating the
// stream); an existing group is fine.
func (wl *Workload) Setup(ctx context.Context) error {
	for _, k := range wl.cfg.Keys {
		_, err := wl.target(0).Do(ctx, "XGROUP", "CREATE", k, wl.cfg.Group, "0", "MKSTREAM")
		if err != nil && !isCode(err, "BUSYGROUP") {
			return fmt.Errorf("create group on %s: %w", k, err)
		}
	}
	return nil
}

// Run runs ops randomly chosen operations on every process concurrently and
// returns when all are done or ctx ends.
func (wl *Workload) Run(ctx context.Context, ops int) {
	var wg sync.WaitGroup
	for _, pr := range wl.procs {
		wg.Add(1)
		go func(pr *proc) {
			defer wg.Done()
			for i := 0; i < ops && ctx.Err() == nil; i++ {
				if pr.backoff { // don't spin on TRYAGAIN or a dead node
					pr.backoff = false
					select {
					case <-time.After(retryPause):
					case <-ctx.Done():
						return
					}
				}
				k := wl.cfg.Keys[pr.rnd.Intn(len(wl.cfg.Keys))]
				wl.random(ctx, pr, k)
			}
		}(pr)
	}
	wg.Wait()
}

func (wl *Workload) random(ctx context.Context, pr *proc, k string) {
	x := pr.rnd.Intn(100)
	switch wl.cfg.Mix {
	case MixAppend:
		switch {
		case x < 60:
			wl.xadd(ctx, pr, k)
		case x < 80:
			wl.xrange(ctx, pr, k)
		default:
			wl.xread(ctx, pr, k)
		}
		return
	case MixIdempotent:
		switch {
		case x < 60:
			wl.xaddIdmp(ctx, pr, k)
		case x < 80:
			wl.xrange(ctx, pr, k)
		default:
			wl.xread(ctx, pr, k)
		}
		return
	case MixGroup:
		x = 40 + x*60/100 // no XRANGE/XREAD below
		if x < 50 {
			x -= 20 // some appends
		}
	}
	switch {
	case x < 40:
		wl.xadd(ctx, pr, k)
	case x < 50:
		wl.xrange(ctx, pr, k)
	case x < 60:
		wl.xread(ctx, pr, k)
	case x < 75:
		wl.xreadgroup(ctx, pr, k, ">", 20)
	case x < 80:
		wl.xreadgroup(ctx, pr, k, "0", 20)
	case x < 90:
		wl.xack(ctx, pr, k, 10)
	case x < 95:
		wl.xautoclaim(ctx, pr, k, "0-0", 50)
	default:
		wl.xpending(ctx, pr, k)
	}
}

// Final runs after the heal: on every stream, process 0 appends, tails,
// drains the group (new entries, then everything pending, claimed and
// acknowledged), probes the PEL, and reads the whole stream last. A step
// whose outcome is not ok is repeated (up to finalTries times, 250ms
// apart): right after the heal a shard may still elect a leader or move a
// replica (TRYAGAIN), and one such answer would cut the drain short.
func (wl *Workload) Final(ctx context.Context) {
	pr := wl.procs[0]
	try := func(op func() bool) bool {
		for i := 0; i < finalTries; i++ {
			if op() {
				return true
			}
			select {
			case <-time.After(250 * time.Millisecond):
			case <-ctx.Done():
				return false
			}
		}
		return false
	}
	for _, k := range wl.cfg.Keys {
		if wl.cfg.Mix == MixIdempotent {
			try(func() bool { return wl.xaddIdmp(ctx, pr, k) })
		} else {
			try(func() bool { return wl.xadd(ctx, pr, k) })
		}
		try(func() bool { return wl.xread(ctx, pr, k) })
		for i, n := 0, 1; i < 1000 && n > 0; i++ {
			if !try(func() (ok bool) { n, ok = wl.xreadgroup(ctx, pr, k, ">", finalBatch); return ok }) {
				break
			}
		}
		for i, from := 0, "0-0"; i < 1000 && from != ""; i++ {
			var next string
			if !try(func() (ok bool) { next, ok = wl.xautoclaim(ctx, pr, k, from, finalBatch); return ok }) || next == "0-0" {
				break
			}
			from = next
		}
		try(func() bool { _, ok := wl.xreadgroup(ctx, pr, k, "0", finalBatch); return ok })
		for i := 0; i < 1000; i++ { // at least once, then until all are acked
			if !try(func() bool { return wl.xack(ctx, pr, k, finalBatch) }) || len(pr.unacked[k]) == 0 {
				break
			}
		}
		try(func() bool { return wl.xpending(ctx, pr, k) })
		try(func() bool { return wl.xrange(ctx, pr, k) })
	}
}

// finalTries bounds the attempts of one step of the final phase.
const finalTries = 20

// finalBatch is the COUNT of the final drain's reads and claims and the IDs
// per XACK: a 2-minute run leaves thousands of entries per stream, and at
// the workload's 20 and 10 the drain of 4 streams outlasted the final
// phase's minute on a loaded machine.
const finalBatch = 500

// do records inv, runs args on p's connection with the op timeout, and
// returns the reply (redis.Nil becomes a nil reply with no error).
func (wl *Workload) do(ctx context.Context, pr *proc, args ...any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, wl.cfg.Timeout)
	defer cancel()
	r, err := wl.target(int(pr.p)).Do(ctx, args...)
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	pr.backoff = err != nil
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return nil, history.Rejected(err) // never sent
	}
	return r, err
}

func isCode(err error, code string) bool {
	var re interface{ RedisError() }
	if !errors.As(err, &re) {
		return false
	}
	s := err.Error()
	return len(s) >= len(code) && s[:len(code)] == code
}

// DoAsking sends ASKING and args in one pipeline, on one connection (the
// command follows an -ASK redirect), and returns the command's reply.
func (r Redis) DoAsking(ctx context.Context, args ...any) (any, error) {
	pipe := r.C.Pipeline()
	pipe.Do(ctx, "ASKING")
	cmd := pipe.Do(ctx, args...)
	_, _ = pipe.Exec(ctx)
	return cmd.Result()
}
