package resp

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/slots"
)

// CLUSTER subcommands, answered from Backend.Topology (and the engines for
// the key-counting ones).

func cmdClusterKeyslot(s *Server, c *client, argv [][]byte) reply {
	return engine.Integer(slotOf(argv[2]))
}

func cmdClusterMyID(s *Server, c *client, argv [][]byte) reply {
	return engine.Bulk(s.be.Topology().MyID)
}

func nodeByID(top cluster.Topology, id string) (cluster.NodeInfo, bool) {
	for _, n := range top.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return cluster.NodeInfo{}, false
}

// shardNodes returns the shard's nodes: its leader first, then the other
// replicas in ID order.
func shardNodes(top cluster.Topology, sh cluster.ShardInfo) []cluster.NodeInfo {
	var out []cluster.NodeInfo
	if n, ok := nodeByID(top, sh.Leader); ok {
		out = append(out, n)
	}
	reps := append([]string(nil), sh.Replicas...)
	sort.Strings(reps)
	var self []cluster.NodeInfo
	for _, id := range reps {
		if id == sh.Leader {
			continue
		}
		if n, ok := nodeByID(top, id); ok {
			if sh.Leader == "" && id == top.MyID {
				// No leader known: this node surely does not lead, so it is
				// not the one to list first (clients take the first as the
				// master and would get TRYAGAIN from it, never MOVED).
				self = append(self, n)
				continue
			}
			out = append(out, n)
		}
	}
	return append(out, self...)
}

// cmdClusterSlots answers one row per run of consecutive slots owned by one
// shard, in slot order (Redis 7.0 walks the slots in order too), each with
// the shard's leader first and its followers as replicas (where READONLY
// connections may read); a follower seen down is left out, as Redis leaves
// out failed replicas.
func cmdClusterSlots(s *Server, c *client, argv [][]byte) reply {
	top := s.be.Topology()
	out := engine.Array{}
	for _, run := range top.Slots {
		if run.Shard >= len(top.Shards) {
			continue
		}
		row := engine.Array{engine.Integer(run.First), engine.Integer(run.Last)}
		for i, n := range shardNodes(top, top.Shards[run.Shard]) {
			if i > 0 && !n.Up {
				continue
			}
			row = append(row, engine.Array{engine.Bulk(n.Host), engine.Integer(n.Port), engine.Bulk(n.ID), engine.Map{}})
		}
		out = append(out, row)
	}
	return out
}

// cmdClusterShards answers one entry per live shard (a retired shard has no
// replicas and is left out), its slot ranges as start/end pairs — none for
// a shard that owns no slot, as Redis shows a master without slots.
func cmdClusterShards(s *Server, c *client, argv [][]byte) reply {
	top := s.be.Topology()
	out := engine.Array{}
	for _, sh := range top.Shards {
		if len(sh.Replicas) == 0 && len(top.Nodes) > 1 {
			continue
		}
		var nodes engine.Array
		for i, n := range shardNodes(top, sh) {
			role := "replica"
			if i == 0 && n.ID == sh.Leader {
				role = "master"
			}
			health := "online"
			if !n.Up {
				health = "fail"
			}
			nodes = append(nodes, engine.Map{
				engine.Bulk("id"), engine.Bulk(n.ID),
				engine.Bulk("port"), engine.Integer(n.Port),
				engine.Bulk("ip"), engine.Bulk(n.Host),
				engine.Bulk("endpoint"), engine.Bulk(n.Host),
				engine.Bulk("role"), engine.Bulk(role),
				engine.Bulk("replication-offset"), engine.Integer(0),
				engine.Bulk("health"), engine.Bulk(health),
			})
		}
		if nodes == nil {
			nodes = engine.Array{}
		}
		ranges := engine.Array{}
		for _, r := range sh.Slots {
			ranges = append(ranges, engine.Integer(r.First), engine.Integer(r.Last))
		}
		out = append(out, engine.Map{
			engine.Bulk("slots"), ranges,
			engine.Bulk("nodes"), nodes,
		})
	}
	return out
}

// cmdClusterNodes prints Redis's CLUSTER NODES lines. Every node is shown as
// a master of the shards it leads (a node leading none is shown as a master
// without slots): a node leads some shards and follows others, which a
// NODES line (one role per node) cannot say, so the followers of a shard
// appear in CLUSTER SLOTS and SHARDS only. Every node shows the
// membership epoch as its config epoch; slot ownership changes with Raft
// leadership, not with epochs (deploy/OPERATIONS.md).
func cmdClusterNodes(s *Server, c *client, argv [][]byte) reply {
	top := s.be.Topology()
	nodes := append([]cluster.NodeInfo(nil), top.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	var b strings.Builder
	for _, n := range nodes {
		flags := "master"
		if n.ID == top.MyID {
			flags = "myself,master"
		}
		if !n.Up {
			flags += ",fail"
		}
		link := "connected"
		if !n.Up {
			link = "disconnected"
		}
		fmt.Fprintf(&b, "%s %s:%d@%d %s - 0 0 %d %s", n.ID, n.Host, n.Port, n.Bus, flags, top.Epoch, link)
		// Contiguous ranges led by the node print as one, as Redis does.
		var led []slots.Range
		for _, sh := range top.Shards {
			if sh.Leader == n.ID {
				led = append(led, sh.Slots...)
			}
		}
		sort.Slice(led, func(i, j int) bool { return led[i].First < led[j].First })
		first, last := -1, -1
		flush := func() {
			switch {
			case first < 0:
			case first == last:
				fmt.Fprintf(&b, " %d", first)
			default:
				fmt.Fprintf(&b, " %d-%d", first, last)
			}
		}
		for _, r := range led {
			if first >= 0 && r.First == last+1 {
				last = r.Last
				continue
			}
			flush()
			first, last = r.First, r.Last
		}
		flush()
		if n.ID == top.MyID {
			writeOpenSlots(&b, top)
		}
		b.WriteString("\n")
	}
	return engine.BulkString(b.String())
}

// writeOpenSlots adds Redis's open-slot marks to this node's CLUSTER NODES
// line for the moves in flight whose source ([slot->-target]) or target
// ([slot-<-source]) shard it leads, naming the other side's leader.
func writeOpenSlots(b *strings.Builder, top cluster.Topology) {
	leader := func(shard int) string {
		if shard >= 0 && shard < len(top.Shards) && top.Shards[shard].Leader != "" {
			return top.Shards[shard].Leader
		}
		return "-"
	}
	for _, mv := range top.Moves {
		from, to := leader(mv.From), leader(mv.To)
		for sl := mv.First; sl <= mv.Last; sl++ {
			switch top.MyID {
			case from:
				fmt.Fprintf(b, " [%d->-%s]", sl, to)
			case to:
				fmt.Fprintf(b, " [%d-<-%s]", sl, from)
			}
		}
	}
}

func cmdClusterInfo(s *Server, c *client, argv [][]byte) reply {
	top := s.be.Topology()
	assigned, ok, size := 0, 0, 0
	for _, run := range top.Slots {
		n := run.Last - run.First + 1
		assigned += n
		if run.Shard < len(top.Shards) && top.Shards[run.Shard].Leader != "" {
			ok += n
		}
	}
	for _, sh := range top.Shards {
		if len(sh.Slots) > 0 {
			size++
		}
	}
	state := "ok"
	if ok < 16384 {
		state = "fail"
	}
	var b strings.Builder
	w := func(k string, v any) { fmt.Fprintf(&b, "%s:%v\r\n", k, v) }
	w("cluster_state", state)
	w("cluster_slots_assigned", assigned)
	w("cluster_slots_ok", ok)
	w("cluster_slots_pfail", 0)
	w("cluster_slots_fail", assigned-ok)
	w("cluster_known_nodes", len(top.Nodes))
	w("cluster_size", size)
	w("cluster_current_epoch", top.Epoch)
	w("cluster_my_epoch", top.Epoch)
	w("raftstream_slots_epoch", top.SlotEpoch)
	w("raftstream_slot_moves", len(top.Moves))
	w("raftstream_shards", s.be.NumShards())
	return engine.BulkString(b.String())
}

func slotArg(b []byte) (int, *errReply) {
	n, ok := engine.ParseInt(b)
	if !ok || n < 0 || n >= 16384 {
		return 0, errorf("ERR Invalid slot")
	}
	return int(n), nil
}

// slotKeys reads the keys of slot this node holds, as Redis counts a node's
// own keys: those of the shards it leads (every shard it hosts, on a
// READONLY connection) that may hold keys of the slot — its owner, and
// both sides of a move in flight. It returns how many, and (count >= 0) up
// to count of them in byte order. A node holding none answers 0.
func (s *Server) slotKeys(c *client, slot, count int) (int, []string, reply) {
	cands := []int{s.be.ShardOfSlot(slot)}
	if from, to, ok := s.be.SlotMoving(slot); ok {
		cands = append(cands, from, to)
	}
	local := s.localShards(c)
	total := 0
	var keys []string
	seen := map[int]bool{}
	for _, sh := range cands {
		if seen[sh] || !slices.Contains(local, sh) {
			continue
		}
		seen[sh] = true
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
		err := s.be.Read(ctx, sh, c.readonly, func(e *engine.Engine) {
			total += e.CountKeysInSlot(slot)
			if count >= 0 {
				keys = append(keys, e.KeysInSlot(slot, count)...)
			}
		})
		cancel()
		if err != nil {
			return 0, nil, s.mapReadError(err, slot)
		}
	}
	sort.Strings(keys)
	if count >= 0 && len(keys) > count {
		keys = keys[:count]
	}
	return total, keys, nil
}

func cmdClusterCountKeys(s *Server, c *client, argv [][]byte) reply {
	slot, er := slotArg(argv[2])
	if er != nil {
		return er
	}
	n, _, r := s.slotKeys(c, slot, -1)
	if r != nil {
		return r
	}
	return engine.Integer(n)
}

func cmdClusterGetKeys(s *Server, c *client, argv [][]byte) reply {
	slot, er := slotArg(argv[2])
	if er != nil {
		return er
	}
	n, ok := engine.ParseInt(argv[3])
	if !ok || n < 0 {
		return errorf("ERR Invalid number of keys")
	}
	_, keys, r := s.slotKeys(c, slot, int(min(n, 1<<30)))
	if r != nil {
		return r
	}
	out := engine.Array{}
	for _, k := range keys {
		out = append(out, engine.Bulk(k))
	}
	return out
}

// cmdClusterReplicas implements CLUSTER REPLICAS node-id. CLUSTER NODES
// shows every node as a master with no replica (cmdClusterNodes), so the
// answer, consistent with it, is an empty list for every known node; a
// shard's followers are listed by CLUSTER SLOTS and SHARDS.
func cmdClusterReplicas(s *Server, c *client, argv [][]byte) reply {
	if _, ok := nodeByID(s.be.Topology(), string(argv[2])); !ok {
		return errorf("ERR Unknown node %s", argv[2])
	}
	return engine.Array{}
}

// cmdClusterMyShardID implements CLUSTER MYSHARDID (Redis 7.2). In CLUSTER
// NODES each node is a master of its own, so each is its own Redis shard:
// the ID is derived from the node ID (SHA-1 of "shard:" and the node ID),
// stable across restarts and the same wherever it is computed.
func cmdClusterMyShardID(s *Server, c *client, argv [][]byte) reply {
	return engine.Bulk(shardID(s.be.Topology().MyID))
}

func shardID(nodeID string) string {
	sum := sha1.Sum([]byte("shard:" + nodeID))
	return hex.EncodeToString(sum[:])
}

// cmdClusterLinks implements CLUSTER LINKS: for every other member this
// node reaches, the outbound ("to") and inbound ("from") link, as Redis
// lists a peer's two cluster-bus links, created when the member last
// started answering. The bus multiplexes every Raft group and the
// membership polls over those connections; their buffers are not
// accounted, so both sizes are 0.
func cmdClusterLinks(s *Server, c *client, argv [][]byte) reply {
	top := s.be.Topology()
	out := engine.Array{}
	for _, n := range top.Nodes {
		if n.ID == top.MyID || !n.Up {
			continue
		}
		created := int64(0)
		if !n.UpSince.IsZero() {
			created = n.UpSince.UnixMilli()
		}
		for _, dir := range []string{"to", "from"} {
			out = append(out, engine.Map{
				engine.Bulk("direction"), engine.Bulk(dir),
				engine.Bulk("node"), engine.Bulk(n.ID),
				engine.Bulk("create-time"), engine.Integer(created),
				engine.Bulk("events"), engine.Bulk("r"),
				engine.Bulk("send-buffer-allocated"), engine.Integer(0),
				engine.Bulk("send-buffer-used"), engine.Integer(0),
			})
		}
	}
	return out
}
