package resp

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/resp/wire"
)

// RAFTSTREAM RETENTION (a raftstream extension): the retention policy table
// every shard holds (engine/retention.go).
//
//	RAFTSTREAM RETENTION SET <pattern> [MAXLEN n] [MAXAGE ms] [MAXBYTES b] [KEEPREF|DELREF|ACKED]
//	RAFTSTREAM RETENTION DEL <pattern>      1 if a policy was removed, else 0
//	RAFTSTREAM RETENTION GET <pattern>      the policy (a map), or null
//	RAFTSTREAM RETENTION LIST               every policy, by pattern
//	RAFTSTREAM RETENTION SHARD <n> …        the same, on shard n only (nodes use it
//	                                        to reach the shards other nodes lead)
//
// SET and DEL are proposed to every shard, through each shard's log, and
// reply once every shard has applied them: to the shards this node leads
// directly, to the others through their leader (RETENTION SHARD). They are
// idempotent, so a client retries one that failed part-way. GET and LIST
// read the table of a shard this node leads, else of shard 0 through its
// leader (linearizable either way: every shard's table is the same once a
// SET or DEL has replied); on a READONLY connection, of a local replica.

// retentionTries bounds the attempts on one shard while its leader moves.
const retentionTries = 5

func cmdRaftstreamRetention(s *Server, c *client, argv [][]byte) reply {
	shard := -1
	if engine.EqFold(argv[2], "SHARD") {
		if len(argv) < 5 {
			return errorf("ERR wrong number of arguments for 'raftstream|retention|shard' command")
		}
		sh, er := s.shardArg(argv[3])
		if er != nil {
			return er
		}
		shard, argv = sh, argv[2:]
	}
	logArgv := append([][]byte{[]byte(engine.RetentionCommand)}, argv[2:]...)
	if err := engine.Validate(nowMs(), logArgv); err != nil {
		return err
	}
	write := engine.EqFold(argv[2], "SET") || engine.EqFold(argv[2], "DEL")
	switch {
	case shard >= 0 && !write:
		r, err := s.retentionReadShard(shard, false, logArgv)
		if err != nil {
			return s.mapReadError(err, -1)
		}
		return r
	case shard >= 0:
		return s.waitOne(s.be.Submit(shard, fsm.Unit{logArgv}), -1)
	case write:
		return s.retentionEverywhere(argv[2:], logArgv)
	}
	return s.retentionRead(c, argv[2:])
}

// retentionEverywhere proposes logArgv to every shard; the reply is the
// shards' common one (for DEL, 1 if any shard removed a policy).
func (s *Server) retentionEverywhere(args, logArgv [][]byte) reply {
	n := s.be.NumShards()
	futs := make([]*fsm.Future, n)
	for sh := range n {
		futs[sh] = s.be.Submit(sh, fsm.Unit{logArgv})
	}
	f := newForwarder(s.cfg.RequirePass) // to the leaders of the others
	defer f.close()
	var out reply = engine.OK
	if engine.EqFold(args[0], "DEL") {
		out = engine.Integer(0)
	}
	merge := func(r reply) {
		if r == engine.Integer(1) {
			out = r
		}
	}
	for sh := range n {
		rs, err := s.waitFuture(futs[sh])
		if err == nil {
			if er, ok := rs[0].(*engine.Error); ok {
				return er
			}
			merge(rs[0])
			continue
		}
		r := s.retentionOnShard(f, sh, args, err)
		if er, ok := r.(*engine.Error); ok {
			return errorf("%s (shard %d; retry: RETENTION SET and DEL are idempotent)", er.Msg, sh)
		}
		merge(r)
	}
	return out
}

// retentionOnShard gets args applied to shard sh, whose local proposal
// failed with err: through its leader when another node leads it, or
// here again after a leader change.
func (s *Server) retentionOnShard(f *forwarder, sh int, args [][]byte, err error) reply {
	logArgv := append([][]byte{[]byte(engine.RetentionCommand)}, args...)
	remote := append([][]byte{[]byte("RAFTSTREAM"), []byte("RETENTION"), []byte("SHARD"), []byte(strconv.Itoa(sh))}, args...)
	return s.onShardLeader(f, sh, logArgv, remote, err)
}

// onShardLeader follows up a local proposal of logArgv to shard sh that
// failed with err: while err says another node leads sh, it sends remote
// (a RAFTSTREAM command that proposes logArgv there) to that leader, or
// proposes here again once this node leads, up to retentionTries times.
func (s *Server) onShardLeader(f *forwarder, sh int, logArgv, remote [][]byte, err error) reply {
	for try := 0; ; try++ {
		var nl *fsm.NotLeaderError
		if !errors.As(err, &nl) {
			return s.mapError(err, -1)
		}
		if addr := s.leaderRESPAddr(nl); addr != "" {
			r := s.retentionRemote(f, addr, remote)
			if er, ok := r.(*engine.Error); !ok || !retryable(er) || try == retentionTries-1 {
				return r
			}
		} else if try == retentionTries-1 {
			return errTryAgainLeader
		}
		time.Sleep(time.Duration(50*(try+1)) * time.Millisecond)
		var rs []engine.Reply
		if rs, err = s.waitFuture(s.be.Submit(sh, fsm.Unit{logArgv})); err == nil {
			return rs[0]
		}
	}
}

// retryable reports whether a shard's error reply says its leader moved.
func retryable(er *engine.Error) bool {
	return strings.HasPrefix(er.Msg, "MOVED ") || strings.HasPrefix(er.Msg, "TRYAGAIN")
}

// retentionRemote sends RAFTSTREAM RETENTION SHARD … to the node at addr
// and maps its reply back: +OK, :n, an error, or a policy or list of them.
func (s *Server) retentionRemote(f *forwarder, addr string, argv [][]byte) reply {
	raw, _, err := f.do(addr, 2, [][][]byte{argv}, s.cfg.WriteTimeout)
	if err != nil {
		return errorf("TRYAGAIN could not reach the shard's leader at %s", addr)
	}
	v, err := wire.Parse(raw)
	if err != nil {
		return errorf("ERR unexpected reply from %s: %q", addr, raw)
	}
	switch v := v.(type) {
	case wire.Error:
		return errorf("%s", string(v))
	case int64:
		return engine.Integer(v)
	case string:
		return engine.SimpleString(v)
	case []any:
		if engine.EqFold(argv[4], "GET") {
			return policyReply(v)
		}
		out := make(engine.Array, len(v))
		for i, p := range v {
			out[i] = policyReply(p)
		}
		return out
	}
	return engine.NullBulk{}
}

// retentionRead runs GET or LIST: linearizably on a shard this node leads,
// else through the leader of shard 0 (RETENTION SHARD 0 …); on a READONLY
// connection, on a local replica (possibly stale).
func (s *Server) retentionRead(c *client, args [][]byte) reply {
	logArgv := append([][]byte{[]byte(engine.RetentionCommand)}, args...)
	shard, stale := 0, c.readonly
	if stale {
		for sh := range s.be.NumShards() {
			if _, ok := s.be.ShardStatus(sh); ok {
				shard = sh
				break
			}
		}
	} else {
		for sh := range s.be.NumShards() {
			if s.leads(sh) {
				shard = sh
				break
			}
		}
	}
	r, err := s.retentionReadShard(shard, stale, logArgv)
	var nl *fsm.NotLeaderError
	if err != nil && errors.As(err, &nl) {
		if addr := s.leaderRESPAddr(nl); addr != "" {
			remote := append([][]byte{[]byte("RAFTSTREAM"), []byte("RETENTION"), []byte("SHARD"), []byte(strconv.Itoa(shard))}, args...)
			f := newForwarder(s.cfg.RequirePass)
			defer f.close()
			return s.retentionRemote(f, addr, remote)
		}
	}
	if err != nil {
		return s.mapReadError(err, -1)
	}
	return r
}

func (s *Server) retentionReadShard(shard int, stale bool, logArgv [][]byte) (reply, error) {
	var r reply
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	err := s.be.Read(ctx, shard, stale, func(e *engine.Engine) { r = e.Exec(e.ReadTime(nowMs()), logArgv) })
	return r, err
}

// policyReply turns a policy as wire.Parse decodes it (a flat key/value
// list, or nil) back into the engine's reply.
func policyReply(v any) reply {
	kv, ok := v.([]any)
	if !ok {
		return engine.NullBulk{}
	}
	out := make(engine.Map, len(kv))
	for i, x := range kv {
		switch x := x.(type) {
		case string:
			out[i] = engine.Bulk(x)
		case int64:
			out[i] = engine.Integer(x)
		default:
			out[i] = engine.NullBulk{}
		}
	}
	return out
}
