package acl

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/raftstream/raftstream/resp/command"
)

func TestLoad(t *testing.T) {
	body := "# operators\n\nuser default on #" + HashPassword([]byte("adminpw")) + " ~* +@all\n" +
		"user reader on #" + HashPassword([]byte("rpw")) + " ~orders:* +@read\n"
	s := NewStore("")
	if err := s.Load(strings.NewReader(body), "users.acl"); err != nil {
		t.Fatal(err)
	}
	if s.DefaultAuto() != nil {
		t.Error("default user with a password from the file authenticates without AUTH")
	}
	if s.Authenticate([]byte("default"), []byte("adminpw")) == nil {
		t.Error("AUTH default with the file's password refused")
	}
	r := s.Authenticate([]byte("reader"), []byte("rpw"))
	if r == nil {
		t.Fatal("AUTH reader refused")
	}
	if d := r.Allowed(command.Get("xadd"), bytesOf([]string{"xadd", "orders:1", "*", "f", "v"})); d == nil || d.Reason != ReasonCommand {
		t.Errorf("reader XADD: %+v", d)
	}
	if d := r.Allowed(command.Get("xlen"), bytesOf([]string{"xlen", "orders:1"})); d != nil {
		t.Errorf("reader XLEN: %+v", d)
	}
}

// A bad line refuses the whole file, with the file name, the line number
// and the first problem in file order.
func TestLoadRefusesBadFile(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"user ok on nopass\nuser x +nosuchcmd\n", "bad.acl:2: Error in ACL SETUSER modifier '+nosuchcmd': Unknown command or category name in ACL"},
		{"user ok on nopass\nnotauser x\n", "bad.acl:2: should start with user keyword"},
		{"user ok on nopass\nuser\n", "bad.acl:2: should start with user keyword"},
		{"user ok on nopass\nuser x +nosuchcmd\nnotauser x\n", "bad.acl:2: Error in ACL SETUSER modifier"},
		{"user ok on nopass\nnotauser x\nuser x +nosuchcmd\n", "bad.acl:2: should start with user keyword"},
		// Lines apply in order, to the users as the earlier lines left them.
		{"user ok on >a\nuser ok <b\n", "bad.acl:2: Error in ACL SETUSER modifier '<b'"},
	} {
		s := NewStore("")
		err := s.Load(strings.NewReader(tc.body), "bad.acl")
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.body, err, tc.want)
		}
		if s.Get("ok") != nil {
			t.Errorf("%q: a refused file was partly applied", tc.body)
		}
	}
	s := NewStore("")
	if err := s.Load(strings.NewReader("user ok on >a\nuser ok <a >b\n"), "ok.acl"); err != nil ||
		s.Authenticate([]byte("ok"), []byte("b")) == nil || s.Authenticate([]byte("ok"), []byte("a")) != nil {
		t.Errorf("a user changed on two lines: %v", err)
	}
}

func TestLoadReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("user ok on nopass\n"), iotest.ErrReader(boom))
	s := NewStore("")
	if err := s.Load(r, "f.acl"); !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
	if s.Get("ok") != nil {
		t.Error("a file that could not be read was partly applied")
	}
}
