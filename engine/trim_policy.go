package engine

// Reference policies (Redis 8.2): what deleting or trimming an entry does to
// the consumer groups' pending entries lists.
//
//   - KEEPREF (the default, Redis 7 behaviour): the entry goes, the PELs keep
//     their (now dangling) references.
//   - DELREF: the entry goes and every group's PEL forgets it.
//   - ACKED: the entry goes only if every group has delivered it (its ID is
//     at most the group's last-delivered-id) and no group has it pending.
//
// XADD and XTRIM take the policy next to MAXLEN/MINID; XDELEX and XACKDEL
// take it next to their IDS block.

// refPolicy is a deletion reference policy.
type refPolicy uint8

const (
	policyKeepRef refPolicy = iota
	policyDelRef
	policyAcked
)

// parsePolicy recognises KEEPREF, DELREF and ACKED (any case).
func parsePolicy(b []byte) (refPolicy, bool) {
	switch {
	case EqFold(b, "KEEPREF"):
		return policyKeepRef, true
	case EqFold(b, "DELREF"):
		return policyDelRef, true
	case EqFold(b, "ACKED"):
		return policyAcked, true
	}
	return 0, false
}

// acked reports whether every group has delivered id and none has it
// pending: the condition under which ACKED may delete it. With no groups
// every entry is acked.
func (s *Stream) acked(id ID) bool {
	for _, g := range s.Groups {
		if g.LastID.Less(id) {
			return false
		}
		if _, ok := g.PEL.Get(id); ok {
			return false
		}
	}
	return true
}

// nodeAcked reports whether every live entry of n is acked.
func (s *Stream) nodeAcked(n *node) bool {
	for _, g := range s.Groups {
		if g.LastID.Less(n.last) {
			// The group may not have delivered the last entries yet;
			// judge entry by entry only if one of them is live.
			it := s.Iter(maxID(n.master, g.LastID.next()), n.last, false)
			if it.Next() {
				return false
			}
		}
		cu := g.PEL.Seek(n.master)
		for {
			nk, ok := cu.Next()
			if !ok || n.last.Less(nk.ID) {
				break
			}
			if _, live := n.find(nk.ID); live {
				return false
			}
		}
	}
	return true
}

// dropRefs removes id from every group's PEL (DELREF).
func (s *Stream) dropRefs(id ID) {
	for _, g := range s.Groups {
		if nk, ok := g.PEL.Delete(id); ok {
			nk.disown()
		}
	}
}

// removeEntry is one XDEL of id with the stream metadata kept up to date
// (Length, MaxDeletedID, FirstID). It reports whether id was live.
func (s *Stream) removeEntry(id ID) bool {
	if !s.deleteEntry(id) {
		return false
	}
	s.Length--
	if s.MaxDeletedID.Less(id) {
		s.MaxDeletedID = id
	}
	if s.Length == 0 {
		s.FirstID = ID{}
	} else if id == s.FirstID {
		s.FirstID, _ = s.firstLive()
	}
	return true
}

// next is id's successor, saturating at MaxID.
func (id ID) next() ID {
	n, ok := id.Incr()
	if !ok {
		return MaxID
	}
	return n
}

func maxID(a, b ID) ID {
	if a.Less(b) {
		return b
	}
	return a
}

// trimWithRefs is trim under DELREF or ACKED, as t_stream.c streamTrim does
// it: "~" is ignored (every entry is judged on its own; LIMIT still bounds
// the work node by node). From the head, a node the strategy wants whole
// (eligible) goes at once under DELREF, or under ACKED if every live entry
// in it is acked; otherwise its entries are deleted one by one until the
// strategy is satisfied, ACKED skipping entries still referenced. After an
// eligible node trimming goes on with the next one (the node is freed if
// nothing is left in it); after a node that was not eligible it stops.
func (s *Stream) trimWithRefs(a *trimArgs) int64 {
	r := &s.rax
	var deleted int64
	for i := 0; i < len(r.nodes); {
		if a.strategy == trimMaxLen && s.Length <= uint64(a.maxLen) {
			break
		}
		n := &r.nodes[i]
		if a.strategy == trimMinID && !n.master.Less(a.minID) || a.hasCeiling && !n.master.Less(a.ceiling) {
			break
		}
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
		below := !a.hasCeiling || n.last.Less(a.ceiling)
		if removeNode && (!below || a.policy == policyAcked && !s.nodeAcked(n)) {
			removeNode = false
		}
		if removeNode {
			if a.policy == policyDelRef {
				for _, id := range s.liveIDs(n) {
					s.dropRefs(id)
				}
			}
			r.remove(i)
			s.Length -= uint64(entries)
			deleted += entries
			continue
		}
		var eligible bool
		if a.strategy == trimMaxLen {
			eligible = s.Length-uint64(entries) >= uint64(a.maxLen)
		} else {
			eligible = n.last.Less(a.minID)
		}
		eligible = eligible && below
		deleted += s.trimInNode(n, a)
		if !eligible {
			break
		}
		if live, _ := n.counts(); live == 0 {
			r.remove(i)
			continue
		}
		i++
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

// liveIDs lists the live entry IDs of n in order.
func (s *Stream) liveIDs(n *node) []ID {
	var ids []ID
	mf, off := n.masterFields(nil)
	for n.lp[off] != lpEOF {
		id, flags, body := n.entryHeader(off)
		if flags&itemDeleted == 0 {
			ids = append(ids, id)
		}
		off = n.skipEntryFrom(body, flags, len(mf))
	}
	return ids
}

func isPolicy(b []byte) bool { _, ok := parsePolicy(b); return ok }
