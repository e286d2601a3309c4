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

func TestRedirectingFollowsRedirectsOnly(t *testing.T) {
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
	if _, err := (Redirecting{First: loop, Route: func(string) Conn { return loop }}).Do(context.Background()); err == nil || len(calls) != 13 {
		t.Fatalf("redirect loop: %d calls, err %v", len(calls), err)
	}
	// ASK: ASKING and the command on the target's connection, once.
	calls = nil
	asked := askConn{fakeConn{"asked", "2-0", nil, &calls}}
	ask := fakeConn{"ask", nil, replyErr("ASK 3828 127.0.0.1:7003"), &calls}
	r, err = Redirecting{First: ask, Route: func(string) Conn { return asked }}.Do(context.Background(), "XADD")
	if err != nil || r != "2-0" || len(calls) != 2 || calls[1] != "asked+ASKING" {
		t.Fatalf("ASK: got %v %v after %v", r, err, calls)
	}
	// TRYAGAIN: the same connection again.
	calls = nil
	again := &flaky{fakeConn{"again", "3-0", nil, &calls}, 2}
	r, err = Redirecting{First: again, Route: route}.Do(context.Background(), "XADD")
	if err != nil || r != "3-0" || len(calls) != 3 {
		t.Fatalf("TRYAGAIN: got %v %v after %v", r, err, calls)
	}
}

// askConn records a command sent after ASKING.
type askConn struct{ fakeConn }

func (a askConn) DoAsking(ctx context.Context, args ...any) (any, error) {
	*a.calls = append(*a.calls, a.name+"+ASKING")
	return a.reply, a.err
}

// flaky answers TRYAGAIN its first n calls.
type flaky struct {
	fakeConn
	n int
}

func (f *flaky) Do(ctx context.Context, args ...any) (any, error) {
	*f.calls = append(*f.calls, f.name)
	if f.n > 0 {
		f.n--
		return nil, replyErr("TRYAGAIN the key is being moved to another shard, retry later")
	}
	return f.reply, f.err
}

type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}
