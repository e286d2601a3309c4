package engine

import (
	"strconv"
)

// ID is a stream entry ID <ms>-<seq>. IDs order by (Ms, Seq).
type ID struct {
	Ms  uint64
	Seq uint64
}

var (
	MinID = ID{0, 0}
	MaxID = ID{^uint64(0), ^uint64(0)}
)

// Compare returns -1, 0 or +1.
func (a ID) Compare(b ID) int {
	switch {
	case a.Ms < b.Ms:
		return -1
	case a.Ms > b.Ms:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

func (a ID) Less(b ID) bool { return a.Compare(b) < 0 }
func (a ID) IsZero() bool   { return a.Ms == 0 && a.Seq == 0 }

// Incr returns the next ID, and false on overflow of 2^64-1-(2^64-1).
func (a ID) Incr() (ID, bool) {
	if a.Seq == ^uint64(0) {
		if a.Ms == ^uint64(0) {
			return a, false
		}
		return ID{a.Ms + 1, 0}, true
	}
	return ID{a.Ms, a.Seq + 1}, true
}

// Decr returns the previous ID, and false on underflow of 0-0.
func (a ID) Decr() (ID, bool) {
	if a.Seq == 0 {
		if a.Ms == 0 {
			return a, false
		}
		return ID{a.Ms - 1, ^uint64(0)}, true
	}
	return ID{a.Ms, a.Seq - 1}, true
}

// String formats the ID as Redis does: "<ms>-<seq>".
func (a ID) String() string { return string(a.Append(nil)) }

// Append appends the "<ms>-<seq>" form to b.
func (a ID) Append(b []byte) []byte {
	b = strconv.AppendUint(b, a.Ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, a.Seq, 10)
}

// Bytes16 returns the 128-bit big-endian key used by the radix tree.
func (a ID) Bytes16() [16]byte {
	var k [16]byte
	for i := 0; i < 8; i++ {
		k[i] = byte(a.Ms >> (56 - 8*i))
		k[8+i] = byte(a.Seq >> (56 - 8*i))
	}
	return k
}

// IDFromBytes16 is the inverse of Bytes16.
func IDFromBytes16(k []byte) ID {
	var id ID
	for i := 0; i < 8; i++ {
		id.Ms = id.Ms<<8 | uint64(k[i])
		id.Seq = id.Seq<<8 | uint64(k[8+i])
	}
	return id
}

// ParseID parses a complete or incomplete ID ("<ms>" or "<ms>-<seq>"), as
// Redis's streamGenericParseIDOrReply does with strict=0: a missing sequence
// takes missingSeq. "-" and "+" are accepted as MinID and MaxID. It returns
// ErrInvalidStreamID on malformed input.
func ParseID(s []byte, missingSeq uint64) (ID, error) {
	id, _, err := parseIDSeqGiven(s, missingSeq)
	return id, err
}

// parseIDSeqGiven is ParseID that also reports whether the sequence part was
// given explicitly.
func parseIDSeqGiven(s []byte, missingSeq uint64) (ID, bool, error) {
	if len(s) > 127 {
		return ID{}, false, ErrInvalidStreamID
	}
	if len(s) == 1 && s[0] == '-' {
		return MinID, true, nil
	}
	if len(s) == 1 && s[0] == '+' {
		return MaxID, true, nil
	}
	dash := -1
	for i, c := range s {
		if c == '-' {
			dash = i
			break
		}
	}
	if dash < 0 {
		ms, ok := parseU64(s)
		if !ok {
			return ID{}, false, ErrInvalidStreamID
		}
		return ID{ms, missingSeq}, false, nil
	}
	ms, ok := parseU64(s[:dash])
	if !ok {
		return ID{}, false, ErrInvalidStreamID
	}
	seq, ok := parseU64(s[dash+1:])
	if !ok {
		return ID{}, false, ErrInvalidStreamID
	}
	return ID{ms, seq}, true, nil
}

// parseIDArg is streamParseIDOrReply ("-" and "+" allowed).
func parseIDArg(b []byte, missingSeq uint64) (ID, *Error) {
	id, err := ParseID(b, missingSeq)
	if err != nil {
		return ID{}, ErrInvalidStreamID
	}
	return id, nil
}

// parseStrictID is streamParseStrictIDOrReply without "<ms>-*": "-" and "+"
// are rejected.
func parseStrictID(b []byte, missingSeq uint64) (ID, *Error) {
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		return ID{}, ErrInvalidStreamID
	}
	id, err := ParseID(b, missingSeq)
	if err != nil {
		return ID{}, ErrInvalidStreamID
	}
	return id, nil
}

// parseU64 follows Redis's string2ull: decimal digits only, no sign, no
// leading spaces, no overflow.
func parseU64(s []byte) (uint64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}
