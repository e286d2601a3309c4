package engine

import "strconv"

// Reply is a protocol-neutral command reply. resp/ encodes it as RESP2 or RESP3
// (see resp.AppendReply). The concrete types are closed: only the ones below.
type Reply interface{ isReply() }

// SimpleString is a status reply: RESP "+OK".
type SimpleString string

// BulkString is a binary-safe string reply. A nil BulkString is still an empty
// string ("$0"); use NullBulk for a null.
type BulkString []byte

// Integer is an integer reply.
type Integer int64

// Array is an ordered list of replies.
type Array []Reply

// Map is a list of alternating keys and values. RESP2 encodes it as a flat
// array, RESP3 as a map ("%"), exactly where Redis uses addReplyMapLen.
type Map []Reply

// PairMap is a list of alternating keys and values that RESP3 encodes as a map
// ("%") and RESP2 as an array of 2-element arrays: the shape of the
// XREAD/XREADGROUP reply (Redis emits addReplyArrayLen(c,2) per key only when
// c->resp == 2).
type PairMap []Reply

// NullBulk is Redis's addReplyNull: "$-1" in RESP2, "_" in RESP3.
type NullBulk struct{}

// NullArray is Redis's addReplyNullArray: "*-1" in RESP2, "_" in RESP3.
type NullArray struct{}

// Double is a floating point reply: a bulk string in RESP2, "," in RESP3.
type Double float64

// Set is an unordered collection: an array in RESP2, "~" in RESP3.
type Set []Reply

// EntryReply is one stream entry, [id, [field, value, ...]]: encoded exactly
// as Array{BulkString(id), Array{BulkString(field), ...}}, but without a
// boxed reply per field. XREADGROUP delivers entries by the hundred, and the
// boxes were most of its allocations. The fields are kept as they go on the
// wire (RESP2 and RESP3 encode a bulk string alike): Enc holds N bulk
// strings, "$<len>\r\n<bytes>\r\n" each, back to back. Enc is a copy the
// reply owns (entryArena); a connection writes it out with one copy.
type EntryReply struct {
	ID  ID
	N   int
	Enc []byte
}

// appendBulkField appends f as a RESP bulk string (EntryReply.Enc).
func appendBulkField(b, f []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendUint(b, uint64(len(f)), 10)
	b = append(b, '\r', '\n')
	b = append(b, f...)
	return append(b, '\r', '\n')
}

// bulkFieldSize is len(appendBulkField(nil, f)) for len(f) == n.
func bulkFieldSize(n int) int {
	d := 1
	for x := n; x >= 10; x /= 10 {
		d++
	}
	return n + d + 5
}

// Fields decodes e's fields and values (copies of nothing: they point into
// Enc).
func (e *EntryReply) Fields() [][]byte {
	out := make([][]byte, 0, e.N)
	b := e.Enc
	for len(b) > 0 && b[0] == '$' {
		i := 1
		n := 0
		for ; i < len(b) && b[i] != '\r'; i++ {
			n = n*10 + int(b[i]-'0')
		}
		i += 2 // "\r\n"
		out = append(out, b[i:i+n:i+n])
		b = b[i+n+2:]
	}
	return out
}

// Array is e as nested Arrays.
func (e *EntryReply) Array() Array {
	fields := e.Fields()
	fa := make(Array, len(fields))
	for i, f := range fields {
		fa[i] = BulkString(f)
	}
	return Array{BulkString(e.ID.Append(nil)), fa}
}

// Error is an error reply. Msg is the whole Redis error line without the
// leading '-', e.g. "ERR syntax error" or "WRONGTYPE Operation against ...".
type Error struct{ Msg string }

func (SimpleString) isReply() {}
func (BulkString) isReply()   {}
func (Integer) isReply()      {}
func (Array) isReply()        {}
func (Map) isReply()          {}
func (PairMap) isReply()      {}
func (NullBulk) isReply()     {}
func (NullArray) isReply()    {}
func (Double) isReply()       {}
func (Set) isReply()          {}
func (*Error) isReply()       {}
func (*EntryReply) isReply()  {}

// Error makes *Error usable as a Go error (sentinels in errors.go).
func (e *Error) Error() string { return e.Msg }

// OK is the "+OK" reply.
var OK Reply = SimpleString("OK")

// Bulk returns a BulkString copy of s.
func Bulk(s string) BulkString { return BulkString(s) }
