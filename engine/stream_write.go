package engine

// Stream write commands: XADD, XDEL, XTRIM, XSETID (Redis 7 t_stream.c).
// Each command has a syntax phase (xxxSyntax) that looks at no key, so a
// leader can reject garbage before proposing it (Validate), and an
// execution that repeats it and then works on the keyspace.

func init() {
	register("xadd", cmdXAdd)
	register("xdel", cmdXDel)
	register("xtrim", cmdXTrim)
	register("xsetid", cmdXSetID)
	registerValidator("xadd", func(_ int64, argv [][]byte) *Error {
		var a addArgs
		return xaddSyntax(&a, argv)
	})
	registerValidator("xtrim", func(_ int64, argv [][]byte) *Error {
		if len(argv) < 4 {
			return WrongArity("xtrim")
		}
		var a addArgs
		_, err := parseAddOrTrim(&a, argv, false)
		return err
	})
	// XDEL looks the key up before parsing IDs (a missing key replies 0
	// whatever the IDs), so only its arity is stateless.
	registerValidator("xdel", func(_ int64, argv [][]byte) *Error { return arityAtLeast(argv, 3, "xdel") })
	registerValidator("xsetid", func(_ int64, argv [][]byte) *Error { _, err := xsetidSyntax(argv); return err })
}

var (
	errTrimBoth         = &Error{Msg: "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"}
	errMaxLenNegative   = &Error{Msg: "ERR The MAXLEN argument must be >= 0."}
	errLimitNegative    = &Error{Msg: "ERR The LIMIT argument must be >= 0."}
	errLimitNoStrategy  = &Error{Msg: "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"}
	errXTrimNoStrategy  = &Error{Msg: "ERR syntax error, XTRIM must be called with a trimming strategy"}
	errLimitNoApprox    = &Error{Msg: "ERR syntax error, LIMIT cannot be used without the special ~ option"}
	errStreamExhausted  = &Error{Msg: "ERR The stream has exhausted the last possible ID, unable to add more items"}
	errXSetIDSmall      = &Error{Msg: "ERR The ID specified in XSETID is smaller than the target stream top item"}
	errXSetIDArgMaxDel  = &Error{Msg: "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"}
	errXSetIDEntries    = &Error{Msg: "ERR The entries_added specified in XSETID is smaller than the target stream length"}
	errEntriesAddedNeg  = &Error{Msg: "ERR entries_added must be positive"}
	errElementsTooLarge = &Error{Msg: "ERR Elements are too large to be stored"}
)

// parseXAddID parses XADD's explicit ID: strict, "<ms>" (seq 0) or
// "<ms>-<seq>" (seqGiven) or "<ms>-*" (seq chosen by the stream).
func parseXAddID(b []byte) (id ID, seqGiven bool, err *Error) {
	if n := len(b); n >= 3 && b[n-1] == '*' && b[n-2] == '-' {
		ms, ok := parseU64(b[:n-2])
		if !ok || n > 127 {
			return ID{}, false, ErrInvalidStreamID
		}
		return ID{Ms: ms}, false, nil
	}
	id, err = parseStrictID(b, 0)
	return id, true, err
}

// addArgs are XADD's parsed arguments.
type addArgs struct {
	trim       trimArgs
	noMkStream bool
	idGiven    bool
	seqGiven   bool
	id         ID
	fields     [][]byte
	// IDMP pid iid / IDMPAUTO pid (idmp.go); idmpIID is nil for IDMPAUTO.
	idmpGiven bool
	idmpPID   []byte
	idmpIID   []byte
}

// parseAddOrTrim is streamParseAddOrTrimArgsOrReply: it fills a (zero) with
// the parsed trimming options and returns, for XADD, the position of the ID
// argument.
func parseAddOrTrim(a *addArgs, argv [][]byte, xadd bool) (int, *Error) {
	i := 2
	for ; i < len(argv); i++ {
		more := len(argv) - 1 - i
		opt := argv[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			return i, a.checkTrim(xadd)
		case EqFold(opt, "MAXLEN") && more > 0, EqFold(opt, "MINID") && more > 0:
			if a.trim.strategy != trimNone {
				return 0, errTrimBoth
			}
			a.trim.approx = false
			next := argv[i+1]
			if more >= 2 && len(next) == 1 && next[0] == '~' {
				a.trim.approx = true
				i++
			} else if more >= 2 && len(next) == 1 && next[0] == '=' {
				i++
			}
			if EqFold(opt, "MAXLEN") {
				v, err := intArg(argv[i+1], "")
				if err != nil {
					return 0, err
				}
				if v < 0 {
					return 0, errMaxLenNegative
				}
				a.trim.maxLen, a.trim.strategy = v, trimMaxLen
			} else {
				id, err := parseStrictID(argv[i+1], 0)
				if err != nil {
					return 0, err
				}
				a.trim.minID, a.trim.strategy = id, trimMinID
			}
			i++
		case EqFold(opt, "LIMIT") && more > 0:
			v, err := intArg(argv[i+1], "")
			if err != nil {
				return 0, err
			}
			if v < 0 {
				return 0, errLimitNegative
			}
			a.trim.limit, a.trim.limitGiven = v, true
			i++
		case isPolicy(opt) && !a.trim.policyGiven:
			// Redis 8.2 KEEPREF | DELREF | ACKED. A second one is parsed
			// as XADD's ID (an invalid ID) or is XTRIM's syntax error, as
			// in t_stream.c streamParseAddOrTrimArgsOrReply.
			a.trim.policy, _ = parsePolicy(opt)
			a.trim.policyGiven = true
		case xadd && EqFold(opt, "IDMPAUTO") && more > 0:
			// Redis 8.6 (idmp.go), with t_stream.c's error texts.
			if a.idmpGiven {
				return 0, errIdmpTwice
			}
			if len(argv[i+1]) == 0 {
				return 0, errIdmpAutoEmptyPID
			}
			a.idmpGiven, a.idmpPID = true, argv[i+1]
			i++
		case xadd && EqFold(opt, "IDMP") && more >= 2:
			if a.idmpGiven {
				return 0, errIdmpTwice
			}
			if len(argv[i+1]) == 0 {
				return 0, errIdmpEmptyPID
			}
			if len(argv[i+2]) == 0 {
				return 0, errIdmpEmptyIID
			}
			a.idmpGiven, a.idmpPID, a.idmpIID = true, argv[i+1], argv[i+2]
			i += 2
		case xadd && EqFold(opt, "NOMKSTREAM"):
			a.noMkStream = true
		case xadd:
			id, seqGiven, err := parseXAddID(opt)
			if err != nil {
				return 0, err
			}
			if a.idmpGiven {
				// Checked here, before the arity of the fields.
				return 0, errIdmpExplicitID
			}
			a.id, a.seqGiven, a.idGiven = id, seqGiven, true
			return i, a.checkTrim(xadd)
		default:
			return 0, ErrSyntax
		}
	}
	return i, a.checkTrim(xadd)
}

func (a *addArgs) checkTrim(xadd bool) *Error {
	if a.trim.limit != 0 && a.trim.strategy == trimNone {
		return errLimitNoStrategy
	}
	if !xadd && a.trim.strategy == trimNone {
		return errXTrimNoStrategy
	}
	if a.trim.limitGiven && !a.trim.approx {
		return errLimitNoApprox
	}
	return nil
}

// applyDefaultLimit sets the LIMIT of approximate trimming when none was
// given: 100 * stream-node-max-entries, clamped to [10000 if <= 0, 1000000].
func (t *trimArgs) applyDefaultLimit(cfg Config) {
	if t.limitGiven {
		return
	}
	if !t.approx {
		t.limit = 0
		return
	}
	t.limit = 100 * int64(cfg.NodeMaxEntries)
	if t.limit <= 0 {
		t.limit = 10000
	}
	if t.limit > 1000000 {
		t.limit = 1000000
	}
}

// xaddSyntax parses XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] thr [LIMIT n]]
// *|id field value [field value ...].
// It fills a (zero), which is passed by pointer: the options are copied
// nowhere on the path of every XADD (validated and executed).
func xaddSyntax(a *addArgs, argv [][]byte) *Error {
	if len(argv) < 5 {
		return WrongArity("xadd")
	}
	idpos, err := parseAddOrTrim(a, argv, true)
	if err != nil {
		return err
	}
	fp := idpos + 1
	if len(argv)-fp < 2 || (len(argv)-fp)%2 == 1 {
		return WrongArity("xadd")
	}
	if a.idGiven && a.seqGiven && a.id.IsZero() {
		return ErrXAddIDZero
	}
	a.fields = argv[fp:]
	return nil
}

func cmdXAdd(e *Engine, now int64, argv [][]byte) Reply {
	var a addArgs
	if err := xaddSyntax(&a, argv); err != nil {
		return err
	}
	var s *Stream
	if v, ok := e.keys[string(argv[1])]; ok {
		if v.Kind != KindStream {
			return ErrWrongType
		}
		s = v.Stream
	} else if a.noMkStream {
		return NullBulk{}
	}
	var pid, iid string
	if a.idmpGiven {
		// A remembered (pid, iid) is answered before the exhausted-stream
		// check, as in t_stream.c xaddCommand.
		pid = string(a.idmpPID)
		if a.idmpIID != nil {
			iid = string(a.idmpIID)
		} else {
			iid = idmpAutoIID(a.fields)
		}
		if s != nil && s.idmp != nil {
			s.idmp.expire(now, e.cfg)
			if id, ok := s.idmp.lookup(pid, iid); ok {
				s.idmp.dups++
				return e.idReply(id)
			}
		}
	}
	if s != nil && s.LastID == MaxID {
		return errStreamExhausted
	}
	last := ID{}
	if s != nil {
		last = s.LastID
	}
	var id ID
	switch {
	case a.idGiven && a.seqGiven:
		id = a.id
	case a.idGiven:
		if last.Ms == a.id.Ms {
			if last.Seq == ^uint64(0) {
				return ErrXAddIDTooSmall
			}
			id = ID{last.Ms, last.Seq + 1}
		} else {
			id = a.id
		}
	default:
		id = nextID(last, now)
	}
	if !last.Less(id) {
		return ErrXAddIDTooSmall
	}
	tot := 0
	for _, f := range a.fields {
		tot += len(f)
	}
	if tot > streamListpackMaxSize {
		return errElementsTooLarge
	}
	if s == nil {
		s = e.newStream()
		e.addKey(string(argv[1]), &Value{Kind: KindStream, Stream: s})
	}
	s.appendEntry(e.cfg, id, a.fields)
	if a.idmpGiven {
		if s.idmp == nil {
			s.idmp = &idmpState{}
		}
		s.idmp.record(pid, iid, id, now, e.cfg)
	}
	s.Length++
	s.EntriesAdded++
	s.LastID = id
	if s.Length == 1 {
		s.FirstID = id
	}
	if a.trim.strategy != trimNone {
		a.trim.applyDefaultLimit(e.cfg)
		s.trim(&a.trim)
	}
	e.signalBytes(argv[1])
	return e.idReply(id)
}

// nextID is streamNextID: the wall clock now if it is ahead of last,
// otherwise last's successor.
func nextID(last ID, now int64) ID {
	if now > 0 && uint64(now) > last.Ms {
		return ID{Ms: uint64(now)}
	}
	id, _ := last.Incr()
	return id
}

// ---- XDEL -----------------------------------------------------------------

func xdelSyntax(argv [][]byte) ([]ID, *Error) {
	if len(argv) < 3 {
		return nil, WrongArity("xdel")
	}
	ids := make([]ID, 0, len(argv)-2)
	for _, a := range argv[2:] {
		id, err := parseStrictID(a, 0)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func cmdXDel(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) < 3 {
		return WrongArity("xdel")
	}
	s, werr := e.lookupStream(argv[1])
	if werr != nil {
		return werr
	}
	if s == nil {
		return Integer(0)
	}
	ids, err := xdelSyntax(argv)
	if err != nil {
		return err
	}
	deleted, first := 0, false
	for _, id := range ids {
		if !s.deleteEntry(id) {
			continue
		}
		s.Length--
		if id == s.FirstID {
			first = true
		}
		if s.MaxDeletedID.Less(id) {
			s.MaxDeletedID = id
		}
		deleted++
	}
	if deleted != 0 {
		if s.Length == 0 {
			s.FirstID = ID{}
		} else if first {
			s.FirstID, _ = s.firstLive()
		}
	}
	return Integer(deleted)
}

// ---- XTRIM ----------------------------------------------------------------

func cmdXTrim(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) < 4 {
		return WrongArity("xtrim")
	}
	var a addArgs
	if _, err := parseAddOrTrim(&a, argv, false); err != nil {
		return err
	}
	s, werr := e.lookupStream(argv[1])
	if werr != nil {
		return werr
	}
	if s == nil {
		return Integer(0)
	}
	a.trim.applyDefaultLimit(e.cfg)
	return Integer(s.trim(&a.trim))
}

// ---- XSETID ---------------------------------------------------------------

type setIDArgs struct {
	id           ID
	entriesAdded int64 // -1 = not given
	maxDeleted   ID
}

func xsetidSyntax(argv [][]byte) (setIDArgs, *Error) {
	a := setIDArgs{entriesAdded: -1}
	if len(argv) < 3 {
		return a, WrongArity("xsetid")
	}
	id, err := parseStrictID(argv[2], 0)
	if err != nil {
		return a, err
	}
	a.id = id
	for i := 3; i < len(argv); i += 2 {
		more := len(argv) - 1 - i
		switch {
		case EqFold(argv[i], "ENTRIESADDED") && more > 0:
			v, err := intArg(argv[i+1], "")
			if err != nil {
				return a, err
			}
			if v < 0 {
				return a, errEntriesAddedNeg
			}
			a.entriesAdded = v
		case EqFold(argv[i], "MAXDELETEDID") && more > 0:
			md, err := parseStrictID(argv[i+1], 0)
			if err != nil {
				return a, err
			}
			if a.id.Less(md) {
				return a, errXSetIDArgMaxDel
			}
			a.maxDeleted = md
		default:
			return a, ErrSyntax
		}
	}
	return a, nil
}

func cmdXSetID(e *Engine, now int64, argv [][]byte) Reply {
	a, err := xsetidSyntax(argv)
	if err != nil {
		return err
	}
	s, werr := e.lookupStream(argv[1])
	if werr != nil {
		return werr
	}
	if s == nil {
		return ErrNoSuchKey
	}
	if s.Length > 0 {
		top, _ := s.lastLive()
		if a.id.Less(top) {
			return errXSetIDSmall
		}
		if a.entriesAdded != -1 && s.Length > uint64(a.entriesAdded) {
			return errXSetIDEntries
		}
	}
	s.LastID = a.id
	if a.entriesAdded != -1 {
		s.EntriesAdded = uint64(a.entriesAdded)
	}
	if !a.maxDeleted.IsZero() {
		s.MaxDeletedID = a.maxDeleted
	}
	return OK
}
