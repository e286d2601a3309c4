package resp

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// Two servers over the same replicated shards (as two nodes over their
// replicas): a user created on one is enforced by the other, passwords
// never reach the log in clear, and a server started later (a restart)
// rebuilds the users from the log.
func TestACLReplicatedThroughShardLog(t *testing.T) {
	be := newFakeBackend(2)
	start := func() string {
		s := New(be, Config{})
		s.ReplicateACL()
		return serveOn(t, s)
	}
	a := dial(t, start())
	bAddr := start()
	b := dial(t, bAddr)
	if got := do(t, a, "ACL", "SETUSER", "orders", "on", ">s3cret", "~orders:*", "+@read"); got != "+OK\r\n" {
		t.Fatalf("SETUSER: %q", got)
	}
	waitReply(t, b, []string{"AUTH", "orders", "s3cret"}, "+OK\r\n")
	if got := do(t, b, "XADD", "orders:1", "*", "a", "b"); got != "-NOPERM this user has no permissions to run the 'xadd' command\r\n" {
		t.Errorf("XADD on the other server: %q", got)
	}
	if got := do(t, a, "ACL", "DELUSER", "orders"); got != ":1\r\n" {
		t.Fatalf("DELUSER: %q", got)
	}
	waitReply(t, dial(t, bAddr), []string{"AUTH", "orders", "s3cret"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n")
	if got := do(t, a, "ACL", "SETUSER", "late", "on", ">pw", "allkeys", "+@all"); got != "+OK\r\n" {
		t.Fatalf("SETUSER late: %q", got)
	}
	raw := do(t, a, "XRANGE", ACLStreamKey, "-", "+")
	if strings.Contains(raw, "s3cret") || strings.Contains(raw, ">pw") {
		t.Errorf("clear-text password in the replicated log: %q", raw)
	}
	c := dial(t, start())
	waitReply(t, c, []string{"AUTH", "late", "pw"}, "+OK\r\n")
	if got := do(t, c, "ACL", "USERS"); got != "*2\r\n$7\r\ndefault\r\n$4\r\nlate\r\n" {
		t.Errorf("users after replay: %q", got)
	}
}

// serveOn serves s on a loopback port until the test ends.
func serveOn(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-done
	})
	return ln.Addr().String()
}

// waitReply repeats cmd until it answers want (bounded).
func waitReply(t *testing.T, c interface {
	Do(...string) ([]byte, error)
}, cmd []string, want string) {
	t.Helper()
	var got []byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got, _ = c.Do(cmd...)
		if string(got) == want {
			return
		}
	}
	t.Fatalf("%q: %q, want %q", cmd, got, want)
}
