package resp

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/acl"
)

// aclScript is run on one connection against both servers; every reply
// must match byte for byte (after masking ACL LOG's time and client fields).
var aclScript = [][]string{
	{"ACL", "WHOAMI"},
	{"ACL", "SETUSER", "alice", "on", ">pw", "~orders:*", "+@read"},
	{"ACL", "SETUSER", "bob"},
	{"ACL", "SETUSER", "c", "on", "nopass", "%R~r:*", "%W~w:*", "-@all", "+@stream", "-xdel"},
	{"ACL", "LIST"},
	{"ACL", "USERS"},
	{"ACL", "GETUSER", "alice"},
	{"ACL", "GETUSER", "nouser"},
	{"ACL", "SETUSER", "d", "foo"},
	{"ACL", "SETUSER", "d", "+nosuch"},
	{"ACL", "SETUSER", "d", "+@nosuch"},
	{"ACL", "SETUSER", "d", "<nope"},
	{"ACL", "SETUSER", "d", "#abc"},
	{"ACL", "SETUSER", "d", "%X~a"},
	{"ACL", "SETUSER", "x", "resetpass", "nopass", ">a", "#ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb", "!ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"},
	{"ACL", "GETUSER", "x"},
	{"ACL", "SETUSER", "x", "reset", "allkeys", "allcommands", "on", ">p"},
	{"ACL", "LIST"},
	{"ACL", "GETUSER", "x"},
	{"ACL", "DELUSER", "default"},
	{"ACL", "DELUSER", "bob", "zz"},
	{"ACL", "USERS"},
	{"ACL", "CAT"},
	{"ACL", "CAT", "nosuchcat"},
	{"ACL", "DRYRUN", "alice", "xadd", "orders:1", "*", "a", "b"},
	{"ACL", "DRYRUN", "alice", "get", "x"},
	{"ACL", "DRYRUN", "alice", "get", "orders:1"},
	{"ACL", "DRYRUN", "nouser", "get", "x"},
	{"ACL", "DRYRUN", "alice", "nocmd", "x"},
	{"ACL", "DRYRUN", "c", "xadd", "w:1", "*", "a", "b"},
	{"ACL", "DRYRUN", "c", "xdel", "w:1", "1-1"},
	{"ACL", "DRYRUN", "c", "xrange", "w:1", "-", "+"},
	{"ACL", "LOG", "RESET"},
	{"AUTH", "alice", "pw"},
	{"ACL", "WHOAMI"},
	{"XADD", "orders:1", "*", "a", "b"},
	{"GET", "x"},
	{"GET", "orders:1"},
	{"XRANGE", "orders:1", "-", "+"},
	{"XREAD", "STREAMS", "orders:1", "other", "0", "0"},
	{"XLEN", "other"},
	{"XLEN", "other"},
	{"MULTI"},
	{"XADD", "orders:1", "*", "a", "b"},
	{"XLEN", "orders:1"},
	{"EXEC"},
	{"AUTH", "alice", "bad"},
	{"AUTH", "bob", "x"},
	{"AUTH", "nouser", "x"},
	{"AUTH", "c", "anything"},
	{"XADD", "w:1", "1-1", "f", "v"},
	{"XADD", "r:1", "1-1", "f", "v"},
	{"XRANGE", "w:1", "-", "+"},
	{"XRANGE", "r:1", "-", "+"},
	{"XDEL", "w:1", "1-1"},
	{"AUTH", "x", "p"},
	{"ACL", "LOG"},
	{"ACL", "LOG", "2"},
	{"ACL", "LOG", "-1"},
	{"ACL", "SETUSER", "alice", "off"},
	{"AUTH", "alice", "pw"},
	{"HELLO", "2", "AUTH", "alice", "pw"},
	{"HELLO", "2", "AUTH", "nouser", "pw"},
	{"ACL", "SETUSER", "alice", "on"},
	{"HELLO", "2", "AUTH", "alice", "pw"},
	{"ACL", "WHOAMI"},
	{"RESET"},
	{"ACL", "WHOAMI"},
}

// aclLogMask hides what differs by time or by design: ages, client
// descriptions, client IDs and HELLO's version (Version, the stream
// commands' newest Redis, not the redis-server compared with).
var aclLogMask = regexp.MustCompile(`(age-seconds\r\n[$,][^\r]*\r\n(?:[^\r]*\r\n)?)|(client-info\r\n\$\d+\r\n[^\r]*\r\n)|(\$2\r\nid\r\n:\d+\r\n)|(\$7\r\nversion\r\n\$\d+\r\n[^\r]*\r\n)`)

func TestACLMatchesRedis(t *testing.T) {
	redisAddr := testkit.StartRedis(t)
	ours := startServer(t, newFakeBackend(1), Config{})
	rc, oc := dial(t, redisAddr), dial(t, ours)
	for _, cmd := range aclScript {
		want, got := do(t, rc, cmd...), do(t, oc, cmd...)
		want, got = aclLogMask.ReplaceAllString(want, "<masked>"), aclLogMask.ReplaceAllString(got, "<masked>")
		if want != got {
			t.Errorf("%q:\nredis: %q\nours:  %q", cmd, want, got)
		}
	}
}

// A restricted user is refused on the pipelined fast paths too.
func TestACLPipelinedRestricted(t *testing.T) {
	addr := startServer(t, newFakeBackend(2), Config{RequirePass: "secret"})
	c := dial(t, addr)
	if got := do(t, c, "XADD", "orders:1", "*", "a", "b"); got != "-NOAUTH Authentication required.\r\n" {
		t.Fatalf("before AUTH: %q", got)
	}
	for _, cmd := range [][]string{{"AUTH", "secret"}, {"ACL", "SETUSER", "ro", "on", ">p", "~orders:*", "+@read"}, {"AUTH", "ro", "p"}} {
		if got := do(t, c, cmd...); got != "+OK\r\n" {
			t.Fatalf("%q: %q", cmd, got)
		}
	}
	for _, cmd := range [][]string{{"XADD", "orders:1", "*", "a", "b"}, {"XLEN", "other"}, {"XLEN", "orders:1"}} {
		if err := c.Send(cmd...); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"-NOPERM this user has no permissions to run the 'xadd' command\r\n",
		"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n", ":0\r\n"}
	for i, w := range want {
		got, err := c.ReadReply()
		if err != nil || string(got) != w {
			t.Errorf("pipelined reply %d: %q %v, want %q", i, got, err, w)
		}
	}
	// Revoking applies to the open connection at once.
	a := dial(t, addr)
	do(t, a, "AUTH", "secret")
	do(t, a, "ACL", "SETUSER", "ro", "-@all")
	if got := do(t, c, "XLEN", "orders:1"); got != "-NOPERM this user has no permissions to run the 'xlen' command\r\n" {
		t.Errorf("after revoke: %q", got)
	}
}

// CLIENT LIST shows the user a connection authenticated as.
func TestClientListShowsACLUser(t *testing.T) {
	addr := startServer(t, newFakeBackend(1), Config{})
	a, b := dial(t, addr), dial(t, addr)
	do(t, a, "ACL", "SETUSER", "watcher", "on", ">pw", "+@all", "allkeys")
	if got := do(t, b, "AUTH", "watcher", "pw"); got != "+OK\r\n" {
		t.Fatalf("AUTH: %q", got)
	}
	do(t, b, "PING")
	if got := do(t, a, "CLIENT", "LIST"); !strings.Contains(got, "user=watcher") || !strings.Contains(got, "user=default") {
		t.Errorf("CLIENT LIST: %q", got)
	}
}

// LoadACLFile opens the file and its users are enforced from the first
// connection; a refused file names the path and line (the file format
// itself is tested in resp/acl).
func TestLoadACLFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "users.acl")
	body := "# operators\n\nuser default on #" + acl.HashPassword([]byte("adminpw")) + " ~* +@all\n" +
		"user reader on #" + acl.HashPassword([]byte("rpw")) + " ~orders:* +@read\n"
	if err := os.WriteFile(good, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s := New(newFakeBackend(1), Config{})
	if err := s.LoadACLFile(good); err != nil {
		t.Fatal(err)
	}
	addr := serveOn(t, s)
	c := dial(t, addr)
	if got := do(t, c, "XLEN", "orders:1"); got != "-NOAUTH Authentication required.\r\n" {
		t.Errorf("default user with a password from the file: %q", got)
	}
	if got := do(t, c, "AUTH", "reader", "rpw"); got != "+OK\r\n" {
		t.Fatalf("AUTH reader: %q", got)
	}
	if got := do(t, c, "XADD", "orders:1", "*", "f", "v"); !strings.HasPrefix(got, "-NOPERM") {
		t.Errorf("reader XADD: %q", got)
	}

	bad := filepath.Join(dir, "bad.acl")
	if err := os.WriteFile(bad, []byte("user ok on nopass\nuser x +nosuchcmd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := New(newFakeBackend(1), Config{})
	err := s2.LoadACLFile(bad)
	if err == nil || !strings.Contains(err.Error(), "bad.acl:2:") || !strings.Contains(err.Error(), "Unknown command or category name in ACL") {
		t.Errorf("bad file: %v", err)
	}
	if s2.acl.Get("ok") != nil {
		t.Error("a refused file was partly applied")
	}
	if err := s2.LoadACLFile(filepath.Join(dir, "missing.acl")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}
