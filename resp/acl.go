package resp

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"sync"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// aclUser is one ACL user (Redis 7.0 semantics, the subset raftstream
// supports: passwords, on/off, key patterns with %R/%W permissions and
// command rules by name or category; no channels or selectors).
//
// Users are immutable once published: SETUSER builds a modified copy and
// swaps it in, so a connection may keep using the *aclUser it authenticated
// as without locking.
type aclUser struct {
	name      string
	enabled   bool
	nopass    bool
	sanitize  bool     // "sanitize-payload" (set by reset; no effect here: no RESTORE)
	passwords []string // SHA-256 hex digests, in insertion order
	allKeys   bool
	keys      []aclKeyPattern
	// rules are the command rules in effect order ("-@all", "+@read",
	// "+xadd", ...); the first is always "+@all" or "-@all".
	rules []string
}

// aclKeyPattern is a key pattern and the access it grants.
type aclKeyPattern struct {
	pattern     string
	read, write bool
}

func (p aclKeyPattern) String() string {
	switch {
	case p.read && p.write:
		return "~" + p.pattern
	case p.read:
		return "%R~" + p.pattern
	default:
		return "%W~" + p.pattern
	}
}

// newACLUser is a user as ACL SETUSER creates it: off, no passwords, no
// keys, no commands.
func newACLUser(name string) *aclUser {
	return &aclUser{name: name, rules: []string{"-@all"}}
}

func (u *aclUser) clone() *aclUser {
	n := *u
	n.passwords = append([]string(nil), u.passwords...)
	n.keys = append([]aclKeyPattern(nil), u.keys...)
	n.rules = append([]string(nil), u.rules...)
	return &n
}

// unrestricted reports whether u may run every command on every key (the
// connection can then take the pipelined fast paths without checks).
func (u *aclUser) unrestricted() bool {
	return u.allKeys && len(u.rules) == 1 && u.rules[0] == "+@all"
}

// aclCategories are Redis 7.0's ACL categories in ACL CAT order.
var aclCategories = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting"}

func isACLCategory(c string) bool {
	if c == "all" {
		return true
	}
	for _, k := range aclCategories {
		if k == c {
			return true
		}
	}
	return false
}

// hasCategory reports whether cmd belongs to ACL category cat ("all"
// matches every command).
func hasCategory(cmd *command.Command, cat string) bool {
	return cat == "all" || cmd.HasCategory(cat)
}

// allowed reports whether u's command rules permit cmd (a table row,
// possibly a subcommand "parent|sub"). Rules apply in order; a rule naming
// a container covers its subcommands.
func (u *aclUser) allowed(cmd *command.Command) bool {
	ok := false
	parent, _, _ := strings.Cut(cmd.Name, "|")
	for _, r := range u.rules {
		add := r[0] == '+'
		what := r[1:]
		switch {
		case strings.HasPrefix(what, "@"):
			if hasCategory(cmd, what[1:]) {
				ok = add
			}
		case what == cmd.Name || what == parent:
			ok = add
		}
	}
	return ok
}

// keyAllowed reports whether u may access key with the given need.
func (u *aclUser) keyAllowed(key []byte, read, write bool) bool {
	if u.allKeys {
		return true
	}
	k := string(key)
	for _, p := range u.keys {
		if (!read || p.read) && (!write || p.write) && globMatch(p.pattern, k) {
			return true
		}
	}
	// A need for both may be met by two patterns together.
	if read && write {
		return u.keyAllowed(key, true, false) && u.keyAllowed(key, false, true)
	}
	return false
}

// describe is the user's ACL LIST line (without the leading "user name").
func (u *aclUser) describe() string {
	var b []string
	if u.enabled {
		b = append(b, "on")
	} else {
		b = append(b, "off")
	}
	if u.nopass {
		b = append(b, "nopass")
	}
	if u.sanitize {
		b = append(b, "sanitize-payload")
	}
	for _, p := range u.passwords {
		b = append(b, "#"+p)
	}
	if u.allKeys {
		b = append(b, "~*")
	} else {
		for _, p := range u.keys {
			b = append(b, p.String())
		}
	}
	if u.allKeys && u.name == "default" && u.rules[0] == "+@all" && len(u.rules) == 1 {
		b = append(b, "&*")
	} else {
		b = append(b, "resetchannels")
	}
	b = append(b, u.describeRules())
	return strings.Join(b, " ")
}

// leafCommands are the commands rules are counted over: top-level commands
// without subcommands, and every subcommand, by name.
func leafCommands() []*command.Command {
	var out []*command.Command
	for _, cmd := range command.Top() {
		if cmd.Sub == nil {
			out = append(out, cmd)
			continue
		}
		out = append(out, cmd.Subs()...)
	}
	return out
}

// describeRules renders u's command rules the way Redis 7.0 prints them:
// the "+@all"/"-@all" base, the category rules, then only those command
// rules that still change a permission.
func (u *aclUser) describeRules() string {
	fake := &aclUser{rules: []string{u.rules[0]}}
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
		if cmd != nil && u.allowed(cmd) != fake.allowed(cmd) {
			fake.rules = append(fake.rules, r)
		}
	}
	return strings.Join(fake.rules, " ")
}

// hashPassword is Redis's stored form of a password.
func hashPassword(p []byte) string {
	h := sha256.Sum256(p)
	return hex.EncodeToString(h[:])
}

// aclErr builds Redis's SETUSER error for one modifier.
func aclErr(op, why string) *errReply {
	return errorf("ERR Error in ACL SETUSER modifier '%s': %s", op, why)
}

// apply applies one ACL SETUSER modifier to u (a private copy).
func (u *aclUser) apply(op string) *errReply {
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
		*u = *newACLUser(u.name)
		u.sanitize = true
	case lo == "sanitize-payload":
		u.sanitize = true
	case lo == "skip-sanitize-payload":
		u.sanitize = false
	case strings.HasPrefix(op, ">"):
		h := hashPassword([]byte(op[1:]))
		u.removePassword(h)
		u.passwords = append(u.passwords, h)
		u.nopass = false
	case strings.HasPrefix(op, "<"):
		if !u.removePassword(hashPassword([]byte(op[1:]))) {
			return aclErr(op, "The password you are trying to remove from the user does not exist")
		}
	case strings.HasPrefix(op, "#"):
		h := op[1:]
		if !validHash(h) {
			return aclErr(op, "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
		}
		u.removePassword(h)
		u.passwords = append(u.passwords, h)
		u.nopass = false
	case strings.HasPrefix(op, "!"):
		h := op[1:]
		if !validHash(h) {
			return aclErr(op, "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
		}
		if !u.removePassword(h) {
			return aclErr(op, "The password you are trying to remove from the user does not exist")
		}
	case strings.HasPrefix(op, "~"):
		return u.addKeyPattern(op, op[1:], true, true)
	case strings.HasPrefix(op, "%"):
		perm, pat, ok := strings.Cut(op[1:], "~")
		if !ok || perm == "" {
			return aclErr(op, "Syntax error")
		}
		r, w := false, false
		for _, ch := range strings.ToUpper(perm) {
			switch ch {
			case 'R':
				r = true
			case 'W':
				w = true
			default:
				return aclErr(op, "Syntax error")
			}
		}
		return u.addKeyPattern(op, pat, r, w)
	case strings.HasPrefix(op, "+") || strings.HasPrefix(op, "-"):
		return u.addRule(op, lo)
	default:
		return aclErr(op, "Syntax error")
	}
	return nil
}

func (u *aclUser) addKeyPattern(op, pat string, r, w bool) *errReply {
	if u.allKeys {
		if pat == "*" && r && w {
			return nil
		}
		return aclErr(op, "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
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
	u.keys = append(u.keys, aclKeyPattern{pattern: pat, read: r, write: w})
	return nil
}

// addRule adds a "+name", "-name", "+@cat" or "-@cat" rule.
func (u *aclUser) addRule(op, lo string) *errReply {
	what := lo[1:]
	if strings.HasPrefix(what, "@") {
		if !isACLCategory(what[1:]) {
			return aclErr(op, "Unknown command or category name in ACL")
		}
		u.rules = append(u.rules, lo)
		return nil
	}
	if command.Get(what) == nil {
		return aclErr(op, "Unknown command or category name in ACL")
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

func (u *aclUser) removePassword(h string) bool {
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

// aclStore holds a server's users and its ACL LOG.
type aclStore struct {
	mu    sync.Mutex
	users map[string]*aclUser
	log   aclLog
	sync  aclSync // replication (acl_repl.go)
}

// newACLStore returns the users a fresh server has: "default", with
// requirepass as its only password when set, else nopass.
func newACLStore(requirepass string) *aclStore {
	d := newACLUser("default")
	d.enabled, d.allKeys, d.rules = true, true, []string{"+@all"}
	if requirepass == "" {
		d.nopass = true
	} else {
		d.passwords = []string{hashPassword([]byte(requirepass))}
	}
	return &aclStore{users: map[string]*aclUser{"default": d}}
}

func (a *aclStore) get(name string) *aclUser {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[name]
}

// defaultAuto returns the default user when new connections are
// authenticated as it without AUTH (it is on and nopass), else nil.
func (a *aclStore) defaultAuto() *aclUser {
	d := a.get("default")
	if d != nil && d.enabled && d.nopass {
		return d
	}
	return nil
}

// authenticate returns the user name/pass identifies, or nil.
func (a *aclStore) authenticate(name, pass []byte) *aclUser {
	u := a.get(string(name))
	if u == nil || !u.enabled {
		return nil
	}
	if u.nopass {
		return u
	}
	h := hashPassword(pass)
	for _, p := range u.passwords {
		if p == h {
			return u
		}
	}
	return nil
}

// setUser applies ops to user name (created if missing) atomically: on any
// error nothing changes.
func (a *aclStore) setUser(name string, ops []string) *errReply {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[name]
	if u == nil {
		u = newACLUser(name)
	} else {
		u = u.clone()
	}
	for _, op := range ops {
		if er := u.apply(op); er != nil {
			return er
		}
	}
	a.users[name] = u
	return nil
}

// delUsers deletes the named users and returns how many existed.
func (a *aclStore) delUsers(names []string) (int, *errReply) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, n := range names {
		if n == "default" {
			return 0, errorf("ERR The 'default' user cannot be removed")
		}
	}
	n := 0
	for _, name := range names {
		if _, ok := a.users[name]; ok {
			delete(a.users, name)
			n++
		}
	}
	return n, nil
}

// sortedUsers returns the users by name.
func (a *aclStore) sortedUsers() []*aclUser {
	a.mu.Lock()
	out := make([]*aclUser, 0, len(a.users))
	for _, u := range a.users {
		out = append(out, u)
	}
	a.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// current reports whether u is still the published version of its user
// (a connection authenticated as a since-changed or deleted user re-reads
// its rules: Redis applies ACL changes to open connections at once).
func (a *aclStore) refresh(u *aclUser) *aclUser {
	if u == nil {
		return nil
	}
	return a.get(u.name)
}

// checkPerm reports the NOPERM error (and logs it) when c's user may not
// run cmd with argv, or nil.
func (s *Server) checkPerm(c *client, cmd *command.Command, argv [][]byte) *errReply {
	u := c.aclUser(s)
	if u == nil || u.unrestricted() || cmd.Flags&command.FlagNoAuth != 0 {
		return nil
	}
	if !u.allowed(cmd) {
		s.acl.log.add(c, "command", cmd.Name, u.name)
		if cmd.Name == "exec" {
			c.multi = nil
			return errorf("EXECABORT Transaction discarded because of: NOPERM this user has no permissions to run the 'exec' command")
		}
		return errorf("NOPERM this user has no permissions to run the '%s' command", cmd.Name)
	}
	if k := deniedKey(u, cmd, argv); k != nil {
		s.acl.log.add(c, "key", string(k), u.name)
		return errorf("NOPERM this user has no permissions to access one of the keys used as arguments")
	}
	return nil
}

// deniedKey returns the first of argv's keys u may not access, or nil.
// Reads need read access, writes write access; XREADGROUP needs both.
func deniedKey(u *aclUser, cmd *command.Command, argv [][]byte) []byte {
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
			return argv[i]
		}
	}
	return nil
}

// aclUser returns the user c runs as, refreshed to its current rules (nil
// when the connection is not authenticated or its user was deleted).
func (c *client) aclUser(s *Server) *aclUser {
	if c.user == nil {
		if c.authed {
			c.user = s.acl.get("default")
		}
		return c.user
	}
	c.user = s.acl.refresh(c.user)
	return c.user
}

// restricted reports whether c must go through the permission checks
// (the pipelined fast paths skip them).
func (c *client) restricted(s *Server) bool {
	u := c.aclUser(s)
	return u == nil || !u.unrestricted()
}

// aclAuth authenticates c as name/pass (AUTH, HELLO AUTH), logging a
// failure in ACL LOG.
func (s *Server) aclAuth(c *client, name, pass []byte) *errReply {
	u := s.acl.authenticate(name, pass)
	if u == nil {
		s.acl.log.add(c, "auth", "AUTH", string(name))
		return errWrongPass
	}
	c.user, c.authed = u, true
	return nil
}

// userName is the name of the user c runs as ("default" before AUTH).
func (c *client) userName() string {
	if c.user == nil {
		return "default"
	}
	return c.user.name
}

var _ = engine.OK
