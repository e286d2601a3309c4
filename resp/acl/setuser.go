package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// HashPassword is Redis's stored form of a password: its SHA-256 digest in
// lower-case hex.
func HashPassword(p []byte) string {
	h := sha256.Sum256(p)
	return hex.EncodeToString(h[:])
}

// HashedOps returns ops with the clear-text password modifiers turned into
// their hashed forms (">pass" into "#sha256", "<pass" into "!sha256"), so
// that a change can be written down without the passwords. Applying the
// result has the same effect as applying ops.
func HashedOps(ops []string) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		switch {
		case strings.HasPrefix(op, ">"):
			out[i] = "#" + HashPassword([]byte(op[1:]))
		case strings.HasPrefix(op, "<"):
			out[i] = "!" + HashPassword([]byte(op[1:]))
		default:
			out[i] = op
		}
	}
	return out
}

// modifierError is Redis's ACL SETUSER error for one modifier.
func modifierError(op, why string) *engine.Error {
	return engine.Errorf("ERR Error in ACL SETUSER modifier '%s': %s", op, why)
}

const (
	whyNoPassword = "The password you are trying to remove from the user does not exist"
	whyBadHash    = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	whyUnknown    = "Unknown command or category name in ACL"
	whySyntax     = "Syntax error"
	whyAfterAll   = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
)

// apply applies one ACL SETUSER modifier to u, which must be a private
// copy (a published User never changes). On error u may be half changed:
// the caller drops it.
func (u *User) apply(op string) *engine.Error {
	lo := strings.ToLower(op)
	switch {
	case lo == "on":
		u.enabled = true
	case lo == "off":
		u.enabled = false
	case lo == "nopass":
		u.nopass, u.passwords = true, nil
	case lo == "resetpass":
		u.nopass, u.passwords = false, nil
	case lo == "allkeys" || op == "~*":
		u.allKeys, u.keys = true, nil
	case lo == "resetkeys":
		u.allKeys, u.keys = false, nil
	case lo == "allchannels" || lo == "resetchannels" || op == "&*":
		// Pub/Sub is not supported; channel rules are accepted and ignored.
	case lo == "allcommands" || lo == "+@all":
		u.rules = []string{"+@all"}
	case lo == "nocommands" || lo == "-@all":
		u.rules = []string{"-@all"}
	case lo == "reset":
		*u = *newUser(u.name)
		u.sanitize = true
	case lo == "sanitize-payload":
		u.sanitize = true
	case lo == "skip-sanitize-payload":
		u.sanitize = false
	case strings.HasPrefix(op, ">"):
		u.addPassword(HashPassword([]byte(op[1:])))
	case strings.HasPrefix(op, "<"):
		if !u.removePassword(HashPassword([]byte(op[1:]))) {
			return modifierError(op, whyNoPassword)
		}
	case strings.HasPrefix(op, "#"):
		if !validHash(op[1:]) {
			return modifierError(op, whyBadHash)
		}
		u.addPassword(op[1:])
	case strings.HasPrefix(op, "!"):
		if !validHash(op[1:]) {
			return modifierError(op, whyBadHash)
		}
		if !u.removePassword(op[1:]) {
			return modifierError(op, whyNoPassword)
		}
	case strings.HasPrefix(op, "~"):
		return u.addKeyPattern(op, op[1:], true, true)
	case strings.HasPrefix(op, "%"):
		return u.addPermKeyPattern(op)
	case strings.HasPrefix(op, "+") || strings.HasPrefix(op, "-"):
		return u.addRule(op, lo)
	default:
		return modifierError(op, whySyntax)
	}
	return nil
}

// addPassword adds hash h last (moving it there if present) and clears
// nopass.
func (u *User) addPassword(h string) {
	u.removePassword(h)
	u.passwords = append(u.passwords, h)
	u.nopass = false
}

func (u *User) removePassword(h string) bool {
	for i, p := range u.passwords {
		if p == h {
			u.passwords = append(u.passwords[:i], u.passwords[i+1:]...)
			return true
		}
	}
	return false
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// addPermKeyPattern adds a "%R~p", "%W~p" or "%RW~p" pattern.
func (u *User) addPermKeyPattern(op string) *engine.Error {
	perm, pat, ok := strings.Cut(op[1:], "~")
	if !ok || perm == "" {
		return modifierError(op, whySyntax)
	}
	r, w := false, false
	for _, ch := range strings.ToUpper(perm) {
		switch ch {
		case 'R':
			r = true
		case 'W':
			w = true
		default:
			return modifierError(op, whySyntax)
		}
	}
	return u.addKeyPattern(op, pat, r, w)
}

// addKeyPattern grants r/w access to keys matching pat; a pattern already
// present gains the access.
func (u *User) addKeyPattern(op, pat string, r, w bool) *engine.Error {
	if u.allKeys {
		if pat == "*" && r && w {
			return nil
		}
		return modifierError(op, whyAfterAll)
	}
	if pat == "*" && r && w {
		u.allKeys, u.keys = true, nil
		return nil
	}
	for i, p := range u.keys {
		if p.pattern == pat {
			u.keys[i].read = p.read || r
			u.keys[i].write = p.write || w
			return nil
		}
	}
	u.keys = append(u.keys, keyPattern{pattern: pat, read: r, write: w})
	return nil
}

// addRule adds a "+name", "-name", "+@cat" or "-@cat" rule (lo is op in
// lower case).
func (u *User) addRule(op, lo string) *engine.Error {
	what := lo[1:]
	if strings.HasPrefix(what, "@") {
		if !IsCategory(what[1:]) {
			return modifierError(op, whyUnknown)
		}
		u.rules = append(u.rules, lo)
		return nil
	}
	if command.Get(what) == nil {
		return modifierError(op, whyUnknown)
	}
	// A later rule for the same command replaces earlier ones.
	out := u.rules[:1]
	for _, r := range u.rules[1:] {
		if r[1:] != what {
			out = append(out, r)
		}
	}
	u.rules = append(out, lo)
	return nil
}
