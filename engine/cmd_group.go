package engine

import (
	"bytes"
	"strconv"
)

// Consumer-group commands: XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM and
// XAUTOCLAIM, with Redis 7.4's replies and error strings (t_stream.c).
//
// Each command is split in two: a syntax phase (xxxSyntax) that checks what
// Redis checks before it looks at any key, so a leader can reject garbage
// before proposing it (the validators registered below), and the
// execution, which repeats the syntax phase and then works on the keyspace.

func init() {
	register("xgroup", cmdXGroup)
	register("xreadgroup", cmdXReadGroup)
	register("xack", cmdXAck)
	register("xpending", cmdXPending)
	register("xclaim", cmdXClaim)
	register("xautoclaim", cmdXAutoClaim)
	// The stateless checks: the error Redis would reply without looking at
	// the keyspace.
	registerValidator("xgroup", func(_ int64, argv [][]byte) *Error { _, err := xgroupSyntax(argv); return err })
	registerValidator("xreadgroup", func(now int64, argv [][]byte) *Error { _, err := xreadgroupSyntax(now, argv); return err })
	registerValidator("xack", func(_ int64, argv [][]byte) *Error { return arityMin(argv, 4, "xack") })
	registerValidator("xpending", func(_ int64, argv [][]byte) *Error { _, err := xpendingSyntax(argv); return err })
	registerValidator("xclaim", func(_ int64, argv [][]byte) *Error { return arityMin(argv, 6, "xclaim") })
	registerValidator("xautoclaim", func(_ int64, argv [][]byte) *Error { _, err := xautoclaimSyntax(argv); return err })
}

func arityMin(argv [][]byte, n int, name string) *Error {
	if len(argv) < n {
		return WrongArity(name)
	}
	return nil
}

// lookupStreamGroup returns the stream at key and its consumer group, or
// WRONGTYPE, or NOGROUP when either is missing (the error XPENDING, XCLAIM,
// XAUTOCLAIM and XNACK share).
func (e *Engine) lookupStreamGroup(key, group []byte) (*Stream, *Group, *Error) {
	s, err := e.lookupStream(key)
	if err != nil {
		return nil, nil, err
	}
	var g *Group
	if s != nil {
		g = s.lookupGroup(group)
	}
	if g == nil {
		return nil, nil, noGroupKeyErr(key, group)
	}
	return s, g, nil
}

func noGroupKeyErr(key, group []byte) *Error {
	return Errorf("NOGROUP No such key '%s' or consumer group '%s'", key, group)
}

func noGroupForKeyErr(group, key []byte) *Error {
	return Errorf("NOGROUP No such consumer group '%s' for key name '%s'", group, key)
}

// ---- XGROUP ---------------------------------------------------------------

var xgroupHelp = []string{
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
}

type xgroupArgs struct {
	sub         string // upper-case subcommand
	mkstream    bool
	entriesRead int64
}

// xgroupSubArity is the command table's arity of each XGROUP subcommand
// (negative: at least).
var xgroupSubArity = map[string]int{
	"CREATE": -5, "SETID": -5, "DESTROY": 4, "CREATECONSUMER": 5, "DELCONSUMER": 5, "HELP": 2,
	"SETDLQ": -5, // raftstream extension (deadletter.go)
}

func checkSubArity(argv [][]byte, table map[string]int) (string, *Error) {
	if len(argv) < 2 {
		return "", WrongArity(Lower(argv[0]))
	}
	sub := string(bytes.ToUpper(argv[1]))
	ar, ok := table[sub]
	if !ok {
		return "", unknownSubcommand(argv)
	}
	if (ar > 0 && len(argv) != ar) || (ar < 0 && len(argv) < -ar) {
		return "", WrongArity(Lower(argv[0]) + "|" + Lower(argv[1]))
	}
	return sub, nil
}

func xgroupSyntax(argv [][]byte) (xgroupArgs, *Error) {
	a := xgroupArgs{entriesRead: entriesReadInvalid}
	sub, err := checkSubArity(argv, xgroupSubArity)
	if err != nil {
		return a, err
	}
	a.sub = sub
	if sub == "SETDLQ" {
		_, _, err := setdlqSyntax(argv)
		return a, err
	}
	if len(argv) >= 4 {
		create, setid := sub == "CREATE", sub == "SETID"
		for i := 5; i < len(argv); {
			switch {
			case create && EqFold(argv[i], "MKSTREAM"):
				a.mkstream = true
				i++
			case (create || setid) && EqFold(argv[i], "ENTRIESREAD") && i+1 < len(argv):
				v, err := intArg(argv[i+1], "")
				if err != nil {
					return a, err
				}
				if v < 0 && v != entriesReadInvalid {
					return a, Errorf("ERR value for ENTRIESREAD must be positive or -1")
				}
				a.entriesRead = v
				i += 2
			default:
				return a, subcommandSyntaxError(argv)
			}
		}
	}
	return a, nil
}

func cmdXGroup(e *Engine, now int64, argv [][]byte) Reply {
	a, err := xgroupSyntax(argv)
	if err != nil {
		return err
	}
	var s *Stream
	var g *Group
	if len(argv) >= 4 {
		var werr *Error
		if s, werr = e.lookupStream(argv[2]); werr != nil {
			return werr
		}
		if !a.mkstream {
			if s == nil {
				return Errorf("ERR The XGROUP subcommand requires the key to exist. " +
					"Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
			}
			g = s.lookupGroup(argv[3])
			if g == nil && (a.sub == "SETID" || a.sub == "CREATECONSUMER" || a.sub == "DELCONSUMER" || a.sub == "SETDLQ") {
				return noGroupForKeyErr(argv[3], argv[2])
			}
		}
	}
	n := len(argv)
	switch {
	case a.sub == "HELP" && n == 2:
		return helpReply(argv[0], xgroupHelp)
	case a.sub == "CREATE" && n >= 5 && n <= 8:
		var id ID
		if string(argv[4]) == "$" {
			if s != nil {
				id = s.LastID
			}
		} else if id, err = parseStrictID(argv[4], 0); err != nil {
			return err
		}
		if s == nil {
			// MKSTREAM: dbAdd signals the new stream key as ready.
			s = e.newStream()
			e.addKey(string(argv[2]), &Value{Kind: KindStream, Stream: s})
			e.signal(string(argv[2]))
		}
		if s.createGroup(argv[3], id, a.entriesRead) == nil {
			return Errorf("BUSYGROUP Consumer Group name already exists")
		}
		return OK
	case a.sub == "SETID" && (n == 5 || n == 7):
		var id ID
		if string(argv[4]) == "$" {
			id = s.LastID
		} else if id, err = parseIDArg(argv[4], 0); err != nil {
			return err
		}
		g.LastID = id
		g.EntriesRead = a.entriesRead
		// Moving the group back may let blocked XREADGROUP '>' readers be
		// served; waking them is harmless otherwise.
		e.signal(string(argv[2]))
		return OK
	case a.sub == "DESTROY" && n == 4:
		if g == nil {
			return Integer(0)
		}
		s.destroyGroup(argv[3])
		// Wake XREADGROUP clients blocked on this group: they now get
		// the NOGROUP error.
		e.signal(string(argv[2]))
		return Integer(1)
	case a.sub == "SETDLQ":
		return xgroupSetDLQ(g, argv)
	case a.sub == "CREATECONSUMER" && n == 5:
		if g.createConsumer(argv[4], now) != nil {
			return Integer(1)
		}
		return Integer(0)
	case a.sub == "DELCONSUMER" && n == 5:
		c := g.findConsumer(argv[4])
		if c == nil {
			return Integer(0)
		}
		return Integer(g.deleteConsumer(c))
	}
	return subcommandSyntaxError(argv)
}

// ---- XREADGROUP -----------------------------------------------------------

// xreadgroupArgs is a parsed XREADGROUP.
type xreadgroupArgs struct {
	group, consumer []byte
	count           int64
	block           int64 // -1 without BLOCK; else the absolute deadline (ms), 0 = forever
	noack           bool
	keys, ids       [][]byte
	// claim is CLAIM's min-idle-time (Redis 8.4, xreadgroup_claim.go);
	// -1 without CLAIM.
	claim int64
}

func xreadgroupSyntax(now int64, argv [][]byte) (xreadgroupArgs, *Error) {
	a := xreadgroupArgs{block: -1, claim: -1}
	if len(argv) < 7 {
		return a, WrongArity("xreadgroup")
	}
	streamsArg := 0
	for i := 1; i < len(argv); i++ {
		more := len(argv) - i - 1
		o := argv[i]
		switch {
		case EqFold(o, "BLOCK") && more > 0:
			i++
			t, err := parseTimeout(argv[i], now)
			if err != nil {
				return a, err
			}
			a.block = t
		case EqFold(o, "COUNT") && more > 0:
			i++
			c, err := intArg(argv[i], "")
			if err != nil {
				return a, err
			}
			if c < 0 {
				c = 0
			}
			a.count = c
		case EqFold(o, "STREAMS") && more > 0:
			streamsArg = i + 1
			n := len(argv) - streamsArg
			if n%2 != 0 {
				return a, Errorf("ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified.")
			}
			a.keys, a.ids = argv[streamsArg:streamsArg+n/2], argv[streamsArg+n/2:]
			i = len(argv)
		case EqFold(o, "GROUP") && more >= 2:
			a.group, a.consumer = argv[i+1], argv[i+2]
			i += 2
		case EqFold(o, "NOACK"):
			a.noack = true
		case EqFold(o, "CLAIM") && more > 0:
			i++
			v, err := parseClaimIdle(argv[i])
			if err != nil {
				return a, err
			}
			a.claim = v
		default:
			return a, ErrSyntax
		}
	}
	if streamsArg == 0 {
		return a, ErrSyntax
	}
	if a.group == nil {
		return a, Errorf("ERR Missing GROUP option for XREADGROUP")
	}
	return a, nil
}

func cmdXReadGroup(e *Engine, now int64, argv [][]byte) Reply {
	a, err := xreadgroupSyntax(now, argv)
	if err != nil {
		return err
	}
	type target struct {
		s       *Stream
		g       *Group
		id      ID
		newOnly bool // the '>' ID
	}
	targets := make([]target, len(a.keys))
	for i, key := range a.keys {
		s, werr := e.lookupStream(key)
		if werr != nil {
			return werr
		}
		var g *Group
		if s != nil {
			g = s.lookupGroup(a.group)
		}
		if g == nil {
			return Errorf("NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with GROUP option", key, a.group)
		}
		t := target{s: s, g: g}
		switch string(a.ids[i]) {
		case "$", "+":
			return Errorf("ERR The %s ID is meaningless in the context of XREADGROUP: you want to read the history "+
				"of this consumer by specifying a proper ID, or use the > ID to get new messages. "+
				"The %s ID would just return an empty result set.", a.ids[i], a.ids[i])
		case ">":
			t.newOnly = true
		default:
			if t.id, err = parseStrictID(a.ids[i], 0); err != nil {
				return err
			}
			// Redis marks '>' internally as the maximum ID, so an explicit
			// maximum ID means '>' too.
			t.newOnly = t.id == MaxID
		}
		targets[i] = t
	}
	var out PairMap
	for i, t := range targets {
		s, g := t.s, t.g
		serve, history := false, false
		gt := t.id
		if !t.newOnly {
			serve, history = true, true
		} else if s.Length > 0 && g.LastID.Less(s.LastID) {
			// The last live entry is at most s.LastID; find it only when
			// the group may be behind.
			if maxID, ok := s.lastValidID(); ok && g.LastID.Less(maxID) {
				serve, gt = true, g.LastID
			}
		}
		c, _ := g.lookupOrCreateConsumer(a.consumer, now)
		c.SeenTime = now
		var claimed Array
		count := a.count
		if t.newOnly && a.claim >= 0 {
			claimed = e.claimIdle(a.keys[i], s, g, c, a.claim, count, now)
			if count > 0 {
				count -= int64(len(claimed))
				if count == 0 {
					serve = false
				}
			}
		}
		if !serve {
			if len(claimed) > 0 {
				out = append(out, BulkString(bytes.Clone(a.keys[i])), claimed)
			}
			continue
		}
		start, _ := gt.Incr()
		var entries Array
		if history {
			entries = e.readConsumerHistory(a.keys[i], s, g, c, start, a.count, now)
		} else {
			entries = deliverNew(s, g, c, start, count, a.noack, now)
			if a.claim >= 0 {
				withClaimFields(entries)
			}
		}
		if len(claimed) > 0 {
			entries = append(claimed, entries...)
		}
		out = append(out, BulkString(bytes.Clone(a.keys[i])), entries)
	}
	if len(out) == 0 {
		return NullArray{}
	}
	return out
}

// deliverNew is streamReplyWithRange with a group: it delivers entries after
// start-1 to consumer c, advancing the group's last-delivered-id and, unless
// noack, recording NACKs (taking over any NACK another consumer holds for a
// delivered ID, which XGROUP SETID can cause).
func deliverNew(s *Stream, g *Group, c *Consumer, start ID, count int64, noack bool, now int64) Array {
	var out Array
	if count > 0 {
		out = make(Array, 0, min(count, 256))
	}
	arena := entryArena{hint: int(min(count, 256))}
	it := s.Iter(start, MaxID, false)
	for it.Next() {
		id := it.ID
		if g.LastID.Less(id) {
			s.advanceLastID(g, id)
		}
		out = append(out, arena.entry(id, it.Fields))
		if !noack {
			if nk, ok := g.PEL.Get(id); ok {
				nk.own(c)
				nk.DeliveryTime, nk.DeliveryCount = now, 1
			} else {
				nk := &NACK{ID: id, DeliveryTime: now, DeliveryCount: 1, Consumer: c}
				g.PEL.Insert(nk)
				c.PEL.Insert(nk)
			}
			c.ActiveTime = now
		}
		if count > 0 && int64(len(out)) == count {
			break
		}
	}
	if out == nil {
		out = Array{}
	}
	return out
}

// readConsumerHistory is streamReplyWithRangeFromConsumerPEL: the consumer's
// own pending entries from start on; entries deleted from the stream show
// as [id, nil]. Each re-delivered entry gets a new delivery time and count.
func (e *Engine) readConsumerHistory(key []byte, s *Stream, g *Group, c *Consumer, start ID, count int64, now int64) Array {
	out := Array{}
	arena := entryArena{hint: int(min(count, 256))}
	cu := c.PEL.Seek(start)
	for count == 0 || int64(len(out)) < count {
		nk, ok := cu.Next()
		if !ok {
			break
		}
		if fields, ok := s.Lookup(nk.ID); ok {
			if e.deadLetter(key, s, g, nk, fields, now) {
				cu = c.PEL.Seek(nk.ID)
				continue
			}
			out = append(out, arena.entry(nk.ID, fields))
			nk.DeliveryTime = now
			nk.bumpDeliveries()
		} else {
			out = append(out, Array{idBulk(nk.ID), NullArray{}})
		}
	}
	return out
}

// ---- XACK -----------------------------------------------------------------

func cmdXAck(e *Engine, now int64, argv [][]byte) Reply {
	if err := arityMin(argv, 4, "xack"); err != nil {
		return err
	}
	s, werr := e.lookupStream(argv[1])
	if werr != nil {
		return werr
	}
	var g *Group
	if s != nil {
		g = s.lookupGroup(argv[2])
	}
	if g == nil {
		return Integer(0)
	}
	ids := make([]ID, 0, len(argv)-3)
	for _, b := range argv[3:] {
		id, err := parseStrictID(b, 0)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	acked := 0
	for _, id := range ids {
		if nk, ok := g.PEL.Delete(id); ok {
			nk.disown()
			acked++
		}
	}
	return Integer(acked)
}

// ---- XPENDING -------------------------------------------------------------

type xpendingArgs struct {
	summary    bool
	minIdle    int64
	start, end ID
	count      int64
	consumer   []byte
}

func xpendingSyntax(argv [][]byte) (xpendingArgs, *Error) {
	var a xpendingArgs
	if err := arityMin(argv, 3, "xpending"); err != nil {
		return a, err
	}
	n := len(argv)
	a.summary = n == 3
	if n != 3 && (n < 6 || n > 9) {
		return a, ErrSyntax
	}
	if n < 6 {
		return a, nil
	}
	si := 3
	if EqFold(argv[3], "IDLE") {
		v, err := intArg(argv[4], "")
		if err != nil {
			return a, err
		}
		a.minIdle = v
		if n < 8 {
			return a, ErrSyntax
		}
		si += 2
	}
	c, err := intArg(argv[si+2], "")
	if err != nil {
		return a, err
	}
	if c < 0 {
		c = 0
	}
	a.count = c
	if a.start, err = parseIntervalStart(argv[si]); err != nil {
		return a, err
	}
	if a.end, err = parseIntervalEnd(argv[si+1]); err != nil {
		return a, err
	}
	if si+3 < n {
		a.consumer = argv[si+3]
	}
	return a, nil
}

func cmdXPending(e *Engine, now int64, argv [][]byte) Reply {
	a, err := xpendingSyntax(argv)
	if err != nil {
		return err
	}
	_, g, gerr := e.lookupStreamGroup(argv[1], argv[2])
	if gerr != nil {
		return gerr
	}
	if a.summary {
		if g.PEL.Len() == 0 {
			return Array{Integer(0), NullBulk{}, NullBulk{}, NullArray{}}
		}
		first, _ := g.PEL.First()
		last, _ := g.PEL.Last()
		consumers := Array{}
		for _, c := range g.Consumers {
			if c.PEL.Len() == 0 {
				continue
			}
			consumers = append(consumers, Array{BulkString(c.Name), BulkString(strconv.AppendInt(nil, int64(c.PEL.Len()), 10))})
		}
		return Array{Integer(g.PEL.Len()), idBulk(first.ID), idBulk(last.ID), consumers}
	}
	pel := g.PEL
	if a.consumer != nil {
		c := g.findConsumer(a.consumer)
		if c == nil {
			return Array{}
		}
		pel = c.PEL
	}
	out := Array{}
	count := a.count
	cu := pel.Seek(a.start)
	for count > 0 {
		nk, ok := cu.Next()
		if !ok || a.end.Less(nk.ID) {
			break
		}
		if nk.Consumer != nil && a.minIdle != 0 && now-nk.DeliveryTime < a.minIdle {
			continue
		}
		count--
		// An owner-less (XNACK-released) entry shows the consumer "" and
		// the idle time -1 (https://redis.io/docs/latest/commands/xnack/).
		consumer, elapsed := "", int64(-1)
		if nk.Consumer != nil {
			consumer, elapsed = nk.Consumer.Name, now-nk.DeliveryTime
			if elapsed < 0 {
				elapsed = 0
			}
		}
		out = append(out, Array{idBulk(nk.ID), BulkString(consumer), Integer(elapsed),
			Integer(int64(nk.DeliveryCount))})
	}
	return out
}

// ---- argument parsing shared by the consumer-group commands ----------------

// Argument parsing shared by the consumer-group commands, with Redis's exact
// rules and error replies.

// subcommandSyntaxError is addReplySubcommandSyntaxError.
func subcommandSyntaxError(argv [][]byte) *Error {
	return Errorf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try %s HELP.",
		argv[1], bytes.ToUpper(argv[0]))
}

// unknownSubcommand is the command table's reply for a container command's
// unknown subcommand.
func unknownSubcommand(argv [][]byte) *Error {
	return Errorf("ERR unknown subcommand '%.128s'. Try %s HELP.", argv[1], bytes.ToUpper(argv[0]))
}

// helpReply is addReplyHelp: a header, the lines, and the HELP footer, all
// status replies.
func helpReply(cmd []byte, lines []string) Reply {
	out := make(Array, 0, len(lines)+3)
	out = append(out, SimpleString(string(bytes.ToUpper(cmd))+" <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"))
	for _, l := range lines {
		out = append(out, SimpleString(l))
	}
	return append(out, SimpleString("HELP"), SimpleString("    Print this help."))
}

// idBulk is addReplyStreamID.
func idBulk(id ID) BulkString { return BulkString(id.Append(nil)) }

// entryReply is one stream entry as Redis emits it: [id, [field, value ...]].
// The field bytes are copied: the storage may reuse them.
// entryArena hands out EntryReplys whose fields are encoded into shared
// slabs: a reply of many entries costs a few allocations, not several per
// entry. A slab is never grown in place (entries keep pointing into it); a
// full one is replaced.
type entryArena struct {
	ents []EntryReply
	buf  []byte
	// hint is how many entries the reply will likely hold (its COUNT, 0 if
	// unknown): the first slabs are sized for them.
	hint int
}

func (a *entryArena) entry(id ID, fields [][]byte) *EntryReply {
	// Each new slab is twice the last (up to a bound), so that a reply of
	// one entry stays small and one of thousands takes few slabs.
	if len(a.ents) == cap(a.ents) {
		a.ents = make([]EntryReply, 0, min(max(2*cap(a.ents), a.hint, 4), 256))
	}
	n := 0
	for _, f := range fields {
		n += bulkFieldSize(len(f))
	}
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(n, min(max(2*cap(a.buf), n*a.hint), 64<<10), 256))
	}
	start := len(a.buf)
	for _, f := range fields {
		a.buf = appendBulkField(a.buf, f)
	}
	a.ents = append(a.ents, EntryReply{ID: id, N: len(fields), Enc: a.buf[start:len(a.buf):len(a.buf)]})
	return &a.ents[len(a.ents)-1]
}

func entryReply(id ID, fields [][]byte) Reply {
	n := 41 // longest ID
	for _, f := range fields {
		n += len(f)
	}
	buf := make([]byte, 0, n)
	buf = id.Append(buf)
	idb := BulkString(buf[:len(buf):len(buf)])
	fa := make(Array, len(fields))
	for i, f := range fields {
		start := len(buf)
		buf = append(buf, f...)
		fa[i] = BulkString(buf[start:len(buf):len(buf)])
	}
	return Array{idb, fa}
}

// lastValidID is streamLastValidID: the ID of the last live entry.
func (s *Stream) lastValidID() (ID, bool) {
	it := s.Iter(MinID, MaxID, true)
	if it.Next() {
		return it.ID, true
	}
	return ID{}, false
}
