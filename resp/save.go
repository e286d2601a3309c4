package resp

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
)

// SAVE, BGSAVE and LASTSAVE, answered with what they mean here. Every
// write is in the Raft log on a majority's disks before it is
// acknowledged, so no save is needed to keep data; what a node can save is
// a Raft snapshot of each shard replica it hosts (RAFTSTREAM SNAPSHOT),
// which compacts the log and shortens a restart's replay.
//
//	SAVE              snapshots every local replica now, one after another;
//	                  +OK, or the first failure
//	BGSAVE [SCHEDULE] starts that in the background: +Background saving
//	                  started (+Background saving scheduled inside
//	                  MULTI/EXEC, as Redis answers there)
//	LASTSAVE          the Unix time (seconds) of the newest snapshot of a
//	                  local replica (taken here, or installed from the
//	                  leader), or of the end of the last SAVE/BGSAVE if
//	                  later (a replica with nothing new since its last
//	                  snapshot takes none); before either, the time the
//	                  server started, as Redis answers before its first save
//
// While a SAVE or BGSAVE runs, both answer "-ERR Background save already in
// progress" (Redis's reply to both while a BGSAVE runs). SAVE is refused
// inside MULTI (its no_multi flag). A replica with nothing applied since its
// last snapshot is left as it is: its snapshot already holds its state.

var errSaveInProgress = errorf("ERR Background save already in progress")

// saveState is the server's SAVE/BGSAVE bookkeeping.
type saveState struct {
	mu         sync.Mutex
	running    bool      // a SAVE or BGSAVE is taking snapshots
	background bool      // the running one is a BGSAVE
	started    time.Time // when the running one began
	lastOK     time.Time // when the last successful SAVE or BGSAVE ended
	saves      int64     // SAVE and BGSAVE runs started
	// lastBgErr is the last BGSAVE's failure (nil: it succeeded, or none
	// ran); lastBgTook its duration, -1 before the first.
	lastBgErr  error
	lastBgTook time.Duration
}

// begin marks a save running; false if one already is.
func (st *saveState) begin(background bool) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.running {
		return false
	}
	st.running, st.background, st.started = true, background, time.Now()
	st.saves++
	return true
}

// end records the outcome of the running save.
func (st *saveState) end(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := time.Now()
	if err == nil {
		st.lastOK = now
	}
	if st.background {
		st.lastBgErr, st.lastBgTook = err, now.Sub(st.started)
	}
	st.running, st.background = false, false
}

// SaveStatus is what INFO persistence reports about saves, in Redis's
// terms (the rdb_* fields).
type SaveStatus struct {
	// LastSave is LASTSAVE's answer (rdb_last_save_time).
	LastSave time.Time
	// BgsaveInProgress: a BGSAVE is running (rdb_bgsave_in_progress),
	// since BgsaveStarted (rdb_current_bgsave_time_sec).
	BgsaveInProgress bool
	BgsaveStarted    time.Time
	// LastBgsaveOK: the last BGSAVE succeeded, or none ran
	// (rdb_last_bgsave_status ok/err); LastBgsaveDuration is its duration,
	// -1 before the first (rdb_last_bgsave_time_sec).
	LastBgsaveOK       bool
	LastBgsaveDuration time.Duration
	// Saves counts the SAVE and BGSAVE runs started (rdb_saves).
	Saves int64
}

// SaveStatus reports the saves of this node (for INFO persistence). It
// lists the local replicas' newest snapshots, a directory read per shard.
func (s *Server) SaveStatus() SaveStatus {
	st := &s.save
	st.mu.Lock()
	out := SaveStatus{
		BgsaveInProgress: st.running && st.background,
		LastBgsaveOK:     st.lastBgErr == nil,
		Saves:            st.saves,
		LastSave:         st.lastOK,
	}
	if out.BgsaveInProgress {
		out.BgsaveStarted = st.started
	}
	out.LastBgsaveDuration = -1
	if st.lastBgTook > 0 {
		out.LastBgsaveDuration = st.lastBgTook
	}
	st.mu.Unlock()
	for _, i := range s.hostedShards() {
		if fs, ok := s.be.ShardStats(i); ok && fs.LastSnapshotAt.After(out.LastSave) {
			out.LastSave = fs.LastSnapshotAt
		}
	}
	if out.LastSave.IsZero() {
		out.LastSave = s.started
	}
	return out
}

func cmdSave(s *Server, c *client, argv [][]byte) reply {
	if !s.save.begin(false) {
		return errSaveInProgress
	}
	_, err := s.snapshotLocal(s.hostedShards())
	s.save.end(err)
	if err != nil {
		return errorf("ERR %s", oneLine(err))
	}
	return engine.OK
}

func cmdBgsave(s *Server, c *client, argv [][]byte) reply {
	if len(argv) > 2 || len(argv) == 2 && !engine.EqFold(argv[1], "SCHEDULE") {
		return errSyntax
	}
	if !s.save.begin(true) {
		return errSaveInProgress
	}
	go func() {
		_, err := s.snapshotLocal(s.hostedShards())
		s.save.end(err)
		if err != nil {
			s.log.Warn("BGSAVE failed", "err", err)
		}
	}()
	if c.execing {
		return engine.SimpleString("Background saving scheduled")
	}
	return engine.SimpleString("Background saving started")
}

func cmdLastsave(s *Server, c *client, argv [][]byte) reply {
	return engine.Integer(s.SaveStatus().LastSave.Unix())
}

// hostedShards lists the shards with a replica on this node, led or not.
func (s *Server) hostedShards() []int {
	var out []int
	for i := 0; i < s.be.NumShards(); i++ {
		if _, ok := s.be.ShardStatus(i); ok {
			out = append(out, i)
		}
	}
	return out
}

// snapshotLocal snapshots the local replicas of shards, one after another,
// and says how many took one (a replica with nothing applied since its
// last snapshot takes none). It stops at the first failure.
func (s *Server) snapshotLocal(shards []int) (int, error) {
	taken := 0
	for _, i := range shards {
		err := s.be.SnapshotShard(i)
		switch {
		case err == nil:
			taken++
		case errors.Is(err, raft.ErrNothingNewToSnapshot):
		default:
			return taken, fmt.Errorf("shard %d: %w", i, err)
		}
	}
	return taken, nil
}
