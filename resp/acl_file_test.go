package resp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadACLFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "users.acl")
	body := "# operators\n\nuser default on #" + hashPassword([]byte("adminpw")) + " ~* +@all\n" +
		"user reader on #" + hashPassword([]byte("rpw")) + " ~orders:* +@read\n"
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
	if s2.acl.get("ok") != nil {
		t.Error("a refused file was partly applied")
	}
	if err := os.WriteFile(bad, []byte("notauser x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s2.LoadACLFile(bad); err == nil {
		t.Error("line without the user keyword accepted")
	}
}
