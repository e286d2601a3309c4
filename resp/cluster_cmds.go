package resp

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/engine"
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

// cmdClusterSlots lists each shard's slot range with its leader first and
// its followers as replicas (where READONLY connections may read); a
// follower seen down is left out, as Redis leaves out failed replicas.
func cmdClusterSlots(s *Server, c *client, argv [][]byte) reply {
	top := s.be.Topology()
	out := engine.Array{}
	for _, sh := range top.Shards {
		row := engine.Array{engine.Integer(sh.FirstSlot), engine.Integer(sh.LastSlot)}
		for i, n := range shardNodes(top, sh) {
			if i > 0 && !n.Up {
				continue
			}
			row = append(row, engine.Array{engine.Bulk(n.Host), engine.Integer(n.Port), engine.Bulk(n.ID), engine.Map{}})
		}
		out = append(out, row)
	}
	return out
}

func cmdClusterShards(s *Server, c *client, argv [][]byte) reply {
	top := s.be.Topology()
	out := engine.Array{}
	for _, sh := range top.Shards {
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
		out = append(out, engine.Map{
			engine.Bulk("slots"), engine.Array{engine.Integer(sh.FirstSlot), engine.Integer(sh.LastSlot)},
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
		for _, sh := range top.Shards {
			if sh.Leader != n.ID {
				continue
			}
			if first >= 0 && sh.FirstSlot == last+1 {
				last = sh.LastSlot
				continue
			}
			flush()
			first, last = sh.FirstSlot, sh.LastSlot
		}
		flush()
		b.WriteString("\n")
	}
	return engine.BulkString(b.String())
}

func cmdClusterInfo(s *Server, c *client, argv [][]byte) reply {
	top := s.be.Topology()
	assigned, ok := 0, 0
	for _, sh := range top.Shards {
		n := sh.LastSlot - sh.FirstSlot + 1
		assigned += n
		if sh.Leader != "" {
			ok += n
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
	w("cluster_size", len(top.Shards))
	w("cluster_current_epoch", top.Epoch)
	w("cluster_my_epoch", top.Epoch)
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

// keysInSlot lists the keys of slot (sorted), reading its shard's engine.
func (s *Server) keysInSlot(c *client, slot int) ([]string, reply) {
	sh := s.be.ShardOfSlot(slot)
	r := s.read(c, sh, slot, [][]byte{[]byte("KEYS"), []byte("*")})
	arr, ok := r.(engine.Array)
	if !ok {
		return nil, r
	}
	var out []string
	for _, k := range arr {
		if b, ok := k.(engine.BulkString); ok && slotOf(b) == slot {
			out = append(out, string(b))
		}
	}
	sort.Strings(out)
	return out, nil
}

func cmdClusterCountKeys(s *Server, c *client, argv [][]byte) reply {
	slot, er := slotArg(argv[2])
	if er != nil {
		return er
	}
	keys, r := s.keysInSlot(c, slot)
	if r != nil {
		return r
	}
	return engine.Integer(len(keys))
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
	keys, r := s.keysInSlot(c, slot)
	if r != nil {
		return r
	}
	out := engine.Array{}
	for i := 0; i < len(keys) && int64(i) < n; i++ {
		out = append(out, engine.Bulk(keys[i]))
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
