package engine

// XDELEX and XACKDEL (Redis 8.2,
// https://redis.io/docs/latest/commands/xdelex/,
// https://redis.io/docs/latest/commands/xackdel/, t_stream.c): deletion with
// a reference policy (trim_policy.go), one reply code per requested ID.
//
//	XDELEX key [KEEPREF|DELREF|ACKED] IDS numids id [id ...]
//	  -1 no such entry, 1 deleted, 2 kept (ACKED: still referenced)
//	XACKDEL key group [KEEPREF|DELREF|ACKED] IDS numids id [id ...]
//	  -1 not pending in the group (or no such key/group),
//	  1 acknowledged and deleted, 2 acknowledged but kept (ACKED)
//
// As in streamParseAckDelArgsOrReply, the IDS block and the policy may
// come in any order; a second policy is a syntax error; a later IDS block
// replaces an earlier one; without IDS the reply is "ERR IDS option is
// required". The order of errors is Redis's: arity, WRONGTYPE, the options,
// then (when the key, and for XACKDEL the group, exist) the IDs; a missing
// key or group answers -1 for every ID without reading them.

func init() {
	register("xdelex", cmdXDelEx)
	register("xackdel", cmdXAckDel)
	// WRONGTYPE comes before every other error but arity.
	registerValidator("xdelex", func(_ int64, argv [][]byte) *Error { return arityMin(argv, 5, "xdelex") })
	registerValidator("xackdel", func(_ int64, argv [][]byte) *Error { return arityMin(argv, 6, "xackdel") })
}

var (
	errNumIDs         = &Error{Msg: "ERR Number of IDs must be a positive integer"}
	errNumIDsMismatch = &Error{Msg: "ERR The `numids` parameter must match the number of arguments"}
	errIDSRequired    = &Error{Msg: "ERR IDS option is required"}
)

// delexArgs are the parsed options of XDELEX / XACKDEL; ids are the
// unparsed IDs.
type delexArgs struct {
	policy refPolicy
	ids    [][]byte
}

// delexSyntax parses argv from position start: the policy and the IDS block.
func delexSyntax(argv [][]byte, start int) (delexArgs, *Error) {
	var a delexArgs
	policyGiven, idsGiven := false, false
	for i := start; i < len(argv); {
		switch p, ok := parsePolicy(argv[i]); {
		case ok && !policyGiven:
			a.policy, policyGiven = p, true
			i++
		case EqFold(argv[i], "IDS") && i+1 < len(argv):
			n, ok := ParseInt(argv[i+1])
			if !ok || n <= 0 {
				return a, errNumIDs
			}
			if n > int64(len(argv)-i-2) {
				return a, errNumIDsMismatch
			}
			a.ids = argv[i+2 : i+2+int(n)]
			idsGiven = true
			i += 2 + int(n)
		default:
			return a, ErrSyntax
		}
	}
	if !idsGiven {
		return a, errIDSRequired
	}
	return a, nil
}

// parseDelexIDs parses the IDs of an IDS block (strict: no "-" or "+").
func parseDelexIDs(raw [][]byte) ([]ID, *Error) {
	ids := make([]ID, 0, len(raw))
	for _, b := range raw {
		id, err := parseStrictID(b, 0)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// allMissing is the reply for a missing key or group: -1 per ID.
func allMissing(n int) Array {
	out := make(Array, n)
	for i := range out {
		out[i] = Integer(-1)
	}
	return out
}

func cmdXDelEx(e *Engine, now int64, argv [][]byte) Reply {
	if err := arityMin(argv, 5, "xdelex"); err != nil {
		return err
	}
	s, werr := e.lookupStream(argv[1], now)
	if werr != nil {
		return werr
	}
	a, err := delexSyntax(argv, 2)
	if err != nil {
		return err
	}
	if s == nil {
		return allMissing(len(a.ids))
	}
	ids, err := parseDelexIDs(a.ids)
	if err != nil {
		return err
	}
	out := make(Array, len(ids))
	for i, id := range ids {
		out[i] = Integer(-1)
		if a.policy == policyAcked && !s.acked(id) {
			out[i] = Integer(2)
			continue
		}
		if a.policy == policyDelRef {
			s.dropRefs(id)
		}
		if s.removeEntry(id) {
			out[i] = Integer(1)
		}
	}
	return out
}

func cmdXAckDel(e *Engine, now int64, argv [][]byte) Reply {
	if err := arityMin(argv, 6, "xackdel"); err != nil {
		return err
	}
	s, werr := e.lookupStream(argv[1], now)
	if werr != nil {
		return werr
	}
	a, err := delexSyntax(argv, 3)
	if err != nil {
		return err
	}
	var g *Group
	if s != nil {
		g = s.lookupGroup(argv[2])
	}
	if g == nil {
		return allMissing(len(a.ids))
	}
	ids, err := parseDelexIDs(a.ids)
	if err != nil {
		return err
	}
	out := make(Array, len(ids))
	for i, id := range ids {
		out[i] = Integer(-1)
		nk, ok := g.PEL.Delete(id)
		if !ok {
			continue
		}
		nk.disown()
		switch a.policy {
		case policyAcked:
			if !s.acked(id) {
				out[i] = Integer(2)
				continue
			}
		case policyDelRef:
			s.dropRefs(id)
		}
		s.removeEntry(id)
		out[i] = Integer(1)
	}
	return out
}
