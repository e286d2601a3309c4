package engine

import "sort"

// Consumer groups, as Redis keeps them (t_stream.c, stream.h):
//
//   - A Stream holds its Groups sorted by name. A Group has a
//     last-delivered-id, an entries-read counter (-1 when unknown), a PEL and
//     its Consumers sorted by name.
//   - A pending entry is one *NACK shared by the group PEL and its owner's
//     consumer PEL (delivery time, delivery count, owner). Both PELs are
//     pelTrees: ordered by ID, cheap appends, range scans.
//   - A Consumer has a seen-time (any XREADGROUP/XCLAIM/XAUTOCLAIM attempt)
//     and an active-time (a read or claim that delivered something; -1 if
//     never), both from the command's now.
//
// Time enters only through Exec's now; replies and state never depend on Go
// map order. The state is encoded by group_codec.go for snapshots.

// Group is a consumer group (Redis's streamCG).
//
// Invariant: every NACK in PEL with a Consumer is in exactly that consumer's
// PEL, every NACK of a consumer PEL is in PEL, and a NACK without a Consumer
// (released by XNACK, xnack.go) is in no consumer PEL; Consumers is sorted
// by Name with no duplicates.
type Group struct {
	Name        string
	LastID      ID    // last-delivered-id
	EntriesRead int64 // entries-read; -1 when unknown (SCG_INVALID_ENTRIES_READ)
	// PEL is the group's pending entries list, ordered by ID.
	PEL *pelTree
	// Consumers are sorted by name (Redis iterates its consumers rax in
	// lexicographic order).
	Consumers []*Consumer
	// DLQMax and DLQKey are the group's dead-letter setting (deadletter.go,
	// not a Redis feature): 0 = off.
	DLQMax uint64
	DLQKey string
	// nackSeq is the last NACK-zone position handed out (xnack.go).
	nackSeq uint64
}

// entriesReadInvalid is Redis's SCG_INVALID_ENTRIES_READ.
const entriesReadInvalid = -1

// newGroup returns an empty group.
func newGroup(name string, last ID, entriesRead int64) *Group {
	return &Group{Name: name, LastID: last, EntriesRead: entriesRead, PEL: newPEL()}
}

// groupIndex is the position of name in the sorted Groups slice.
func (s *Stream) groupIndex(name []byte) int {
	return sort.Search(len(s.Groups), func(i int) bool { return s.Groups[i].Name >= string(name) })
}

// lookupGroup returns the group named name, or nil.
func (s *Stream) lookupGroup(name []byte) *Group {
	i := s.groupIndex(name)
	if i < len(s.Groups) && s.Groups[i].Name == string(name) {
		return s.Groups[i]
	}
	return nil
}

// createGroup adds a group; it returns nil if the name exists.
func (s *Stream) createGroup(name []byte, last ID, entriesRead int64) *Group {
	i := s.groupIndex(name)
	if i < len(s.Groups) && s.Groups[i].Name == string(name) {
		return nil
	}
	g := newGroup(string(name), last, entriesRead)
	s.Groups = append(s.Groups, nil)
	copy(s.Groups[i+1:], s.Groups[i:])
	s.Groups[i] = g
	return g
}

// destroyGroup removes the group named name and reports whether it existed.
func (s *Stream) destroyGroup(name []byte) bool {
	i := s.groupIndex(name)
	if i >= len(s.Groups) || s.Groups[i].Name != string(name) {
		return false
	}
	copy(s.Groups[i:], s.Groups[i+1:])
	s.Groups[len(s.Groups)-1] = nil
	s.Groups = s.Groups[:len(s.Groups)-1]
	return true
}

// hasTombstonesIn is streamRangeHasTombstones: whether a deleted entry may
// lie in [start, end] (judged by max-deleted-entry-id).
func (s *Stream) hasTombstonesIn(start, end ID) bool {
	if s.Length == 0 || s.MaxDeletedID.IsZero() {
		return false
	}
	return start.Compare(s.MaxDeletedID) <= 0 && s.MaxDeletedID.Compare(end) <= 0
}

// estimateEntriesRead is streamEstimateDistanceFromFirstEverEntry: the
// logical read counter of id (how many entries were ever added up to and
// including it), or entriesReadInvalid when it cannot be known.
func (s *Stream) estimateEntriesRead(id ID) int64 {
	if s.EntriesAdded == 0 {
		return 0
	}
	if s.Length == 0 && id.Compare(s.LastID) < 1 {
		return int64(s.EntriesAdded)
	}
	if !id.IsZero() && id.Less(s.MaxDeletedID) {
		return entriesReadInvalid
	}
	switch c := id.Compare(s.LastID); {
	case c == 0:
		return int64(s.EntriesAdded)
	case c > 0:
		return entriesReadInvalid
	}
	if s.MaxDeletedID.IsZero() || s.MaxDeletedID.Less(s.FirstID) {
		switch id.Compare(s.FirstID) {
		case -1:
			return int64(s.EntriesAdded - s.Length)
		case 0:
			return int64(s.EntriesAdded - s.Length + 1)
		}
	}
	return entriesReadInvalid
}

// lag is streamReplyWithCGLag: the number of entries not yet delivered to
// the group, and false when it cannot be known (XINFO shows a null).
func (s *Stream) lag(g *Group) (int64, bool) {
	switch {
	case s.EntriesAdded == 0:
		return 0, true
	case s.Length == 0:
		return 0, true
	case g.LastID.Less(s.FirstID) && s.MaxDeletedID.Less(s.FirstID):
		return int64(s.Length), true
	case g.EntriesRead != entriesReadInvalid && !s.hasTombstonesIn(g.LastID, MaxID):
		return int64(s.EntriesAdded) - g.EntriesRead, true
	}
	if er := s.estimateEntriesRead(g.LastID); er != entriesReadInvalid {
		return int64(s.EntriesAdded) - er, true
	}
	return 0, false
}

// advanceLastID moves the group's last-delivered-id to id (> LastID) as
// XREADGROUP does when delivering id, keeping entries-read exact when it
// can be and re-estimating it otherwise.
func (s *Stream) advanceLastID(g *Group, id ID) {
	if g.EntriesRead != entriesReadInvalid && !g.LastID.Less(s.FirstID) &&
		!s.hasTombstonesIn(g.LastID, MaxID) {
		g.EntriesRead++
	} else if s.EntriesAdded != 0 {
		g.EntriesRead = s.estimateEntriesRead(id)
	}
	g.LastID = id
}
