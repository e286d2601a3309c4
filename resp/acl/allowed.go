package acl

import (
	"strings"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// categories are Redis 7.0's ACL categories in ACL CAT order.
var categories = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting"}

// Categories returns Redis's ACL categories in ACL CAT order ("all", which
// every command is in, is not listed). The caller may keep the slice.
func Categories() []string { return append([]string(nil), categories...) }

// IsCategory reports whether c (without '@') names an ACL category; "all"
// is one.
func IsCategory(c string) bool {
	if c == "all" {
		return true
	}
	for _, k := range categories {
		if k == c {
			return true
		}
	}
	return false
}

// inCategory reports whether cmd belongs to ACL category cat ("all"
// matches every command).
func inCategory(cmd *command.Command, cat string) bool {
	return cat == "all" || cmd.HasCategory(cat)
}

// The reasons a Denial gives, as ACL LOG reports them.
const (
	ReasonCommand = "command" // the user may not run the command
	ReasonKey     = "key"     // the user may not access one of its keys
	ReasonAuth    = "auth"    // AUTH or HELLO AUTH failed (the server records these)
)

// Denial is why a user may not run a command, in ACL LOG's terms.
type Denial struct {
	Reason string // ReasonCommand or ReasonKey
	Object string // the command's table name, or the key refused
}

// Allowed decides whether u may run cmd (a row of the command table,
// possibly a subcommand "parent|sub") with argv, the request as the client
// sent it. It returns nil when u may, else why not:
//
//   - the command rules decide first. They apply in order, each "+" rule
//     granting and each "-" rule revoking what it names: a category
//     (cmd.Categories, "@all" for every command), a command, or a container
//     such as "xgroup", which covers all of its subcommands. A command no
//     rule grants is refused (Object: cmd.Name).
//   - then each of argv's keys (cmd.Keys) must match one of u's key
//     patterns that grants the access the command needs: a read needs
//     read access, a write write access, XREADGROUP (a read that moves its
//     group) both, and a command that is neither needs read access. Access
//     to both may come from two patterns together (%R~p and %W~p). The
//     first key refused is the Object.
//
// Allowed does not know that some commands need no permission at all
// (AUTH, HELLO: command.FlagNoAuth): that is the caller's rule.
func (u *User) Allowed(cmd *command.Command, argv [][]byte) *Denial {
	if u.Unrestricted() {
		return nil
	}
	if !u.runs(cmd) {
		return &Denial{Reason: ReasonCommand, Object: cmd.Name}
	}
	if u.allKeys {
		return nil
	}
	read := cmd.Kind == command.KindRead || cmd.Name == "xreadgroup" || cmd.Flags&command.FlagReadonly != 0
	write := cmd.Kind == command.KindWrite || cmd.Flags&command.FlagWrite != 0
	if !read && !write {
		read = true
	}
	for _, i := range cmd.Keys(argv) {
		if !u.keyAllowed(argv[i], read, write) {
			return &Denial{Reason: ReasonKey, Object: string(argv[i])}
		}
	}
	return nil
}

// runs reports whether u's command rules permit cmd, ignoring keys.
func (u *User) runs(cmd *command.Command) bool {
	ok := false
	parent, _, _ := strings.Cut(cmd.Name, "|")
	for _, r := range u.rules {
		add := r[0] == '+'
		what := r[1:]
		switch {
		case strings.HasPrefix(what, "@"):
			if inCategory(cmd, what[1:]) {
				ok = add
			}
		case what == cmd.Name || what == parent:
			ok = add
		}
	}
	return ok
}

// keyAllowed reports whether u may access key with the given need.
func (u *User) keyAllowed(key []byte, read, write bool) bool {
	if u.allKeys {
		return true
	}
	k := string(key)
	for _, p := range u.keys {
		if (!read || p.read) && (!write || p.write) && engine.GlobMatch(p.pattern, k, false) {
			return true
		}
	}
	// A need for both may be met by two patterns together.
	if read && write {
		return u.keyAllowed(key, true, false) && u.keyAllowed(key, false, true)
	}
	return false
}
