package engine

import "sort"

// Config holds the engine's tunables. They are replicated state: change them
// only through a command that goes through the log (CONFIG SET).
type Config struct {
	// NodeMaxBytes is stream-node-max-bytes: a listpack node is sealed when
	// it would exceed this many bytes. 0 means no limit.
	NodeMaxBytes int
	// NodeMaxEntries is stream-node-max-entries: a node is sealed when it
	// holds this many entries. 0 means no limit.
	NodeMaxEntries int
	// IdmpDuration is stream-idmp-duration: how many seconds a stream
	// remembers an idempotency ID (idmp.go), 1..86400; 0 means 100.
	IdmpDuration int
	// IdmpMaxSize is stream-idmp-maxsize: how many idempotency IDs a
	// stream remembers per producer, 1..10000; 0 means 100.
	IdmpMaxSize int
}

// DefaultConfig returns Redis's defaults (4096 bytes, 100 entries, IDMP 100
// seconds and 100 IDs).
func DefaultConfig() Config {
	return Config{NodeMaxBytes: 4096, NodeMaxEntries: 100, IdmpDuration: idmpDefaultDuration, IdmpMaxSize: idmpDefaultMaxSize}
}

// Engine is one shard's keyspace. It is a plain data structure: not safe for
// concurrent use, no I/O, no clock (time is the now argument of Exec), no
// randomness, no goroutines. Callers (the FSM) serialise access.
type Engine struct {
	cfg  Config
	keys map[string]*Value
	// slotKeys indexes keys by hash slot (slotindex.go): what a slot's
	// keys are counted, listed and exported from.
	// Invariant: k is in slotKeys[slots.OfString(k)] iff k is in keys.
	slotKeys map[uint16]map[string]struct{}
	// signaled collects keys touched by writes since the last TakeSignaled,
	// in first-touch order, for waking blocked readers.
	signaled    []string
	signaledSet map[string]struct{}
	// ids is where idReply writes the IDs it returns: a chunk shared by
	// many replies, each a full slice of its own part (never written
	// again).
	ids []byte
	// expires indexes the keys that have an expiry (expire_index.go).
	expires expireIndex
	// logTime is the time of the latest log entry applied (Advance): the
	// earliest time a read may run at (ReadTime).
	logTime int64
	// ret is the retention policy table and the streams it governs
	// (retention.go).
	ret retention
}

// idChunk is the size of the chunks idReply takes its replies from.
const idChunk = 4096

// idReply is id as a bulk reply, carved from a shared chunk instead of an
// allocation of its own (XADD's reply).
func (e *Engine) idReply(id ID) BulkString {
	const maxLen = 20 + 1 + 20
	if cap(e.ids)-len(e.ids) < maxLen {
		e.ids = make([]byte, 0, idChunk)
	}
	start := len(e.ids)
	e.ids = id.Append(e.ids)
	return BulkString(e.ids[start:len(e.ids):len(e.ids)])
}

// New returns an empty engine.
func New(cfg Config) *Engine {
	return &Engine{cfg: cfg, keys: make(map[string]*Value), signaledSet: make(map[string]struct{})}
}

// Config returns the current configuration.
func (e *Engine) Config() Config { return e.cfg }

// SetConfig replaces the configuration (applied through the log).
func (e *Engine) SetConfig(c Config) { e.cfg = c }

// Kind is the type of a value stored at a key.
type Kind uint8

const (
	KindString Kind = iota + 1
	KindStream
)

// Value is what a key holds: exactly one of Str / Stream by Kind.
type Value struct {
	Kind   Kind
	Str    []byte
	Stream *Stream
	// expireAt is when the key expires (Unix ms), 0 for never. A key whose
	// expireAt is at or before a command's now is absent to that command
	// (expire.go).
	expireAt int64
}

// signal records that key changed in a way that may unblock readers
// (Redis's signalKeyAsReady).
func (e *Engine) signal(key string) {
	if _, ok := e.signaledSet[key]; ok {
		return
	}
	e.signaledSet[key] = struct{}{}
	e.signaled = append(e.signaled, key)
}

// signalBytes is signal for a key still in bytes: no string is made for a
// key already signalled.
func (e *Engine) signalBytes(key []byte) {
	if _, ok := e.signaledSet[string(key)]; ok {
		return
	}
	e.signal(string(key))
}

// TakeSignaled returns, and forgets, the keys signalled since the last call,
// in the order they were first touched. The FSM calls it after each apply to
// wake clients blocked on those keys.
func (e *Engine) TakeSignaled() []string {
	if len(e.signaled) == 0 {
		return nil
	}
	s := e.signaled
	e.signaled = nil
	clear(e.signaledSet)
	return s
}

// handler executes one parsed command. argv[0] is the command name.
type handler func(e *Engine, now int64, argv [][]byte) Reply

// validator is a command's syntax phase (validate.go): the error Exec would
// certainly return for argv whatever the keyspace holds, or nil. now is the
// proposer's clock (BLOCK timeouts are checked against it).
type validator func(now int64, argv [][]byte) *Error

// spec is one engine command: how it executes, and for a write its syntax
// check, which the leader runs before proposing (Validate) and Exec repeats
// as part of the command.
type spec struct {
	exec     handler
	validate validator // nil: nothing to check before the keyspace
}

// commands is the engine's one registry, by lower-case command name. Family
// files fill it from init functions (register, registerValidator); Exec and
// Validate look a command up in it once.
var commands = map[string]*spec{}

func register(name string, h handler) {
	if _, dup := commands[name]; dup {
		panic("engine: duplicate command " + name)
	}
	commands[name] = &spec{exec: h}
}

// Has reports whether the engine implements the command (case-insensitive).
func Has(name string) bool {
	_, ok := commands[Lower([]byte(name))]
	return ok
}

// Commands returns the names of the commands the engine implements, sorted.
func Commands() []string {
	out := make([]string, 0, len(commands))
	for n := range commands {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Exec runs one command at time now (Unix ms, from the log) and returns its
// reply. User errors are returned as *Error replies, never panics. The caller
// has already checked the command's arity against the command table.
func (e *Engine) Exec(now int64, argv [][]byte) Reply {
	if len(argv) == 0 {
		return ErrSyntax
	}
	var buf [NameBuf]byte
	c, ok := commands[string(LowerName(&buf, argv[0]))]
	if !ok {
		return Errorf("ERR unknown command '%s'", argv[0])
	}
	return c.exec(e, now, argv)
}

// Keyless answers a command that names no key: the HELP subcommands, and
// commands whose key list is malformed (they fail on their syntax before
// they look at a key). It runs on an empty keyspace that nothing may write
// to, so the reply is the same on every node and costs no engine.
func Keyless(now int64, argv [][]byte) Reply {
	var e Engine // nil maps: read as empty; a write would be a bug, and panics
	return e.Exec(now, argv)
}

// HoldsStream reports whether key holds a stream as of now (what a blocked
// XREADGROUP's end depends on when its group read fails).
func (e *Engine) HoldsStream(now int64, key []byte) bool {
	v := e.get(key, now)
	return v != nil && v.Kind == KindStream
}

// lookupStream returns the stream at key as of now, nil if the key does not
// exist (or has expired), or ErrWrongType.
func (e *Engine) lookupStream(key []byte, now int64) (*Stream, *Error) {
	v := e.get(key, now)
	if v == nil {
		return nil, nil
	}
	if v.Kind != KindStream {
		return nil, ErrWrongType
	}
	return v.Stream, nil
}

// LastID returns the last ID of the stream at key as of now, 0-0 when the
// key does not exist (or has expired) or holds another type: what XREAD
// BLOCK's "$" means at the time the client blocks (the RESP server resolves
// it before waiting).
func (e *Engine) LastID(now int64, key []byte) ID {
	if v := e.get(key, now); v != nil && v.Kind == KindStream {
		return v.Stream.LastID
	}
	return ID{}
}
