package fsm

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
)

// proposal is one queued submission: a unit to apply, or a read waiting for
// a fence.
type proposal struct {
	fut *Future
	// unit holds the commands to propose (those that passed validation).
	unit Unit
	// pre, if non-nil, has one slot per submitted command: the validation
	// error for a rejected command, nil for one in unit (filled in, in
	// order, from the applied replies).
	pre []engine.Reply
	// read marks a read fence request: it proposes no commands but rides in
	// (or forces) an entry, and succeeds when that entry applies.
	read bool
}

// Submit proposes unit for atomic application and returns its future. It
// never blocks for long: it fails fast with *NotLeaderError on a follower,
// ErrBusy when the queue is full and ErrShutdown after Close. Units from one
// goroutine are applied in the order they were submitted.
//
// Commands that fail leader-side validation are not proposed; their reply is
// the validation error and the unit's other commands still apply (as in
// EXEC, where a failing command does not abort the others).
func (s *Shard) Submit(unit Unit) *Future {
	if s.debug.rewrite != nil {
		unit = append(Unit(nil), unit...)
		for i := range unit {
			unit[i] = s.debug.rewrite(unit[i])
		}
	}
	p := &proposal{fut: newFuture(), unit: unit}
	now := s.cfg.Now().UnixMilli()
	for i, argv := range unit {
		if e := validateCommand(now, argv); e != nil {
			if p.pre == nil {
				p.pre = make([]engine.Reply, len(unit))
				p.unit = append(Unit(nil), unit[:i]...)
			}
			p.pre[i] = e
		} else if p.pre != nil {
			p.unit = append(p.unit, argv)
		}
	}
	if len(unit) == 0 || len(p.unit) == 0 {
		// Nothing to propose: an empty unit, or every command rejected.
		p.fut.complete(p.merge(nil), nil)
		return p.fut
	}
	if err := s.enqueue(p); err != nil {
		p.fut.complete(nil, err)
	}
	return p.fut
}

// merge builds the unit's replies from the applied ones.
func (p *proposal) merge(applied []engine.Reply) []engine.Reply {
	if p.pre == nil {
		if applied == nil {
			return []engine.Reply{}
		}
		return applied
	}
	out := make([]engine.Reply, len(p.pre))
	k := 0
	for i, r := range p.pre {
		if r != nil {
			out[i] = r
		} else {
			out[i] = applied[k]
			k++
		}
	}
	return out
}

// enqueue hands p to the batcher. It does not block, except on a replica
// that lost its leader a moment ago (electionPending): it then waits, at
// most one election timeout, for the shard's next leader, and proposes
// here if that is this replica, or fails naming it (a client gets MOVED to
// the new leader instead of TRYAGAIN). A leader that steps down for a
// leadership transfer learns its successor a few milliseconds later; every
// command sent to it meanwhile used to fail with "no leader".
func (s *Shard) enqueue(p *proposal) error {
	err := s.tryEnqueue(p)
	var nl *NotLeaderError
	if !errors.As(err, &nl) || nl.LeaderID != "" || !s.electionPending() {
		return err
	}
	if nl = s.awaitLeader(); nl != nil {
		return nl
	}
	return s.tryEnqueue(p)
}

// tryEnqueue hands p to the batcher without blocking.
func (s *Shard) tryEnqueue(p *proposal) error {
	s.subMu.RLock()
	defer s.subMu.RUnlock()
	if s.closed {
		return ErrShutdown
	}
	if err := s.StorageFault(); err != nil {
		return err
	}
	if !s.IsLeader() {
		return s.notLeader()
	}
	select {
	case s.queue <- p:
		return nil
	default:
		s.stats.rejected.Add(1)
		return ErrBusy
	}
}

// run is the batcher: the only goroutine that calls raft.Apply, so queue
// order is log order. It waits for an in-flight slot, then for a first
// proposal, then takes whatever else is queued (FIFO) up to the batch
// limits, gathers the submitters the last entry answered (forming.gather,
// gatherWait), and proposes the lot as one entry. While MaxInFlight entries are
// in flight the queue fills up, which is what makes batches large under load.
func (s *Shard) run() {
	defer close(s.loopDone)
	var carry *proposal // the proposal that did not fit the previous batch
	for {
		select {
		case s.inflight <- struct{}{}:
		case <-s.shutdownCh:
			s.drain(carry)
			return
		}
		// What is queued now, and the submitters the entry that just
		// applied answered: each waited for it and is about to send its
		// next command. The batch waits a little for them (gather).
		first := carry
		carry = nil
		want := len(s.queue) + int(s.answered.Swap(0))
		if first != nil {
			want++
		} else {
			select {
			case first = <-s.queue:
			case <-s.shutdownCh:
				<-s.inflight
				s.drain(nil)
				return
			}
		}
		f := forming{maxCmds: s.cfg.MaxBatchCommands, maxBytes: s.cfg.MaxBatchBytes}
		f.add(first)
		if carry = f.fill(s.queue); carry == nil {
			carry = f.gather(s.queue, want, s.gatherWait(), s.shutdownCh)
		}
		s.propose(f.batch)
		s.linger()
	}
}

// forming is the batch the batcher is forming: its proposals, their
// commands and encoded bytes, and the entry's limits.
type forming struct {
	batch             []*proposal
	cmds, size        int
	maxCmds, maxBytes int
}

// add puts p in the batch if it fits the limits (or the batch is empty: a
// unit is never split) and reports whether it did.
func (f *forming) add(p *proposal) bool {
	n, sz := len(p.unit), unitSize(p.unit)
	if len(f.batch) > 0 && (f.cmds+n > f.maxCmds || f.size+sz > f.maxBytes) {
		return false
	}
	f.batch = append(f.batch, p)
	f.cmds, f.size = f.cmds+n, f.size+sz
	return true
}

// fill adds what is queued, without waiting, and returns the proposal that
// did not fit (nil if none).
func (f *forming) fill(q <-chan *proposal) *proposal {
	for {
		select {
		case p := <-q:
			if !f.add(p) {
				return p
			}
		default:
			return nil
		}
	}
}

// gather waits, at most wait, for the batch to hold want proposals, adding
// them as they arrive; it ends early on stop or when one does not fit, and
// returns that one (nil if none).
func (f *forming) gather(q <-chan *proposal, want int, wait time.Duration, stop <-chan struct{}) *proposal {
	if len(f.batch) >= want || wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for len(f.batch) < want {
		select {
		case p := <-q:
			if !f.add(p) {
				return p
			}
		case <-t.C:
			return nil
		case <-stop:
			return nil
		}
	}
	return nil
}

// linger runs after raft has taken an entry from the batcher. raft's apply
// channel is unbuffered and its leader loop writes an entry to disk before
// it takes the next one, so the next entry, formed now, would wait out that
// write in raft.Apply without the commands that arrive meanwhile, which
// would then wait for the write after it: about 2.5 disk writes per command
// instead of 1.5. linger waits for the write to end instead (bounded by
// MaxLinger; not at all when the queue already holds a full batch), so the
// next entry carries those commands. It never delays an idle leader: with
// no write in progress it returns within lingerBegin.
func (s *Shard) linger() {
	if s.cfg.MaxLinger <= 0 || len(s.queue) >= s.cfg.MaxBatchCommands {
		return
	}
	l := s.logs
	begun, ended := l.begun.Load(), l.ended.Load()
	t := time.NewTimer(lingerBegin)
	defer t.Stop()
	// The leader loop has taken the entry but may not have begun writing
	// it yet (or has written it already): wait briefly for a write to begin.
	for begun == ended {
		select {
		case <-l.beginCh:
		case <-t.C:
			return
		case <-s.shutdownCh:
			return
		}
		begun = l.begun.Load()
	}
	t.Reset(s.cfg.MaxLinger)
	for l.ended.Load() <= ended {
		select {
		case <-l.endCh:
		case <-t.C:
			return
		case <-s.shutdownCh:
			return
		}
	}
}

// lingerBegin bounds linger's wait for the leader loop to begin writing an
// entry it has taken (microseconds when the loop is not starved).
const lingerBegin = time.Millisecond

// drain fails every queued proposal after shutdown; nothing was proposed.
func (s *Shard) drain(carry *proposal) {
	if carry != nil {
		carry.fut.complete(nil, ErrShutdown)
	}
	for {
		select {
		case p := <-s.queue:
			p.fut.complete(nil, ErrShutdown)
		default:
			return
		}
	}
}

// entry is one log entry the batcher proposed: its batch and proposals,
// until they are answered. The first of finish (the entry applied here:
// machine.ApplyBatch) and fail (raft's future failed) frees the in-flight
// slot and answers the proposals; the other does nothing.
type entry struct {
	s     *Shard
	batch *Batch
	props []*proposal
	start time.Time
	done  atomic.Bool
}

// finish answers the proposals with res, the replies of the entry applied
// at index. Called on raft's FSM goroutine, without the FSM lock.
func (e *entry) finish(res [][]engine.Reply, index uint64) {
	if !e.done.CompareAndSwap(false, true) {
		return
	}
	s := e.s
	s.noteApplied(e.start, nil)
	s.answered.Store(int32(len(e.props)))
	<-s.inflight
	k := 0
	for _, p := range e.props {
		if p.read {
			p.fut.complete(nil, nil)
			continue
		}
		if k >= len(res) {
			// Cannot happen: Apply answers every unit of the entry.
			p.fut.complete(nil, fmt.Errorf("%w: missing replies", ErrUnknownOutcome))
			continue
		}
		p.fut.completeAt(p.merge(res[k]), nil, index)
		k++
	}
}

// fail answers the proposals of an entry raft did not apply here with the
// outcome of err, raft's error.
func (e *entry) fail(err error) {
	if !e.done.CompareAndSwap(false, true) {
		return
	}
	s := e.s
	s.noteApplied(e.start, err)
	<-s.inflight
	err = s.proposalError(err)
	for _, p := range e.props {
		if s.debug.fakeAcks != nil && !p.read {
			p.fut.complete(p.merge(s.debug.fakeAcks(p.unit, e.batch.TS)), nil)
			continue
		}
		p.fut.complete(nil, err)
	}
}

// propose encodes batch as one entry and hands it to Raft. The entry is
// answered where it applies (entry.finish); a waiter goroutine catches
// what raft fails instead, and bounds the wait by ApplyTimeout.
func (s *Shard) propose(batch []*proposal) {
	b := &Batch{TS: s.cfg.Now().UnixMilli()}
	for _, p := range batch {
		if !p.read {
			b.Units = append(b.Units, p.unit)
		}
	}
	data := EncodeBatch(nil, b)
	s.noteBatch(batchCommands(b.Units))
	e := &entry{s: s, batch: b, props: batch, start: time.Now()}
	s.m.rememberProposed(data, e)
	af := s.raft.Apply(data, s.cfg.EnqueueTimeout)
	s.waiters.Add(1)
	go func() {
		defer s.waiters.Done()
		defer s.m.forgetProposed(data)
		if waiterHook != nil {
			waiterHook()
		}
		timer := time.AfterFunc(s.cfg.ApplyTimeout, func() {
			err := fmt.Errorf("%w: not applied within %v", ErrUnknownOutcome, s.cfg.ApplyTimeout)
			for _, p := range batch {
				p.fut.complete(nil, err)
			}
		})
		err := s.awaitApply(af)
		s.noteTransfer(err, e.start)
		timer.Stop()
		if err != nil {
			e.fail(err)
			return
		}
		// Applied: machine.ApplyBatch has finished e, unless raft applied
		// the entry from a copy of data (never on the leader that proposed
		// it; kept as a fallback).
		res, _ := af.Response().([][]engine.Reply)
		e.finish(res, af.Index())
	}()
}

// waiterHook, if set, runs as an entry's waiter starts. Tests only (set
// before any shard opens): a waiter held back shows who answers entries.
var waiterHook func()

// awaitApply waits for af, or for raft to have shut down without answering
// it (hashicorp/raft can drop a future that was accepted but not yet
// dispatched; the helper goroutine then stays blocked, once per such entry).
func (s *Shard) awaitApply(af raft.ApplyFuture) error {
	done := make(chan error, 1)
	go func() { done <- af.Error() }()
	select {
	case err := <-done:
		return err
	case <-s.raftDown:
		select {
		case err := <-done:
			return err
		default:
			return raft.ErrRaftShutdown
		}
	}
}

// Read runs fn against the engine, linearizably: only on the leader, and
// only after a log entry proposed after Read was called has applied (a read
// fence; concurrent reads share one, and share entries with writes). fn runs
// on the caller's goroutine under the FSM read lock; it must not block or
// keep the engine. Errors: *NotLeaderError, ErrBusy, ErrShutdown,
// ErrUnknownOutcome (the fence's fate is unknown; retrying is safe) or
// ctx's error. fn is not called on error.
func (s *Shard) Read(ctx context.Context, fn func(e *engine.Engine)) error {
	if s.debug.unfencedReads {
		s.m.view(fn)
		return nil
	}
	p := &proposal{fut: newFuture(), read: true}
	if err := s.enqueue(p); err != nil {
		return err
	}
	select {
	case <-p.fut.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if p.fut.err != nil {
		return p.fut.err
	}
	s.m.view(fn)
	return nil
}

// StaleRead runs fn against this replica's engine without any leadership
// check (READONLY connections on followers): the data may lag the leader.
// Same rules for fn as Read.
func (s *Shard) StaleRead(fn func(e *engine.Engine)) { s.m.view(fn) }

// gatherWait bounds how long the batcher waits, once the entry in flight
// has applied, for the submitters it answered to send their next commands:
// that entry's commit time, and at most MaxGather. A submitter that comes
// back too late waits out the whole commit of the entry formed without it
// before its own entry forms, so with as many coming back as are queued,
// waiting up to one commit time is where the trade evens out.
func (s *Shard) gatherWait() time.Duration {
	return min(time.Duration(s.lastCommit.Load()), s.cfg.MaxGather)
}
