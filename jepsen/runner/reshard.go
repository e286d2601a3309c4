package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/raftstream/raftstream/jepsen/history"
	"github.com/raftstream/raftstream/slots"
)

// The reshard fault (clusters the runner starts) moves the workload's slots
// between shards and adds and retires shards while the workload runs and
// the other faults go on. Each turn, in the background:
//
//   - usually: move the slot of one of the workload's streams (chosen by
//     the seed) to another shard (RAFTSTREAM SLOTS MOVE), window "reshard
//     move slot S a->b" until every node routes it to b;
//   - every fourth turn with no extra shard: add one (RAFTSTREAM SHARD
//     ADD), then move a stream's slot onto it;
//   - two turns later: move the extra shard's slots back to the others and
//     retire it (RAFTSTREAM SHARD REMOVE).
//
// A turn is skipped while the previous one runs; the heal waits for it. A
// move the faults hold up (a partition, a killed leader) resumes once they
// end: its window then spans them.
const FaultReshard = "reshard"

// reshardWait bounds one turn (a move, or a shard's addition or
// retirement with its moves).
const reshardWait = 3 * time.Minute

// resharder is the reshard fault's state.
type resharder struct {
	mu    sync.Mutex
	turn  int
	extra int // the shard this fault added and not yet retired, -1 if none
	since int // the turn it was added
	done  chan struct{}
	err   error
	rnd   *rand.Rand
}

// reshard is the reshard fault's turn in the nemesis cycle.
func (s *system) reshard(w *history.Writer, log *slog.Logger) {
	r := s.resh
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done != nil {
		select {
		case <-r.done:
		default:
			return // the previous turn is still under way
		}
	}
	r.turn++
	turn := r.turn
	var name string
	var op func() error
	switch {
	case r.extra < 0 && turn%4 == 0:
		name = "reshard add shard"
		op = func() error { return s.addShard(r) }
	case r.extra >= 0 && turn-r.since >= 2:
		name = fmt.Sprintf("reshard retire shard %d", r.extra)
		op = func() error { return s.retireShard(r) }
	default:
		k := s.keys[r.rnd.Intn(len(s.keys))]
		slot := slots.OfString(k)
		name = fmt.Sprintf("reshard move slot %d (%s)", slot, k)
		op = func() error { return s.moveSlot(r, slot, -1) }
	}
	r.done = make(chan struct{})
	done := r.done
	w.Nemesis(history.Start, name)
	log.Info("fault", "start", name)
	go func() {
		err := op()
		r.mu.Lock()
		if err != nil {
			r.err = errors.Join(r.err, fmt.Errorf("%s: %w", name, err))
		}
		w.Nemesis(history.Stop, name)
		log.Info("fault", "stop", name, "err", err)
		close(done)
		r.mu.Unlock()
	}()
}

// settleReshard waits for a reshard turn under way to end and returns the
// errors not yet reported.
func (s *system) settleReshard() error {
	r := s.resh
	if r == nil {
		return nil
	}
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done != nil {
		<-done
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.err
	r.err = nil
	return err
}

// adminDo runs an admin command on the first original node that answers,
// trying each in turn until deadline.
func (s *system) adminDo(deadline time.Time, args ...any) (any, error) {
	var last error = errors.New("no node running")
	for k := 0; time.Now().Before(deadline); k++ {
		n := s.nodes[k%s.orig]
		if n.Running() {
			c := admin(n.Addr())
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			v, err := c.Do(ctx, args...).Result()
			cancel()
			_ = c.Close()
			if err == nil {
				return v, nil
			}
			last = fmt.Errorf("via %s: %w", n.Name, err)
		}
		if k%s.orig == s.orig-1 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil, last
}

// slotMap reads the slot map (slot → shard) and the number of moves in
// flight from RAFTSTREAM SLOTS STATUS.
func (s *system) slotMap(deadline time.Time) ([]int, int, error) {
	v, err := s.adminDo(deadline, "RAFTSTREAM", "SLOTS", "STATUS")
	if err != nil {
		return nil, 0, err
	}
	top, _ := v.([]any)
	if len(top) != 6 {
		return nil, 0, fmt.Errorf("RAFTSTREAM SLOTS STATUS: %v", v)
	}
	moves, _ := top[3].([]any)
	owner := make([]int, slots.Count)
	runs, _ := top[5].([]any)
	for _, x := range runs {
		run, _ := x.([]any)
		if len(run) != 3 {
			return nil, 0, fmt.Errorf("RAFTSTREAM SLOTS STATUS: run %v", x)
		}
		f, _ := run[0].(int64)
		l, _ := run[1].(int64)
		sh, _ := run[2].(int64)
		for sl := f; sl <= l; sl++ {
			owner[sl] = int(sh)
		}
	}
	return owner, len(moves), nil
}

// shardsOf lists the shards owning slots in owner, and extra if >= 0.
func shardsOf(owner []int, extra int) []int {
	var out []int
	for _, sh := range owner {
		if !slices.Contains(out, sh) {
			out = append(out, sh)
		}
	}
	if extra >= 0 && !slices.Contains(out, extra) {
		out = append(out, extra)
	}
	slices.Sort(out)
	return out
}

// moveSlot moves slot to shard to (to < 0: a random other shard) and waits
// until every answering node routes it there with no move in flight.
func (s *system) moveSlot(r *resharder, slot, to int) error {
	deadline := time.Now().Add(reshardWait)
	owner, _, err := s.slotMap(deadline)
	if err != nil {
		return err
	}
	if to < 0 {
		r.mu.Lock()
		others := slices.DeleteFunc(shardsOf(owner, r.extra), func(sh int) bool { return sh == owner[slot] })
		if len(others) > 0 {
			to = others[r.rnd.Intn(len(others))]
		}
		r.mu.Unlock()
		if to < 0 {
			return nil // one shard: nowhere to move
		}
	}
	if _, err := s.adminDo(deadline, "RAFTSTREAM", "SLOTS", "MOVE", strconv.Itoa(slot), strconv.Itoa(to)); err != nil {
		return err
	}
	return s.awaitOwner(deadline, slot, to)
}

// awaitOwner waits until slot is routed to shard with no move in flight.
func (s *system) awaitOwner(deadline time.Time, slot, shard int) error {
	for time.Now().Before(deadline) {
		owner, inFlight, err := s.slotMap(deadline)
		if err == nil && inFlight == 0 && owner[slot] == shard {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("slot %d not on shard %d after %v", slot, shard, reshardWait)
}

// addShard adds a shard and moves one of the workload's slots onto it.
func (s *system) addShard(r *resharder) error {
	deadline := time.Now().Add(reshardWait)
	v, err := s.adminDo(deadline, "RAFTSTREAM", "SHARD", "ADD")
	if err != nil {
		return err
	}
	sh, ok := v.(int64)
	if !ok {
		return fmt.Errorf("SHARD ADD replied %v", v)
	}
	r.mu.Lock()
	r.extra, r.since = int(sh), r.turn
	k := s.keys[r.rnd.Intn(len(s.keys))]
	r.mu.Unlock()
	return s.moveSlot(r, slots.OfString(k), int(sh))
}

// retireShard moves the extra shard's slots to the other shards and
// retires it.
func (s *system) retireShard(r *resharder) error {
	deadline := time.Now().Add(reshardWait)
	r.mu.Lock()
	extra := r.extra
	r.mu.Unlock()
	owner, _, err := s.slotMap(deadline)
	if err != nil {
		return err
	}
	others := slices.DeleteFunc(shardsOf(owner, -1), func(sh int) bool { return sh == extra })
	if len(others) == 0 {
		return errors.New("no other shard to move the slots to")
	}
	for sl, sh := range owner {
		if sh != extra {
			continue
		}
		r.mu.Lock()
		to := others[r.rnd.Intn(len(others))]
		r.mu.Unlock()
		if _, err := s.adminDo(deadline, "RAFTSTREAM", "SLOTS", "MOVE", strconv.Itoa(sl), strconv.Itoa(to)); err != nil {
			return err
		}
		if err := s.awaitOwner(deadline, sl, to); err != nil {
			return err
		}
	}
	for time.Now().Before(deadline) {
		_, err = s.adminDo(deadline, "RAFTSTREAM", "SHARD", "REMOVE", strconv.Itoa(extra))
		if err == nil {
			r.mu.Lock()
			r.extra = -1
			r.mu.Unlock()
			return nil
		}
		time.Sleep(time.Second) // e.g. no leader known for it yet
	}
	return err
}
