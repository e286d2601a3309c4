package acl

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/raftstream/raftstream/engine"
)

// errDeleteDefault is Redis's refusal to delete the default user.
var errDeleteDefault = engine.Errorf("ERR The 'default' user cannot be removed")

// Store holds a server's users by name. It is safe for concurrent use; the
// Users it hands out are immutable (a change publishes a new User).
type Store struct {
	mu    sync.Mutex
	users map[string]*User // Invariant: holds "default".
}

// NewStore returns the users a fresh server has: "default", on, with every
// command and key, with requirepass as its only password when set, else
// nopass.
func NewStore(requirepass string) *Store {
	d := newUser("default")
	d.enabled, d.allKeys, d.rules = true, true, []string{"+@all"}
	if requirepass == "" {
		d.nopass = true
	} else {
		d.passwords = []string{HashPassword([]byte(requirepass))}
	}
	return &Store{users: map[string]*User{"default": d}}
}

// Get returns the user called name, or nil.
func (s *Store) Get(name string) *User {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.users[name]
}

// DefaultAuto returns the default user when new connections are
// authenticated as it without AUTH (it is on and nopass), else nil.
func (s *Store) DefaultAuto() *User {
	d := s.Get("default")
	if d != nil && d.enabled && d.nopass {
		return d
	}
	return nil
}

// Authenticate returns the user name/pass identifies, or nil: the user
// must exist and be on, and be nopass or have pass among its passwords.
func (s *Store) Authenticate(name, pass []byte) *User {
	u := s.Get(string(name))
	if u == nil || !u.enabled {
		return nil
	}
	if u.nopass {
		return u
	}
	h := HashPassword(pass)
	for _, p := range u.passwords {
		if p == h {
			return u
		}
	}
	return nil
}

// Refresh returns the published version of u's user: a connection that
// authenticated as u sees later changes to it at once, as in Redis. It
// returns nil when u is nil or its user was deleted.
func (s *Store) Refresh(u *User) *User {
	if u == nil {
		return nil
	}
	return s.Get(u.name)
}

// edited returns user name (cur, or a new user when cur is nil) with the
// ACL SETUSER modifiers ops applied in order, or the first modifier's
// error. cur is not changed.
func edited(cur *User, name string, ops []string) (*User, *engine.Error) {
	u := newUser(name)
	if cur != nil {
		u = cur.clone()
	}
	for _, op := range ops {
		if er := u.apply(op); er != nil {
			return nil, er
		}
	}
	return u, nil
}

// SetUser applies ACL SETUSER's modifiers ops to user name (created if
// missing) atomically: on any error, Redis's error for the first bad
// modifier, nothing changes.
func (s *Store) SetUser(name string, ops []string) *engine.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, er := edited(s.users[name], name, ops)
	if er != nil {
		return er
	}
	s.users[name] = u
	return nil
}

// CheckSetUser returns the error SetUser(name, ops) would return now,
// changing nothing.
func (s *Store) CheckSetUser(name string, ops []string) *engine.Error {
	_, er := edited(s.Get(name), name, ops)
	return er
}

// CheckDelUsers returns the error DelUsers(names) would return (the
// default user cannot be deleted), changing nothing.
func CheckDelUsers(names []string) *engine.Error {
	for _, n := range names {
		if n == "default" {
			return errDeleteDefault
		}
	}
	return nil
}

// DelUsers deletes the named users and returns how many existed. When
// names include "default" it deletes none and returns Redis's error.
func (s *Store) DelUsers(names []string) (int, *engine.Error) {
	if er := CheckDelUsers(names); er != nil {
		return 0, er
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, name := range names {
		if _, ok := s.users[name]; ok {
			delete(s.users, name)
			n++
		}
	}
	return n, nil
}

// Users returns the users ordered by name.
func (s *Store) Users() []*User {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.SortedFunc(maps.Values(s.users), func(a, b *User) int { return strings.Compare(a.name, b.name) })
}
