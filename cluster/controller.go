package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// The controller is a small Raft group (the "controller" group on the bus)
// whose replicated state is the cluster's Membership. Its voters follow the
// membership (ctrlvoters.go): at formation the first ctrlTarget(N) members
// by ID bootstrap it with the same configuration and its first leader
// proposes the formed Membership; every later topology change (joins,
// drains, replica moves: reconfig.go; its own voters: ctrlvoters.go) is a
// log entry here, with a higher Epoch. Nodes apply a newer Membership from
// it to their local copy (node.json).
//
// Log entry: JSON {"members": Membership}, the whole desired topology; a
// later field of the topology is a field of Membership (or of topoEntry,
// for state nodes do not persist), so old entries stay decodable. An entry
// whose Epoch is not greater than the current one is ignored (so
// re-proposals are harmless).
type controller struct {
	r     *raft.Raft
	tr    *raft.NetworkTransport
	store *raftboltdb.BoltStore
	fsm   *topoFSM
	// acks is what followers acknowledged while this replica led: the
	// catch-up and liveness of the group's servers (converge).
	acks *replication
	// done is closed by close: the replica's loop ends.
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// topoFSM is the controller's state machine: the latest Membership.
type topoFSM struct {
	mu      sync.Mutex
	members *Membership
	// changed is signalled (non-blocking) after an apply changed members.
	changed chan struct{}
}

type topoEntry struct {
	Members *Membership `json:"members"`
}

// Apply implements raft.FSM.
func (f *topoFSM) Apply(l *raft.Log) any {
	var e topoEntry
	if err := json.Unmarshal(l.Data, &e); err != nil || e.Members == nil {
		// Entries are written only by this package; an undecodable one
		// means a bug or a corrupt log: stop this replica.
		panic(fmt.Sprintf("cluster: controller entry %d undecodable: %v", l.Index, err))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.members != nil && e.Members.Epoch <= f.members.Epoch {
		return false
	}
	f.members = e.Members
	select {
	case f.changed <- struct{}{}:
	default:
	}
	return true
}

func (f *topoFSM) get() *Membership {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.members
}

// Snapshot implements raft.FSM.
func (f *topoFSM) Snapshot() (raft.FSMSnapshot, error) {
	b, err := json.Marshal(topoEntry{Members: f.get()})
	return topoSnapshot(b), err
}

// Restore implements raft.FSM.
func (f *topoFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var e topoEntry
	if err := json.NewDecoder(rc).Decode(&e); err != nil {
		return err
	}
	f.mu.Lock()
	f.members = e.Members
	f.mu.Unlock()
	return nil
}

type topoSnapshot []byte

func (s topoSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (topoSnapshot) Release() {}

// openController opens this node's controller replica under Dir/controller
// and, with bootstrap (formation only), bootstraps it with members' voters
// when empty. Without, an empty replica waits for the group's leader to add
// it: with no configuration it never stands for election.
func (n *Node) openController(members *Membership, bootstrap bool) (*controller, error) {
	dir := filepath.Join(n.dir, "controller")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	log := n.log.With("group", ControllerGroup)
	raftLog := newHCLogger(log, slog.LevelWarn)
	tr := n.groupTransport(ControllerGroup, raftLog, 2)
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		tr.Close()
		return nil, err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, raftLog)
	if err != nil {
		tr.Close()
		store.Close()
		return nil, err
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.id)
	rc.Logger = raftLog.Named("raft")
	rc.SnapshotThreshold = 64
	rc.TrailingLogs = 64
	n.cfg.raftTimeouts(&rc.HeartbeatTimeout, &rc.ElectionTimeout, &rc.LeaderLeaseTimeout)
	f := &topoFSM{changed: make(chan struct{}, 1)}
	acks := newReplication(rc.ElectionTimeout)
	r, err := raft.NewRaft(rc, f, store, store, snaps, ackingTransport{announcingTransport{tr, &n.bus}, acks, nil})
	if err != nil {
		tr.Close()
		store.Close()
		return nil, err
	}
	c := &controller{r: r, tr: tr, store: store, fsm: f, acks: acks, done: make(chan struct{})}
	has, err := raft.HasExistingState(store, store, snaps)
	if err == nil && !has && bootstrap {
		err = r.BootstrapCluster(raft.Configuration{Servers: controllerVoters(members)}).Error()
		if errors.Is(err, raft.ErrCantBootstrap) {
			err = nil
		}
	}
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// close shuts the controller replica down: transport first (see
// closeShards), then Raft, then the log store. Idempotent.
func (c *controller) close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		c.closeErr = errors.Join(c.tr.Close(), c.r.Shutdown().Error(), c.store.Close())
	})
	return c.closeErr
}

// controllerLoop seeds the controller with the formed Membership when it
// leads an empty controller, and adopts newer Memberships it applies.
func (n *Node) controllerLoop(c *controller) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-n.shutdownCh:
			return
		case <-c.done:
			return
		case <-c.fsm.changed:
		case <-t.C:
		}
		cur := n.st.Load().members
		got := c.fsm.get()
		switch {
		case got == nil && c.r.State() == raft.Leader:
			b, _ := json.Marshal(topoEntry{Members: cur})
			if err := c.r.Apply(b, time.Second).Error(); err != nil {
				n.log.Info("controller: seeding membership", "err", err)
			}
		case got != nil && got.Epoch > cur.Ctrl:
			// Replicas newly placed here are opened by reconcileLoop.
			n.adopt(got)
		}
	}
}

// ControllerMembers returns the Membership held by this node's controller
// replica (nil when it hosts none or it is not seeded yet).
func (n *Node) ControllerMembers() *Membership {
	if c := n.ctrl.Load(); c != nil {
		return c.fsm.get()
	}
	return nil
}
