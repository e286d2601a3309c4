package resp

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftstream/raftstream/resp/acl"
)

// client is one connection's state. Fields without a note are owned by the
// connection's goroutine (conn.go runs one per connection); the ones read by
// other goroutines (CLIENT LIST, INFO) are guarded by mu or atomic.
type client struct {
	id      int64
	conn    *conn
	addr    string
	laddr   string
	created time.Time

	proto    int       // 2 or 3
	authed   bool      // requirepass satisfied
	user     *acl.User // the ACL user authenticated as (acl.go); nil before AUTH
	readonly bool      // READONLY: reads may be served by a follower (stale)
	asking   bool      // ASKING: the next command follows an ASK redirect
	quitting bool      // QUIT: close after writing the reply

	lastCmdName string

	waitTimer *time.Timer // bounds the pipeline's waits for writes (server.go waitFutureTimer)
	enc       []byte      // reply encoding buffer (write)
	pipe      pipeBufs    // runPipeline's buffers (server.go)
	batching  bool        // in runPipeline, which sets lastAt once at its end
	// The event loop's round (loop_linux.go): runPipeline submits the
	// writes and leaves their answers to it; beforeBlock answers the
	// round's other connections before runPipeline waits for a permit.
	deferAnswer   bool
	beforeBlock   func()
	holdsInflight bool // serve's count of the batch, released by answerDeferred

	multi    *multiState  // non-nil between MULTI and EXEC/DISCARD
	execing  bool         // EXEC is running the transaction's commands
	lastExec [][][]byte   // the commands of the last EXEC (for forwarding)
	wait     waitState    // the last write's log position (wait.go)
	monitor  *monitorSink // non-nil once MONITOR made this a monitor (monitor.go)

	backup *backupSession // RAFTSTREAM BACKUP's open session (backup.go)

	mu      sync.Mutex // guards name, libName, libVer, noEvict, noTouch and pub
	name    string
	libName string
	libVer  string
	noEvict bool // CLIENT NO-EVICT on (shown in CLIENT LIST; nothing is evicted)
	noTouch bool // CLIENT NO-TOUCH on (shown in CLIENT LIST; keys have no LRU)
	// pub is a copy of the connection-owned fields above for CLIENT LIST
	// and CLIENT INFO, which run on other connections' goroutines.
	pub struct {
		proto    int
		readonly bool
		multi    int
		cmd      string
		user     string // ACL user ("" = default)
		monitor  bool
	}

	// out counts and limits the output not yet written (limits_buf.go);
	// nil for connections not accepted by Serve.
	out *outConn

	// block is where the connection is in a blocking read (block.go):
	// blockNone, blockWaiting, or the reply CLIENT UNBLOCK chose for it.
	block     atomic.Int32
	closedFlg atomic.Bool
	lastAt    atomic.Int64 // unix ms of the last command
}

func newClient(id int64, cn *conn) *client {
	c := &client{id: id, conn: cn, addr: cn.addr, created: time.Now(), proto: 2}
	if cn.nc != nil {
		c.laddr = cn.nc.LocalAddr().String()
	}
	c.lastAt.Store(time.Now().UnixMilli())
	return c
}

// write appends r to the connection's output buffer (flushed after the
// pipeline, or by flushNow).
func (c *client) write(r reply, proto int) {
	if replySize(r) > maxEncBuf {
		// A large reply (XREADGROUP COUNT 100 over several streams is
		// ~100 KB) is encoded in a buffer shared through bigEnc: growing a
		// fresh one for each would allocate twice the reply per call.
		bp, _ := bigEnc.Get().(*[]byte)
		if bp == nil {
			bp = new([]byte)
		}
		*bp = AppendReply((*bp)[:0], r, proto)
		c.writeRaw(*bp)
		if cap(*bp) <= maxPooledEnc {
			bigEnc.Put(bp)
		}
		return
	}
	// Encoded in a buffer of the connection's (WriteRaw copies it), kept
	// unless a large reply grew it.
	c.enc = AppendReply(c.enc[:0], r, proto)
	c.writeRaw(c.enc)
	if cap(c.enc) > maxEncBuf {
		c.enc = nil
	}
}

// maxEncBuf is the largest reply encoding buffer a connection keeps.
const maxEncBuf = 16 << 10

// bigEnc holds *[]byte encoding buffers for replies over maxEncBuf, shared
// by all connections; maxPooledEnc is the largest one it keeps.
var bigEnc sync.Pool

const maxPooledEnc = 4 << 20

// writeRaw appends an already encoded reply (a forwarded one).
// Past the output buffer limit the reply is dropped and the connection
// closed.
func (c *client) writeRaw(raw []byte) {
	if !c.batching {
		c.lastAt.Store(time.Now().UnixMilli())
	}
	if c.out != nil && !c.out.reserve(len(raw)) {
		c.close()
		return
	}
	c.conn.writeRaw(raw)
}

// publish copies the connection-owned state that CLIENT LIST shows (own
// goroutine, after each command).
func (c *client) publish() {
	multi := -1
	if c.multi != nil {
		multi = len(c.multi.queue)
	}
	c.mu.Lock()
	c.pub.proto, c.pub.readonly, c.pub.multi, c.pub.cmd = c.proto, c.readonly, multi, c.lastCmdName
	c.pub.user = c.userName()
	c.pub.monitor = c.monitor != nil
	c.mu.Unlock()
}

func (c *client) markClosed()    { c.closedFlg.Store(true) }
func (c *client) isClosed() bool { return c.closedFlg.Load() }

// close flushes pending output and closes the connection (own goroutine).
func (c *client) close() {
	c.quitting = true
	c.markClosed()
	_ = c.conn.close()
}

// kill closes the connection from another goroutine (CLIENT KILL).
func (c *client) kill() {
	c.markClosed()
	if nc := c.conn.nc; nc != nil {
		_ = nc.Close()
	}
}

func (c *client) getName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name
}

// publishedUser is the ACL user the connection last ran a command as
// (other goroutines).
func (c *client) publishedUser() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pub.user == "" {
		return "default"
	}
	return c.pub.user
}

// infoLine is the CLIENT LIST / CLIENT INFO line, in Redis's field order
// (7.0's fields, then 7.2's lib-name and lib-ver, set by CLIENT SETINFO).
// The flags are Redis's letters, in its order: O (monitor), x (in MULTI),
// b (blocked), r (READONLY), e (NO-EVICT), T (NO-TOUCH); N for none.
func (c *client) infoLine() string {
	c.mu.Lock()
	name, lib, ver, pub, noEvict, noTouch := c.name, c.libName, c.libVer, c.pub, c.noEvict, c.noTouch
	c.mu.Unlock()
	now := time.Now()
	var fl []byte
	for _, f := range []struct {
		on   bool
		flag byte
	}{{pub.monitor, 'O'}, {pub.multi >= 0, 'x'}, {c.block.Load() != blockNone, 'b'}, {pub.readonly, 'r'},
		{noEvict, 'e'}, {noTouch, 'T'}} {
		if f.on {
			fl = append(fl, f.flag)
		}
	}
	flags := string(fl)
	if flags == "" {
		flags = "N"
	}
	user := pub.user
	if user == "" {
		user = "default"
	}
	cmd := pub.cmd
	if cmd == "" {
		cmd = "NULL"
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=0 sub=0 psub=0 ssub=0 multi=%d qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=%s redir=-1 resp=%d lib-name=%s lib-ver=%s",
		c.id, c.addr, c.laddr, c.id+7, name, int(now.Sub(c.created).Seconds()),
		(now.UnixMilli()-c.lastAt.Load())/1000, flags, pub.multi, cmd, user, pub.proto, lib, ver)
}
