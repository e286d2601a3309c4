package resp

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/raftstream/raftstream/engine"
)

// Per-stream series (AdminConfig.MetricsStreams > 0): the longest streams
// of each local shard, their length, and each group's lag and PEL size.
// Keys are walked with SCAN in chunks, each under its own short StaleRead,
// so a large keyspace never holds the FSM read lock (and apply) for long;
// at most maxScanChunks chunks are read per shard and scrape.

const (
	scanChunk     = 1000
	maxScanChunks = 100
)

type streamLen struct {
	key string
	n   int64
}

func (a *Admin) collectStreams(sc *Scrape) {
	for i := 0; i < a.be.NumShards(); i++ {
		if _, ok := a.be.ShardStatus(i); !ok {
			continue
		}
		top := a.longestStreams(i)
		sh := Label{"shard", strconv.Itoa(i)}
		groups := map[string]engine.Reply{}
		_ = a.be.Read(context.Background(), i, true, func(e *engine.Engine) {
			now := time.Now().UnixMilli()
			for _, s := range top {
				groups[s.key] = e.Exec(now, [][]byte{[]byte("XINFO"), []byte("GROUPS"), []byte(s.key)})
			}
		})
		for _, s := range top {
			st := Label{"stream", s.key}
			sc.Add("raftstream_stream_length", "Entries in the stream (the longest streams per shard, --metrics-streams).", Gauge, float64(s.n), sh, st)
			gs, _ := groups[s.key].(engine.Array)
			for _, g := range gs {
				name, lag, pending, hasLag := groupFields(g)
				gl := Label{"group", name}
				sc.Add("raftstream_stream_group_pending", "Entries in the consumer group's PEL (delivered, not acknowledged).", Gauge, float64(pending), sh, st, gl)
				if hasLag {
					sc.Add("raftstream_stream_group_lag", "Entries not yet delivered to the consumer group (XINFO GROUPS lag).", Gauge, float64(lag), sh, st, gl)
				}
			}
		}
	}
}

// longestStreams returns up to MetricsStreams streams of shard by length,
// longest first (ties by name).
func (a *Admin) longestStreams(shard int) []streamLen {
	var all []streamLen
	cursor := "0"
	for chunk := 0; chunk < maxScanChunks; chunk++ {
		err := a.be.Read(context.Background(), shard, true, func(e *engine.Engine) {
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
	if len(all) > a.cfg.MetricsStreams {
		all = all[:a.cfg.MetricsStreams]
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
