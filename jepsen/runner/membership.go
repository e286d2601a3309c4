package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/history"
)

// The membership fault (local driver, clusters only) changes the cluster's
// membership while the workload runs and the other faults go on:
//
//  1. join: a new node (the spare, n<Nodes+1>, on a fresh data directory)
//     starts with --join and joins the running cluster; the controller
//     then moves replicas and leaderships onto it in the background. The
//     window "join n4" lasts until the cluster lists the node.
//  2. member: the next membershipHold faults may target it like any other
//     node (kill, pause, partitions, clock skew, …).
//  3. remove: between two faults, RAFTSTREAM REMOVE-NODE drains it (its
//     replicas move to the others, its leaderships are handed over) and
//     drops it; then its process is stopped. The window "remove n4" lasts
//     until the command returned and the process exited. Faults on the
//     other nodes go on during the drain.
//
// The spare's links are proxied like the others (its bus address is in
// every node's dial map from the start), so partitions cut it too; clients
// reach it only through MOVED redirections (it is nobody's home node).
const FaultMembership = "membership"

// membershipHold is how many faults the joined node stays a member for.
const membershipHold = 3

type spareState int

const (
	spareOut     spareState = iota // not running, not a member
	spareJoining                   // started, joining
	spareMember                    // a member; faults may target it
	spareLeaving                   // being drained and removed
)

// spare is the node the membership fault adds and removes: s.nodes[i].
type spare struct {
	i    int
	dir  string // parent of its data directories (one per join)
	held ports  // its ports while it is not running

	mu     sync.Mutex
	state  spareState
	id     string        // its node ID while joined
	gen    int           // joins so far
	faults int           // faults injected since it became a member
	done   chan struct{} // closed when the running join or removal ends
	err    error         // errors of finished joins and removals, not yet reported
}

// eligible is how many nodes (a prefix of s.nodes) faults may target: the
// cluster's original nodes, and the spare while it is a settled member.
func (s *system) eligible() int {
	if s.spare == nil {
		return len(s.nodes)
	}
	s.spare.mu.Lock()
	defer s.spare.mu.Unlock()
	if s.spare.state == spareMember {
		return s.orig + 1
	}
	return s.orig
}

// spareIs reports whether the spare is in state st (false without one).
func (s *system) spareIs(st spareState) bool {
	if s.spare == nil {
		return false
	}
	s.spare.mu.Lock()
	defer s.spare.mu.Unlock()
	return s.spare.state == st
}

// membership is the membership fault's turn in the nemesis cycle: it starts
// a join when the spare is out (and does nothing while a change is under
// way or the spare is a member: its removal is started by memberTick).
func (s *system) membership(w *history.Writer, log *slog.Logger) {
	sp := s.spare
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.state != spareOut {
		return
	}
	sp.state, sp.gen, sp.faults = spareJoining, sp.gen+1, 0
	sp.done = make(chan struct{})
	n := s.nodes[sp.i]
	n.Dir = filepath.Join(sp.dir, fmt.Sprintf("%s.%d", n.Name, sp.gen))
	name := "join " + n.Name
	w.Nemesis(history.Start, name)
	log.Info("fault", "start", name)
	go func() {
		id, err := s.join()
		sp.mu.Lock()
		switch {
		case id == "": // it never answered: no member to remove
			_ = n.Kill()
			bus, _ := strconv.Atoi(n.Vars["bus"])
			sp.held.hold(n.Port, bus)
			sp.err = errors.Join(sp.err, fmt.Errorf("%s: %w", name, err))
			sp.state = spareOut
		default: // joined, or joining late: the removal (which waits) follows
			sp.id, sp.state = id, spareMember
		}
		// recorded before done closes: settle's caller writes the heal and
		// closes the history next
		w.Nemesis(history.Stop, name)
		log.Info("fault", "stop", name, "id", id, "err", err)
		close(sp.done)
		sp.mu.Unlock()
	}()
}

// memberTick runs before each fault: once the spare has been a member for
// membershipHold faults, it starts the drain and removal. It returns the
// errors of finished membership changes.
func (s *system) memberTick(w *history.Writer, log *slog.Logger) error {
	sp := s.spare
	if sp == nil {
		return nil
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	err := sp.err
	sp.err = nil
	if sp.state != spareMember {
		return err
	}
	if sp.faults < membershipHold {
		sp.faults++
		return err
	}
	sp.state = spareLeaving
	sp.done = make(chan struct{})
	n, id := s.nodes[sp.i], sp.id
	name := "remove " + n.Name
	w.Nemesis(history.Start, name)
	log.Info("fault", "start", name, "id", id)
	go func() {
		rerr := s.remove(id)
		if serr := n.Stop(10 * time.Second); serr != nil {
			rerr = errors.Join(rerr, serr)
		}
		sp.mu.Lock()
		bus, _ := strconv.Atoi(n.Vars["bus"])
		sp.held.hold(n.Port, bus)
		if rerr != nil {
			sp.err = errors.Join(sp.err, fmt.Errorf("%s (%s): %w", name, id, rerr))
		}
		sp.state, sp.id = spareOut, ""
		w.Nemesis(history.Stop, name)
		log.Info("fault", "stop", name, "err", rerr)
		close(sp.done)
		sp.mu.Unlock()
	}()
	return err
}

// settle waits for a join or removal under way to end (each is bounded),
// then returns the errors not yet reported.
func (s *system) settle() error {
	sp := s.spare
	if sp == nil {
		return nil
	}
	sp.mu.Lock()
	done := sp.done
	sp.mu.Unlock()
	if done != nil {
		<-done
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	err := sp.err
	sp.err = nil
	return err
}

// admin is a client for one node's RESP port with timeouts long enough for
// RAFTSTREAM REMOVE-NODE (which waits for the drain).
func admin(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Minute, WriteTimeout: 5 * time.Second})
}

// listed reports whether CLUSTER NODES of some original node that answers
// lists id (known is false when none answered).
func (s *system) listed(ctx context.Context, id string) (in, known bool) {
	for k := 0; k < s.orig; k++ {
		n := s.nodes[k]
		if !n.Running() {
			continue
		}
		c := admin(n.Addr())
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		out, err := c.ClusterNodes(cctx).Result()
		cancel()
		_ = c.Close()
		if err == nil {
			return strings.Contains(out, id), true
		}
	}
	return false, false
}

// join starts the spare and waits until the cluster lists it; it returns
// its node ID (also with an error when it answered but is not listed yet).
// Bounded by about three minutes.
func (s *system) join() (string, error) {
	n := s.nodes[s.spare.i]
	s.spare.mu.Lock()
	s.spare.held.release(-1)
	s.spare.mu.Unlock()
	if err := n.Start(90 * time.Second); err != nil {
		return "", err
	}
	c := admin(n.Addr())
	defer c.Close()
	var id string
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := c.ClusterMyID(cctx).Result()
		cancel()
		if err == nil && v != "" {
			id = v
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("CLUSTER MYID: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		if in, _ := s.listed(context.Background(), id); in {
			return id, nil
		}
		if time.Now().After(deadline) {
			return id, fmt.Errorf("node %s not in CLUSTER NODES of the others after 60s", id)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// remove drains and drops node id with RAFTSTREAM REMOVE-NODE, asking the
// original nodes in turn until one succeeds or the cluster no longer lists
// it. Bounded by about four minutes.
func (s *system) remove(id string) error {
	deadline := time.Now().Add(4 * time.Minute)
	var last error
	for k := 0; time.Now().Before(deadline); k++ {
		n := s.nodes[k%s.orig]
		if n.Running() {
			c := admin(n.Addr())
			cctx, cancel := context.WithTimeout(context.Background(), min(2*time.Minute, time.Until(deadline)))
			last = c.Do(cctx, "RAFTSTREAM", "REMOVE-NODE", id).Err()
			cancel()
			_ = c.Close()
			if last == nil {
				return nil
			}
			last = fmt.Errorf("via %s: %w", n.Name, last)
		}
		if in, known := s.listed(context.Background(), id); known && !in {
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("still a member after 4 minutes: %v", last)
}
