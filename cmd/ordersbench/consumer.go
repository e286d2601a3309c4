package main

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/history"
)

// reader is one consumer of one group reading a fixed set of partitions.
// Each (group, partition) pair has exactly one reader, so a reader's
// deliveries from a partition are in stream order.
type reader struct {
	cfg      *Config
	run      string
	group    string
	gi       int
	consumer string
	keys     []string
	partOf   map[string]int32
	client   redis.Cmdable
	stats    *shard
	errs     *errorLog
	// idx numbers the reader; epoch is when the run began; log holds its
	// reads, for -verify.
	idx   int32
	epoch time.Time
	log   []Read
}

// maxClaimRounds bounds one XAUTOCLAIM sweep of a stream.
const maxClaimRounds = 100

// loop reads with XREADGROUP … > and acknowledges everything delivered,
// sweeping stale pending entries with XAUTOCLAIM every MinIdle/2. Once
// draining is set (production over) it returns when a read finds nothing
// new and the group has no pending entries on its streams; ctx bounds it.
func (r *reader) loop(ctx context.Context, draining *atomic.Bool) {
	streams := make([]string, 0, 2*len(r.keys))
	streams = append(streams, r.keys...)
	for range r.keys {
		streams = append(streams, ">")
	}
	claimEvery := max(r.cfg.MinIdle/2, 100*time.Millisecond)
	nextClaim := time.Now().Add(claimEvery)
	for ctx.Err() == nil {
		drain := draining.Load()
		t0 := time.Now()
		res, err := r.client.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: r.group, Consumer: r.consumer, Streams: streams, Count: r.cfg.ReadCount, Block: r.cfg.Block,
		}).Result()
		d := time.Since(t0)
		empty := true
		switch {
		case errors.Is(err, redis.Nil):
			r.noteEmpty(drain, t0, d)
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			r.stats.fail(opXReadGroup, 1)
			r.errs.add("xreadgroup", err)
			sleepCtx(ctx, 50*time.Millisecond)
			continue
		default:
			r.stats.record(opXReadGroup, 1, d)
			if empty = r.handle(ctx, res, false, t0, d) == 0; empty {
				r.noteEmpty(drain, t0, d)
			}
		}
		if (drain && empty) || !time.Now().Before(nextClaim) {
			if r.claim(ctx) > 0 {
				empty = false
			}
			nextClaim = time.Now().Add(claimEvery)
		}
		if drain && empty && r.nothingPending(ctx) {
			return
		}
	}
}

// handle processes the deliveries of a read sent at time sent and answered
// after took: records them (for -verify), acknowledges them per stream in
// one pipeline, and records end-to-end latency of the acknowledged orders.
// It returns the number of deliveries.
func (r *reader) handle(ctx context.Context, res []redis.XStream, claimed bool, sent time.Time, took time.Duration) int {
	type pending struct {
		ack *redis.IntCmd
		ts  []int64 // ts_ns of this run's orders in the batch
		n   int     // this run's orders
	}
	pipe := r.client.Pipeline()
	var batches []pending
	total, foreign := 0, 0
	for _, s := range res {
		if len(s.Messages) == 0 {
			continue
		}
		part, known := r.partOf[s.Stream]
		ids := make([]string, 0, len(s.Messages))
		var b pending
		var mine []Delivery
		for _, m := range s.Messages {
			total++
			ids = append(ids, m.ID)
			oid, _ := m.Values["order_id"].(string)
			key, own := parseOrderID(r.run, oid)
			if !own || !known {
				foreign++
				continue
			}
			b.n++
			if ts, err := strconv.ParseInt(str(m.Values["ts_ns"]), 10, 64); err == nil {
				b.ts = append(b.ts, ts)
			}
			if r.cfg.Verify {
				id, err := history.ParseID(m.ID)
				if err != nil {
					r.errs.add("xreadgroup", errors.New("bad entry ID "+m.ID))
					continue
				}
				mine = append(mine, Delivery{Key: key, ID: id})
			}
		}
		if len(mine) > 0 {
			r.note(part, claimed, sent, took, mine)
		}
		b.ack = pipe.XAck(ctx, s.Stream, r.group, ids...)
		batches = append(batches, b)
	}
	if len(batches) == 0 {
		return 0
	}
	t0 := time.Now()
	_, _ = pipe.Exec(ctx)
	d := time.Since(t0)
	now := time.Now().UnixNano()
	var e2e []int64
	own, acked, failed := 0, 0, 0
	for _, b := range batches {
		own += b.n
		if err := b.ack.Err(); err != nil {
			failed++
			r.errs.add("xack", err)
			continue
		}
		acked++
		for _, ts := range b.ts {
			e2e = append(e2e, now-ts)
		}
	}
	r.stats.record(opXAck, acked, d)
	if failed > 0 {
		r.stats.fail(opXAck, failed)
	}
	r.stats.delivered(own, foreign, e2e)
	return total
}

// claim sweeps each stream's pending entries idle for at least MinIdle
// (this run's dead consumers, earlier runs, lost acks) and processes them.
// It returns the number of entries claimed.
func (r *reader) claim(ctx context.Context) int {
	n := 0
	for _, key := range r.keys {
		start := "0-0"
		for range maxClaimRounds {
			t0 := time.Now()
			msgs, next, err := r.client.XAutoClaim(ctx, &redis.XAutoClaimArgs{
				Stream: key, Group: r.group, Consumer: r.consumer, MinIdle: r.cfg.MinIdle, Start: start, Count: r.cfg.ReadCount,
			}).Result()
			if err != nil {
				if ctx.Err() == nil {
					r.stats.fail(opXAutoClaim, 1)
					r.errs.add("xautoclaim", err)
				}
				break
			}
			d := time.Since(t0)
			r.stats.record(opXAutoClaim, 1, d)
			n += r.handle(ctx, []redis.XStream{{Stream: key, Messages: msgs}}, true, t0, d)
			if next == "0-0" || next == "" {
				break
			}
			start = next
		}
	}
	return n
}

// nothingPending reports whether the group's PEL is empty on all of this
// reader's streams.
func (r *reader) nothingPending(ctx context.Context) bool {
	for _, key := range r.keys {
		p, err := r.client.XPending(ctx, key, r.group).Result()
		if err != nil {
			if ctx.Err() == nil {
				r.errs.add("xpending", err)
			}
			return false
		}
		if p.Count > 0 {
			return false
		}
	}
	return true
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// note records, for -verify, a read of partition part sent at t0 and
// answered after d that delivered entries of this run.
func (r *reader) note(part int32, claimed bool, t0 time.Time, d time.Duration, es []Delivery) {
	call := int64(t0.Sub(r.epoch))
	r.log = append(r.log, Read{Group: r.group, Reader: r.idx, Part: part, Claimed: claimed, Call: call,
		Return: call + int64(d), Entries: es})
}

// noteEmpty records, for -verify, an XREADGROUP ">" sent once production
// was over (drain) that returned nothing on any of the reader's partitions:
// it shows the group drained of every acknowledged order. An empty read
// during production proves nothing about later orders, so it is not kept.
func (r *reader) noteEmpty(drain bool, t0 time.Time, d time.Duration) {
	if !r.cfg.Verify || !drain {
		return
	}
	for _, k := range r.keys {
		r.note(r.partOf[k], false, t0, d, nil)
	}
}
