package workload

import (
	"context"
	"errors"
	"strings"
)

// Redirecting is a Conn for a cluster: it sends a command to First and, when
// the reply is "-MOVED <slot> <host:port>" (which proves the command was not
// executed), sends it again to the connection Route returns for that
// address, up to 5 times. Nothing else is retried, so unknown outcomes stay
// unknown.
type Redirecting struct {
	First Conn
	Route func(addr string) Conn // nil when the address is unknown
}

// Do runs args, following MOVED.
func (r Redirecting) Do(ctx context.Context, args ...any) (any, error) {
	c := r.First
	var res any
	var err error
	for i := 0; i < 6; i++ {
		res, err = c.Do(ctx, args...)
		addr, ok := movedTo(err)
		if !ok {
			return res, err
		}
		next := r.Route(addr)
		if next == nil {
			return res, err
		}
		c = next
	}
	return res, err
}

// movedTo returns the address of a MOVED error reply.
func movedTo(err error) (string, bool) {
	var re interface{ RedisError() }
	if err == nil || !errors.As(err, &re) {
		return "", false
	}
	f := strings.Fields(err.Error())
	if len(f) != 3 || f[0] != "MOVED" {
		return "", false
	}
	return f[2], true
}
