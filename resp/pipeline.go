package resp

import (
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// A connection's pipeline: the commands a client sent before waiting for a
// reply, taken together. Consecutive writes to one shard are submitted as
// one unit (one proposal, one future, one in-flight permit) without
// waiting, so they share Raft entries with other clients' writes;
// consecutive reads of one shard run under one Read (one read fence).
// Anything else waits for what came before it and runs alone (runOne).
// A read waits for the writes before it and a write for the reads before
// it, so the connection sees its commands in order; replies are written in
// order.

// pipeBufs are a connection's buffers for its pipelines, kept from one
// pipeline to the next (its own goroutine only). They are cleared after
// use, so that they hold no command or reply.
type pipeBufs struct {
	argvs      [][][]byte
	queue, run []pending
	reads      []pendingRead
}

// maxKeptPipe is the longest pipeline buffer a connection keeps.
const maxKeptPipe = 1024

func keepSmall[T any](b []T) []T {
	if cap(b) > maxKeptPipe {
		return nil
	}
	return b[:0]
}

// pending is a reply not yet known: a submitted write.
type pending struct {
	fut   futureLike
	idx   int // this command's place in the unit fut answers
	n     int // the unit's length
	shard int
	slot  int
	proto int
	argv  [][]byte
	sem   chan struct{}    // the shard's in-flight permits; the unit's first command holds one
	cmd   *command.Command // table row and start time, for command metrics
	start time.Time
}

// pendingRead is a read waiting to run with the reads next to it.
type pendingRead struct {
	argv        [][]byte
	shard, slot int
	cmd         *command.Command // table row and start time, for command metrics
	start       time.Time
}

// Bounds of a run of pipelined writes submitted as one unit: enough to carry
// a client's pipeline in one proposal, small enough that a bulk load still
// makes many entries of moderate size.
const (
	maxRunCommands = 256
	maxRunBytes    = 256 << 10
)

// pipeline is the state of one runPipeline call.
type pipeline struct {
	s *Server
	c *client

	queue []pending // submitted writes whose replies are not written yet
	// run holds the writes not submitted yet: consecutive, to one shard.
	run      []pending
	runShard int
	runBytes int
	reads    []pendingRead // reads not run yet

	// The clock is read once for the commands taken in without anything
	// waiting in between (fresh), and once per answered unit: a unit's
	// commands end together, and they are counted in the command metrics
	// together.
	start time.Time
	fresh bool
}

func (p *pipeline) now() time.Time {
	if !p.fresh {
		p.start, p.fresh = time.Now(), true
	}
	return p.start
}

// runPipeline executes argvs in order. Writes are submitted without waiting;
// any other command first waits for the writes before it (so a read sees the
// connection's own writes), then runs synchronously. Within a unit the
// writes apply in order in one log entry, and a failing command does not
// stop the others (as in EXEC), so each command's reply is what it would
// have been on its own.
func (s *Server) runPipeline(c *client, argvs [][][]byte) {
	p := pipeline{s: s, c: c, queue: c.pipe.queue[:0], run: c.pipe.run[:0], reads: c.pipe.reads[:0]}
	// The connection's last interaction (CLIENT LIST idle) is set when the
	// pipeline arrives and after it, instead of at each reply.
	c.batching = true
	c.lastAt.Store(p.now().UnixMilli())
	defer func() {
		p.flushReads()
		if c.pub.cmd != c.lastCmdName {
			// Batched commands are admitted without runOne's publish:
			// CLIENT LIST's cmd= shows the pipeline's last one.
			c.publish()
		}
		if c.deferAnswer {
			// The event loop answers the writes after its round
			// (answerDeferred).
			p.submitRun()
			c.pipe.queue, c.pipe.run, c.pipe.reads = p.queue, keepSmall(p.run), keepSmall(p.reads)
			c.batching = false
			c.lastAt.Store(time.Now().UnixMilli())
			return
		}
		p.flushWrites()
		c.pipe.queue, c.pipe.run, c.pipe.reads = keepSmall(p.queue), keepSmall(p.run), keepSmall(p.reads)
		c.batching = false
		c.lastAt.Store(time.Now().UnixMilli())
	}()
	for _, argv := range argvs {
		if c.isClosed() {
			return
		}
		s.stats.commands.Add(1)
		start := p.now()
		r := s.classify(argv)
		s.askRoute(c, &r)
		if r.batchable(c) {
			if er := s.admit(c, &r); er == nil {
				if r.cmd.Kind == command.KindRead {
					p.flushWrites() // a read sees the connection's earlier writes
					p.reads = append(p.reads, pendingRead{argv: argv, shard: r.shard, slot: r.slot, cmd: r.cmd, start: start})
				} else {
					p.flushReads() // and a write never overtakes an earlier read
					p.addWrite(&r, start)
				}
				continue
			}
			// Refused: runOne answers with admit's verdict, in order.
		}
		p.flushWrites()
		p.flushReads()
		p.fresh = false
		s.runOne(c, &r, start)
		if c.quitting {
			c.close()
			return
		}
	}
}

// answerDeferred answers the writes that runPipeline submitted with
// client.deferAnswer set (the event loop's round), into the connection's
// output.
func (s *Server) answerDeferred(cn *conn) {
	c := cn.client
	if c == nil {
		return
	}
	if c.holdsInflight {
		c.holdsInflight = false
		defer s.inflight.Done()
	}
	if len(c.pipe.queue) == 0 {
		return
	}
	p := pipeline{s: s, c: c, queue: c.pipe.queue}
	p.answerWrites()
	c.pipe.queue = keepSmall(p.queue)
}

// loopable reports whether the event loop may serve argvs for cn: every
// command a write that runPipeline batches, from a client in no special
// state (authenticated, outside MULTI, not ASKING), while no MONITOR feed
// or CLIENT PAUSE is active (a write waits out a pause in admit, and a feed
// writes to the monitors' sockets: neither may hold the loop).
func (s *Server) loopable(cn *conn, argvs [][][]byte) bool {
	c := cn.client
	if c == nil || !c.authed || c.multi != nil || c.asking || c.isClosed() || s.hooks.Load() != 0 {
		return false
	}
	for _, argv := range argvs {
		r := s.classify(argv)
		if r.err != nil || r.cmd.Kind != command.KindWrite || !r.batchable(c) {
			return false
		}
	}
	return true
}

// addWrite adds an admitted write to the run, submitting the run first when
// the write cannot join it.
func (p *pipeline) addWrite(r *request, start time.Time) {
	size := argvSize(r.argv)
	// A write to a moving slot goes alone: the FSM may refuse it, and a
	// refused unit takes its other commands along (asking.go).
	alone := p.s.isolateMoving(r.slot)
	if len(p.run) > 0 && (alone || r.shard != p.runShard || len(p.run) >= maxRunCommands || p.runBytes+size > maxRunBytes) {
		p.submitRun()
	}
	defer func() {
		if alone {
			p.submitRun()
		}
	}()
	p.runShard, p.runBytes = r.shard, p.runBytes+size
	p.run = append(p.run, pending{shard: r.shard, slot: r.slot, proto: p.c.proto, argv: r.argv, cmd: r.cmd, start: start})
}

// submitRun proposes the run as one unit.
func (p *pipeline) submitRun() {
	if len(p.run) == 0 {
		return
	}
	p.fresh = false
	// Backpressure: at most MaxInFlight submissions per shard wait in the
	// shard's queue. Never block while holding permits (answer the
	// submitted writes first), so connections cannot deadlock on each
	// other.
	sem := p.s.semFor(p.runShard)
	select {
	case sem <- struct{}{}:
	default:
		p.answerWrites()
		if p.c.beforeBlock != nil {
			// The event loop's other connections of this round hold
			// permits only it releases, by answering them.
			p.c.beforeBlock()
		}
		sem <- struct{}{}
	}
	unit := make([][][]byte, len(p.run))
	for i := range p.run {
		unit[i] = p.run[i].argv
	}
	fut := p.s.be.Submit(p.runShard, unit)
	for i := range p.run {
		p.run[i].fut, p.run[i].idx, p.run[i].n = fut, i, len(p.run)
	}
	p.run[0].sem = sem
	p.queue = append(p.queue, p.run...)
	clear(p.run)
	p.run, p.runBytes = p.run[:0], 0
}

// flushWrites submits the run and answers every submitted write.
func (p *pipeline) flushWrites() {
	p.submitRun()
	p.answerWrites()
}

// answerWrites waits for the submitted units in order and writes their
// replies.
func (p *pipeline) answerWrites() {
	if len(p.queue) == 0 {
		return
	}
	p.fresh = false
	s, c := p.s, p.c
	var (
		lastFut futureLike
		rs      []engine.Reply // lastFut's outcome
		rerr    error
		end     time.Time
		obs     pending // the commands counted together: cmd, start
		obsN    int
	)
	observe := func() {
		if obsN > 0 {
			s.cmdm.observeN(obs.cmd, end.Sub(obs.start), obsN)
			obsN = 0
		}
	}
	for _, w := range p.queue {
		if w.fut != lastFut {
			// A unit's first command: wait for it once.
			observe()
			rs, rerr = s.waitFutureTimer(c, w.fut)
			lastFut, end = w.fut, time.Now()
			if rerr == nil {
				c.noteWrite(w.shard, w.fut)
			}
		}
		r := s.unitReply(rs, rerr, w.slot, w.idx, w.n)
		if obsN > 0 && (w.cmd != obs.cmd || !w.start.Equal(obs.start)) {
			observe()
		}
		obs.cmd, obs.start = w.cmd, w.start
		obsN++
		if w.sem != nil {
			<-w.sem
		}
		if raw, ok := s.maybeForward(c, r, [][][]byte{w.argv}, w.shard, true, false); ok {
			c.noteForwarded()
			s.afterReply(c, w.cmd, w.argv, end.Sub(w.start), nil)
			c.writeRaw(raw)
			continue
		}
		s.afterReply(c, w.cmd, w.argv, end.Sub(w.start), r)
		c.write(r, w.proto)
	}
	observe()
	clear(p.queue)
	p.queue = p.queue[:0]
}

// flushReads runs the waiting reads, one Read per run of reads on the same
// shard, and writes their replies.
func (p *pipeline) flushReads() {
	if len(p.reads) == 0 {
		return
	}
	p.fresh = false
	s, c := p.s, p.c
	for i := 0; i < len(p.reads); {
		j := i + 1
		for j < len(p.reads) && p.reads[j].shard == p.reads[i].shard {
			j++
		}
		run := p.reads[i:j]
		unit := make([][][]byte, len(run))
		for k, r := range run {
			unit[k] = r.argv
		}
		out, ran, er := s.readRunBounded(c, run[0].shard, run[0].slot, unit)
		for k, r := range run {
			if er == nil && k >= ran {
				c.dropForOutput() // not run: past the output limit
				break
			}
			rep := er
			if er == nil {
				rep = out[k]
			}
			if raw, ok := s.maybeForward(c, rep, [][][]byte{r.argv}, r.shard, false, false); ok {
				s.answered(c, r.cmd, r.argv, time.Since(r.start), nil)
				c.writeRaw(raw)
			} else {
				s.answered(c, r.cmd, r.argv, time.Since(r.start), rep)
				c.write(rep, c.proto)
			}
		}
		i = j
	}
	clear(p.reads)
	p.reads = p.reads[:0]
}
