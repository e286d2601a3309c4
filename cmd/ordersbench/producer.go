package main

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/history"
)

// partitionOf routes an order to its partition: FNV-1a of the order_id.
func partitionOf(orderID string, partitions int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(orderID))
	return int(h.Sum32() % uint32(partitions))
}

// streamKey is the stream of partition p; the braces are a hash tag.
func streamKey(prefix string, p int) string { return prefix + ":{" + strconv.Itoa(p) + "}" }

// quota hands out the --count budget in pipeline-sized batches.
type quota struct {
	limit int64 // 0 = unlimited
	taken atomic.Int64
}

// take returns how many orders (<= want) the caller may produce; 0 = done.
func (q *quota) take(want int) int {
	if q.limit == 0 {
		return want
	}
	end := q.taken.Add(int64(want))
	start := end - int64(want)
	if start >= q.limit {
		return 0
	}
	return int(min(end, q.limit) - start)
}

var (
	skus      = []string{"SKU-1001", "SKU-1002", "SKU-2001", "SKU-3005", "SKU-4242", "SKU-7000"}
	customers = 10_000
)

// producer is one XADD loop.
type producer struct {
	idx    int
	cfg    *Config
	run    string
	client redis.Cmdable
	stats  *shard
	errs   *errorLog
	quota  *quota
	keys   []string
	// epoch is when the run began; log holds this producer's XADDs, for
	// -verify.
	epoch time.Time
	log   []XAdd
}

// loop produces until the deadline (zero = none) or the quota is spent. In-flight
// pipelines finish with ctx, which is cancelled only on interrupt, so that
// stopping on time never turns acknowledged writes into unknown outcomes.
func (p *producer) loop(ctx context.Context, start, deadline time.Time) {
	cfg := p.cfg
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(p.idx)))
	pad := strings.Repeat(string(rune('a'+p.idx%26)), cfg.ValueSize)
	perProducer := cfg.Rate / float64(cfg.Producers)
	var seq uint64
	var sent int64
	for ctx.Err() == nil {
		now := time.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			return
		}
		n := p.quota.take(cfg.Pipeline)
		if n == 0 {
			return
		}
		if perProducer > 0 {
			due := start.Add(time.Duration(float64(sent) / perProducer * float64(time.Second)))
			if wait := due.Sub(now); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
		}
		p.batch(ctx, rng, pad, &seq, n)
		sent += int64(n)
	}
}

// batch sends n XADDs in one pipeline and records their outcomes.
func (p *producer) batch(ctx context.Context, rng *rand.Rand, pad string, seq *uint64, n int) {
	cfg := p.cfg
	pipe := p.client.Pipeline()
	cmds := make([]*redis.StringCmd, n)
	keys := make([]OrderKey, n)
	parts := make([]int, n)
	ts := strconv.FormatInt(time.Now().UnixNano(), 10)
	for i := range n {
		*seq++
		keys[i] = newOrderKey(p.idx, *seq)
		id := orderID(p.run, keys[i])
		parts[i] = partitionOf(id, cfg.Partitions)
		values := []string{
			"order_id", id,
			"customer", "c" + strconv.Itoa(rng.IntN(customers)),
			"amount", strconv.FormatFloat(float64(rng.IntN(100_000))/100, 'f', 2, 64),
			"sku", skus[rng.IntN(len(skus))],
			"ts_ns", ts,
		}
		if cfg.ValueSize > 0 {
			values = append(values, "note", pad)
		}
		cmds[i] = pipe.XAdd(ctx, &redis.XAddArgs{Stream: p.keys[parts[i]], MaxLen: cfg.MaxLen, Approx: cfg.MaxLen > 0, Values: values})
	}
	start := time.Now()
	_, _ = pipe.Exec(ctx)
	d := time.Since(start)
	call := int64(start.Sub(p.epoch))
	ret := call + int64(d)
	ok := 0
	for i, c := range cmds {
		err := c.Err()
		if err != nil {
			p.errs.add("xadd", err)
		} else {
			ok++
		}
		if cfg.Verify {
			x := XAdd{Key: keys[i], Part: int32(parts[i]), Call: call, Return: ret}
			if err == nil {
				id, perr := history.ParseID(c.Val())
				x.ID, x.Acked = id, perr == nil
			}
			p.log = append(p.log, x)
		}
	}
	p.stats.record(opXAdd, ok, d)
	if ok < n {
		p.stats.fail(opXAdd, n-ok)
	}
}
