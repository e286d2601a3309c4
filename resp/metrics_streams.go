package resp

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/raftstream/raftstream/engine"
)

// Per-stream series (--metrics-streams N > 0): the longest streams of each
// local shard, their length, and each group's lag and PEL size. They are
// resp's to write because they are read with commands (SCAN, XLEN, XINFO
// GROUPS) that only the RESP side may run against an engine. Keys are
// walked with SCAN in chunks, each under its own short stale Read, so a
// large keyspace never holds the FSM read lock (and apply) for long; at
// most maxScanChunks chunks are read per shard and scrape.

const (
	scanChunk     = 1000
	maxScanChunks = 100
)

type streamLen struct {
	key string
	n   int64
}

// CollectStreams writes the per-stream series of the n longest streams of
// each shard replica be hosts (replicas included); n <= 0 writes none.
func CollectStreams(be Backend, n int, w MetricWriter) {
	if n <= 0 {
		return
	}
	for i := 0; i < be.NumShards(); i++ {
		if _, ok := be.ShardStatus(i); !ok {
			continue
		}
		top := longestStreams(be, i, n)
		sh := strconv.Itoa(i)
		groups := map[string]engine.Reply{}
		_ = be.Read(context.Background(), i, true, func(e *engine.Engine) {
			now := time.Now().UnixMilli()
			for _, s := range top {
				groups[s.key] = e.Exec(now, [][]byte{[]byte("XINFO"), []byte("GROUPS"), []byte(s.key)})
			}
		})
		for _, s := range top {
			w.Gauge("raftstream_stream_length", "Entries in the stream (the longest streams per shard, --metrics-streams).", float64(s.n), "shard", sh, "stream", s.key)
			gs, _ := groups[s.key].(engine.Array)
			for _, g := range gs {
				name, lag, pending, hasLag := groupFields(g)
				w.Gauge("raftstream_stream_group_pending", "Entries in the consumer group's PEL (delivered, not acknowledged).", float64(pending), "shard", sh, "stream", s.key, "group", name)
				if hasLag {
					w.Gauge("raftstream_stream_group_lag", "Entries not yet delivered to the consumer group (XINFO GROUPS lag).", float64(lag), "shard", sh, "stream", s.key, "group", name)
				}
			}
		}
	}
}

// longestStreams returns up to n streams of shard by length, longest first
// (ties by name).
func longestStreams(be Backend, shard, n int) []streamLen {
	var all []streamLen
	cursor := "0"
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
				if n, ok := e.Exec(now, [][]byte{[]byte("XLEN"), kb}).(engine.Integer); ok {
					all = append(all, streamLen{string(kb), int64(n)})
				}
			}
		})
		if err != nil || cursor == "0" {
			break
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].key < all[j].key
	})
	if len(all) > n {
		all = all[:n]
	}
	return all
}

// groupFields reads name, lag and pending from one XINFO GROUPS entry.
func groupFields(g engine.Reply) (name string, lag, pending int64, hasLag bool) {
	var kv []engine.Reply
	switch m := g.(type) {
	case engine.Map:
		kv = m
	case engine.Array:
		kv = m
	}
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(engine.BulkString)
		switch string(k) {
		case "name":
			b, _ := kv[i+1].(engine.BulkString)
			name = string(b)
		case "pending":
			n, _ := kv[i+1].(engine.Integer)
			pending = int64(n)
		case "lag":
			if n, ok := kv[i+1].(engine.Integer); ok {
				lag, hasLag = int64(n), true
			}
		}
	}
	return name, lag, pending, hasLag
}
