package engine

// XDELEX and XACKDEL (Redis 8.2): deletion with a reference policy
// (trim_policy.go), one reply code per requested ID.
//
//	XDELEX key [KEEPREF|DELREF|ACKED] IDS numids id [id ...]
//	  -1 no such entry, 1 deleted, 2 kept (ACKED: still referenced)
//	XACKDEL key group [KEEPREF|DELREF|ACKED] IDS numids id [id ...]
//	  -1 not pending in the group (or no such key/group),
//	  1 acknowledged and deleted, 2 acknowledged but kept (ACKED)
//
// The IDS block and the policy may come in any order; a second policy or
// IDS block is a syntax error.

func init() {
	register("xdelex", cmdXDelEx)
	register("xackdel", cmdXAckDel)
	registerValidator("xdelex", func(argv [][]byte) *Error { _, err := delexSyntax(argv, 2, "xdelex"); return err })
	registerValidator("xackdel", func(argv [][]byte) *Error { _, err := delexSyntax(argv, 3, "xackdel"); return err })
}

var (
	errNumIDs         = &Error{Msg: "ERR Number of IDs must be a positive integer"}
	errNumIDsMismatch = &Error{Msg: "ERR The `numids` parameter must match the number of arguments"}
)

// delexArgs are the parsed options of XDELEX / XACKDEL.
type delexArgs struct {
	policy refPolicy
	ids    []ID
}

// delexSyntax parses argv from position start: the policy and the IDS block.
func delexSyntax(argv [][]byte, start int, name string) (delexArgs, *Error) {
	var a delexArgs
	if len(argv) < start+3 {
		return a, WrongArity(name)
	}
	policyGiven, idsGiven := false, false
	for i := start; i < len(argv); i++ {
		more := len(argv) - 1 - i
		switch p, ok := parsePolicy(argv[i]); {
		case ok:
			if policyGiven {
				return a, ErrSyntax
			}
			a.policy, policyGiven = p, true
		case eqFold(argv[i], "IDS") && more > 0 && !idsGiven:
			n, ok := cgParseLL(argv[i+1])
			if !ok || n <= 0 {
				return a, errNumIDs
			}
			if n > int64(more-1) {
				return a, errNumIDsMismatch
			}
			a.ids = make([]ID, 0, n)
			for _, b := range argv[i+2 : i+2+int(n)] {
				id, err := parseStrictID(b, 0)
				if err != nil {
					return a, err
				}
				a.ids = append(a.ids, id)
			}
			idsGiven = true
			i += 1 + int(n)
		default:
			return a, ErrSyntax
		}
	}
	if !idsGiven {
		return a, ErrSyntax
	}
	return a, nil
}

func cmdXDelEx(e *Engine, now int64, argv [][]byte) Reply {
	a, err := delexSyntax(argv, 2, "xdelex")
	if err != nil {
		return err
	}
	s, werr := e.lookupStream(argv[1])
	if werr != nil {
		return werr
	}
	out := make(Array, len(a.ids))
	for i, id := range a.ids {
		out[i] = Integer(-1)
		if s == nil {
			continue
		}
		if a.policy == policyAcked && !s.acked(id) {
			if _, live := s.Lookup(id); live {
				out[i] = Integer(2)
			}
			continue
		}
		if s.removeEntry(id) {
			out[i] = Integer(1)
		}
		if a.policy == policyDelRef {
			s.dropRefs(id)
		}
	}
	return out
}

func cmdXAckDel(e *Engine, now int64, argv [][]byte) Reply {
	a, err := delexSyntax(argv, 3, "xackdel")
	if err != nil {
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
	out := make(Array, len(a.ids))
	for i, id := range a.ids {
		out[i] = Integer(-1)
		if g == nil {
			continue
		}
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
