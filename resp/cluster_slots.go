package resp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/resp/wire"
	"github.com/raftstream/raftstream/slots"
)

// Moving slots between shards (used by `raftstream slots move|status`):
//
//	RAFTSTREAM SLOTS MOVE <first>-<last>|<slot> <shard>
//	    record moves of the slots to shard (one per run of slots with the
//	    same owner); replies the moves' IDs, an empty array when the slots
//	    are already the shard's. Any node accepts it (it goes to the
//	    controller leader); the moves run in the background.
//	RAFTSTREAM SLOTS STATUS
//	    the slot map's epoch, the moves in flight, each with its progress
//	    as its driver (the source shard's leader) reports it, and the map
//	    itself: [first, last, shard] per run of slots, in slot order.
//
// Redis's own topology commands (CLUSTER SETSLOT, ADDSLOTS, DELSLOTS,
// ADDSLOTSRANGE, DELSLOTSRANGE, MIGRATE) answer an error naming these.

var errTopologyCommand = errorf("ERR raftstream assigns slots itself and moves them online with RAFTSTREAM SLOTS MOVE <first>-<last> <shard> (see RAFTSTREAM SLOTS STATUS)")

func cmdClusterTopology(s *Server, c *client, argv [][]byte) reply { return errTopologyCommand }

func cmdMigrate(s *Server, c *client, argv [][]byte) reply {
	return errorf("ERR MIGRATE is not supported: raftstream moves keys with their slots, online: RAFTSTREAM SLOTS MOVE <first>-<last> <shard>")
}

// slotsMoveTimeout bounds recording a move with the controller.
const slotsMoveTimeout = 15 * time.Second

func cmdRaftstreamSlots(s *Server, c *client, argv [][]byte) reply {
	switch strings.ToUpper(string(argv[2])) {
	case "MOVE":
		if len(argv) != 5 {
			return errorf("ERR wrong number of arguments for 'raftstream|slots|move' command")
		}
		r, er := slotRangeArg(argv[3])
		if er != nil {
			return er
		}
		to, ok := engine.ParseInt(argv[4])
		if !ok || to < 0 || to >= int64(s.be.NumShards()) {
			return errorf("ERR invalid shard '%s'", argv[4])
		}
		ctx, cancel := context.WithTimeout(context.Background(), slotsMoveTimeout)
		defer cancel()
		ids, err := s.be.MoveSlots(ctx, r, int(to))
		if err != nil {
			return errorf("ERR slots move: %s", oneLine(err))
		}
		out := engine.Array{}
		for _, id := range ids {
			out = append(out, engine.Integer(int64(id)))
		}
		return out
	case "STATUS":
		if len(argv) != 3 {
			return errorf("ERR wrong number of arguments for 'raftstream|slots|status' command")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		moves := engine.Array{}
		for _, m := range s.be.SlotsStatus(ctx) {
			moves = append(moves, engine.Map{
				engine.Bulk("id"), engine.Integer(int64(m.ID)),
				engine.Bulk("slots"), engine.Bulk(slotsText(m.First, m.Last)),
				engine.Bulk("from"), engine.Integer(m.From),
				engine.Bulk("to"), engine.Integer(m.To),
				engine.Bulk("phase"), engine.Bulk(m.Phase),
				engine.Bulk("keys-moved"), engine.Integer(m.KeysMoved),
				engine.Bulk("bytes-moved"), engine.Integer(m.BytesMoved),
				engine.Bulk("keys-left"), engine.Integer(m.KeysLeft),
				engine.Bulk("driver"), engine.Bulk(m.Driver),
				engine.Bulk("error"), engine.Bulk(m.Err),
			})
		}
		top := s.be.Topology()
		runs := engine.Array{}
		for _, r := range top.Slots {
			runs = append(runs, engine.Array{engine.Integer(r.First), engine.Integer(r.Last), engine.Integer(r.Shard)})
		}
		return engine.Map{
			engine.Bulk("epoch"), engine.Integer(int64(top.SlotEpoch)),
			engine.Bulk("moves"), moves,
			engine.Bulk("map"), runs,
		}
	}
	return errorf("ERR unknown subcommand '%s'. Try RAFTSTREAM SLOTS MOVE <first>-<last> <shard> or RAFTSTREAM SLOTS STATUS.", argv[2])
}

// slotRangeArg parses "first-last" or a single slot.
func slotRangeArg(b []byte) (slots.Range, *errReply) {
	first, last, isRange := strings.Cut(string(b), "-")
	if !isRange {
		last = first
	}
	f, err1 := strconv.Atoi(first)
	l, err2 := strconv.Atoi(last)
	if err1 != nil || err2 != nil || f < 0 || l >= slots.Count || l < f {
		return slots.Range{}, errorf("ERR invalid slot range '%s' (first-last, 0-%d)", b, slots.Count-1)
	}
	return slots.Range{First: f, Last: l}, nil
}

func slotsText(first, last int) string {
	if first == last {
		return strconv.Itoa(first)
	}
	return strconv.Itoa(first) + "-" + strconv.Itoa(last)
}

// semFor is shard's in-flight permits (Config.MaxInFlight), made on first
// use: shards are added while the server runs (RAFTSTREAM SHARD ADD).
func (s *Server) semFor(shard int) chan struct{} {
	if sems := *s.sems.Load(); shard < len(sems) && sems[shard] != nil {
		return sems[shard]
	}
	s.semMu.Lock()
	defer s.semMu.Unlock()
	sems := slices.Clone(*s.sems.Load())
	if shard >= len(sems) {
		sems = append(sems, make([]chan struct{}, shard+1-len(sems))...)
	}
	if sems[shard] == nil {
		sems[shard] = make(chan struct{}, s.cfg.MaxInFlight)
	}
	s.sems.Store(&sems)
	return sems[shard]
}

// Shards (used by `raftstream shard add|remove`):
//
//	RAFTSTREAM SHARD ADD [node-id ...]
//	    add a shard (a new Raft group) on the nodes given, or where the
//	    controller places it; it owns no slots until moves give it some.
//	    Replies the new shard's number.
//	RAFTSTREAM SHARD REMOVE <shard>
//	    retire a shard that owns no slot, takes part in no move and holds
//	    no key.
//	RAFTSTREAM SHARD POLICY
//	    the automatic shard policy: auto yes|no, per-node K, and
//	    fit-hosts yes|no (K per host unit: members on a host with few
//	    CPUs count as fewer, cluster/policy.go).
//	RAFTSTREAM SHARD POLICY AUTO|OFF [PER-NODE <k>]
//	    turn it on or off, and set K (per member: fit-hosts no).
//	RAFTSTREAM SHARD CONFIG <shard> GET <pattern>
//	RAFTSTREAM SHARD CONFIG <shard> SET <param> <value> [...]
//	    the engine's replicated parameters (stream-node-*, stream-idmp-*)
//	    of that one shard, read or proposed through its leader (here, or
//	    forwarded to it); CONFIG GET/SET cover the shards a node leads.
func cmdRaftstreamShard(s *Server, c *client, argv [][]byte) reply {
	ctx, cancel := context.WithTimeout(context.Background(), slotsMoveTimeout)
	defer cancel()
	switch strings.ToUpper(string(argv[2])) {
	case "ADD":
		var nodes []string
		for _, a := range argv[3:] {
			nodes = append(nodes, string(a))
		}
		shard, err := s.be.AddShard(ctx, nodes)
		if err != nil {
			return errorf("ERR shard add: %s", oneLine(err))
		}
		if r := s.seedShard(shard); r != nil {
			return errorf("ERR shard add: shard %d is added without the retention policies (%s): set them again with RAFTSTREAM RETENTION SET", shard, r.Msg)
		}
		return engine.Integer(shard)
	case "REMOVE":
		if len(argv) != 4 {
			return errorf("ERR wrong number of arguments for 'raftstream|shard|remove' command")
		}
		shard, er := s.shardArg(argv[3])
		if er != nil {
			return er
		}
		if err := s.be.RemoveShard(ctx, shard); err != nil {
			return errorf("ERR shard remove: %s", oneLine(err))
		}
		return engine.OK
	case "POLICY":
		return shardPolicy(s, ctx, argv[3:])
	case "CONFIG":
		return shardConfig(s, argv)
	}
	return errorf("ERR unknown subcommand '%s'. Try RAFTSTREAM SHARD ADD [node-id ...], RAFTSTREAM SHARD REMOVE <shard> or RAFTSTREAM SHARD POLICY [AUTO|OFF [PER-NODE <k>]].", argv[2])
}

// shardConfig is RAFTSTREAM SHARD CONFIG <shard> GET|SET ….
func shardConfig(s *Server, argv [][]byte) reply {
	if len(argv) < 6 {
		return errorf("ERR wrong number of arguments for 'raftstream|shard|config' command")
	}
	shard, er := s.shardArg(argv[3])
	if er != nil {
		return er
	}
	logArgv := append([][]byte{[]byte("CONFIG")}, argv[4:]...)
	remote := slices.Clone(argv)
	f := newForwarder(s.cfg.RequirePass)
	defer f.close()
	switch {
	case engine.EqFold(argv[4], "GET") && len(argv) == 6:
		var cfg engine.Config
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
		defer cancel()
		err := s.be.Read(ctx, shard, false, func(e *engine.Engine) { cfg = e.Config() })
		var nl *fsm.NotLeaderError
		if err != nil && errors.As(err, &nl) {
			if addr := s.leaderRESPAddr(nl); addr != "" {
				return s.forwardedConfig(f, addr, remote)
			}
		}
		if err != nil {
			return s.mapReadError(err, -1)
		}
		out := engine.Map{}
		for _, name := range engine.ConfigNames() {
			if engine.GlobMatch(strings.ToLower(string(argv[5])), name, false) {
				v, _ := cfg.Get(name)
				out = append(out, engine.Bulk(name), engine.Bulk(v))
			}
		}
		return out
	case engine.EqFold(argv[4], "SET") && len(argv)%2 == 1:
		if r := engine.Validate(nowMs(), logArgv); r != nil {
			return r
		}
		rs, err := s.waitFuture(s.be.Submit(shard, fsm.Unit{logArgv}))
		if err == nil {
			return rs[0]
		}
		return s.onShardLeader(f, shard, logArgv, remote, err)
	}
	return errorf("ERR syntax error")
}

// forwardedConfig sends RAFTSTREAM SHARD CONFIG … GET to the node at addr
// and returns its name/value list.
func (s *Server) forwardedConfig(f *forwarder, addr string, argv [][]byte) reply {
	raw, _, err := f.do(addr, 2, [][][]byte{argv}, s.cfg.WriteTimeout)
	if err != nil {
		return errorf("TRYAGAIN could not reach the shard's leader at %s", addr)
	}
	v, err := wire.Parse(raw)
	if e, ok := v.(wire.Error); ok {
		return errorf("%s", string(e))
	}
	kv, ok := v.([]any)
	if err != nil || !ok {
		return errorf("ERR unexpected reply from %s: %q", addr, raw)
	}
	out := engine.Map{}
	for _, x := range kv {
		out = append(out, engine.Bulk(fmt.Sprint(x)))
	}
	return out
}

// shardPolicy is RAFTSTREAM SHARD POLICY.
func shardPolicy(s *Server, ctx context.Context, args [][]byte) reply {
	if len(args) == 0 {
		p := s.be.ShardPolicy()
		auto, k, fit := "no", "0", "no"
		if p != nil {
			if p.Auto {
				auto = "yes"
			}
			if p.FitHosts {
				fit = "yes"
			}
			k = strconv.FormatFloat(p.PerNode, 'g', -1, 64)
		}
		return engine.Array{engine.BulkString("auto"), engine.BulkString(auto), engine.BulkString("per-node"), engine.BulkString(k),
			engine.BulkString("fit-hosts"), engine.BulkString(fit)}
	}
	var auto bool
	switch strings.ToUpper(string(args[0])) {
	case "AUTO":
		auto = true
	case "OFF":
	default:
		return errorf("ERR syntax error")
	}
	k := 0.0
	switch {
	case len(args) == 3 && strings.EqualFold(string(args[1]), "PER-NODE"):
		v, err := strconv.ParseFloat(string(args[2]), 64)
		if err != nil || v <= 0 || v > 64 {
			return errorf("ERR PER-NODE must be a number above 0 and at most 64")
		}
		k = v
	case len(args) != 1:
		return errorf("ERR syntax error")
	}
	if err := s.be.SetShardPolicy(ctx, auto, k); err != nil {
		return errorf("ERR shard policy: %s", oneLine(err))
	}
	return engine.OK
}

// SeedShard is seedShard for a shard the shard policy added.
func (s *Server) SeedShard(shard int) error {
	if er := s.seedShard(shard); er != nil {
		return errors.New(er.Msg)
	}
	return nil
}

// seedShard gives a shard just added the retention policies the others
// have (RETENTION SET proposed them to the shards that existed then), read
// from the owner of slot 0 and set on the new shard, through the leaders
// of both wherever they are. nil once they are set.
func (s *Server) seedShard(shard int) *engine.Error {
	src := s.be.ShardOfSlot(0)
	f := newForwarder(s.cfg.RequirePass)
	defer f.close()
	list, err := s.retentionReadShard(src, false, [][]byte{[]byte(engine.RetentionCommand), []byte("LIST")})
	var nl *fsm.NotLeaderError
	if err != nil && errors.As(err, &nl) {
		if addr := s.leaderRESPAddr(nl); addr != "" {
			list, err = s.retentionRemote(f, addr, [][]byte{[]byte("RAFTSTREAM"), []byte("RETENTION"), []byte("SHARD"),
				[]byte(strconv.Itoa(src)), []byte("LIST")}), nil
		}
	}
	if err != nil {
		if er, ok := s.mapReadError(err, -1).(*engine.Error); ok {
			return er
		}
		return engine.Errorf("ERR %s", oneLine(err))
	}
	if er, ok := list.(*engine.Error); ok {
		return er
	}
	if er := s.seedConfig(f, shard); er != nil {
		return er
	}
	policies, _ := list.(engine.Array)
	for _, p := range policies {
		args := policySetArgs(p)
		if args == nil {
			continue
		}
		r, err := s.waitFuture(s.be.Submit(shard, fsm.Unit{append([][]byte{[]byte(engine.RetentionCommand)}, args...)}))
		var res reply
		if err == nil {
			res = r[0]
		} else {
			res = s.retentionOnShard(f, shard, args, err)
		}
		if er, ok := res.(*engine.Error); ok {
			return er
		}
	}
	return nil
}

// seedConfig gives a shard just added the engine parameters (CONFIG SET
// stream-node-*, stream-idmp-*) in force on the other shards this node
// hosts, where they differ from the defaults.
func (s *Server) seedConfig(f *forwarder, shard int) *engine.Error {
	cfg, def := s.engineConfigExcept(shard), engine.DefaultConfig()
	logArgv := [][]byte{[]byte("CONFIG"), []byte("SET")}
	for _, name := range engine.ConfigNames() {
		v, _ := cfg.Get(name)
		if d, _ := def.Get(name); v != d {
			logArgv = append(logArgv, []byte(name), []byte(v))
		}
	}
	if len(logArgv) == 2 {
		return nil
	}
	remote := append([][]byte{[]byte("RAFTSTREAM"), []byte("SHARD"), []byte("CONFIG"), []byte(strconv.Itoa(shard))}, logArgv[1:]...)
	var r reply
	if rs, err := s.waitFuture(s.be.Submit(shard, fsm.Unit{logArgv})); err == nil {
		r = rs[0]
	} else {
		r = s.onShardLeader(f, shard, logArgv, remote, err)
	}
	er, _ := r.(*engine.Error)
	return er
}

// policySetArgs is the RETENTION SET that makes policy p (RETENTION LIST's
// map), nil for anything else.
func policySetArgs(p reply) [][]byte {
	m, ok := p.(engine.Map)
	if !ok {
		return nil
	}
	args := [][]byte{[]byte("SET"), nil}
	for i := 0; i+1 < len(m); i += 2 {
		name, _ := m[i].(engine.BulkString)
		switch v := m[i+1].(type) {
		case engine.BulkString:
			switch string(name) {
			case "pattern":
				args[1] = v
			case "mode":
				args = append(args, []byte(strings.ToUpper(string(v))))
			}
		case engine.Integer:
			args = append(args, []byte(strings.ToUpper(string(name))), []byte(strconv.FormatInt(int64(v), 10)))
		}
	}
	if args[1] == nil {
		return nil
	}
	return args
}
