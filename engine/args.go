package engine

import (
	"math"
	"strconv"
	"strings"
)

// Argument parsing shared by every command family, and by the packages above
// the engine that parse Redis arguments themselves (fsm's CONFIG SET, resp):
// one integer parser, one memory-value parser, one keyword comparison and one
// name lower-caser, each with Redis's exact rules.

// ParseInt parses b as Redis's string2ll does (getLongLongFromObject): an
// optional '-' and decimal digits, no '+', no spaces, no leading zeros (but
// "0" itself), no "-0", within int64. It is also the listpack's rule: a
// field is stored as an integer exactly when ParseInt accepts it.
func ParseInt(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n > 20 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	i, neg := 0, false
	if b[0] == '-' {
		neg, i = true, 1
		if n == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1)/10 || v*10 > 1<<64-1-d {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// intArg is getLongLongFromObjectOrReply: ParseInt, or on failure the error
// "ERR "+msg, or ErrNotInteger when msg is empty.
func intArg(b []byte, msg string) (int64, *Error) {
	v, ok := ParseInt(b)
	if !ok {
		if msg != "" {
			return 0, &Error{Msg: "ERR " + msg}
		}
		return 0, ErrNotInteger
	}
	return v, nil
}

// ParseMemory parses a memory value as Redis's memtoull does for CONFIG SET:
// decimal digits (none means 0) and an optional unit b, k (1000), kb (1024),
// m, mb, g or gb, in any case. ok is false for a leading '-' or another unit
// (Redis's "argument must be a memory value"). As in C, a digit run past
// uint64 saturates and the unit's multiplication wraps, so a caller that
// keeps an int64 checks v <= math.MaxInt64 itself.
//
// NB: the unit is lower-cased with strings.ToLower, so the Kelvin sign
// (U+212A) counts as 'k' where Redis's strcasecmp would refuse it. It is kept
// because CONFIG SET stream-node-max-bytes applies through the log: a value
// an earlier version accepted must apply the same on replay.
func ParseMemory(b []byte) (v uint64, ok bool) {
	s := string(b)
	if strings.HasPrefix(s, "-") {
		return 0, false
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	var mul uint64
	switch strings.ToLower(s[i:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1024
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1024 * 1024
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1024 * 1024 * 1024
	default:
		return 0, false
	}
	if i > 0 {
		n, err := strconv.ParseUint(s[:i], 10, 64)
		if err != nil {
			n = math.MaxUint64 // strtoull saturates on overflow
		}
		v = n
	}
	return v * mul, true // C's unsigned multiplication wraps
}

// EqFold reports whether arg equals kw ignoring the case of ASCII letters,
// as Redis's strcasecmp compares command names, subcommands and options;
// other bytes must be equal.
func EqFold(arg []byte, kw string) bool {
	if len(arg) != len(kw) {
		return false
	}
	for i := 0; i < len(arg); i++ {
		if lowerByte(arg[i]) != lowerByte(kw[i]) {
			return false
		}
	}
	return true
}

// Lower returns name with its ASCII letters lower-cased (other bytes kept),
// the form the command tables and configuration names are written in.
func Lower(name []byte) string {
	var buf [NameBuf]byte
	return string(LowerName(&buf, name))
}

// NameBuf is the room LowerName lowers a command name in.
const NameBuf = 32

// LowerName returns b as Lower does, in buf when it fits, for a map lookup
// (m[string(…)] of a slice does not allocate). It is the one command-name
// lower-casing helper of the engine and the server.
func LowerName(buf *[NameBuf]byte, b []byte) []byte {
	out := buf[:0]
	if len(b) > len(buf) {
		out = make([]byte, 0, len(b))
	}
	for _, c := range b {
		out = append(out, lowerByte(c))
	}
	return out
}

// lowerByte lower-cases an ASCII letter; other bytes are returned as is.
func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
