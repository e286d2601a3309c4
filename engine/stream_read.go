package engine

// Stream read commands: XLEN, XRANGE, XREVRANGE, XREAD (Redis 7 replies).

func init() {
	register("xlen", cmdXLen)
	register("xrange", func(e *Engine, now int64, argv [][]byte) Reply { return xrangeGeneric(e, now, argv, false) })
	register("xrevrange", func(e *Engine, now int64, argv [][]byte) Reply { return xrangeGeneric(e, now, argv, true) })
	register("xread", cmdXRead)
}

var (
	errInvalidStart = &Error{Msg: "ERR invalid start ID for the interval"}
	errInvalidEnd   = &Error{Msg: "ERR invalid end ID for the interval"}
	// Redis 7.4's wording (7.0 says "Unbalanced XREAD list"; 8.0 adds "'+',").
	errUnbalanced   = &Error{Msg: "ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified."}
	errXReadGroup   = &Error{Msg: "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."}
	errXReadNoAck   = &Error{Msg: "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."}
	errXReadClaim   = &Error{Msg: "ERR The CLAIM option is only supported by XREADGROUP. You called XREAD instead."}
	errXReadGT      = &Error{Msg: "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."}
	errTimeoutInt   = &Error{Msg: "ERR timeout is not an integer or out of range"}
	errTimeoutNeg   = &Error{Msg: "ERR timeout is negative"}
	errTimeoutRange = &Error{Msg: "ERR timeout is out of range"}
)

func cmdXLen(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) != 2 {
		return WrongArity("xlen")
	}
	s, err := e.lookupStream(argv[1], now)
	if err != nil {
		return err
	}
	if s == nil {
		return Integer(0)
	}
	return Integer(s.Length)
}

// parseIntervalStart and parseIntervalEnd parse a range's bounds.
func parseIntervalStart(b []byte) (ID, *Error) { return parseIntervalID(b, false) }
func parseIntervalEnd(b []byte) (ID, *Error)   { return parseIntervalID(b, true) }

// parseIntervalID is streamParseIntervalIDOrReply: "(" makes the bound
// exclusive (and the ID strict); a missing sequence number is the start's
// 0 or the end's maximum.
func parseIntervalID(b []byte, end bool) (ID, *Error) {
	missingSeq := uint64(0)
	if end {
		missingSeq = ^uint64(0)
	}
	if len(b) < 2 || b[0] != '(' {
		return parseIDArg(b, missingSeq)
	}
	id, err := parseStrictID(b[1:], missingSeq)
	if err != nil {
		return ID{}, err
	}
	if end {
		if id, ok := id.Decr(); ok {
			return id, nil
		}
		return ID{}, errInvalidEnd
	}
	if id, ok := id.Incr(); ok {
		return id, nil
	}
	return ID{}, errInvalidStart
}

func xrangeGeneric(e *Engine, now int64, argv [][]byte, rev bool) Reply {
	name := "xrange"
	if rev {
		name = "xrevrange"
	}
	if len(argv) < 4 {
		return WrongArity(name)
	}
	startArg, endArg := argv[2], argv[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, err := parseIntervalStart(startArg)
	if err != nil {
		return err
	}
	end, err := parseIntervalEnd(endArg)
	if err != nil {
		return err
	}
	count := int64(-1)
	for j := 4; j < len(argv); j++ {
		if EqFold(argv[j], "COUNT") && j+1 < len(argv) {
			v, err := intArg(argv[j+1], "")
			if err != nil {
				return err
			}
			count = max(v, 0)
			j++
		} else {
			return ErrSyntax
		}
	}
	s, err := e.lookupStream(argv[1], now)
	if err != nil {
		return err
	}
	if s == nil {
		return Array{}
	}
	if count == 0 {
		return NullArray{}
	}
	return s.rangeReply(start, end, max(count, 0), rev)
}

// rangeReply is streamReplyWithRange without a group: up to count (0 = all)
// live entries in [start, end], each as [id, [field, value, ...]]. The reply
// owns its bytes (copied out of the listpacks).
func (s *Stream) rangeReply(start, end ID, count int64, rev bool) Array {
	out := Array{}
	var arena []byte
	it := s.Iter(start, end, rev)
	for (count == 0 || int64(len(out)) < count) && it.Next() {
		var r Reply
		r, arena = appendEntryReply(it.ID, it.Fields, arena)
		out = append(out, r)
	}
	return out
}

// appendEntryReply builds [id, [field, value, ...]] for one entry, copying the
// bytes into arena (grown as needed; slices already handed out stay valid).
func appendEntryReply(id ID, fields [][]byte, arena []byte) (Reply, []byte) {
	need := 24
	for _, f := range fields {
		need += len(f)
	}
	if cap(arena)-len(arena) < need {
		arena = make([]byte, 0, max(need, 4096))
	}
	p := len(arena)
	arena = id.Append(arena)
	idb := BulkString(arena[p:len(arena):len(arena)])
	fa := make(Array, len(fields))
	for i, f := range fields {
		p = len(arena)
		arena = append(arena, f...)
		fa[i] = BulkString(arena[p:len(arena):len(arena)])
	}
	return Array{idb, fa}, arena
}

// parseTimeout is getTimeoutFromObjectOrReply in milliseconds; it returns
// the absolute deadline (0 = block forever).
func parseTimeout(b []byte, now int64) (int64, *Error) {
	v, ok := ParseInt(b)
	if !ok {
		return 0, errTimeoutInt
	}
	if v < 0 {
		return 0, errTimeoutNeg
	}
	if v > 0 {
		if v > 1<<63-1-now {
			return 0, errTimeoutRange
		}
		v += now
	}
	return v, nil
}

// xreadArgs are XREAD's parsed arguments.
type xreadArgs struct {
	count   int64
	block   int64 // absolute deadline, 0 = forever, -1 = no BLOCK
	keys    [][]byte
	idArgs  [][]byte
	hasDoll bool
}

// xreadSyntax parses XREAD [COUNT n] [BLOCK ms] STREAMS key... id...
func xreadSyntax(now int64, argv [][]byte) (xreadArgs, *Error) {
	a := xreadArgs{block: -1}
	if len(argv) < 4 {
		return a, WrongArity("xread")
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
			v, err := intArg(argv[i], "")
			if err != nil {
				return a, err
			}
			a.count = max(v, 0)
		case EqFold(o, "STREAMS") && more > 0:
			streamsArg = i + 1
			if (len(argv)-streamsArg)%2 != 0 {
				return a, errUnbalanced
			}
			i = len(argv)
		case EqFold(o, "GROUP") && more >= 2:
			return a, errXReadGroup
		case EqFold(o, "NOACK"):
			return a, errXReadNoAck
		case EqFold(o, "CLAIM") && more > 0: // Redis 8.4 (xreadgroup_claim.go)
			return a, errXReadClaim
		default:
			return a, ErrSyntax
		}
	}
	if streamsArg == 0 {
		return a, ErrSyntax
	}
	n := (len(argv) - streamsArg) / 2
	a.keys = argv[streamsArg : streamsArg+n]
	a.idArgs = argv[streamsArg+n:]
	return a, nil
}

// cmdXRead serves XREAD synchronously. BLOCK is parsed and validated but
// never waits here: when the reply is NullArray and BLOCK was given, the
// server blocks the client and retries after a signal on one of the keys.
//
// The ID "+" (Redis 7.4) stands for the stream's last ID minus one, so the
// read returns the last entry if it is live.
func cmdXRead(e *Engine, now int64, argv [][]byte) Reply {
	a, err := xreadSyntax(now, argv)
	if err != nil {
		return err
	}
	ids := make([]ID, len(a.keys))
	streams := make([]*Stream, len(a.keys))
	for i, key := range a.keys {
		s, err := e.lookupStream(key, now)
		if err != nil {
			return err
		}
		streams[i] = s
		arg := a.idArgs[i]
		switch {
		case len(arg) == 1 && arg[0] == '$':
			if s != nil {
				ids[i] = s.LastID
			}
			continue
		case len(arg) == 1 && arg[0] == '+':
			if s != nil {
				ids[i], _ = s.LastID.Decr()
			}
			continue
		case len(arg) == 1 && arg[0] == '>':
			return errXReadGT
		}
		id, perr := parseStrictID(arg, 0)
		if perr != nil {
			return perr
		}
		ids[i] = id
	}
	var out PairMap
	for i, s := range streams {
		if s == nil || s.Length == 0 {
			continue
		}
		top, _ := s.lastLive()
		if !ids[i].Less(top) {
			continue
		}
		start, _ := ids[i].Incr()
		out = append(out, BulkString(append([]byte(nil), a.keys[i]...)), s.rangeReply(start, MaxID, a.count, false))
	}
	if len(out) == 0 {
		return NullArray{}
	}
	return out
}
