package resp

import (
	"context"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/raftstream/raftstream/engine"
)

// Per-stream and per-group series. Every consumer group of every local
// shard replica (followers included: their values lag the leader by the
// apply lag) gets its lag, PEL size and the age of its oldest pending
// entry, up to StreamMetrics.MaxGroups series sets; the groups with the
// largest backlog (lag + pending) are kept, and the number left out is a
// series of its own. The N longest streams of each replica get a length
// series with TopStreams > 0.
//
// They are resp's to write because reading them means walking keyspaces
// (SCAN), which only the RESP side does. Keys are walked in chunks, each
// under its own short stale Read, so a large keyspace never holds the FSM
// read lock (and apply) for long: at most scanChunk keys and pelChunk
// pending entries per Read, and maxScanChunks chunks per shard and scrape.
// A PEL larger than what is left of a Read's budget is scanned on in
// later Reads (it may change in between: the age is then approximate).

const (
	scanChunk     = 1000
	maxScanChunks = 100
	pelChunk      = 16384
	maxPELReads   = 1000
)

// StreamMetrics says which per-stream series CollectStreams writes.
type StreamMetrics struct {
	// TopStreams is how many of each replica's longest streams get a
	// length series (0 = none).
	TopStreams int
	// MaxGroups caps the consumer groups given series on this node (0 =
	// none); the rest are counted in raftstream_metrics_groups_dropped.
	MaxGroups int
}

type streamLen struct {
	key string
	n   int64
}

// groupRow is one group's figures from a scrape.
type groupRow struct {
	shard  int
	stream string
	engine.GroupStat
	// oldest is the earliest delivery time in the PEL (Unix ms),
	// math.MaxInt64 when empty.
	oldest int64
}

// CollectStreams writes the per-stream and per-group series of every
// shard replica be hosts.
func CollectStreams(be Backend, o StreamMetrics, w MetricWriter) {
	if o.TopStreams <= 0 && o.MaxGroups <= 0 {
		return
	}
	var groups []groupRow
	for i := 0; i < be.NumShards(); i++ {
		if _, ok := be.ShardStatus(i); !ok {
			continue
		}
		lens, gs := scanShard(be, i, o.MaxGroups > 0)
		groups = append(groups, gs...)
		sh := strconv.Itoa(i)
		for _, s := range longest(lens, o.TopStreams) {
			w.Gauge("raftstream_stream_length", "Entries in the stream (the longest streams per shard, --metrics-streams).", float64(s.n), "shard", sh, "stream", s.key)
		}
	}
	if o.MaxGroups <= 0 {
		return
	}
	// The largest backlogs first; ties in a fixed order, so a scrape of
	// an unchanged node writes the same series.
	sort.Slice(groups, func(i, j int) bool {
		a, b := &groups[i], &groups[j]
		if ba, bb := a.backlog(), b.backlog(); ba != bb {
			return ba > bb
		}
		if a.shard != b.shard {
			return a.shard < b.shard
		}
		if a.stream != b.stream {
			return a.stream < b.stream
		}
		return a.Name < b.Name
	})
	kept := groups[:min(len(groups), o.MaxGroups)]
	now := time.Now().UnixMilli()
	for _, g := range kept {
		labels := []string{"shard", strconv.Itoa(g.shard), "stream", g.stream, "group", g.Name}
		w.Gauge("raftstream_stream_group_pending", "Entries in the consumer group's PEL (delivered, not acknowledged).", float64(g.Pending), labels...)
		if g.LagKnown {
			w.Gauge("raftstream_stream_group_lag", "Entries not yet delivered to the consumer group (XINFO GROUPS lag).", float64(g.Lag), labels...)
		}
		age := 0.0
		if g.oldest != math.MaxInt64 {
			age = float64(max(0, now-g.oldest)) / 1000
		}
		w.Gauge("raftstream_stream_group_oldest_pending_seconds", "Time since the earliest delivery among the consumer group's pending entries, by this node's clock (0 when none).", age, labels...)
	}
	w.Gauge("raftstream_metrics_groups", "Consumer groups on this node's shard replicas found by the last scrape.", float64(len(groups)))
	w.Gauge("raftstream_metrics_groups_dropped", "Consumer groups left without series by the last scrape (--metrics-max-groups).", float64(len(groups)-len(kept)))
}

// backlog orders groups for the cap: the entries waiting for them.
func (g *groupRow) backlog() int64 { return g.Lag + g.Pending }

// pelScan is a PEL scan to go on with in a later Read.
type pelScan struct {
	row  int // index in the shard's rows
	next engine.ID
}

// scanShard walks shard's streams: their lengths and, with groups, every
// group's figures and oldest delivery.
func scanShard(be Backend, shard int, groups bool) ([]streamLen, []groupRow) {
	var lens []streamLen
	var rows []groupRow
	var todo []pelScan
	// scanPELs runs the waiting PEL scans, at most budget entries; it
	// returns what is left of the budget. Under a Read.
	scanPELs := func(e *engine.Engine, budget int) int {
		for len(todo) > 0 && budget > 0 {
			p := &todo[0]
			r := &rows[p.row]
			oldest, next, more := e.OldestDelivery([]byte(r.stream), r.Name, p.next, budget)
			r.oldest = min(r.oldest, oldest)
			if more {
				p.next = next
				return 0
			}
			budget -= int(min(r.Pending, int64(budget))) // what the scan cost, at most
			todo = todo[1:]
		}
		return budget
	}
	cursor := "0"
	var stats []engine.GroupStat
	for chunk := 0; chunk < maxScanChunks; chunk++ {
		err := be.Read(context.Background(), shard, true, func(e *engine.Engine) {
			now := time.Now().UnixMilli()
			r, _ := e.Exec(now, [][]byte{[]byte("SCAN"), []byte(cursor), []byte("COUNT"),
				[]byte(strconv.Itoa(scanChunk)), []byte("TYPE"), []byte("stream")}).(engine.Array)
			if len(r) != 2 {
				cursor = "0"
				return
			}
			next, _ := r[0].(engine.BulkString)
			cursor = string(next)
			keys, _ := r[1].(engine.Array)
			for _, k := range keys {
				kb, _ := k.(engine.BulkString)
				n, gs, ok := e.StreamStats(kb, stats[:0])
				if !ok {
					continue
				}
				stats = gs
				lens = append(lens, streamLen{string(kb), n})
				if !groups {
					continue
				}
				for _, g := range gs {
					if g.Pending > 0 {
						todo = append(todo, pelScan{row: len(rows)})
					}
					rows = append(rows, groupRow{shard: shard, stream: string(kb), GroupStat: g, oldest: math.MaxInt64})
				}
			}
			scanPELs(e, pelChunk)
		})
		if err != nil || cursor == "0" {
			break
		}
	}
	// PELs larger than their chunk's budget: on, a Read at a time (a PEL
	// growing faster than it is read ends the scan at maxPELReads).
	for reads := 0; len(todo) > 0 && reads < maxPELReads; reads++ {
		if be.Read(context.Background(), shard, true, func(e *engine.Engine) { scanPELs(e, pelChunk) }) != nil {
			break
		}
	}
	return lens, rows
}

// longest returns up to n of lens by length, longest first (ties by name).
func longest(lens []streamLen, n int) []streamLen {
	if n <= 0 {
		return nil
	}
	sort.Slice(lens, func(i, j int) bool {
		if lens[i].n != lens[j].n {
			return lens[i].n > lens[j].n
		}
		return lens[i].key < lens[j].key
	})
	return lens[:min(len(lens), n)]
}
