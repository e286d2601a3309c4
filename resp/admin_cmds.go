package resp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
)

// RAFTSTREAM admin commands (flag admin, category @admin), used by the
// `raftstream status|transfer-leader|snapshot` subcommands:
//
//	RAFTSTREAM STATUS                       one row per LOCAL shard replica:
//	    [shard, role, term, commit-index, applied-index, last-index, leader-id, leader-changes]
//	RAFTSTREAM TRANSFER-LEADER shard [node] move leadership of a shard this node leads
//	RAFTSTREAM SNAPSHOT [shard]             snapshot one (or every) local replica; replies the count taken
//	RAFTSTREAM REMOVE-NODE node-id          drain a member and drop it from the cluster (waits)
//	RAFTSTREAM BACKUP shard | NEXT | ABORT  a shard's state at a linearizable point, in chunks (backup.go)

// adminTimeout bounds a leadership transfer.
const adminTimeout = 10 * time.Second

func cmdRaftstreamStatus(s *Server, c *client, argv [][]byte) reply {
	out := engine.Array{}
	for i := 0; i < s.be.NumShards(); i++ {
		st, ok := s.be.ShardStatus(i)
		if !ok {
			continue
		}
		var changes int64
		if fs, ok := s.be.ShardStats(i); ok {
			changes = int64(fs.LeaderChanges)
		}
		out = append(out, engine.Array{
			engine.Integer(i), engine.Bulk(st.Role), engine.Integer(st.Term),
			engine.Integer(st.CommitIndex), engine.Integer(st.AppliedIndex), engine.Integer(st.LastIndex),
			engine.Bulk(st.Leader), engine.Integer(changes),
		})
	}
	return out
}

// shardArg parses a shard number in range.
func (s *Server) shardArg(b []byte) (int, *errReply) {
	n, ok := engine.ParseInt(b)
	if !ok || n < 0 || n >= int64(s.be.NumShards()) {
		return 0, errorf("ERR invalid shard '%s' (0..%d)", b, s.be.NumShards()-1)
	}
	return int(n), nil
}

func cmdRaftstreamTransferLeader(s *Server, c *client, argv [][]byte) reply {
	shard, er := s.shardArg(argv[2])
	if er != nil {
		return er
	}
	to := ""
	if len(argv) > 3 {
		to = string(argv[3])
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if err := s.be.TransferLeader(ctx, shard, to); err != nil {
		var nl *fsm.NotLeaderError
		if errors.As(err, &nl) {
			// Leadership moved since the caller looked it up (an election
			// or the balancer): a retryable condition, not a failure.
			return errTryAgainLeader
		}
		return errorf("ERR shard %d: %s", shard, oneLine(err))
	}
	return engine.SimpleString("OK")
}

func cmdRaftstreamSnapshot(s *Server, c *client, argv [][]byte) reply {
	shards := s.hostedShards()
	if len(argv) > 2 {
		shard, er := s.shardArg(argv[2])
		if er != nil {
			return er
		}
		if _, ok := s.be.ShardStatus(shard); !ok {
			return errorf("ERR shard %d is not hosted on this node", shard)
		}
		shards = []int{shard}
	}
	taken, err := s.snapshotLocal(shards)
	if err != nil {
		return errorf("ERR %s", oneLine(err))
	}
	return engine.Integer(taken)
}

func oneLine(err error) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(fmt.Sprint(err))
}

// removeNodeTimeout bounds RAFTSTREAM REMOVE-NODE: draining moves every
// replica the node holds, which takes catch-up time per shard.
const removeNodeTimeout = 5 * time.Minute

func cmdRaftstreamRemoveNode(s *Server, c *client, argv [][]byte) reply {
	ctx, cancel := context.WithTimeout(context.Background(), removeNodeTimeout)
	defer cancel()
	if err := s.be.RemoveNode(ctx, string(argv[2])); err != nil {
		return errorf("ERR remove-node %s: %s", argv[2], oneLine(err))
	}
	return engine.SimpleString("OK")
}
