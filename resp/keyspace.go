package resp

import (
	"context"
	"sort"
	"strconv"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
)

// Keyspace commands that span every local shard. Each shard's engine answers
// for its own keys; results are merged deterministically (sums, sorted key
// lists, a cursor that walks the shards in order).

// localShards lists the shards whose keys this node serves: those it leads
// (or, on a READONLY connection, every shard it hosts).
func (s *Server) localShards(c *client) []int {
	var out []int
	for sh := 0; sh < s.be.NumShards(); sh++ {
		st, ok := s.be.ShardStatus(sh)
		if !ok {
			continue
		}
		if (c != nil && c.readonly) || s.leads(sh) || st.Role == "" {
			out = append(out, sh)
		}
	}
	return out
}

// readShard runs argv on one shard's engine.
func (s *Server) readShard(c *client, sh int, argv [][]byte) reply {
	return s.read(c, sh, -1, argv)
}

func cmdDBSize(s *Server, c *client, argv [][]byte) reply {
	var n int64
	for _, sh := range s.localShards(c) {
		r := s.readShard(c, sh, argv)
		v, ok := r.(engine.Integer)
		if !ok {
			return r
		}
		n += int64(v)
	}
	return engine.Integer(n)
}

func cmdKeys(s *Server, c *client, argv [][]byte) reply {
	var keys []string
	for _, sh := range s.localShards(c) {
		r := s.readShard(c, sh, argv)
		arr, ok := r.(engine.Array)
		if !ok {
			return r
		}
		for _, k := range arr {
			if b, ok := k.(engine.BulkString); ok {
				keys = append(keys, string(b))
			}
		}
	}
	sort.Strings(keys)
	out := make(engine.Array, len(keys))
	for i, k := range keys {
		out[i] = engine.Bulk(k)
	}
	return out
}

// cmdScan walks the local shards in order. The client's cursor encodes the
// shard position and that shard's own cursor: inner*n + position.
func cmdScan(s *Server, c *client, argv [][]byte) reply {
	shards := s.localShards(c)
	if len(shards) == 0 {
		return engine.Array{engine.Bulk("0"), engine.Array{}}
	}
	cur, err := strconv.ParseUint(string(argv[1]), 10, 64)
	if err != nil {
		return errorf("ERR invalid cursor")
	}
	n := uint64(len(shards))
	if n == 1 {
		return s.readShard(c, shards[0], argv)
	}
	pos, inner := cur%n, cur/n
	sub := append([][]byte{argv[0], []byte(strconv.FormatUint(inner, 10))}, argv[2:]...)
	r := s.readShard(c, shards[pos], sub)
	arr, ok := r.(engine.Array)
	if !ok || len(arr) != 2 {
		return r
	}
	cb, _ := arr[0].(engine.BulkString)
	next, err := strconv.ParseUint(string(cb), 10, 64)
	if err != nil {
		return r
	}
	var out uint64
	switch {
	case next != 0:
		out = next*n + pos
	case pos+1 < n:
		out = pos + 1
	default:
		out = 0
	}
	return engine.Array{engine.Bulk(strconv.FormatUint(out, 10)), arr[1]}
}

// cmdFlushAll proposes FLUSHALL to every shard this node leads.
func cmdFlushAll(s *Server, c *client, argv [][]byte) reply {
	if len(argv) > 2 {
		return errSyntax
	}
	if len(argv) == 2 {
		switch string(bytesLower(argv[1])) {
		case "sync", "async":
		default:
			return errSyntax
		}
	}
	return s.allShardsWrite([][]byte{[]byte("FLUSHALL")})
}

func bytesLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		out[i] = ch
	}
	return out
}

// waitUnit waits for a multi-command unit.
func (s *Server) waitUnit(f futureLike) ([]reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	return f.Wait(ctx)
}

// readUnit runs several read commands under one Read (an EXEC of reads).
func (s *Server) readUnit(c *client, shard, slot int, unit [][][]byte, asking bool) ([]reply, reply) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	out := make([]reply, len(unit))
	var refused reply
	err := s.be.ReadChecked(ctx, shard, c.readonly, func(e *engine.Engine, check fsm.Checker) {
		for _, argv := range unit {
			if r := check(argv, asking); r != nil {
				refused = r // the transaction goes elsewhere as a whole
				return
			}
		}
		now := e.ReadTime(nowMs())
		for i, argv := range unit {
			out[i] = e.Exec(now, argv)
		}
	})
	if err != nil {
		return nil, s.mapReadError(err, slot)
	}
	if refused != nil {
		return nil, s.redirect(refused, slot)
	}
	return out, nil
}

func sortStrings(s []string) { sort.Strings(s) }
