package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/slots"
)

// Moving a slot range from shard A to shard B, online (DESIGN.md, "Slot
// moves"). The controller records the move (SlotTable.Moves); the node
// leading A drives it, through A's and B's logs (fsm/migrate.go):
//
//  1. B: IMPORTING (B serves ASKING commands for the slots);
//  2. A: MIGRATING, the fence: from that log position A creates no key in
//     the slots (-ASK B) and serves the keys it has;
//  3. rounds: A: EXPORT a batch of keys (frozen: TRYAGAIN), copy each
//     key's encoding to B (PUT, or CHUNKs + COMMIT for a big one), rate
//     limited; A: EXPORTED (deleted here; -ASK B from then on);
//  4. A: MIGRATED once no key is left (-ASK B for everything);
//  5. B: IMPORTED (B owns the slots);
//  6. controller: flip (the slots belong to B, slot epoch +1, the move
//     is removed): clients get -MOVED to B once their node has the new map;
//  7. A: DONE (-MOVED B for the slots, even to a node with an old map).
//
// Every step is idempotent and the driver reads where it is from A's log
// (the slot modes and the keys in transit), so a new leader of A, after a
// crash, a partition or a transfer, resumes where the old one was; a new
// leader of B has B's log. Nothing is rolled back once A is fenced: the
// move can only complete (keys already on B may have been written there).

// migrateInterval is how often a node looks for moves to drive.
const migrateInterval = 200 * time.Millisecond

// Defaults of the move rate limit and the entry size of key transfers.
const (
	DefaultMigrateRate  = 16 << 20 // bytes/s per node
	DefaultMigrateChunk = 256 << 10
	// maxRoundKeys bounds the keys frozen in one export round.
	maxRoundKeys = 256
)

// moveProgress is what a driver reports about a move (RAFTSTREAM SLOTS
// STATUS).
type moveProgress struct {
	mu                    sync.Mutex
	phase                 string
	keys, bytes, rounds   int64
	started, lastProgress time.Time
	lastErr               string
}

// MoveStatus is one slot move in flight as RAFTSTREAM SLOTS STATUS shows it.
type MoveStatus struct {
	SlotMove
	// Phase is where the source shard is: new, migrating, migrated, done;
	// "unknown" when its leader could not be asked.
	Phase string
	// KeysMoved and BytesMoved count what the current driver (the source
	// leader) copied to the target since it took the move over; KeysLeft
	// is how many keys the source still holds in the slots.
	KeysMoved, BytesMoved, KeysLeft int64
	// Driver is the node driving the move ("" if none).
	Driver string
	// Err is the driver's last error, if the move is stuck on one.
	Err string
}

// migrator is a node's set of running move drivers.
type migrator struct {
	mu      sync.Mutex
	running map[uint64]context.CancelFunc
	prog    map[uint64]*moveProgress
	lim     *rateLimiter
}

// migrateLoop starts a driver for every move whose source shard this node
// leads, stops drivers whose move is gone or whose leadership is lost, and
// finishes moves the log left half-done (DONE after a flip).
func (n *Node) migrateLoop() {
	t := time.NewTicker(migrateInterval)
	defer t.Stop()
	for {
		select {
		case <-n.shutdownCh:
			n.mig.stopAll()
			return
		case <-t.C:
		}
		n.migrateOnce()
	}
}

func (n *Node) migrateOnce() {
	view := n.slots.Load()
	want := map[uint64]SlotMove{}
	for _, mv := range view.moves {
		if ls := n.shard(mv.From); ls != nil && ls.s.IsLeader() {
			want[mv.ID] = mv
		}
	}
	n.mig.mu.Lock()
	for id, cancel := range n.mig.running {
		if _, ok := want[id]; !ok {
			cancel()
			delete(n.mig.running, id)
		}
	}
	for id, mv := range want {
		if _, ok := n.mig.running[id]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		n.mig.running[id] = cancel
		p := &moveProgress{phase: "new", started: time.Now()}
		n.mig.prog[id] = p
		n.goFunc(func() {
			defer cancel()
			n.driveMove(ctx, mv, p)
			n.mig.mu.Lock()
			delete(n.mig.running, mv.ID)
			n.mig.mu.Unlock()
		})
	}
	for id := range n.mig.prog {
		if _, ok := n.mig.running[id]; !ok {
			delete(n.mig.prog, id)
		}
	}
	n.mig.mu.Unlock()
	n.finishMoves(view)
	n.freshShards()
}

func (mg *migrator) stopAll() {
	mg.mu.Lock()
	defer mg.mu.Unlock()
	for _, cancel := range mg.running {
		cancel()
	}
}

// finishMoves takes the last step of moves the controller has flipped: a
// shard this node leads whose slots are still "migrated" for a move no
// longer in flight, and now mapped elsewhere, is told DONE; one still
// "importing" for a flipped move whose slots the map gives it is told
// IMPORTED (a driver that died between the steps).
func (n *Node) finishMoves(view *slotView) {
	st := n.st.Load()
	for i, ls := range st.shards {
		if ls == nil || !ls.s.IsLeader() {
			continue
		}
		for _, run := range ls.s.SlotRuns() {
			if _, inFlight := view.moveByID(run.Move); inFlight {
				continue
			}
			owner := view.m.Shard(run.First)
			var sub string
			switch {
			case run.Mode == "migrated" && owner == run.Peer:
				sub = "DONE"
			case run.Mode == "importing" && owner == i:
				sub = "IMPORTED"
			default:
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := n.slotCmd(ctx, i, sub, run.Move, strconv.Itoa(run.First), strconv.Itoa(run.Last))
			cancel()
			n.log.Info("slot move: finishing", "shard", i, "move", run.Move, "step", sub, "first", run.First, "last", run.Last, "err", err)
		}
	}
}

// moveByID returns the move in flight with id.
func (v *slotView) moveByID(id uint64) (SlotMove, bool) {
	for _, mv := range v.moves {
		if mv.ID == id {
			return mv, true
		}
	}
	return SlotMove{}, false
}

// driveMove runs move mv while this node leads its source shard.
func (n *Node) driveMove(ctx context.Context, mv SlotMove, p *moveProgress) {
	log := n.log.With("move", mv.ID, "first", mv.First, "last", mv.Last, "from", mv.From, "to", mv.To)
	log.Info("slot move: driving")
	backoff := 100 * time.Millisecond
	importing := false
	for ctx.Err() == nil {
		ls := n.shard(mv.From)
		if ls == nil || !ls.s.IsLeader() {
			return
		}
		phase := movePhase(ls.s.SlotStates(mv.Range()), mv.ID)
		p.set(func(p *moveProgress) { p.phase = phase })
		var err error
		switch phase {
		case "new":
			if err = n.remoteImporting(ctx, mv); err == nil {
				importing = true
				_, err = n.slotCmd(ctx, mv.From, "MIGRATING", mv.ID, strconv.Itoa(mv.First), strconv.Itoa(mv.Last), strconv.Itoa(mv.To))
			}
		case "migrating":
			if !importing {
				if err = n.remoteImporting(ctx, mv); err != nil {
					break
				}
				importing = true
			}
			var left bool
			left, err = n.exportRound(ctx, ls, mv, p)
			if err == nil && !left {
				_, err = n.slotCmd(ctx, mv.From, "MIGRATED", mv.ID, strconv.Itoa(mv.First), strconv.Itoa(mv.Last))
			}
		case "migrated":
			if _, err = n.slotCmd(ctx, mv.To, "IMPORTED", mv.ID, strconv.Itoa(mv.First), strconv.Itoa(mv.Last)); err == nil {
				err = n.flipMove(ctx, mv)
			}
			if err == nil {
				// The controller has flipped: tell A, so that every node's
				// clients get MOVED to B. finishMoves does it too should
				// this driver stop first.
				_, err = n.slotCmd(ctx, mv.From, "DONE", mv.ID, strconv.Itoa(mv.First), strconv.Itoa(mv.Last))
				if err == nil {
					log.Info("slot move: done", "keys", p.get().keys, "bytes", p.get().bytes, "took", time.Since(p.started).Round(time.Millisecond))
					return
				}
			}
		case "done":
			err = n.flipMove(ctx, mv)
			if err == nil {
				return
			}
		default:
			err = fmt.Errorf("source shard slots are %s", phase)
		}
		if err == nil {
			backoff = 100 * time.Millisecond
			continue
		}
		if ctx.Err() != nil {
			return
		}
		p.set(func(p *moveProgress) { p.lastErr = err.Error() })
		log.Info("slot move: step failed, retrying", "phase", phase, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// movePhase is where the source shard is with move id: every slot of the
// range is in the same mode (steps change the whole range at once).
func movePhase(states []fsm.SlotState, id uint64) string {
	phase := ""
	for _, st := range states {
		var ph string
		switch {
		case st.Mode == "owned":
			ph = "new"
		case st.Move != id:
			return st.Mode + " by move " + strconv.FormatUint(st.Move, 10)
		case st.Mode == "gone":
			ph = "done"
		default:
			ph = st.Mode
		}
		if phase != "" && ph != phase {
			return "mixed"
		}
		phase = ph
	}
	return phase
}

func (p *moveProgress) set(f func(*moveProgress)) {
	p.mu.Lock()
	f(p)
	p.mu.Unlock()
}

func (p *moveProgress) get() moveProgress {
	p.mu.Lock()
	defer p.mu.Unlock()
	return moveProgress{phase: p.phase, keys: p.keys, bytes: p.bytes, rounds: p.rounds, started: p.started,
		lastProgress: p.lastProgress, lastErr: p.lastErr}
}

// remoteImporting puts B's slots in importing mode (idempotent).
func (n *Node) remoteImporting(ctx context.Context, mv SlotMove) error {
	_, err := n.slotCmd(ctx, mv.To, "IMPORTING", mv.ID, strconv.Itoa(mv.First), strconv.Itoa(mv.Last), strconv.Itoa(mv.From))
	return err
}

// exportRound moves one batch of keys: the keys already in transit (a
// round a previous leader left unfinished), or else the next keys of the
// range, up to about one chunk of bytes. It reports whether any key was
// left to move.
func (n *Node) exportRound(ctx context.Context, ls *localShard, mv SlotMove, p *moveProgress) (bool, error) {
	keys := ls.s.TransitKeys(mv.ID)
	if len(keys) == 0 {
		var err error
		if keys, err = n.nextKeys(ctx, ls, mv); err != nil || len(keys) == 0 {
			return false, err
		}
		args := append([]string{strconv.FormatUint(mv.ID, 10)}, keys...)
		rs, err := n.submitLocal(ctx, mv.From, "EXPORT", args...)
		if err != nil {
			return true, err
		}
		keys = keys[:0]
		if a, ok := rs.(engine.Array); ok {
			for _, k := range a {
				if b, ok := k.(engine.BulkString); ok {
					keys = append(keys, string(b))
				}
			}
		}
		if len(keys) == 0 {
			return true, nil // they were deleted meanwhile
		}
	}
	chunk := n.cfg.MigrateChunk
	var put []string // key, data pairs of one PUT
	putBytes := 0
	flush := func() error {
		if len(put) == 0 {
			return nil
		}
		args := append([]string{strconv.FormatUint(mv.ID, 10)}, put...)
		rs, err := n.slotCmdArgs(ctx, mv.To, "PUT", args)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if strings.HasPrefix(r, "-") {
				return errors.New(r[1:])
			}
		}
		put, putBytes = put[:0], 0
		return nil
	}
	var moved int64
	for _, k := range keys {
		data, err := n.dumpKey(ctx, ls, k)
		if err != nil {
			return true, err
		}
		if data == nil {
			continue // not here any more: EXPORTED will skip it
		}
		if err := n.mig.lim.wait(ctx, len(data)); err != nil {
			return true, err
		}
		moved += int64(len(data))
		if len(data) > chunk {
			if err := n.sendChunked(ctx, mv, k, data); err != nil {
				return true, err
			}
			continue
		}
		if putBytes+len(data) > chunk {
			if err := flush(); err != nil {
				return true, err
			}
		}
		put = append(put, k, string(data))
		putBytes += len(data) + len(k)
	}
	if err := flush(); err != nil {
		return true, err
	}
	args := append([]string{strconv.FormatUint(mv.ID, 10)}, keys...)
	if _, err := n.submitLocal(ctx, mv.From, "EXPORTED", args...); err != nil {
		return true, err
	}
	p.set(func(p *moveProgress) {
		p.keys += int64(len(keys))
		p.bytes += moved
		p.rounds++
		p.lastProgress = time.Now()
		p.lastErr = ""
	})
	return true, nil
}

// nextKeys picks the next keys of mv's range in the source: in slot and
// key order, until their estimated size reaches a chunk (at least one).
func (n *Node) nextKeys(ctx context.Context, ls *localShard, mv SlotMove) ([]string, error) {
	var keys []string
	err := ls.s.Read(ctx, func(e *engine.Engine) {
		size := int64(0)
		for _, sl := range e.SlotsWithKeys(mv.Range()) {
			for _, k := range e.KeysInSlot(sl, maxRoundKeys-len(keys)) {
				keys = append(keys, k)
				size += e.KeySize(k)
				if size >= int64(n.cfg.MigrateChunk) || len(keys) >= maxRoundKeys {
					return
				}
			}
		}
	})
	return keys, err
}

// dumpKey reads key's encoding on the source (a linearizable read: this
// node still leads it); nil if the key is gone.
func (n *Node) dumpKey(ctx context.Context, ls *localShard, key string) ([]byte, error) {
	var data []byte
	err := ls.s.Read(ctx, func(e *engine.Engine) { data, _ = e.DumpKey(key) })
	return data, err
}

// sendChunked copies a key larger than a chunk: CHUNKs staged in B's log,
// then a COMMIT that installs it. B answers each chunk with the bytes it
// has staged, so a chunk lost to a leader change is sent again.
func (n *Node) sendChunked(ctx context.Context, mv SlotMove, key string, data []byte) error {
	id := strconv.FormatUint(mv.ID, 10)
	total := strconv.Itoa(len(data))
	chunk := n.cfg.MigrateChunk
	off := 0
	for tries := 0; off < len(data); tries++ {
		if tries > 4*len(data)/chunk+16 {
			return fmt.Errorf("key %q: chunks keep failing at offset %d", key, off)
		}
		end := min(off+chunk, len(data))
		r, err := n.slotCmdArgs(ctx, mv.To, "CHUNK", []string{id, key, total, strconv.Itoa(off), string(data[off:end])})
		if err != nil {
			return err
		}
		got, err := strconv.Atoi(r[0])
		if err != nil {
			return fmt.Errorf("CHUNK reply %q", r[0])
		}
		off = got
	}
	crc := strconv.FormatUint(uint64(crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))), 10)
	_, err := n.slotCmdArgs(ctx, mv.To, "COMMIT", []string{id, key, total, crc})
	return err
}

// flipMove asks the controller leader to give mv's slots to its target.
func (n *Node) flipMove(ctx context.Context, mv SlotMove) error {
	_, err := n.toController(ctx, slotRPC{Op: "flip", Move: mv.ID})
	if err != nil {
		return err
	}
	// Wait until this node has adopted the flipped map.
	var epoch uint64
	for ctx.Err() == nil {
		v := n.slots.Load()
		if _, in := v.moveByID(mv.ID); !in && v.m.Shard(mv.First) == mv.To {
			epoch = v.epoch
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	n.awaitSlotEpoch(ctx, epoch, flipSpread)
	return nil
}

// flipSpread bounds how long a driver waits, after the controller flipped
// a move, for every member to route by the new map before it tells the
// source DONE. Until then the source answers ASK, which a client follows
// whatever map its node has; MOVED to the target sent to a node that still
// routes the slot to the source would send the client back and forth.
const flipSpread = 10 * time.Second

// awaitSlotEpoch waits until every member that answers has a slot map of
// epoch at least e, or d has passed (a member down meanwhile is not waited
// for: it adopts the map when it comes back, before it serves).
func (n *Node) awaitSlotEpoch(ctx context.Context, e uint64, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		behind := false
		for _, mb := range n.st.Load().members.Nodes {
			if mb.ID == n.id {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			res, err := n.call(cctx, mb.Bus, rpcRequest{Op: "slots", From: n.self, Slots: &slotRPC{Op: "epoch"}})
			cancel()
			if err == nil && len(res.SlotReply) == 1 {
				if got, _ := strconv.ParseUint(res.SlotReply[0], 10, 64); got < e {
					behind = true
				}
			}
		}
		if !behind {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// slotCmd runs "RSSLOTS sub move args..." on shard's leader (here or on the
// node leading it) and returns the reply as strings.
func (n *Node) slotCmd(ctx context.Context, shard int, sub string, move uint64, args ...string) ([]string, error) {
	return n.slotCmdArgs(ctx, shard, sub, append([]string{strconv.FormatUint(move, 10)}, args...))
}

// submitLocal proposes "RSSLOTS sub args..." to the local replica of shard,
// which must lead it.
func (n *Node) submitLocal(ctx context.Context, shard int, sub string, args ...string) (engine.Reply, error) {
	ls := n.shard(shard)
	if ls == nil || !ls.s.IsLeader() {
		return nil, fmt.Errorf("shard %d: not its leader", shard)
	}
	return submitSlotCmd(ctx, ls, rsslots(sub, args))
}

func rsslots(sub string, args []string) [][]byte {
	argv := make([][]byte, 0, len(args)+2)
	argv = append(argv, []byte("RSSLOTS"), []byte(sub))
	for _, a := range args {
		argv = append(argv, []byte(a))
	}
	return argv
}

// submitSlotCmd proposes one RSSLOTS command and returns its reply; an
// error reply is returned as an error.
func submitSlotCmd(ctx context.Context, ls *localShard, argv [][]byte) (engine.Reply, error) {
	rs, err := ls.s.Submit(fsm.Unit{argv}).Wait(ctx)
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("%d replies", len(rs))
	}
	if e, ok := rs[0].(*engine.Error); ok {
		return nil, errors.New(e.Msg)
	}
	return rs[0], nil
}

// replyStrings flattens a reply of RSSLOTS for the wire.
func replyStrings(r engine.Reply) []string {
	switch v := r.(type) {
	case engine.Array:
		var out []string
		for _, x := range v {
			out = append(out, replyStrings(x)...)
		}
		return out
	case engine.SimpleString:
		return []string{string(v)}
	case engine.BulkString:
		return []string{string(v)}
	case engine.Integer:
		return []string{strconv.FormatInt(int64(v), 10)}
	case *engine.Error:
		return []string{"-" + v.Msg}
	}
	return []string{fmt.Sprint(r)}
}

// slotCmdArgs is slotCmd with the move among args.
func (n *Node) slotCmdArgs(ctx context.Context, shard int, sub string, args []string) ([]string, error) {
	argv := rsslots(sub, args)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if ls := n.shard(shard); ls != nil && ls.s.IsLeader() {
		r, err := submitSlotCmd(cctx, ls, argv)
		if err != nil {
			return nil, err
		}
		return replyStrings(r), nil
	}
	id := n.health.leaderOf(shard)
	if id == "" || id == n.id {
		return nil, fmt.Errorf("shard %d: leader unknown", shard)
	}
	m, ok := n.st.Load().members.Node(id)
	if !ok {
		return nil, fmt.Errorf("shard %d: leader %s is not a member", shard, id)
	}
	res, err := n.call(cctx, m.Bus, rpcRequest{Op: "slots", From: n.self, Slots: &slotRPC{Op: "submit", Shard: shard, Argv: argv}})
	if err != nil {
		return nil, err
	}
	return res.SlotReply, nil
}

// slotRPC is the body of the "slots" RPC op: a command for a shard's leader
// (submit) or a request to the controller leader (move, flip, add-shard,
// remove-shard), or a status question to a move's driver.
type slotRPC struct {
	Op     string   `json:"op"`
	Shard  int      `json:"shard,omitempty"`
	Argv   [][]byte `json:"argv,omitempty"`
	Move   uint64   `json:"move,omitempty"`
	First  int      `json:"first,omitempty"`
	Last   int      `json:"last,omitempty"`
	To     int      `json:"to,omitempty"`
	Nodes  []string `json:"nodes,omitempty"`
	Remove int      `json:"remove,omitempty"`
	// ByPolicy marks the shard policy's own requests (policy.go); any
	// other move, shard add or removal turns the policy off.
	ByPolicy bool `json:"by_policy,omitempty"`
}

// serveSlotRPC answers a "slots" RPC.
func (n *Node) serveSlotRPC(req *slotRPC, res *rpcResponse) {
	switch req.Op {
	case "submit":
		ls := n.shard(req.Shard)
		if ls == nil || !ls.s.IsLeader() || len(req.Argv) < 2 || string(req.Argv[0]) != "RSSLOTS" {
			res.Err = fmt.Sprintf("shard %d: not its leader", req.Shard)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := submitSlotCmd(ctx, ls, req.Argv)
		if err != nil {
			res.Err = err.Error()
			return
		}
		res.SlotReply = replyStrings(r)
	case "status":
		res.SlotStatus = n.localMoveStatus()
	case "epoch":
		res.SlotReply = []string{strconv.FormatUint(n.SlotEpoch(), 10)}
	case "usage":
		ls := n.shard(req.Shard)
		if ls == nil || !ls.s.IsLeader() {
			res.Err = fmt.Sprintf("shard %d: not its leader", req.Shard)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var us []engine.SlotUsage
		if err := ls.s.Read(ctx, func(e *engine.Engine) { us = e.SlotsUsage() }); err != nil {
			res.Err = err.Error()
			return
		}
		res.SlotReply = usageStrings(us)
	default:
		out, err := n.ctrlSlots(req)
		if err != nil {
			res.Err = err.Error()
			return
		}
		res.SlotReply = out
	}
}

// toController sends req to the controller leader: this node if it leads
// the controller, else each member until one accepts; while none leads it
// (an election), again every 100 ms until ctx ends.
func (n *Node) toController(ctx context.Context, req slotRPC) ([]string, error) {
	for {
		out, err := n.toControllerOnce(ctx, req)
		if err == nil || err.Error() != errNotCtrlLeader.Error() {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (%v)", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (n *Node) toControllerOnce(ctx context.Context, req slotRPC) ([]string, error) {
	out, err := n.ctrlSlots(&req)
	if !errors.Is(err, errNotCtrlLeader) {
		return out, err
	}
	st := n.st.Load()
	if st.members == nil {
		return nil, errors.New("cluster: not formed")
	}
	for _, mb := range st.members.Nodes {
		if mb.ID == n.id {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := n.call(cctx, mb.Bus, rpcRequest{Op: "slots", From: n.self, Slots: &req})
		cancel()
		switch {
		case err == nil:
			return res.SlotReply, nil
		case res.Self.ID != "" && err.Error() != errNotCtrlLeader.Error():
			return nil, err // the controller leader refused the request
		}
		// Not the leader, or not reachable (down, partitioned): the next.
	}
	return nil, errNotCtrlLeader
}

// ctrlSlots changes the slot table on the controller leader.
func (n *Node) ctrlSlots(req *slotRPC) ([]string, error) {
	switch req.Op {
	case "move":
		var ids []string
		_, err := n.ctrlPropose(func(m *Membership) error {
			t := m.slotTable().clone()
			mvs, err := planMoves(t, m, slots.Range{First: req.First, Last: req.Last}, req.To)
			if err != nil {
				return err
			}
			for _, mv := range mvs {
				ids = append(ids, strconv.FormatUint(mv.ID, 10))
			}
			t.Moves = append(t.Moves, mvs...)
			m.Slots = t
			if len(mvs) > 0 {
				n.operatorTakesOver(m, req)
			}
			return nil
		})
		return ids, err
	case "flip":
		_, err := n.ctrlPropose(func(m *Membership) error {
			t := m.slotTable().clone()
			i := slices.IndexFunc(t.Moves, func(mv SlotMove) bool { return mv.ID == req.Move })
			if i < 0 {
				return nil // flipped already
			}
			mv := t.Moves[i]
			sm, err := slots.FromRuns(t.Runs)
			if err == nil {
				sm, err = sm.Assign(mv.Range(), mv.To)
			}
			if err != nil {
				return err
			}
			t.Runs = slices.Clone(sm.Runs())
			t.Moves = slices.Delete(t.Moves, i, i+1)
			t.Epoch++
			m.Slots = t
			n.log.Info("controller: slot move flipped", "move", mv.ID, "first", mv.First, "last", mv.Last, "to", mv.To, "epoch", t.Epoch)
			return nil
		})
		return nil, err
	}
	return n.ctrlShards(req)
}

// planMoves splits r into one move per run of slots with the same owner
// that is not to, giving each a new ID. Slots already moving, a target
// that is not a live shard, or a range that is already all to's: errors
// (the last one none: nothing to do).
func planMoves(t *SlotTable, m *Membership, r slots.Range, to int) ([]SlotMove, error) {
	if r.First < 0 || r.Last >= slots.Count || r.Last < r.First {
		return nil, fmt.Errorf("bad slot range %d-%d", r.First, r.Last)
	}
	if to < 0 || to >= len(m.Shards) || len(m.Shards[to]) == 0 {
		return nil, fmt.Errorf("no shard %d", to)
	}
	for _, mv := range t.Moves {
		if mv.First <= r.Last && r.First <= mv.Last {
			return nil, fmt.Errorf("slots %d-%d are already moving (move %d, to shard %d)",
				max(mv.First, r.First), min(mv.Last, r.Last), mv.ID, mv.To)
		}
	}
	sm, err := slots.FromRuns(t.Runs)
	if err != nil {
		return nil, err
	}
	if t.NextMove == 0 {
		t.NextMove = 1
	}
	var out []SlotMove
	for _, run := range sm.Runs() {
		f, l := max(run.First, r.First), min(run.Last, r.Last)
		if f > l || run.Shard == to {
			continue
		}
		out = append(out, SlotMove{ID: t.NextMove, First: f, Last: l, From: run.Shard, To: to})
		t.NextMove++
	}
	return out, nil
}

// MoveSlots asks the controller to move slots r to shard to (any node
// accepts it) and returns the moves it recorded (none when the slots are
// already the target's). It returns once they are recorded; the moves run
// in the background (SlotsStatus).
func (n *Node) MoveSlots(ctx context.Context, r slots.Range, to int) ([]uint64, error) {
	out, err := n.toController(ctx, slotRPC{Op: "move", First: r.First, Last: r.Last, To: to})
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for _, s := range out {
		id, _ := strconv.ParseUint(s, 10, 64)
		ids = append(ids, id)
	}
	n.awaitMovesSeen(ctx, ids, r, to)
	return ids, nil
}

// awaitMovesSeen waits, bounded by ctx and moveSeenWait, until this node's
// copy of the slot map shows the moves ids in flight, or r already owned by
// shard to: a client that recorded moves through this node and then asks
// it for SLOTS STATUS (or waits for the moves to end) sees them, rather
// than a copy that lags the controller's log.
func (n *Node) awaitMovesSeen(ctx context.Context, ids []uint64, r slots.Range, to int) {
	ctx, cancel := context.WithTimeout(ctx, moveSeenWait)
	defer cancel()
	seen := func() bool {
		v := n.slots.Load()
		for _, id := range ids {
			if _, ok := v.moveByID(id); ok {
				continue
			}
			for s := r.First; s <= r.Last; s++ {
				if v.m.Shard(s) != to {
					return false
				}
			}
		}
		return true
	}
	for !seen() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// moveSeenWait bounds awaitMovesSeen.
const moveSeenWait = 10 * time.Second

// localMoveStatus reports the moves this node drives.
func (n *Node) localMoveStatus() []MoveStatus {
	view := n.slots.Load()
	var out []MoveStatus
	for _, mv := range view.moves {
		ls := n.shard(mv.From)
		if ls == nil || !ls.s.IsLeader() {
			continue
		}
		n.mig.mu.Lock()
		p := n.mig.prog[mv.ID]
		n.mig.mu.Unlock()
		st := MoveStatus{SlotMove: mv, Phase: movePhase(ls.s.SlotStates(mv.Range()), mv.ID), Driver: n.id}
		if p != nil {
			g := p.get()
			st.KeysMoved, st.BytesMoved, st.Err = g.keys, g.bytes, g.lastErr
		}
		ls.s.StaleRead(func(e *engine.Engine) {
			for _, sl := range e.SlotsWithKeys(mv.Range()) {
				st.KeysLeft += int64(e.CountKeysInSlot(sl))
			}
		})
		out = append(out, st)
	}
	return out
}

// SlotsStatus lists the moves in flight in this node's slot map, each with
// the progress its driver (the source shard's leader) reports.
func (n *Node) SlotsStatus(ctx context.Context) []MoveStatus {
	view := n.slots.Load()
	got := map[uint64]MoveStatus{}
	for _, s := range n.localMoveStatus() {
		got[s.ID] = s
	}
	asked := map[string]bool{n.id: true}
	for _, mv := range view.moves {
		if _, ok := got[mv.ID]; ok {
			continue
		}
		id := n.health.leaderOf(mv.From)
		if id == "" || asked[id] {
			continue
		}
		asked[id] = true
		m, ok := n.st.Load().members.Node(id)
		if !ok {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		res, err := n.call(cctx, m.Bus, rpcRequest{Op: "slots", From: n.self, Slots: &slotRPC{Op: "status"}})
		cancel()
		if err != nil {
			continue
		}
		for _, s := range res.SlotStatus {
			got[s.ID] = s
		}
	}
	out := make([]MoveStatus, 0, len(view.moves))
	for _, mv := range view.moves {
		s, ok := got[mv.ID]
		if !ok {
			s = MoveStatus{SlotMove: mv, Phase: "unknown"}
		}
		out = append(out, s)
	}
	return out
}

// rateLimiter is a token bucket of bytes: what slot moves may copy per
// second on this node, so that they do not starve client traffic.
type rateLimiter struct {
	mu     sync.Mutex
	rate   float64 // bytes per second; <= 0: unlimited
	burst  float64
	tokens float64
	last   time.Time
}

func newRateLimiter(rate int64, burst int) *rateLimiter {
	return &rateLimiter{rate: float64(rate), burst: float64(max(burst, 1)), tokens: float64(max(burst, 1)), last: time.Now()}
}

// wait takes n bytes' worth of tokens, sleeping until they are there. A
// request larger than the burst waits for its whole size at the rate.
func (l *rateLimiter) wait(ctx context.Context, n int) error {
	if l.rate <= 0 {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	l.tokens -= float64(n)
	var d time.Duration
	if l.tokens < 0 {
		d = time.Duration(-l.tokens / l.rate * float64(time.Second))
	}
	l.mu.Unlock()
	if d == 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ImportingShard returns the shard a command sent with ASKING for slot
// should go to: the target of the move the slot is in, in this node's map,
// or else a local shard this node leads whose log is importing the slot
// (this node may not have adopted the move yet when a client follows an
// ASK here).
func (n *Node) ImportingShard(slot int) (int, bool) {
	if mv, ok := n.slots.Load().move(slot); ok {
		return mv.To, true
	}
	for i, ls := range n.st.Load().shards {
		if ls == nil || !ls.s.IsLeader() {
			continue
		}
		if st := ls.s.SlotStates(slots.Range{First: slot, Last: slot}); st[0].Mode == "importing" {
			return i, true
		}
	}
	return 0, false
}

// ReadChecked is Read for commands (part of what the RESP server needs):
// fn also gets the shard's Checker, which says whether a command's keys
// are served by this shard at the state fn sees (slot moves).
func (n *Node) ReadChecked(ctx context.Context, shard int, stale bool, fn func(e *engine.Engine, check fsm.Checker)) error {
	ls := n.shard(shard)
	if ls == nil || (!stale && n.movingAway(shard, ls)) {
		return n.remoteLeader(shard)
	}
	if stale {
		ls.s.StaleReadChecked(fn)
		return nil
	}
	return ls.s.ReadChecked(ctx, fn)
}
