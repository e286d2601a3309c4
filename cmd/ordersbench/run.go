package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/history"
)

// ErrVerifyFailed is returned by run when -verify found lost, stray,
// duplicated or reordered orders, or could not judge the history (a group
// that was not drained); main exits 1.
var ErrVerifyFailed = errors.New("verify: the history failed a check")

// dial returns the clients for cfg: one cluster client, or one plain client
// per address.
func dial(cfg *Config, conns int) []redis.UniversalClient {
	if cfg.Cluster {
		return []redis.UniversalClient{redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: cfg.Addrs, Password: cfg.Password, Protocol: cfg.Protocol, PoolSize: conns,
			ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, DisableIdentity: true,
		})}
	}
	var cs []redis.UniversalClient
	for _, a := range cfg.Addrs {
		cs = append(cs, redis.NewClient(&redis.Options{
			Addr: a, Password: cfg.Password, Protocol: cfg.Protocol, PoolSize: conns,
			// No retries: a resent XADD whose first reply was lost would be
			// written twice, and --verify would rightly call that a fault.
			MaxRetries:  -1,
			ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, DisableIdentity: true,
		}))
	}
	return cs
}

// setupAttempts bounds the retries of one idempotent setup command.
const setupAttempts = 20

// retry runs an idempotent command until it succeeds, fails with a
// non-transient error, or setupAttempts are spent. A cluster that is still
// electing leaders answers TRYAGAIN, CLUSTERDOWN or an unknown outcome; DEL
// and XGROUP CREATE (BUSYGROUP ignored) are safe to repeat.
func retry(ctx context.Context, fn func() error) error {
	var err error
	for i := range setupAttempts {
		if err = fn(); err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		sleepCtx(ctx, time.Duration(50*(i+1))*time.Millisecond)
	}
	return err
}

// transient reports whether a setup command may succeed if repeated.
func transient(err error) bool {
	for _, p := range []string{"TRYAGAIN", "CLUSTERDOWN", "LOADING", "UNKNOWN", "MOVED", "ASK", "i/o timeout", "connection refused", "EOF"} {
		if strings.Contains(err.Error(), p) {
			return true
		}
	}
	return false
}

// setup checks the connection, optionally deletes the streams and creates
// every group on every stream (MKSTREAM; an existing group is kept).
func setup(ctx context.Context, cfg *Config, c redis.UniversalClient, keys []string) error {
	if err := retry(ctx, func() error { return c.Ping(ctx).Err() }); err != nil {
		return fmt.Errorf("ping %s: %w", strings.Join(cfg.Addrs, ","), err)
	}
	for _, k := range keys {
		if cfg.Reset {
			if err := retry(ctx, func() error { return c.Del(ctx, k).Err() }); err != nil {
				return fmt.Errorf("del %s: %w", k, err)
			}
		}
		for _, g := range cfg.Groups {
			err := retry(ctx, func() error {
				err := c.XGroupCreateMkStream(ctx, k, g, "$").Err()
				if err != nil && strings.HasPrefix(err.Error(), "BUSYGROUP") {
					return nil
				}
				return err
			})
			if err != nil {
				return fmt.Errorf("xgroup create %s %s: %w", k, g, err)
			}
		}
	}
	return nil
}

// assign builds the readers: partitions go to a group's workers
// round-robin (partition p to worker p mod Consumers). A cluster client
// cannot read several slots in one XREADGROUP, so there a worker runs one
// reader per partition, all under the worker's consumer name.
func assign(cfg *Config, run string, keys []string) []*reader {
	var rs []*reader
	for gi, g := range cfg.Groups {
		for w := range cfg.Consumers {
			var mine []string
			for p := w; p < cfg.Partitions; p += cfg.Consumers {
				mine = append(mine, keys[p])
			}
			sets := [][]string{mine}
			if cfg.Cluster {
				sets = sets[:0]
				for _, k := range mine {
					sets = append(sets, []string{k})
				}
			}
			for _, set := range sets {
				if len(set) == 0 {
					continue
				}
				r := &reader{cfg: cfg, run: run, group: g, gi: gi, consumer: "ob-" + run + "-" + strconv.Itoa(w), keys: set, partOf: map[string]int32{}}
				for _, k := range set {
					r.partOf[k] = int32(keyIndex(keys, k))
				}
				rs = append(rs, r)
			}
		}
	}
	return rs
}

func keyIndex(keys []string, k string) int {
	for i, x := range keys {
		if x == k {
			return i
		}
	}
	return -1
}

// run is the whole benchmark: setup, produce and consume concurrently, drain,
// verify, report. Progress goes to stderr once a second, the final table to
// stdout. It is long because it reads top to bottom as the numbered phases
// of a run; each phase's mechanics live in a helper.
func run(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	keys := make([]string, cfg.Partitions)
	for p := range keys {
		keys[p] = streamKey(cfg.Prefix, p)
	}
	// 1. Run tag: entries of other runs in the same streams are acknowledged but not counted.
	runTag := strconv.FormatInt(time.Now().UnixNano(), 36)
	readers := assign(&cfg, runTag, keys)
	if cfg.Consumers > cfg.Partitions {
		fmt.Fprintf(stderr, "ordersbench: %d consumers per group but %d partitions: %d consumers idle\n",
			cfg.Consumers, cfg.Partitions, cfg.Consumers-cfg.Partitions)
	}

	// 2. Clients and streams.
	clients := dial(&cfg, cfg.Producers+len(readers)+4)
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	if err := setup(ctx, &cfg, clients[0], keys); err != nil {
		return err
	}

	// 3. Consumers first, so nothing waits for them; then producers.
	start := time.Now()
	stats := NewStats(len(cfg.Groups), start)
	errs := &errorLog{}
	consCtx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	var draining atomic.Bool
	var rwg sync.WaitGroup
	readersDone := make(chan struct{})
	startReaders := func() {
		for i, r := range readers {
			r.client, r.stats, r.errs = clients[i%len(clients)], stats.Shard(r.gi), errs
			r.idx, r.epoch = int32(i), start
			rwg.Go(func() { r.loop(consCtx, &draining) })
		}
		go func() { rwg.Wait(); close(readersDone) }()
	}
	consStart := start
	if !cfg.ConsumeAfter {
		startReaders()
	}

	stopHarvest := startHarvester(&cfg, stats, stderr, &draining)
	var deadline time.Time
	if cfg.Duration > 0 {
		deadline = start.Add(cfg.Duration)
	}
	q := &quota{limit: cfg.Count}
	producers := make([]*producer, cfg.Producers)
	var pwg sync.WaitGroup
	for i := range producers {
		p := &producer{idx: i, cfg: &cfg, run: runTag, client: clients[i%len(clients)], stats: stats.Shard(-1), errs: errs, quota: q, keys: keys, epoch: start}
		producers[i] = p
		pwg.Go(func() { p.loop(ctx, start, deadline) })
	}
	pwg.Wait()
	prodEnd := time.Now()

	// 4. Drain: consumers finish what was produced, bounded by DrainTimeout.
	draining.Store(true)
	if cfg.ConsumeAfter {
		consStart = time.Now()
		startReaders()
	}
	drainTimedOut := len(readers) > 0 && !waitDrain(ctx, cfg.DrainTimeout, readersDone)
	stopConsumers()
	<-readersDone
	end := time.Now()
	stopHarvest()
	stats.Harvest(end)

	// 5. Verify and report.
	rep := buildReport(&cfg, stats, start, prodEnd, consStart, end, errs.Summary())
	rep.DrainTimedOut = drainTimedOut
	if cfg.Verify {
		vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		v, err := verifyRun(vctx, &cfg, clients[0], start, keys, producers, readers)
		cancel()
		if err != nil {
			return err
		}
		rep.Verify = &v
	}
	writeTable(stdout, rep)
	if cfg.JSONPath != "" {
		if err := writeJSON(cfg.JSONPath, rep); err != nil {
			return err
		}
	}
	if cfg.HTMLPath != "" {
		if err := writeHTML(cfg.HTMLPath, rep); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if rep.Totals.Produced == 0 {
		return errors.New("no order was acknowledged by the server")
	}
	if rep.Verify != nil && !rep.Verify.OK {
		return ErrVerifyFailed
	}
	return nil
}

// startHarvester harvests stats once a second (the timeline) and writes the
// progress line. The returned stop waits for the harvester to exit, after
// which the caller may harvest the final partial second itself.
func startHarvester(cfg *Config, stats *Stats, stderr io.Writer, draining *atomic.Bool) (stop func()) {
	stopCh, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopCh:
				return
			case now := <-t.C:
				p := stats.Harvest(now)
				if cfg.Progress {
					fmt.Fprintln(stderr, progressLine(cfg, p, draining.Load()))
				}
			}
		}
	}()
	return func() { close(stopCh); <-done }
}

// waitDrain waits for the readers to finish draining; false if timeout
// expired first.
func waitDrain(ctx context.Context, timeout time.Duration, readersDone <-chan struct{}) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-readersDone:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return true
	}
}

// verifyRun gathers the records of all producers and readers and checks
// them. With -maxlen it first reads every stream in full: the entries
// trimming left are the evidence that a missing order was trimmed, not lost.
func verifyRun(ctx context.Context, cfg *Config, c redis.UniversalClient, start time.Time, keys []string, ps []*producer, rs []*reader) (Verdict, error) {
	h := History{Streams: keys, Groups: cfg.Groups, ClientRetries: cfg.Cluster}
	for _, p := range ps {
		h.XAdds = append(h.XAdds, p.log...)
	}
	for _, r := range rs {
		h.Reads = append(h.Reads, r.log...)
	}
	if cfg.MaxLen > 0 {
		h.Final, h.FinalAt = map[int32][]Delivery{}, int64(time.Since(start))
		for p, k := range keys {
			msgs, err := c.XRange(ctx, k, "-", "+").Result()
			if err != nil {
				return Verdict{}, fmt.Errorf("verify: reading %s: %w", k, err)
			}
			ds := []Delivery{}
			for _, m := range msgs {
				oid, _ := m.Values["order_id"].(string)
				key, own := parseOrderID(ps[0].run, oid)
				id, err := history.ParseID(m.ID)
				if !own || err != nil {
					continue
				}
				ds = append(ds, Delivery{Key: key, ID: id})
			}
			h.Final[int32(p)] = ds
		}
	}
	return Verify(h), nil
}
