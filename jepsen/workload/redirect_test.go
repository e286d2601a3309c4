package workload

import (
	"context"
	"errors"
	"testing"
)

type fakeConn struct {
	name  string
	reply any
	err   error
	calls *[]string
}

func (f fakeConn) Do(context.Context, ...any) (any, error) {
	*f.calls = append(*f.calls, f.name)
	return f.reply, f.err
}

func TestRedirectingFollowsMovedOnly(t *testing.T) {
	var calls []string
	b := fakeConn{"b", "1-0", nil, &calls}
	a := fakeConn{"a", nil, replyErr("MOVED 3828 127.0.0.1:7002"), &calls}
	route := func(addr string) Conn {
		if addr == "127.0.0.1:7002" {
			return b
		}
		return nil
	}
	r, err := Redirecting{First: a, Route: route}.Do(context.Background(), "XADD")
	if err != nil || r != "1-0" || len(calls) != 2 || calls[1] != "b" {
		t.Fatalf("got %v %v after %v", r, err, calls)
	}
	calls = nil
	timeout := fakeConn{"t", nil, errors.New("i/o timeout"), &calls}
	if _, err := (Redirecting{First: timeout, Route: route}).Do(context.Background(), "XADD"); err == nil || len(calls) != 1 {
		t.Fatalf("a timeout was retried: %v", calls)
	}
	calls = nil
	loop := fakeConn{"l", nil, replyErr("MOVED 1 127.0.0.1:9"), &calls}
	if _, err := (Redirecting{First: loop, Route: func(string) Conn { return loop }}).Do(context.Background()); err == nil || len(calls) != 6 {
		t.Fatalf("redirect loop: %d calls, err %v", len(calls), err)
	}
}

type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}
