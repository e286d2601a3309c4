package engine

import "fmt"

// Sentinel errors, with their exact Redis wording. Compare with errors.Is or
// ==; never match on strings. Add new sentinels here, in one block, so that the
// wording clients see is kept in one place.
var (
	ErrSyntax          = &Error{Msg: "ERR syntax error"}
	ErrWrongType       = &Error{Msg: "WRONGTYPE Operation against a key holding the wrong kind of value"}
	ErrNotInteger      = &Error{Msg: "ERR value is not an integer or out of range"}
	ErrInvalidStreamID = &Error{Msg: "ERR Invalid stream ID specified as stream command argument"}
	ErrNoSuchKey       = &Error{Msg: "ERR no such key"}
	ErrXAddIDTooSmall  = &Error{Msg: "ERR The ID specified in XADD is equal or smaller than the target stream top item"}
	ErrXAddIDZero      = &Error{Msg: "ERR The ID specified in XADD must be greater than 0-0"}
)

// Errorf builds an ad-hoc error reply; msg must start with an error code such
// as "ERR " or "NOGROUP ".
func Errorf(format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// WrongArity is Redis's arity error for the command name as the client sent it
// (lower-cased by Redis).
func WrongArity(cmd string) *Error {
	return Errorf("ERR wrong number of arguments for '%s' command", cmd)
}
