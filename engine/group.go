package engine

import "sort"

// Group is a consumer group (Redis's streamCG).
//
// Invariant: every NACK in PEL is in exactly one consumer's PEL (its
// Consumer's) and vice versa; Consumers is sorted by Name with no duplicates.
type Group struct {
	Name        string
	LastID      ID    // last-delivered-id
	EntriesRead int64 // entries-read; -1 when unknown (SCG_INVALID_ENTRIES_READ)
	// PEL is the group's pending entries list, ordered by ID.
	PEL *pelTree
	// Consumers are sorted by name (Redis iterates its consumers rax in
	// lexicographic order).
	Consumers []*Consumer
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
