package wire_test

import (
	"errors"
	"net"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/wire"
)

// TestClientAgainstRedis: Do, pipelining with Send and ReadReply, raw bytes
// and AUTH, against a real redis-server.
func TestClientAgainstRedis(t *testing.T) {
	addr := testkit.StartRedis(t, "--requirepass", "s3cret")

	if _, err := wire.Dial(addr, "wrong", time.Second); !errors.As(err, new(wire.Error)) {
		t.Fatalf("Dial with a wrong password: %v, want an error reply", err)
	}
	noauth, err := wire.Dial(addr, "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer noauth.Close()
	if r, err := noauth.Do("PING"); err != nil || string(r[:7]) != "-NOAUTH" {
		t.Fatalf("PING without AUTH: %q %v", r, err)
	}

	c, err := wire.Dial(addr, "s3cret", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Timeout = 5 * time.Second
	if r, err := c.Do("XADD", "s", "1-1", "f", "v\r\n"); err != nil || string(r) != "$3\r\n1-1\r\n" {
		t.Fatalf("XADD: %q %v", r, err)
	}
	for i := 2; i <= 4; i++ {
		if err := c.Send("XADD", "s", strconv.Itoa(i)+"-1", "f", "v"); err != nil {
			t.Fatal(err)
		}
	}
	for i := 2; i <= 4; i++ {
		if r, err := c.ReadReply(); err != nil || string(r) != "$3\r\n"+strconv.Itoa(i)+"-1\r\n" {
			t.Fatalf("pipelined reply %d: %q %v", i, r, err)
		}
	}
	if err := c.WriteRaw([]byte("*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n")); err != nil {
		t.Fatal(err)
	}
	if r, err := c.ReadReply(); err != nil || string(r) != "$2\r\nhi\r\n" {
		t.Fatalf("raw ECHO: %q %v", r, err)
	}
	r, err := c.Do("XRANGE", "s", "-", "1-1")
	if err != nil {
		t.Fatal(err)
	}
	v, err := wire.Parse(r)
	want := []any{[]any{"1-1", []any{"f", "v\r\n"}}}
	if err != nil || !reflect.DeepEqual(v, want) {
		t.Fatalf("XRANGE parsed: %#v %v", v, err)
	}
	if r, err := c.Do("HELLO", "3"); err != nil || r[0] != '%' {
		t.Fatalf("HELLO 3: %q %v", r, err)
	}
	if r, err := c.Do("XINFO", "STREAM", "s"); err != nil || r[0] != '%' {
		t.Fatalf("RESP3 XINFO STREAM: %q %v", r, err)
	} else if _, err := wire.Parse(r); err != nil {
		t.Fatalf("RESP3 XINFO STREAM does not parse: %v", err)
	}
}

// TestClientDeadlines: Timeout bounds an exchange, SetDeadline replaces it,
// and a blocked read ends with a timeout error.
func TestClientDeadlines(t *testing.T) {
	addr := testkit.StartRedis(t)
	c, err := wire.Dial(addr, "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Timeout = 200 * time.Millisecond
	start := time.Now()
	_, err = c.Do("XREAD", "BLOCK", "5000", "STREAMS", "nothing", "$")
	if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Fatalf("blocked XREAD with Timeout 200ms: %v after %v", err, time.Since(start))
	}

	d, err := wire.Dial(addr, "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Send("XREAD", "BLOCK", "300", "STREAMS", "nothing", "$"); err != nil {
		t.Fatal(err)
	}
	d.SetDeadline(time.Now().Add(5 * time.Second))
	if r, err := d.ReadReply(); err != nil || string(r) != "*-1\r\n" {
		t.Fatalf("XREAD BLOCK 300 under a 5s deadline: %q %v", r, err)
	}
}

func TestDialClosedPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if c, err := wire.Dial(addr, "", time.Second); err == nil {
		c.Close()
		t.Fatal("Dial to a closed port succeeded")
	}
}
