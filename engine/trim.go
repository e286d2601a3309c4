package engine

// Trimming (streamTrim): MAXLEN keeps the newest maxlen entries, MINID drops
// entries below an ID. Whole nodes are freed from the head while they fit
// the strategy; approximate trimming (~) stops at the first node it cannot
// free entirely, exact trimming then marks single entries deleted inside
// that node. limit (0 = none) caps the entries freed, counted by whole
// nodes, as Redis does.

// trimStrategy is TRIM_STRATEGY_*.
type trimStrategy uint8

const (
	trimNone trimStrategy = iota
	trimMaxLen
	trimMinID
)

// trimArgs are the parsed trimming options of XADD and XTRIM.
type trimArgs struct {
	strategy   trimStrategy
	approx     bool
	maxLen     int64
	minID      ID
	limit      int64 // 0 = unlimited
	limitGiven bool
	// policy is KEEPREF, DELREF or ACKED (trim_policy.go); policyGiven
	// records that one was named, so a second one is a syntax error.
	policy      refPolicy
	policyGiven bool
	// ceiling, when hasCeiling, is an ID no trim under DELREF or ACKED
	// reaches: nothing at or after it is deleted (retention's ACKED keeps
	// the first entry a group still needs, and everything after it).
	ceiling    ID
	hasCeiling bool
}

// trim applies a to s and returns the number of entries removed. It keeps
// Length and FirstID up to date (not MaxDeletedID, as Redis).
func (s *Stream) trim(a *trimArgs) int64 {
	if a.strategy == trimNone {
		return 0
	}
	if a.policy != policyKeepRef {
		return s.trimWithRefs(a)
	}
	r := &s.rax
	var deleted int64
	for len(r.nodes) > 0 {
		if a.strategy == trimMaxLen && s.Length <= uint64(a.maxLen) {
			break
		}
		n := &r.nodes[0]
		entries, _ := n.counts()
		if a.limit != 0 && deleted+entries > a.limit {
			break
		}
		var removeNode bool
		if a.strategy == trimMaxLen {
			removeNode = s.Length-uint64(entries) >= uint64(a.maxLen)
		} else {
			removeNode = n.last.Less(a.minID)
		}
		if removeNode {
			r.remove(0)
			s.Length -= uint64(entries)
			deleted += entries
			continue
		}
		if a.approx {
			break
		}
		deleted += s.trimInNode(n, a)
		break
	}
	if deleted != 0 {
		if s.Length == 0 {
			s.FirstID = ID{}
		} else {
			s.FirstID, _ = s.firstLive()
		}
	}
	return deleted
}

// trimInNode marks entries of the head node deleted until the strategy is
// satisfied, returning how many it marked. As in Redis the node stays even
// if no live entry is left in it. Under ACKED only acknowledged entries are
// marked; under DELREF their PEL references go too.
func (s *Stream) trimInNode(n *node, a *trimArgs) int64 {
	s.rax.own(n)
	mf, off := n.masterFields(nil)
	var marked int64
	for n.lp[off] != lpEOF {
		id, flags, body := n.entryHeader(off)
		var stop bool
		if a.strategy == trimMaxLen {
			stop = s.Length <= uint64(a.maxLen)
		} else {
			stop = !id.Less(a.minID)
		}
		if stop || a.hasCeiling && !id.Less(a.ceiling) {
			break
		}
		next := n.skipEntryFrom(body, flags, len(mf))
		if flags&itemDeleted == 0 && (a.policy != policyAcked || s.acked(id)) {
			// Flags stay one byte (values 0..3), so offsets do not move.
			n.lp = lpReplaceInt(n.lp, off, flags|itemDeleted)
			marked++
			s.Length--
			if a.policy == policyDelRef {
				s.dropRefs(id)
			}
		}
		off = next
	}
	if marked != 0 {
		n.addCounts(-marked, marked)
	}
	return marked
}
