// Package command is raftstream's command table: for every command the
// server answers, its arity, flags, key positions, ACL categories, where it
// runs (Kind) and its COMMAND DOCS text (summary, since and group in the
// row, the rest as data: docs.go). It is data and lookup only: the
// server attaches handlers to the KindLocal rows, the engine executes the
// KindRead and KindWrite ones, and ACL rules and COMMAND replies are built
// from the same rows. Nothing here does I/O or keeps state after init.
//
// Lookup resolves a request once: the command, or its subcommand for
// containers (XGROUP CREATE, CLIENT LIST), with Redis's errors for unknown
// names and wrong arity.
package command

import (
	"bytes"
	"sort"
	"strings"

	"github.com/raftstream/raftstream/engine"
)

// Kind says where a command runs.
type Kind uint8

const (
	// KindWrite commands change replicated state: they are proposed through
	// their shard's Raft group and executed by the engine on every replica.
	KindWrite Kind = iota + 1
	// KindRead commands are executed by the engine of the shard's replica
	// that serves the read.
	KindRead
	// KindLocal commands are answered by the server itself (connection
	// state, INFO, CONFIG, CLIENT, CLUSTER, ...), possibly fanning out to
	// every shard.
	KindLocal
	// KindContainer commands only hold subcommands (XGROUP, CONFIG, ...).
	KindContainer
)

// Flag is a Redis command flag (as COMMAND INFO prints it).
type Flag uint32

const (
	FlagWrite Flag = 1 << iota
	FlagReadonly
	FlagDenyOOM
	FlagAdmin
	FlagNoScript
	FlagLoading
	FlagStale
	FlagFast
	FlagBlocking
	FlagMovableKeys
	FlagNoAuth
	FlagAllowBusy
	FlagSkipSlowlog
	FlagNoAsyncLoading
	FlagNoMulti
)

var flagNames = []string{"write", "readonly", "denyoom", "admin", "noscript", "loading", "stale",
	"fast", "blocking", "movablekeys", "no_auth", "allow_busy", "skip_slowlog", "no_async_loading", "no_multi"}

// Names returns the flag names in Redis's order.
func (f Flag) Names() []string {
	var out []string
	for i, n := range flagNames {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Command is one row of the table: everything the server knows about a
// command except its semantics (those live in the engine, or in the
// server's handler for KindLocal commands).
type Command struct {
	Name  string // lower case; "parent|sub" for subcommands
	Arity int    // Redis convention: n = exactly n args (incl. name), -n = at least n
	Flags Flag
	// First, Last, Step are the key positions as COMMAND INFO reports them
	// (Last -1 = up to the last argument). All zero: no fixed key positions.
	First, Last, Step int
	// StreamsKeyword marks XREAD/XREADGROUP: keys are the first half of the
	// arguments after the STREAMS keyword.
	StreamsKeyword bool
	Categories     string // space-separated ACL categories, e.g. "@write @stream @fast"
	Tips           []string
	Kind           Kind
	Group          string // COMMAND DOCS group
	Since          string // COMMAND DOCS since
	Summary        string // COMMAND DOCS summary
	// Doc is the rest of COMMAND DOCS (arguments, history, ...), from the
	// docs data files (docs.go); nil when they have none for the row.
	Doc *Doc
	// Sub maps a container's subcommand names (without the parent's) to
	// their rows; nil for other commands.
	Sub map[string]*Command
	// ID is the row's index in All: dense, fixed at init, for per-command
	// arrays (handlers, metrics) that need no map lookup.
	ID int
}

// Keys returns the positions of argv's keys (nil when the command has none,
// or when the STREAMS form is malformed: the engine then reports the syntax
// error).
func (cmd *Command) Keys(argv [][]byte) []int { return cmd.AppendKeys(nil, argv) }

// AppendKeys appends the positions of argv's keys to dst, allocating
// nothing beyond dst's growth.
func (cmd *Command) AppendKeys(dst []int, argv [][]byte) []int {
	first, last, step := cmd.First, cmd.Last, cmd.Step
	if cmd.StreamsKeyword {
		first = 0
		for i := 1; i < len(argv); i++ {
			if bytes.EqualFold(argv[i], []byte("STREAMS")) {
				rest := len(argv) - i - 1
				if rest > 0 && rest%2 == 0 {
					first, last, step = i+1, i+rest/2, 1
				}
				break
			}
		}
	}
	if first == 0 {
		return dst
	}
	if last < 0 {
		last = len(argv) + last
	}
	for i := first; i <= last && i < len(argv); i += step {
		dst = append(dst, i)
	}
	return dst
}

// Subs returns a container's subcommands ordered by name (nil for other
// commands).
func (cmd *Command) Subs() []*Command {
	if cmd.Sub == nil {
		return nil
	}
	out := make([]*Command, 0, len(cmd.Sub))
	for _, s := range cmd.Sub {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// HasCategory reports whether cmd is in ACL category cat (without '@').
func (cmd *Command) HasCategory(cat string) bool {
	for _, f := range strings.Fields(cmd.Categories) {
		if f[1:] == cat {
			return true
		}
	}
	return false
}

// ArityOK reports whether n arguments (the name included) satisfy arity.
func ArityOK(arity, n int) bool {
	if arity >= 0 {
		return n == arity
	}
	return n >= -arity
}

var (
	top map[string]*Command // top-level rows by name
	all []*Command          // every row, by ID
)

// Lookup finds the row for argv: the command, or its subcommand for
// containers. It returns Redis's error for an unknown command or
// subcommand and for a wrong number of arguments. It allocates nothing for
// a known command.
func Lookup(argv [][]byte) (*Command, *engine.Error) {
	var buf [engine.NameBuf]byte
	lname := engine.LowerName(&buf, argv[0])
	cmd, ok := top[string(lname)]
	if !ok {
		return nil, UnknownCommand(argv)
	}
	if cmd.Sub != nil && !(cmd.Kind == KindLocal && len(argv) == 1) {
		if len(argv) < 2 {
			return nil, WrongArity(string(lname))
		}
		var sbuf [engine.NameBuf]byte
		s, ok := cmd.Sub[string(engine.LowerName(&sbuf, argv[1]))]
		if !ok {
			return nil, engine.Errorf("ERR unknown subcommand '%.128s'. Try %s HELP.", argv[1], strings.ToUpper(string(lname)))
		}
		if !ArityOK(s.Arity, len(argv)) {
			return nil, WrongArity(s.Name)
		}
		return s, nil
	}
	if !ArityOK(cmd.Arity, len(argv)) {
		return nil, WrongArity(string(lname))
	}
	return cmd, nil
}

// Get returns the row named name ("xadd", "xgroup|create"; any case), or
// nil.
func Get(name string) *Command {
	parent, sub, isSub := strings.Cut(strings.ToLower(name), "|")
	cmd := top[parent]
	if cmd == nil || !isSub {
		return cmd
	}
	return cmd.Sub[sub]
}

// Top returns the top-level rows ordered by name.
func Top() []*Command {
	out := make([]*Command, 0, len(top))
	for _, c := range top {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// All returns every row, subcommands included, by ID.
func All() []*Command { return all }

// UnknownCommand is Redis's error for an unknown command name, quoting up
// to 128 bytes of arguments.
func UnknownCommand(argv [][]byte) *engine.Error {
	var args strings.Builder
	for _, a := range argv[1:] {
		if args.Len() >= 128 {
			break
		}
		room := 128 - args.Len()
		if len(a) > room {
			a = a[:room]
		}
		args.WriteString("'")
		args.Write(a)
		args.WriteString("' ")
	}
	name := argv[0]
	if len(name) > 128 {
		name = name[:128]
	}
	return engine.Errorf("ERR unknown command '%s', with args beginning with: %s", name, args.String())
}

// WrongArity is Redis's error for a wrong number of arguments.
func WrongArity(name string) *engine.Error {
	return engine.Errorf("ERR wrong number of arguments for '%s' command", name)
}
