package engine

import (
	"encoding/binary"
	"strconv"
)

// A listpack is Redis's compact list encoding, reproduced byte for byte so
// that node sizes (and therefore stream-node-max-bytes splits, XTRIM ~ results
// and memory accounting) match Redis exactly:
//
//	<total-bytes uint32 LE> <num-elements uint16 LE> <element>* <0xFF>
//
// and each element is <encoding+data> <backlen>, where backlen is the length
// of <encoding+data> in 1..5 bytes. A string that is a canonical int64
// (string2ll) is stored as an integer, as lpAppend does; reading it back
// yields the same decimal text.
//
// Invariant: len(lp) == the total-bytes header == Redis's lpBytes for the
// same sequence of appends/replacements.

const (
	lpHeaderSize  = 6
	lpEOF         = 0xFF
	lpMaxElements = 65535 // num-elements saturates here (LP_HDR_NUMELE_UNKNOWN)
)

// lpNew returns an empty listpack with room for capHint bytes.
func lpNew(capHint int) []byte {
	if capHint < lpHeaderSize+1 {
		capHint = lpHeaderSize + 1
	}
	lp := make([]byte, lpHeaderSize+1, capHint)
	lp[lpHeaderSize] = lpEOF
	lpSetHeader(lp, 0)
	return lp
}

func lpSetHeader(lp []byte, numEle int) {
	binary.LittleEndian.PutUint32(lp, uint32(len(lp)))
	if numEle > lpMaxElements {
		numEle = lpMaxElements
	}
	binary.LittleEndian.PutUint16(lp[4:], uint16(numEle))
}

func lpNumElements(lp []byte) int { return int(binary.LittleEndian.Uint16(lp[4:])) }

// lpIntEncodedSize is the size of <encoding+data> for integer v.
func lpIntEncodedSize(v int64) int {
	switch {
	case v >= 0 && v <= 127:
		return 1
	case v >= -4096 && v <= 4095:
		return 2
	case v >= -32768 && v <= 32767:
		return 3
	case v >= -8388608 && v <= 8388607:
		return 4
	case v >= -2147483648 && v <= 2147483647:
		return 5
	}
	return 9
}

// lpStrEncodedSize is the size of <encoding+data> for a string of n bytes.
func lpStrEncodedSize(n int) int {
	switch {
	case n < 64:
		return 1 + n
	case n < 4096:
		return 2 + n
	}
	return 5 + n
}

// lpBacklenSize is the size of the backlen for an element of l bytes.
func lpBacklenSize(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// lpElementSize is the total size an element holding s takes (as lpAppend
// would store it).
func lpElementSize(s []byte) int {
	var l int
	if v, ok := ParseInt(s); ok {
		l = lpIntEncodedSize(v)
	} else {
		l = lpStrEncodedSize(len(s))
	}
	return l + lpBacklenSize(l)
}

// lpIntElementSize is the total size an integer element takes.
func lpIntElementSize(v int64) int {
	l := lpIntEncodedSize(v)
	return l + lpBacklenSize(l)
}

func lpAppendBacklen(b []byte, l int) []byte {
	switch lpBacklenSize(l) {
	case 1:
		return append(b, byte(l))
	case 2:
		return append(b, byte(l>>7), byte(l&127)|128)
	case 3:
		return append(b, byte(l>>14), byte((l>>7)&127)|128, byte(l&127)|128)
	case 4:
		return append(b, byte(l>>21), byte((l>>14)&127)|128, byte((l>>7)&127)|128, byte(l&127)|128)
	}
	return append(b, byte(l>>28), byte((l>>21)&127)|128, byte((l>>14)&127)|128, byte((l>>7)&127)|128, byte(l&127)|128)
}

// lpEncodeInt appends the element (encoding, data, backlen) for v to b.
func lpEncodeInt(b []byte, v int64) []byte {
	u := uint64(v)
	switch lpIntEncodedSize(v) {
	case 1:
		b = append(b, byte(v))
		return lpAppendBacklen(b, 1)
	case 2:
		u &= 0x1FFF
		b = append(b, byte(u>>8)|0xC0, byte(u))
		return lpAppendBacklen(b, 2)
	case 3:
		b = append(b, 0xF1, byte(u), byte(u>>8))
		return lpAppendBacklen(b, 3)
	case 4:
		b = append(b, 0xF2, byte(u), byte(u>>8), byte(u>>16))
		return lpAppendBacklen(b, 4)
	case 5:
		b = append(b, 0xF3, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
		return lpAppendBacklen(b, 5)
	}
	b = append(b, 0xF4)
	b = binary.LittleEndian.AppendUint64(b, u)
	return lpAppendBacklen(b, 9)
}

// lpEncodeString appends the element for s, as an integer when s is a
// canonical int64.
func lpEncodeString(b []byte, s []byte) []byte {
	if v, ok := ParseInt(s); ok {
		return lpEncodeInt(b, v)
	}
	n := len(s)
	switch {
	case n < 64:
		b = append(b, 0x80|byte(n))
	case n < 4096:
		b = append(b, 0xE0|byte(n>>8), byte(n))
	default:
		b = append(b, 0xF0, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	}
	b = append(b, s...)
	return lpAppendBacklen(b, lpStrEncodedSize(n))
}

// lpElem is one decoded element: a string (Str, pointing into the listpack)
// or an integer (Int, with IsInt set).
type lpElem struct {
	Str   []byte
	Int   int64
	IsInt bool
}

// lpDecode decodes the element at off and returns it with the offset of the
// next element. The listpack must be well formed (it is built only by this
// package, and snapshot decoding validates nodes with lpValidate).
func lpDecode(lp []byte, off int) (lpElem, int) {
	c := lp[off]
	var e lpElem
	var l int
	switch {
	case c&0x80 == 0:
		e, l = lpElem{Int: int64(c), IsInt: true}, 1
	case c&0xC0 == 0x80:
		n := int(c & 0x3F)
		e, l = lpElem{Str: lp[off+1 : off+1+n]}, 1+n
	case c&0xE0 == 0xC0:
		u := uint64(c&0x1F)<<8 | uint64(lp[off+1])
		v := int64(u<<51) >> 51
		e, l = lpElem{Int: v, IsInt: true}, 2
	case c&0xF0 == 0xE0:
		n := int(c&0x0F)<<8 | int(lp[off+1])
		e, l = lpElem{Str: lp[off+2 : off+2+n]}, 2+n
	case c == 0xF0:
		n := int(binary.LittleEndian.Uint32(lp[off+1:]))
		e, l = lpElem{Str: lp[off+5 : off+5+n]}, 5+n
	case c == 0xF1:
		e, l = lpElem{Int: int64(int16(binary.LittleEndian.Uint16(lp[off+1:]))), IsInt: true}, 3
	case c == 0xF2:
		u := uint32(lp[off+1]) | uint32(lp[off+2])<<8 | uint32(lp[off+3])<<16
		e, l = lpElem{Int: int64(int32(u<<8) >> 8), IsInt: true}, 4
	case c == 0xF3:
		e, l = lpElem{Int: int64(int32(binary.LittleEndian.Uint32(lp[off+1:]))), IsInt: true}, 5
	case c == 0xF4:
		e, l = lpElem{Int: int64(binary.LittleEndian.Uint64(lp[off+1:])), IsInt: true}, 9
	default:
		panic("engine: corrupt listpack")
	}
	return e, off + l + lpBacklenSize(l)
}

// lpInt decodes the integer element at off (stream metadata fields are
// always integers).
func lpInt(lp []byte, off int) (int64, int) {
	if c := lp[off]; c < 0x80 { // 7-bit uint: the common case for counters and flags
		return int64(c), off + 2
	}
	e, next := lpDecode(lp, off)
	if !e.IsInt {
		v, _ := strconv.ParseInt(string(e.Str), 10, 64)
		return v, next
	}
	return e.Int, next
}

// lpSkip returns the offset of the element after the one at off.
func lpSkip(lp []byte, off int) int {
	switch c := lp[off]; {
	case c < 0x80:
		return off + 2
	case c&0xC0 == 0x80: // 6-bit string: 1+n bytes, backlen 1 (n < 64 <= 127-1)
		return off + 1 + int(c&0x3F) + 1
	}
	_, next := lpDecode(lp, off)
	return next
}

// appendText appends the element's value as text (integers in decimal).
func (e lpElem) appendText(b []byte) []byte {
	if e.IsInt {
		return strconv.AppendInt(b, e.Int, 10)
	}
	return append(b, e.Str...)
}

// equal reports whether the element's text equals s, without allocating.
func (e lpElem) equal(s []byte) bool {
	if !e.IsInt {
		return string(e.Str) == string(s)
	}
	v, ok := ParseInt(s)
	return ok && v == e.Int
}

// lpReplaceInt replaces the integer element at off with v, resizing the
// listpack if the encoding size changes (lpReplaceInteger). It returns the
// new listpack; the element count is unchanged.
func lpReplaceInt(lp []byte, off int, v int64) []byte {
	next := lpSkip(lp, off)
	var tmp [16]byte
	enc := lpEncodeInt(tmp[:0], v)
	if len(enc) == next-off {
		copy(lp[off:], enc)
		return lp
	}
	out := make([]byte, 0, len(lp)+len(enc)-(next-off))
	out = append(out, lp[:off]...)
	out = append(out, enc...)
	out = append(out, lp[next:]...)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out
}
