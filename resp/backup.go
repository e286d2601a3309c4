package resp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/slots"
)

// RAFTSTREAM BACKUP (flag admin): a shard's state at a linearizable point,
// in chunks, for `raftstream backup`.
//
//	RAFTSTREAM BACKUP shard   on the shard's leader: a read fence, then the
//	                          engine's point-in-time view (fsm.Shard.Backup),
//	                          which opens the connection's backup session.
//	                          Reply, name/value pairs: shard, index and term
//	                          (the log position of the view), time (the
//	                          shard's clock, unix ms), shards (the cluster's
//	                          shard count), slots ([[first, last], ...]).
//	                          Elsewhere TRYAGAIN, naming the leader (not
//	                          MOVED: a forwarding node would follow it and
//	                          open the session on its own connection).
//	RAFTSTREAM BACKUP NEXT    the next chunk (≤ 1 MiB, a bulk string) of the
//	                          view's engine snapshot encoding (what
//	                          engine.Restore reads); a null bulk string once
//	                          all of it was sent, which closes the session.
//	RAFTSTREAM BACKUP ABORT   closes the session.
//
// The view is encoded by a goroutine of the session into a pipe that NEXT
// drains, so a session holds at most a chunk and the encoder's buffer, and
// the view itself: stream nodes the live engine has changed since are kept
// for the view (copy on write), the rest is shared. A session ends at the
// last chunk, at ABORT, at another BACKUP on the connection, when the
// connection closes and after backupIdle without NEXT; at most
// maxBackupSessions are open on a node at once.

const (
	// backupChunk is the largest NEXT reply.
	backupChunk = 1 << 20
	// backupIdle closes a session nobody asks for chunks.
	backupIdle = time.Minute
	// maxBackupSessions bounds the views a node keeps alive for backups.
	maxBackupSessions = 8
)

var (
	errBackupIdle     = fmt.Errorf("no RAFTSTREAM BACKUP NEXT for %v", backupIdle)
	errBackupClosed   = errors.New("the connection closed")
	errBackupReplaced = errors.New("replaced by another RAFTSTREAM BACKUP on the connection")
	errBackupAborted  = errors.New("RAFTSTREAM BACKUP ABORT")
	errNoBackup       = errorf("ERR no backup in progress on this connection (RAFTSTREAM BACKUP <shard> starts one)")
)

// backupSession is a connection's backup in progress.
type backupSession struct {
	s     *Server
	shard int
	pr    *io.PipeReader
	idle  *time.Timer
	once  sync.Once
}

func cmdRaftstreamBackup(s *Server, c *client, argv [][]byte) reply {
	if len(argv) != 3 {
		return errSyntax
	}
	switch {
	case engine.EqFold(argv[2], "NEXT"):
		return c.backupNext()
	case engine.EqFold(argv[2], "ABORT"):
		if c.backup == nil {
			return errNoBackup
		}
		c.endBackup(errBackupAborted)
		return engine.OK
	}
	shard, er := s.shardArg(argv[2])
	if er != nil {
		return er
	}
	c.endBackup(errBackupReplaced)
	if s.backups.Add(1) > maxBackupSessions {
		s.backups.Add(-1)
		return errorf("ERR %d backups are in progress on this node, the most it serves at once; try again later", maxBackupSessions)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	b, err := s.be.Backup(ctx, shard)
	if err != nil {
		s.backups.Add(-1)
		var nl *fsm.NotLeaderError
		if errors.As(err, &nl) {
			// Not MOVED, which a forwarding node would follow: the
			// session must be on the caller's connection to the leader.
			leader := s.leaderRESPAddr(nl)
			if leader == "" {
				leader = "unknown"
			}
			return errorf("TRYAGAIN this node does not lead shard %d (its leader: %s); send RAFTSTREAM BACKUP to the leader", shard, leader)
		}
		return s.mapReadError(err, -1)
	}
	c.backup = s.openBackup(b, shard)
	ranges := s.shardSlots(shard)
	rs := make(engine.Array, len(ranges))
	for i, r := range ranges {
		rs[i] = engine.Array{engine.Integer(r[0]), engine.Integer(r[1])}
	}
	return engine.Map{
		engine.BulkString("shard"), engine.Integer(shard),
		engine.BulkString("index"), engine.Integer(b.Index),
		engine.BulkString("term"), engine.Integer(b.Term),
		engine.BulkString("time"), engine.Integer(b.Now),
		engine.BulkString("shards"), engine.Integer(s.be.NumShards()),
		engine.BulkString("slots"), rs,
	}
}

// shardSlots lists the slot ranges shard serves, [first, last] each.
func (s *Server) shardSlots(shard int) [][2]int {
	var out [][2]int
	for slot := range slots.Count {
		if s.be.ShardOfSlot(slot) != shard {
			continue
		}
		if n := len(out); n > 0 && out[n-1][1] == slot-1 {
			out[n-1][1] = slot
		} else {
			out = append(out, [2]int{slot, slot})
		}
	}
	return out
}

// openBackup starts encoding b's engine view into the session's pipe.
func (s *Server) openBackup(b *fsm.Backup, shard int) *backupSession {
	pr, pw := io.Pipe()
	bs := &backupSession{s: s, shard: shard, pr: pr}
	go func() {
		_, err := b.Engine.WriteTo(pw)
		pw.CloseWithError(err) // nil: the reader sees EOF
	}()
	bs.idle = time.AfterFunc(backupIdle, func() { bs.close(errBackupIdle) })
	return bs
}

// close ends the session (once): the encoder's next write fails, so it
// returns and the view can be collected.
func (bs *backupSession) close(why error) {
	bs.once.Do(func() {
		bs.idle.Stop()
		bs.pr.CloseWithError(why)
		bs.s.backups.Add(-1)
	})
}

// endBackup closes the connection's session, if any (own goroutine).
func (c *client) endBackup(why error) {
	if c.backup != nil {
		c.backup.close(why)
		c.backup = nil
	}
}

// backupNext answers RAFTSTREAM BACKUP NEXT.
func (c *client) backupNext() reply {
	bs := c.backup
	if bs == nil {
		return errNoBackup
	}
	bs.idle.Reset(backupIdle)
	// A fresh buffer per chunk: inside EXEC the replies are encoded after
	// every command ran.
	buf := make([]byte, backupChunk)
	n, err := io.ReadFull(bs.pr, buf)
	switch {
	case err == nil || errors.Is(err, io.ErrUnexpectedEOF):
		return engine.BulkString(buf[:n])
	case errors.Is(err, io.EOF):
		c.endBackup(nil)
		return engine.NullBulk{}
	}
	c.endBackup(err)
	return errorf("ERR backup of shard %d failed: %s", bs.shard, oneLine(err))
}
