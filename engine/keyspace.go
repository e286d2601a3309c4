package engine

import (
	"slices"
	"strconv"
)

// Keyspace commands: DEL, UNLINK, EXISTS, TYPE, SCAN, KEYS, DBSIZE,
// FLUSHALL, FLUSHDB, SET, GET, RENAME, RENAMENX, OBJECT ENCODING.
//
// Replies never depend on Go map order: KEYS returns keys sorted, and SCAN
// walks keys in (hash, key) order where hash is FNV-1a 64 of the key with
// the low bit set; the cursor is the hash of the next key to return (0 =
// done). Keys present for a whole scan are returned at least once, as Redis
// guarantees, whatever is added or removed meanwhile.

func init() {
	register("del", func(e *Engine, now int64, argv [][]byte) Reply { return cmdDel(e, now, argv, "del") })
	register("unlink", func(e *Engine, now int64, argv [][]byte) Reply { return cmdDel(e, now, argv, "unlink") })
	register("exists", cmdExists)
	register("type", cmdType)
	register("scan", cmdScan)
	register("keys", cmdKeys)
	register("dbsize", cmdDBSize)
	register("flushall", func(e *Engine, now int64, argv [][]byte) Reply { return cmdFlush(e, argv, "flushall") })
	register("flushdb", func(e *Engine, now int64, argv [][]byte) Reply { return cmdFlush(e, argv, "flushdb") })
	register("set", cmdSet)
	register("get", cmdGet)
	register("rename", func(e *Engine, now int64, argv [][]byte) Reply { return cmdRename(e, now, argv, false) })
	register("renamenx", func(e *Engine, now int64, argv [][]byte) Reply { return cmdRename(e, now, argv, true) })
	register("object", cmdObject)
	registerValidator("set", func(_ int64, argv [][]byte) *Error { _, err := setSyntax(argv); return err })
	registerValidator("flushall", func(_ int64, argv [][]byte) *Error { return flushSyntax(argv, "flushall") })
	registerValidator("flushdb", func(_ int64, argv [][]byte) *Error { return flushSyntax(argv, "flushdb") })
	registerValidator("del", func(_ int64, argv [][]byte) *Error { return arityAtLeast(argv, 2, "del") })
	registerValidator("unlink", func(_ int64, argv [][]byte) *Error { return arityAtLeast(argv, 2, "unlink") })
	registerValidator("rename", func(_ int64, argv [][]byte) *Error { return arityExact(argv, 3, "rename") })
	registerValidator("renamenx", func(_ int64, argv [][]byte) *Error { return arityExact(argv, 3, "renamenx") })
}

var errInvalidCursor = &Error{Msg: "ERR invalid cursor"}

func arityExact(argv [][]byte, n int, name string) *Error {
	if len(argv) != n {
		return WrongArity(name)
	}
	return nil
}

// deleteKey removes key (live or expired) and its expiry, signalling
// blocked readers when it held a stream (Redis's signalDeletedKeyAsReady).
func (e *Engine) deleteKey(key string) bool {
	v, ok := e.keys[key]
	if !ok {
		return false
	}
	delete(e.keys, key)
	if v.expireAt != 0 {
		e.expires.remove(v.expireAt, key)
	}
	e.unindexSlot(key)
	if v.Kind == KindStream {
		e.ret.untrack(key)
		e.signal(key)
	}
	return true
}

// setKey stores v at key, replacing any value (live or expired) and its
// expiry; v's own expiry, if any, is indexed. It signals when a stream is
// involved (dbAdd's signalKeyAsReady). Every key is created through it.
func (e *Engine) setKey(key string, v *Value) {
	old, had := e.keys[key]
	e.keys[key] = v
	if !had {
		e.indexSlot(key)
	}
	if had && old.expireAt != 0 {
		e.expires.remove(old.expireAt, key)
	}
	if v.expireAt != 0 {
		e.expires.insert(v.expireAt, key)
	}
	if had && old.Kind == KindStream && v.Kind != KindStream {
		e.ret.untrack(key)
	}
	if v.Kind == KindStream {
		e.ret.track(key)
	}
	if v.Kind == KindStream || (had && old.Kind == KindStream) {
		e.signal(key)
	}
}

func cmdDel(e *Engine, now int64, argv [][]byte, name string) Reply {
	if len(argv) < 2 {
		return WrongArity(name)
	}
	n := 0
	for _, k := range argv[1:] {
		// An expired key is removed too, but was not there to delete.
		if e.get(k, now) != nil {
			n++
		}
		e.deleteKey(string(k))
	}
	return Integer(n)
}

func cmdExists(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) < 2 {
		return WrongArity("exists")
	}
	n := 0
	for _, k := range argv[1:] {
		if e.get(k, now) != nil {
			n++
		}
	}
	return Integer(n)
}

// typeName is the TYPE reply of v.
func typeName(v *Value) string {
	if v == nil {
		return "none"
	}
	if v.Kind == KindStream {
		return "stream"
	}
	return "string"
}

func cmdType(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) != 2 {
		return WrongArity("type")
	}
	return SimpleString(typeName(e.get(argv[1], now)))
}

func cmdDBSize(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) != 1 {
		return WrongArity("dbsize")
	}
	past, _, _ := e.expires.upTo(now)
	return Integer(len(e.keys) - past)
}

// sortedKeys returns all keys in byte order.
func (e *Engine) sortedKeys() []string {
	ks := make([]string, 0, len(e.keys))
	for k := range e.keys {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func cmdKeys(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) != 2 {
		return WrongArity("keys")
	}
	out := Array{}
	all := len(argv[1]) == 1 && argv[1][0] == '*'
	for _, k := range e.sortedKeys() {
		if e.getStr(k, now) == nil {
			continue
		}
		if all || GlobMatch(argv[1], []byte(k), false) {
			out = append(out, BulkString(k))
		}
	}
	return out
}

// scanHash orders keys for SCAN; never 0 so that 0 can mean "done".
func scanHash(k string) uint64 {
	h := uint64(14695981039346656037) // FNV-1a 64 offset basis
	for i := 0; i < len(k); i++ {
		h ^= uint64(k[i])
		h *= 1099511628211
	}
	return h | 1
}

func cmdScan(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) < 2 {
		return WrongArity("scan")
	}
	cursor, err := strconv.ParseUint(string(argv[1]), 10, 64)
	if err != nil {
		return errInvalidCursor
	}
	count := int64(10)
	var pat, typ []byte
	for i := 2; i < len(argv); i += 2 {
		more := len(argv) - i
		switch {
		case EqFold(argv[i], "COUNT") && more >= 2:
			v, err := intArg(argv[i+1], "")
			if err != nil {
				return err
			}
			if v < 1 {
				return ErrSyntax
			}
			count = v
		case EqFold(argv[i], "MATCH") && more >= 2:
			pat = argv[i+1]
			if len(pat) == 1 && pat[0] == '*' {
				pat = nil
			}
		case EqFold(argv[i], "TYPE") && more >= 2:
			typ = argv[i+1]
		default:
			return ErrSyntax
		}
	}
	// Select the smallest (hash, key) pairs >= cursor with a bounded
	// max-heap: O(keys * log COUNT) per call, no full sort.
	// NB: every call still visits all keys; a persistent ordered index
	// would make SCAN O(COUNT) per call.
	limit := int(min(count, int64(len(e.keys))))
	h := scanHeap{}
	var extra []scanItem // keys sharing the boundary hash
	for k := range e.keys {
		hv := scanHash(k)
		if hv < cursor {
			continue
		}
		it := scanItem{hv, k}
		if len(h) < limit {
			h.push(it)
		} else if it.less(h[0]) {
			h[0] = it
			h.fix()
		}
	}
	cand := []scanItem(h)
	slices.SortFunc(cand, func(a, b scanItem) int {
		if a.less(b) {
			return -1
		}
		if b.less(a) {
			return 1
		}
		return 0
	})
	next := uint64(0)
	if len(cand) > 0 && len(cand) < len(e.keys) {
		// The next cursor is the smallest hash above the last returned one
		// (keys sharing a hash are never split across calls).
		last := cand[len(cand)-1].h
		for k := range e.keys {
			if hv := scanHash(k); hv == last && !slices.ContainsFunc(cand, func(c scanItem) bool { return c.k == k }) {
				extra = append(extra, scanItem{hv, k})
			} else if hv > last && (next == 0 || hv < next) {
				next = hv
			}
		}
		slices.SortFunc(extra, func(a, b scanItem) int { return cmpStr(a.k, b.k) })
		cand = append(cand, extra...)
	}
	keys := Array{}
	for _, c := range cand {
		v := e.getStr(c.k, now)
		if v == nil {
			continue // expired
		}
		if pat != nil && !GlobMatch(pat, []byte(c.k), false) {
			continue
		}
		if typ != nil && !EqFold(typ, typeName(v)) {
			continue
		}
		keys = append(keys, BulkString(c.k))
	}
	return Array{BulkString(strconv.AppendUint(nil, next, 10)), keys}
}

func flushSyntax(argv [][]byte, name string) *Error {
	if len(argv) > 2 {
		return ErrSyntax
	}
	if len(argv) == 2 && !EqFold(argv[1], "ASYNC") && !EqFold(argv[1], "SYNC") {
		return ErrSyntax
	}
	return nil
}

func cmdFlush(e *Engine, argv [][]byte, name string) Reply {
	if err := flushSyntax(argv, name); err != nil {
		return err
	}
	for _, k := range e.sortedKeys() {
		e.deleteKey(k)
	}
	return OK
}

// ---- strings --------------------------------------------------------------

// setSyntax parses SET key value [NX|XX] [GET] [KEEPTTL|EX s|PX ms|EXAT t|PXAT t]
// as Redis's parseExtendedStringArgumentsOrReply does, and checks the expiry
// argument as far as that does not depend on the time.
func setSyntax(argv [][]byte) (stringOpts, *Error) {
	if len(argv) < 3 {
		return stringOpts{}, WrongArity("set")
	}
	o, err := parseStringOpts(argv, false)
	if err != nil {
		return o, err
	}
	return o, o.checkExpire("set")
}

// cmdSet is setCommand: the expiry is computed first, then GET's old value
// (WRONGTYPE for a stream), then NX/XX decide; KEEPTTL keeps the old key's
// expiry, any other SET clears it.
func cmdSet(e *Engine, now int64, argv [][]byte) Reply {
	o, err := setSyntax(argv)
	if err != nil {
		return err
	}
	var at int64
	if o.unit != 0 {
		if at, err = o.expireAt(now, "set"); err != nil {
			return err
		}
	}
	key := string(argv[1])
	old := e.getStr(key, now)
	var prev Reply = NullBulk{}
	if o.get && old != nil {
		if old.Kind != KindString {
			return ErrWrongType
		}
		prev = BulkString(old.Str)
	}
	if (o.nx && old != nil) || (o.xx && old == nil) {
		if o.get {
			return prev
		}
		return NullBulk{}
	}
	v := &Value{Kind: KindString, Str: append([]byte(nil), argv[2]...), expireAt: at}
	if o.keepTTL && old != nil {
		v.expireAt = old.expireAt
	}
	if v.expireAt != 0 && v.expireAt <= now {
		e.deleteKey(key) // set and expired at once (EXAT/PXAT in the past)
	} else {
		e.setKey(key, v)
	}
	if o.get {
		return prev
	}
	return OK
}

func cmdGet(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) != 2 {
		return WrongArity("get")
	}
	v := e.get(argv[1], now)
	if v == nil {
		return NullBulk{}
	}
	if v.Kind != KindString {
		return ErrWrongType
	}
	return BulkString(v.Str)
}

// ---- RENAME ---------------------------------------------------------------

// cmdRename moves the value and its expiry; an expired source is missing,
// an expired destination is replaced even by RENAMENX.
func cmdRename(e *Engine, now int64, argv [][]byte, nx bool) Reply {
	name := "rename"
	if nx {
		name = "renamenx"
	}
	if len(argv) != 3 {
		return WrongArity(name)
	}
	src, dst := string(argv[1]), string(argv[2])
	v := e.getStr(src, now)
	if v == nil {
		return ErrNoSuchKey
	}
	if src == dst {
		if nx {
			return Integer(0)
		}
		return OK
	}
	if nx && e.getStr(dst, now) != nil {
		return Integer(0)
	}
	e.deleteKey(src)
	e.setKey(dst, v)
	if nx {
		return Integer(1)
	}
	return OK
}

// ---- OBJECT ---------------------------------------------------------------

func cmdObject(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) < 2 {
		return WrongArity("object")
	}
	if EqFold(argv[1], "ENCODING") && len(argv) != 3 {
		return WrongArity("object|encoding")
	}
	if EqFold(argv[1], "ENCODING") {
		v := e.get(argv[2], now)
		if v == nil {
			return NullBulk{}
		}
		return BulkString(v.encoding())
	}
	if EqFold(argv[1], "HELP") && len(argv) == 2 {
		return HelpReply(argv[0], objectHelp)
	}
	return Errorf("ERR unknown subcommand '%s'. Try OBJECT HELP.", argv[1])
}

// encoding is OBJECT ENCODING: a stream is "stream"; a string is "int" when
// it is a canonical integer, "embstr" up to 44 bytes, "raw" beyond.
func (v *Value) encoding() string {
	if v.Kind == KindStream {
		return "stream"
	}
	if _, ok := ParseInt(v.Str); ok {
		return "int"
	}
	if len(v.Str) <= 44 {
		return "embstr"
	}
	return "raw"
}

// objectHelp is Redis 7.0's OBJECT HELP text for the subcommands the
// engine answers.
var objectHelp = []string{
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
}

func arityAtLeast(argv [][]byte, n int, name string) *Error {
	if len(argv) < n {
		return WrongArity(name)
	}
	return nil
}

// scanItem is a key in SCAN order.
type scanItem struct {
	h uint64
	k string
}

func (a scanItem) less(b scanItem) bool { return a.h < b.h || (a.h == b.h && a.k < b.k) }

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// scanHeap is a max-heap of scanItems (largest at [0]).
type scanHeap []scanItem

func (h *scanHeap) push(it scanItem) {
	*h = append(*h, it)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[p].less(s[i]) {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

// fix restores the heap after h[0] was replaced.
func (h scanHeap) fix() {
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[m].less(h[l]) {
			m = l
		}
		if r < len(h) && h[m].less(h[r]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
