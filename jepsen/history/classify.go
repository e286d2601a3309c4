package history

import (
	"errors"
	"strings"
)

// definiteCodes are the error-reply codes that prove a command was rejected
// before it could take effect: redirections, cluster unavailability, and
// errors detected while validating the command.
var definiteCodes = map[string]bool{
	"MOVED": true, "ASK": true, "TRYAGAIN": true, "CLUSTERDOWN": true, "CROSSSLOT": true,
	"WRONGTYPE": true, "NOGROUP": true, "BUSYGROUP": true, "READONLY": true, "NOAUTH": true,
	"LOADING": true, "NOPERM": true,
}

// redisError is implemented by server error replies (go-redis's
// redis.Error): the text is the reply without "-".
type redisError interface {
	error
	RedisError()
}

// rejected marks an error as proof that the operation did not take effect.
type rejected struct{ err error }

func (r rejected) Error() string { return r.err.Error() }
func (r rejected) Unwrap() error { return r.err }

// Rejected wraps err to say the operation certainly did not take effect
// (for instance the connection could not be dialed, so nothing was sent);
// Classify maps it to Fail.
func Rejected(err error) error { return rejected{err} }

// Classify maps a client error to an event type: nil is OK; an error wrapped
// by Rejected, or a server error reply whose code is one that proves
// rejection (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, CROSSSLOT, WRONGTYPE, NOGROUP,
// BUSYGROUP, READONLY, NOAUTH, LOADING, NOPERM), is Fail; everything else
// (timeouts, closed or reset connections, other server errors including the
// broker's "unknown outcome" error) is Info. An outcome is never guessed.
func Classify(err error) Type {
	if err == nil {
		return OK
	}
	var r rejected
	if errors.As(err, &r) {
		return Fail
	}
	var re redisError
	if errors.As(err, &re) {
		code, _, _ := strings.Cut(re.Error(), " ")
		if definiteCodes[code] {
			return Fail
		}
	}
	return Info
}
