package resp

import (
	"bytes"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// CLIENT subcommands, with Redis 7's replies and errors (networking.c);
// CLIENT SETINFO and NO-TOUCH are 7.2's, CLIENT KILL's MAXAGE filter 7.4's.
// Only normal clients exist here (no replicas, no Pub/Sub): TYPE normal
// matches every connection, MONITOR ones included, as in Redis.

var (
	errUnblocked     = errorf("UNBLOCKED client unblocked via CLIENT UNBLOCK")
	errInvalidClient = errorf("ERR Invalid client ID")
)

func cmdClientID(s *Server, c *client, argv [][]byte) reply { return engine.Integer(c.id) }

func cmdClientGetName(s *Server, c *client, argv [][]byte) reply {
	if n := c.getName(); n != "" {
		return engine.Bulk(n)
	}
	return engine.NullBulk{}
}

func cmdClientSetName(s *Server, c *client, argv [][]byte) reply {
	if er := validClientName(argv[2]); er != nil {
		return er
	}
	c.mu.Lock()
	c.name = string(argv[2])
	c.mu.Unlock()
	return engine.OK
}

// validClientName rejects names with spaces, newlines or other characters
// Redis refuses.
func validClientName(name []byte) *errReply {
	for _, ch := range name {
		if ch < '!' || ch > '~' {
			return errorf("ERR Client names cannot contain spaces, newlines or special characters.")
		}
	}
	return nil
}

// cmdClientSetInfo implements CLIENT SETINFO LIB-NAME|LIB-VER value (Redis
// 7.2): the option is checked before the value, and named as given.
func cmdClientSetInfo(s *Server, c *client, argv [][]byte) reply {
	var dst *string
	switch strings.ToLower(string(argv[2])) {
	case "lib-name":
		dst = &c.libName
	case "lib-ver":
		dst = &c.libVer
	default:
		return errorf("ERR Unrecognized option '%s'", argv[2])
	}
	if validClientName(argv[3]) != nil {
		return errorf("ERR %s cannot contain spaces, newlines or special characters.", argv[2])
	}
	c.mu.Lock()
	*dst = string(argv[3])
	c.mu.Unlock()
	return engine.OK
}

func cmdClientInfo(s *Server, c *client, argv [][]byte) reply {
	return engine.BulkString(c.infoLine() + "\n")
}

// clientType maps a TYPE argument to whether it names the normal class
// (the only one here); ok is false for a name Redis does not know.
func clientType(name []byte) (normal, ok bool) {
	switch strings.ToLower(string(name)) {
	case "normal":
		return true, true
	case "slave", "replica", "master", "pubsub":
		return false, true
	}
	return false, false
}

// cmdClientList implements CLIENT LIST [TYPE type | ID id [id ...]]. The ID
// form lists the clients in the order asked (an ID given twice, twice).
func cmdClientList(s *Server, c *client, argv [][]byte) reply {
	var b strings.Builder
	switch {
	case len(argv) == 2:
		for _, cl := range s.clientsSorted() {
			b.WriteString(cl.infoLine())
			b.WriteByte('\n')
		}
	case len(argv) == 4 && bytes.EqualFold(argv[2], []byte("TYPE")):
		normal, ok := clientType(argv[3])
		if !ok {
			return errorf("ERR Unknown client type '%s'", argv[3])
		}
		if normal {
			return cmdClientList(s, c, argv[:2])
		}
	case len(argv) > 3 && bytes.EqualFold(argv[2], []byte("ID")):
		for _, a := range argv[3:] {
			id, ok := engine.ParseInt(a)
			if !ok {
				return errInvalidClient
			}
			if cl := s.clientByID(id); cl != nil {
				b.WriteString(cl.infoLine())
				b.WriteByte('\n')
			}
		}
	default:
		return errSyntax
	}
	return engine.BulkString(b.String())
}

// killFilter is the new form of CLIENT KILL: every filter given must match.
type killFilter struct {
	id            int64
	addr, laddr   string
	user          string // "" = any
	noneOfType    bool   // TYPE names a class no connection is in
	skipme        bool
	maxAge        int64 // seconds; 0 = any
	hasAddr, hasL bool
}

func (f *killFilter) matches(self, cl *client, now time.Time) bool {
	switch {
	case f.noneOfType,
		f.id != 0 && cl.id != f.id,
		f.hasAddr && cl.addr != f.addr,
		f.hasL && cl.laddr != f.laddr,
		f.user != "" && cl.publishedUser() != f.user,
		f.maxAge != 0 && int64(now.Sub(cl.created)/time.Second) < f.maxAge,
		f.skipme && cl == self:
		return false
	}
	return true
}

// cmdClientKill implements CLIENT KILL ip:port (the old form: +OK or "No
// such client", and the caller may kill itself) and CLIENT KILL filter
// value ... (the number killed) with Redis's filters ID, TYPE, USER, ADDR,
// LADDR, SKIPME and MAXAGE (7.4).
func cmdClientKill(s *Server, c *client, argv [][]byte) reply {
	f := killFilter{skipme: true}
	if len(argv) == 3 {
		f.addr, f.hasAddr, f.skipme = string(argv[2]), true, false
	} else {
		for i := 2; i < len(argv); i += 2 {
			if i+1 >= len(argv) {
				return errSyntax
			}
			v := argv[i+1]
			switch strings.ToLower(string(argv[i])) {
			case "id":
				n, ok := engine.ParseInt(v)
				if !ok || n <= 0 {
					return errorf("ERR client-id should be greater than 0")
				}
				f.id = n
			case "maxage":
				n, ok := engine.ParseInt(v)
				if !ok {
					return errorf("ERR maxage is not an integer or out of range")
				}
				if n <= 0 {
					return errorf("ERR maxage should be greater than 0")
				}
				f.maxAge = n
			case "type":
				normal, ok := clientType(v)
				if !ok {
					return errorf("ERR Unknown client type '%s'", v)
				}
				f.noneOfType = !normal
			case "addr":
				f.addr, f.hasAddr = string(v), true
			case "laddr":
				f.laddr, f.hasL = string(v), true
			case "user":
				if s.acl.Get(string(v)) == nil {
					return errorf("ERR No such user '%s'", v)
				}
				f.user = string(v)
			case "skipme":
				switch strings.ToLower(string(v)) {
				case "yes":
					f.skipme = true
				case "no":
					f.skipme = false
				default:
					return errSyntax
				}
			default:
				return errSyntax
			}
		}
	}
	n, now := 0, time.Now()
	for _, cl := range s.clientsSorted() {
		if f.matches(c, cl, now) {
			s.killClient(c, cl)
			n++
		}
	}
	if len(argv) == 3 {
		if n == 0 {
			return errorf("ERR No such client")
		}
		return engine.OK
	}
	return engine.Integer(n)
}

// killClient closes cl; the calling connection is closed after its reply.
func (s *Server) killClient(self, cl *client) {
	if cl == self {
		self.quitting = true
		return
	}
	cl.kill()
	s.waiters.wakeClient(cl)
	s.pause.wake()
}

// cmdClientOnOff answers CLIENT NO-EVICT and NO-TOUCH. Nothing is evicted
// here and keys have no LRU/LFU clock: the modes are only recorded (CLIENT
// LIST flags e and T).
func cmdClientOnOff(s *Server, c *client, argv [][]byte) reply {
	var on bool
	switch strings.ToLower(string(argv[2])) {
	case "on":
		on = true
	case "off":
	default:
		return errSyntax
	}
	c.mu.Lock()
	if bytes.EqualFold(argv[1], []byte("no-evict")) {
		c.noEvict = on
	} else {
		c.noTouch = on
	}
	c.mu.Unlock()
	return engine.OK
}

// cmdClientUnblock implements CLIENT UNBLOCK id [TIMEOUT|ERROR]: a client
// waiting in XREAD/XREADGROUP BLOCK (block.go) is answered as if its
// timeout had passed, or with the UNBLOCKED error. 1 if it was waiting.
func cmdClientUnblock(s *Server, c *client, argv [][]byte) reply {
	if len(argv) > 4 {
		return engine.SubcommandSyntaxError(argv)
	}
	id, ok := engine.ParseInt(argv[2])
	if !ok {
		return errNotInteger
	}
	reason := blockUnblockedTimeout
	if len(argv) == 4 {
		switch strings.ToLower(string(argv[3])) {
		case "timeout":
		case "error":
			reason = blockUnblockedError
		default:
			return errorf("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
		}
	}
	if cl := s.clientByID(id); cl != nil && cl.block.CompareAndSwap(blockWaiting, reason) {
		s.waiters.wakeClient(cl)
		return engine.Integer(1)
	}
	return engine.Integer(0)
}

// ---- CLIENT PAUSE ----

// pauseState is CLIENT PAUSE: until when, and whether every command or
// only the writes wait. A pause can only be extended or made stricter by
// another CLIENT PAUSE (Redis keeps the later end and the stricter mode),
// and is ended by CLIENT UNPAUSE or its end time.
//
// The command path pays nothing for it while no pause is set: the server's
// hooks word (dispatch.go) has hookPause set only while one is.
type pauseState struct {
	mu    sync.Mutex
	all   bool      // ALL; else WRITE
	until time.Time // zero: no pause
	// changed is closed, and replaced, whenever the pause changes or a
	// waiting client may have been killed: waiters look again.
	changed chan struct{}
}

// wake makes every waiting command look at the pause again.
func (p *pauseState) wake() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// get returns the pause in force now (zero until when none) and a channel
// closed when it changes.
func (p *pauseState) get(now time.Time) (all bool, until time.Time, changed <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !now.Before(p.until) {
		p.until = time.Time{}
	}
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return p.all, p.until, p.changed
}

// cmdClientPause implements CLIENT PAUSE timeout [WRITE|ALL] (timeout in
// milliseconds; ALL by default).
func cmdClientPause(s *Server, c *client, argv [][]byte) reply {
	if len(argv) > 4 {
		return engine.SubcommandSyntaxError(argv)
	}
	ms, ok := engine.ParseInt(argv[2])
	now := time.Now().UnixMilli()
	switch {
	case !ok:
		return errorf("ERR timeout is not an integer or out of range")
	case ms < 0:
		return errorf("ERR timeout is negative")
	case ms > math.MaxInt64-now: // Redis 7.4 (7.0 overflows)
		return errorf("ERR timeout is out of range")
	}
	all := true
	if len(argv) == 4 {
		switch strings.ToLower(string(argv[3])) {
		case "all":
		case "write":
			all = false
		default:
			return errorf("ERR CLIENT PAUSE mode must be WRITE or ALL")
		}
	}
	until := time.UnixMilli(now + ms)
	p := &s.pause
	p.mu.Lock()
	if p.until.IsZero() || !time.Now().Before(p.until) {
		p.all = all
	} else {
		p.all = p.all || all
	}
	if until.After(p.until) {
		p.until = until
	}
	p.mu.Unlock()
	s.setHook(hookPause, true)
	p.wake()
	return engine.OK
}

func cmdClientUnpause(s *Server, c *client, argv [][]byte) reply {
	s.pause.end()
	return engine.OK
}

// end ends the pause (CLIENT UNPAUSE, and Shutdown, which lets the held
// commands finish rather than wait out the pause).
func (p *pauseState) end() {
	p.mu.Lock()
	p.until = time.Time{}
	p.mu.Unlock()
	p.wake()
}

// pauses reports whether a pause (ALL or WRITE) holds r back: under ALL
// every command waits; under WRITE the commands that write (the engine's
// writes, XREADGROUP included, FLUSHALL, and EXEC of a transaction that
// writes) and the blocking reads do. MONITOR connections never wait, as
// Redis's replicas.
func (r *request) pausedBy(c *client, all bool) bool {
	if c.monitor != nil {
		return false
	}
	if all || r.block || r.cmd.Flags&command.FlagWrite != 0 {
		return true
	}
	if r.cmd.Name == "exec" && c.multi != nil {
		for _, qc := range c.multi.cmds {
			if qc.Flags&command.FlagWrite != 0 {
				return true
			}
		}
	}
	return false
}

// pauseWait holds an admitted command while a CLIENT PAUSE applies to it.
// It clears hookPause once no pause is left. A connection closed meanwhile
// stops waiting (its command then runs into the closed connection).
func (s *Server) pauseWait(c *client, r *request) {
	poll := time.NewTicker(200 * time.Millisecond)
	defer poll.Stop()
	for {
		all, until, changed := s.pause.get(time.Now())
		if until.IsZero() {
			s.setHook(hookPause, false)
			// A pause set between get and setHook set the bit again
			// after it: look once more.
			if _, u, _ := s.pause.get(time.Now()); !u.IsZero() {
				s.setHook(hookPause, true)
				continue
			}
			return
		}
		if !r.pausedBy(c, all) || c.isClosed() {
			return
		}
		t := time.NewTimer(time.Until(until))
		select {
		case <-changed:
		case <-t.C:
		case <-poll.C:
			if peerClosed(c) {
				c.markClosed()
			}
		}
		t.Stop()
	}
}
