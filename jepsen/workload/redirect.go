package workload

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Redirecting is a Conn for a cluster: it sends a command to First and
// follows the replies that prove the command was not executed, as a
// cluster client does:
//
//   - "-MOVED <slot> <host:port>": sends it again to the connection Route
//     returns for that address;
//   - "-ASK <slot> <host:port>" (the slot is moving): sends ASKING and the
//     command there once, on one connection (an Asker), when the
//     connection can;
//   - "-TRYAGAIN …" (a key being moved, no leader yet): sends it again to
//     the same connection a moment later.
//
// At most 12 redirections per command. Nothing else is retried, so unknown
// outcomes stay unknown.
type Redirecting struct {
	First Conn
	Route func(addr string) Conn // nil when the address is unknown
}

// Asker is a Conn that can send ASKING and a command on one connection.
type Asker interface {
	DoAsking(ctx context.Context, args ...any) (any, error)
}

// Do runs args, following MOVED, ASK and TRYAGAIN.
func (r Redirecting) Do(ctx context.Context, args ...any) (any, error) {
	c := r.First
	asking := false
	var res any
	var err error
	for i := 0; i < 13; i++ {
		if a, ok := c.(Asker); ok && asking {
			res, err = a.DoAsking(ctx, args...)
		} else {
			res, err = c.Do(ctx, args...)
		}
		asking = false
		code, addr := redirect(err)
		switch code {
		case "MOVED", "ASK":
			next := r.Route(addr)
			if next == nil {
				return res, err
			}
			c, asking = next, code == "ASK"
		case "TRYAGAIN":
			select {
			case <-ctx.Done():
				return res, err
			case <-time.After(time.Duration(20*(i+1)) * time.Millisecond):
			}
		default:
			return res, err
		}
	}
	return res, err
}

// redirect returns the code of a MOVED, ASK or TRYAGAIN error reply and,
// for the first two, the address.
func redirect(err error) (code, addr string) {
	var re interface{ RedisError() }
	if err == nil || !errors.As(err, &re) {
		return "", ""
	}
	f := strings.Fields(err.Error())
	switch {
	case len(f) == 3 && (f[0] == "MOVED" || f[0] == "ASK"):
		return f[0], f[2]
	case len(f) > 0 && f[0] == "TRYAGAIN":
		return f[0], ""
	}
	return "", ""
}
