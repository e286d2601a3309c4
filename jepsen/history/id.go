package history

import (
	"fmt"
	"strconv"
	"strings"
)

// ID is a stream entry ID <ms>-<seq>, ordered by (Ms, Seq).
type ID struct{ Ms, Seq uint64 }

// ParseID parses "<ms>-<seq>" (or "<ms>", meaning seq 0) as Redis prints
// entry IDs.
func ParseID(s string) (ID, error) {
	ms, seq, found := strings.Cut(s, "-")
	a, err := strconv.ParseUint(ms, 10, 64)
	if err != nil {
		return ID{}, fmt.Errorf("entry ID %q: %w", s, err)
	}
	var b uint64
	if found {
		if b, err = strconv.ParseUint(seq, 10, 64); err != nil {
			return ID{}, fmt.Errorf("entry ID %q: %w", s, err)
		}
	}
	return ID{a, b}, nil
}

// MustID is ParseID for IDs already validated (by Validate) or written in tests.
func MustID(s string) ID {
	id, err := ParseID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// Compare returns -1, 0 or +1.
func (a ID) Compare(b ID) int {
	switch {
	case a.Ms < b.Ms || (a.Ms == b.Ms && a.Seq < b.Seq):
		return -1
	case a == b:
		return 0
	}
	return 1
}

// Less reports a < b.
func (a ID) Less(b ID) bool { return a.Compare(b) < 0 }

func (a ID) String() string {
	return strconv.FormatUint(a.Ms, 10) + "-" + strconv.FormatUint(a.Seq, 10)
}
