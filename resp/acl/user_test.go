package acl

import (
	"strings"
	"testing"
)

// The ACL LIST line of users built by SETUSER (the byte-for-byte check
// against redis-server is resp's TestACLMatchesRedis).
func TestDescribe(t *testing.T) {
	h := HashPassword([]byte("pw"))
	for _, tc := range []struct{ rules, want string }{
		{"", "off resetchannels -@all"},
		{"on >pw ~orders:* +@read", "on #" + h + " ~orders:* resetchannels -@all +@read"},
		{"on nopass %R~r:* %W~w:* %W~r:* -@all +@stream -xdel",
			"on nopass ~r:* %W~w:* resetchannels -@all +@stream -xdel"},
		// Command rules that change nothing are not shown; a later rule
		// for a command replaces an earlier one.
		{"+@all +xadd -xdel +xdel", "off resetchannels +@all"},
		{"-@all +xadd -@stream", "off resetchannels -@all -@stream"},
		{"allkeys allcommands reset", "off sanitize-payload resetchannels -@all"},
	} {
		if got := user(t, tc.rules).Describe(); got != tc.want {
			t.Errorf("SETUSER u %s: %q, want %q", tc.rules, got, tc.want)
		}
	}
	if got := NewStore("").Get("default").Describe(); got != "on nopass ~* &* +@all" {
		t.Errorf("default user: %q", got)
	}
}

// SETUSER is all or nothing, with Redis's error for the first bad modifier.
func TestSetUserAtomic(t *testing.T) {
	s := NewStore("")
	if er := s.SetUser("u", []string{"on", ">a", "~k"}); er != nil {
		t.Fatal(er.Msg)
	}
	before := s.Get("u")
	for _, tc := range []struct{ op, why string }{
		{"foo", "Syntax error"},
		{"+nosuch", "Unknown command or category name in ACL"},
		{"+@nosuch", "Unknown command or category name in ACL"},
		{"<nope", "The password you are trying to remove from the user does not exist"},
		{"#abc", "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{"%X~a", "Syntax error"},
	} {
		er := s.SetUser("u", []string{"off", "resetkeys", tc.op})
		want := "ERR Error in ACL SETUSER modifier '" + tc.op + "': " + tc.why
		if er == nil || er.Msg != want {
			t.Errorf("%s: %v, want %q", tc.op, er, want)
		}
		if er := s.CheckSetUser("u", []string{tc.op}); er == nil || er.Msg != want {
			t.Errorf("CheckSetUser %s: %v", tc.op, er)
		}
	}
	if s.Get("u") != before || before.Describe() != user(t, "on >a ~k").Describe() {
		t.Errorf("a refused SETUSER changed the user: %q", s.Get("u").Describe())
	}
	if er := s.CheckSetUser("v", []string{"on"}); er != nil || s.Get("v") != nil {
		t.Errorf("CheckSetUser created or refused a user: %v", er)
	}
}

// Hashed modifiers have the clear ones' effect, and no clear password.
func TestHashedOps(t *testing.T) {
	ops := []string{"on", ">s3cret", ">other", "<other", "~k"}
	hashed := HashedOps(ops)
	if strings.Contains(strings.Join(hashed, " "), "s3cret") || strings.Contains(strings.Join(hashed, " "), "other") {
		t.Errorf("clear text left: %q", hashed)
	}
	a, b := NewStore(""), NewStore("")
	if er := a.SetUser("u", ops); er != nil {
		t.Fatal(er.Msg)
	}
	if er := b.SetUser("u", hashed); er != nil {
		t.Fatal(er.Msg)
	}
	if a.Get("u").Describe() != b.Get("u").Describe() {
		t.Errorf("%q != %q", a.Get("u").Describe(), b.Get("u").Describe())
	}
	if b.Authenticate([]byte("u"), []byte("s3cret")) == nil || b.Authenticate([]byte("u"), []byte("other")) != nil {
		t.Error("hashed passwords do not authenticate as the clear ones")
	}
}

func TestStoreUsers(t *testing.T) {
	s := NewStore("secret")
	if s.DefaultAuto() != nil {
		t.Error("default user with requirepass authenticates without AUTH")
	}
	if s.Authenticate([]byte("default"), []byte("secret")) == nil || s.Authenticate([]byte("default"), []byte("x")) != nil {
		t.Error("requirepass is not the default user's password")
	}
	for _, name := range []string{"b", "a", "c"} {
		if er := s.SetUser(name, []string{"on", "nopass"}); er != nil {
			t.Fatal(er.Msg)
		}
	}
	old := s.Get("a")
	_ = s.SetUser("a", []string{"off"})
	if s.Refresh(old) == old || s.Authenticate([]byte("a"), nil) != nil {
		t.Error("a changed user is not refreshed")
	}
	if _, er := s.DelUsers([]string{"a", "default"}); er == nil || er.Msg != "ERR The 'default' user cannot be removed" || s.Get("a") == nil {
		t.Errorf("DELUSER default: %v", er)
	}
	if n, er := s.DelUsers([]string{"a", "zz", "a"}); er != nil || n != 1 || s.Refresh(old) != nil {
		t.Errorf("DELUSER a zz a: %d %v", n, er)
	}
	var names []string
	for _, u := range s.Users() {
		names = append(names, u.Name())
	}
	if strings.Join(names, " ") != "b c default" {
		t.Errorf("users: %q", names)
	}
}
