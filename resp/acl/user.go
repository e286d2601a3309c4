package acl

import (
	"strings"

	"github.com/raftstream/raftstream/resp/command"
)

// User is one ACL user (Redis 7.0 semantics, the subset raftstream
// supports: passwords, on/off, key patterns with %R/%W permissions and
// command rules by name or category; no channels or selectors).
//
// A User is immutable once a Store publishes it: SetUser builds a modified
// copy and swaps it in, so a connection may keep using the *User it
// authenticated as without locking.
type User struct {
	name     string
	enabled  bool
	nopass   bool
	sanitize bool // "sanitize-payload" (set by reset; no effect here: no RESTORE)
	// passwords are SHA-256 hex digests (HashPassword), in insertion order.
	passwords []string
	// Invariant: keys is empty when allKeys is set.
	allKeys bool
	keys    []keyPattern
	// rules are the command rules in effect order ("-@all", "+@read",
	// "+xadd", ...), lower case. Invariant: the first is "+@all" or "-@all",
	// and no later command rule names the same command twice.
	rules []string
}

// keyPattern is a key pattern and the access it grants.
type keyPattern struct {
	pattern     string
	read, write bool
}

// String is the pattern as ACL LIST prints it: "~p", "%R~p" or "%W~p".
func (p keyPattern) String() string {
	switch {
	case p.read && p.write:
		return "~" + p.pattern
	case p.read:
		return "%R~" + p.pattern
	default:
		return "%W~" + p.pattern
	}
}

// newUser is a user as ACL SETUSER creates it: off, no passwords, no keys,
// no commands.
func newUser(name string) *User {
	return &User{name: name, rules: []string{"-@all"}}
}

func (u *User) clone() *User {
	n := *u
	n.passwords = append([]string(nil), u.passwords...)
	n.keys = append([]keyPattern(nil), u.keys...)
	n.rules = append([]string(nil), u.rules...)
	return &n
}

// Name is the user's name.
func (u *User) Name() string { return u.name }

// NoPass reports whether the user accepts any password ("nopass").
func (u *User) NoPass() bool { return u.nopass }

// Unrestricted reports whether u may run every command on every key (the
// server may then skip the checks altogether).
func (u *User) Unrestricted() bool {
	return u.allKeys && len(u.rules) == 1 && u.rules[0] == "+@all"
}

// Flags are the user's flags in ACL GETUSER's order: "on" or "off", then
// "nopass" and "sanitize-payload" when set.
func (u *User) Flags() []string {
	f := []string{"off"}
	if u.enabled {
		f[0] = "on"
	}
	if u.nopass {
		f = append(f, "nopass")
	}
	if u.sanitize {
		f = append(f, "sanitize-payload")
	}
	return f
}

// Passwords are the SHA-256 hex digests of the user's passwords, in the
// order they were added. The caller may keep the slice.
func (u *User) Passwords() []string {
	return append([]string(nil), u.passwords...)
}

// keyRules are the key patterns as ACL LIST prints them.
func (u *User) keyRules() []string {
	if u.allKeys {
		return []string{"~*"}
	}
	out := make([]string, 0, len(u.keys))
	for _, p := range u.keys {
		out = append(out, p.String())
	}
	return out
}

// Keys are the key patterns as ACL GETUSER prints them ("~*", or patterns
// such as "~orders:* %R~audit:*"; "" for none).
func (u *User) Keys() string { return strings.Join(u.keyRules(), " ") }

// Channels is ACL GETUSER's channels field. Pub/Sub is not supported:
// only the default user, while unrestricted, shows "&*" (as a fresh
// Redis's does); every other user shows none.
func (u *User) Channels() string {
	if u.name == "default" && u.Unrestricted() {
		return "&*"
	}
	return ""
}

// Describe is the user's ACL LIST line without the leading "user <name>".
func (u *User) Describe() string {
	b := u.Flags()
	for _, p := range u.passwords {
		b = append(b, "#"+p)
	}
	b = append(b, u.keyRules()...)
	if ch := u.Channels(); ch != "" {
		b = append(b, ch)
	} else {
		b = append(b, "resetchannels")
	}
	b = append(b, u.Commands())
	return strings.Join(b, " ")
}

// Commands renders u's command rules the way Redis 7.0 prints them (ACL
// LIST, ACL GETUSER): the "+@all"/"-@all" base, the category rules, then
// only those command rules that still change a permission.
func (u *User) Commands() string {
	fake := &User{rules: []string{u.rules[0]}}
	for _, r := range u.rules[1:] {
		if strings.HasPrefix(r[1:], "@") {
			fake.rules = append(fake.rules, r)
		}
	}
	for _, r := range u.rules[1:] {
		if strings.HasPrefix(r[1:], "@") {
			continue
		}
		cmd := command.Get(r[1:])
		if cmd != nil && u.runs(cmd) != fake.runs(cmd) {
			fake.rules = append(fake.rules, r)
		}
	}
	return strings.Join(fake.rules, " ")
}
