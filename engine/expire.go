package engine

import (
	"math"
	"strconv"
)

// Key expiry: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (NX|XX|GT|LT), TTL, PTTL,
// EXPIRETIME, PEXPIRETIME, PERSIST, GETEX and SET's expiry options, with
// Redis 7.0's replies and errors (expire.c, t_string.c).
//
// The rules, all deterministic:
//   - An expiry is an absolute Unix time in ms, kept in the key's Value and
//     indexed by expireIndex. Relative forms (EXPIRE, SET EX, ...) are
//     converted with the command's now, which for a write is the log
//     entry's time, so every replica stores the same expiry.
//   - A key whose expiry is at or before now is absent to every command
//     run at now (get): TYPE says none, EXISTS 0, XADD creates a new
//     stream, DBSIZE/KEYS/SCAN skip it. Reads take now from the replica
//     serving them (ReadTime); writes from their log entry.
//   - An expired key leaves the map only through a log entry: one that
//     overwrites or deletes it (SET, XADD, DEL, ...), or RAFTSTREAM.EXPIRED,
//     which the leader's active expiry cycle proposes (ExpireCycle). That
//     command names the expiry it saw, so a key re-created meanwhile is
//     left alone: replaying it is harmless.
//   - An expiry already past when set (EXPIRE k -1, EXPIREAT in the past,
//     GETEX EXAT in the past, SET PXAT in the past) deletes the key at once,
//     as Redis does on a primary.
//   - RENAME moves the expiry; SET without KEEPTTL, DEL, UNLINK and FLUSHALL
//     clear it; stream commands (XADD, XTRIM, ...) keep it.

func init() {
	register("expire", func(e *Engine, now int64, argv [][]byte) Reply { return cmdExpire(e, now, argv, "expire", true, true) })
	register("pexpire", func(e *Engine, now int64, argv [][]byte) Reply {
		return cmdExpire(e, now, argv, "pexpire", false, true)
	})
	register("expireat", func(e *Engine, now int64, argv [][]byte) Reply {
		return cmdExpire(e, now, argv, "expireat", true, false)
	})
	register("pexpireat", func(e *Engine, now int64, argv [][]byte) Reply {
		return cmdExpire(e, now, argv, "pexpireat", false, false)
	})
	register("ttl", func(e *Engine, now int64, argv [][]byte) Reply { return cmdTTL(e, now, argv, "ttl", false, false) })
	register("pttl", func(e *Engine, now int64, argv [][]byte) Reply { return cmdTTL(e, now, argv, "pttl", true, false) })
	register("expiretime", func(e *Engine, now int64, argv [][]byte) Reply {
		return cmdTTL(e, now, argv, "expiretime", false, true)
	})
	register("pexpiretime", func(e *Engine, now int64, argv [][]byte) Reply {
		return cmdTTL(e, now, argv, "pexpiretime", true, true)
	})
	register("persist", cmdPersist)
	register("getex", cmdGetEx)
	register(expiredCmd, cmdExpired)
	for _, c := range []struct {
		name    string
		seconds bool
	}{{"expire", true}, {"pexpire", false}, {"expireat", true}, {"pexpireat", false}} {
		registerValidator(c.name, func(_ int64, argv [][]byte) *Error {
			_, _, err := expireSyntax(argv, c.name, c.seconds)
			return err
		})
	}
	registerValidator("persist", func(_ int64, argv [][]byte) *Error { return arityExact(argv, 2, "persist") })
	registerValidator("getex", func(_ int64, argv [][]byte) *Error {
		if len(argv) < 2 {
			return WrongArity("getex")
		}
		_, err := parseStringOpts(argv, true)
		return err
	})
	registerValidator(expiredCmd, func(_ int64, argv [][]byte) *Error { _, err := expiredSyntax(argv); return err })
}

// expiredCmd is the log command of the active expiry cycle:
//
//	RAFTSTREAM.EXPIRED key at [key at ...]
//
// deletes each key that still holds expiry at (Unix ms) if at is at or
// before the entry's time; replies the number deleted. It is proposed by the
// shard leader only (clients cannot send it: the command table lacks it).
const expiredCmd = "raftstream.expired"

// errExpireTime is addReplyErrorExpireTime.
func errExpireTime(name string) *Error {
	return Errorf("ERR invalid expire time in '%s' command", name)
}

// get returns the value at key as of now: nil when the key does not exist
// or its expiry is at or before now. It never changes the keyspace, so
// reads may call it concurrently.
func (e *Engine) get(key []byte, now int64) *Value {
	v := e.keys[string(key)]
	if v == nil || (v.expireAt != 0 && v.expireAt <= now) {
		return nil
	}
	return v
}

// getStr is get for a key held as a string.
func (e *Engine) getStr(key string, now int64) *Value {
	v := e.keys[key]
	if v == nil || (v.expireAt != 0 && v.expireAt <= now) {
		return nil
	}
	return v
}

// setExpire gives v, the value at key, the expiry at (0: none).
func (e *Engine) setExpire(key string, v *Value, at int64) {
	if v.expireAt == at {
		return
	}
	if v.expireAt != 0 {
		e.expires.remove(v.expireAt, key)
	}
	v.expireAt = at
	if at != 0 {
		e.expires.insert(at, key)
	}
}

// Advance records that the log has been applied up to time now (the FSM
// calls it with every entry's time). Reads then never run at an earlier
// time (ReadTime), so a key a write saw expire stays expired to every later
// read on this replica even if the wall clock lags the log's.
func (e *Engine) Advance(now int64) {
	if now > e.logTime {
		e.logTime = now
	}
}

// ReadTime is the time a read runs at on this replica, given the wall
// clock: the later of the two and the applied log's time.
func (e *Engine) ReadTime(wall int64) int64 { return max(wall, e.logTime) }

// ---- EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT -----------------------------------

type expireFlags uint8

const (
	expireNX expireFlags = 1 << iota
	expireXX
	expireGT
	expireLT
)

// expireSyntax parses EXPIRE-like arguments (parseExtendedExpireArgumentsOrReply,
// then the time and its unit conversion): the flags and the time in ms, not
// yet added to a base time.
func expireSyntax(argv [][]byte, name string, seconds bool) (int64, expireFlags, *Error) {
	if len(argv) < 3 {
		return 0, 0, WrongArity(name)
	}
	var f expireFlags
	for _, opt := range argv[3:] {
		switch {
		case EqFold(opt, "NX"):
			f |= expireNX
		case EqFold(opt, "XX"):
			f |= expireXX
		case EqFold(opt, "GT"):
			f |= expireGT
		case EqFold(opt, "LT"):
			f |= expireLT
		default:
			return 0, 0, Errorf("ERR Unsupported option %s", opt)
		}
	}
	if f&expireNX != 0 && f&(expireXX|expireGT|expireLT) != 0 {
		return 0, 0, &Error{Msg: "ERR NX and XX, GT or LT options at the same time are not compatible"}
	}
	if f&expireGT != 0 && f&expireLT != 0 {
		return 0, 0, &Error{Msg: "ERR GT and LT options at the same time are not compatible"}
	}
	when, err := intArg(argv[2], "")
	if err != nil {
		return 0, 0, err
	}
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return 0, 0, errExpireTime(name)
		}
		when *= 1000
	}
	return when, f, nil
}

// cmdExpire is expireGenericCommand: relative adds now to the time.
func cmdExpire(e *Engine, now int64, argv [][]byte, name string, seconds, relative bool) Reply {
	when, f, err := expireSyntax(argv, name, seconds)
	if err != nil {
		return err
	}
	if relative {
		if when > math.MaxInt64-now {
			return errExpireTime(name)
		}
		when += now
	}
	key := string(argv[1])
	v := e.getStr(key, now)
	if v == nil {
		return Integer(0)
	}
	cur := v.expireAt // 0: no expiry, an infinite TTL
	switch {
	case f&expireNX != 0 && cur != 0,
		f&expireXX != 0 && cur == 0,
		f&expireGT != 0 && (cur == 0 || when <= cur),
		f&expireLT != 0 && cur != 0 && when >= cur:
		return Integer(0)
	}
	if when <= now {
		e.deleteKey(key)
		return Integer(1)
	}
	e.setExpire(key, v, when)
	return Integer(1)
}

// ---- TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST ----------------------------

// cmdTTL is ttlGenericCommand: -2 for a missing key, -1 without an expiry,
// else the time left (abs: the expiry itself) in ms or rounded seconds.
func cmdTTL(e *Engine, now int64, argv [][]byte, name string, ms, abs bool) Reply {
	if len(argv) != 2 {
		return WrongArity(name)
	}
	v := e.get(argv[1], now)
	if v == nil {
		return Integer(-2)
	}
	if v.expireAt == 0 {
		return Integer(-1)
	}
	ttl := v.expireAt
	if !abs {
		ttl -= now
	}
	ttl = max(ttl, 0)
	if ms {
		return Integer(ttl)
	}
	return Integer((ttl + 500) / 1000)
}

func cmdPersist(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) != 2 {
		return WrongArity("persist")
	}
	key := string(argv[1])
	v := e.getStr(key, now)
	if v == nil || v.expireAt == 0 {
		return Integer(0)
	}
	e.setExpire(key, v, 0)
	return Integer(1)
}

// ---- SET and GETEX options --------------------------------------------------

// expireUnit is which expiry option SET or GETEX was given.
type expireUnit uint8

const (
	unitEX expireUnit = 1 << iota
	unitPX
	unitEXAT
	unitPXAT
)

// expireUnitOf recognises EX, PX, EXAT and PXAT (any case); 0 otherwise.
func expireUnitOf(opt []byte) expireUnit {
	for _, u := range []struct {
		name string
		unit expireUnit
	}{{"EX", unitEX}, {"PX", unitPX}, {"EXAT", unitEXAT}, {"PXAT", unitPXAT}} {
		if EqFold(opt, u.name) {
			return u.unit
		}
	}
	return 0
}

// stringOpts are the options of SET (NX XX GET KEEPTTL EX PX EXAT PXAT) and
// GETEX (EX PX EXAT PXAT PERSIST).
type stringOpts struct {
	nx, xx, get, keepTTL, persist bool
	unit                          expireUnit // 0: no expiry option
	expire                        []byte     // its argument
}

// parseStringOpts is parseExtendedStringArgumentsOrReply, options in any
// case and order. As in Redis, the same expiry option may repeat (the last
// one counts), two different ones may not.
func parseStringOpts(argv [][]byte, getex bool) (stringOpts, *Error) {
	var o stringOpts
	j := 3
	if getex {
		j = 2
	}
	for ; j < len(argv); j++ {
		opt := argv[j]
		u := expireUnitOf(opt)
		switch {
		case !getex && EqFold(opt, "NX") && !o.xx:
			o.nx = true
		case !getex && EqFold(opt, "XX") && !o.nx:
			o.xx = true
		case !getex && EqFold(opt, "GET"):
			o.get = true
		case !getex && EqFold(opt, "KEEPTTL") && o.unit == 0:
			o.keepTTL = true
		case getex && EqFold(opt, "PERSIST") && o.unit == 0:
			o.persist = true
		case u != 0 && !o.keepTTL && !o.persist && o.unit&^u == 0 && j+1 < len(argv):
			o.unit, o.expire = u, argv[j+1]
			j++
		default:
			return o, ErrSyntax
		}
	}
	return o, nil
}

// expireAt is getExpireMillisecondsOrReply: the absolute expiry in ms that
// o's expiry option means at now.
func (o *stringOpts) expireAt(now int64, name string) (int64, *Error) {
	ms, err := intArg(o.expire, "")
	if err != nil {
		return 0, err
	}
	seconds := o.unit == unitEX || o.unit == unitEXAT
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		return 0, errExpireTime(name)
	}
	if seconds {
		ms *= 1000
	}
	if o.unit == unitEX || o.unit == unitPX {
		ms += now // wraps on overflow, as in C, and is caught below
	}
	if ms <= 0 {
		return 0, errExpireTime(name)
	}
	return ms, nil
}

// checkExpire returns the error o's expiry argument certainly gets,
// whatever now is (the leader-side check of SET).
func (o *stringOpts) checkExpire(name string) *Error {
	if o.unit == 0 {
		return nil
	}
	_, err := o.expireAt(0, name)
	return err
}

// cmdGetEx is getexCommand.
func cmdGetEx(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) < 2 {
		return WrongArity("getex")
	}
	o, err := parseStringOpts(argv, true)
	if err != nil {
		return err
	}
	key := string(argv[1])
	v := e.getStr(key, now)
	if v == nil {
		return NullBulk{}
	}
	if v.Kind != KindString {
		return ErrWrongType
	}
	var at int64
	if o.unit != 0 {
		if at, err = o.expireAt(now, "getex"); err != nil {
			return err
		}
	}
	r := BulkString(v.Str) // strings are never changed in place
	switch {
	case (o.unit == unitEXAT || o.unit == unitPXAT) && at <= now:
		e.deleteKey(key)
	case o.unit != 0:
		e.setExpire(key, v, at)
	case o.persist:
		e.setExpire(key, v, 0)
	}
	return r
}

// ---- the active expiry cycle ------------------------------------------------

func expiredSyntax(argv [][]byte) ([]int64, *Error) {
	if len(argv) < 3 || len(argv)%2 == 0 {
		return nil, WrongArity(expiredCmd)
	}
	ats := make([]int64, 0, len(argv)/2)
	for i := 2; i < len(argv); i += 2 {
		at, ok := ParseInt(argv[i])
		if !ok || at <= 0 {
			return nil, ErrNotInteger
		}
		ats = append(ats, at)
	}
	return ats, nil
}

func cmdExpired(e *Engine, now int64, argv [][]byte) Reply {
	ats, err := expiredSyntax(argv)
	if err != nil {
		return err
	}
	n := 0
	for i, at := range ats {
		key := argv[1+2*i]
		if v := e.keys[string(key)]; v != nil && v.expireAt == at && at <= now {
			e.deleteKey(string(key))
			n++
		}
	}
	return Integer(n)
}

// ExpireCycle is one step of the active expiry cycle (Redis's
// activeExpireCycle, without sampling: the index gives the expired keys
// directly). It returns the log command that deletes up to max keys whose
// expiry is at or before now, earliest first, naming the expiry each holds
// (RAFTSTREAM.EXPIRED), or nil when no key has expired. It only reads: the
// shard leader calls it under the read lock and proposes the command.
func (e *Engine) ExpireCycle(now int64, max int) [][]byte {
	var argv [][]byte
	e.expires.ascend(func(at int64, key string) bool {
		if at > now || len(argv)/2 >= max {
			return false
		}
		if argv == nil {
			argv = [][]byte{[]byte(expiredCmd)}
		}
		argv = append(argv, []byte(key), strconv.AppendInt(nil, at, 10))
		return true
	})
	return argv
}

// KeyspaceInfo is INFO keyspace's line for this engine at a time: keys
// (live ones), expires (live keys with an expiry) and avg_ttl (their mean
// time to live in ms, rounded down; 0 when none).
type KeyspaceInfo struct {
	Keys, Expires, AvgTTL int64
}

// Keyspace returns the keyspace counts as of now, exactly: keys whose
// expiry has passed but that no log entry has removed yet are not counted.
func (e *Engine) Keyspace(now int64) KeyspaceInfo {
	past, _, _ := e.expires.upTo(now)
	avg, n := e.expires.avgAhead(now)
	return KeyspaceInfo{Keys: int64(len(e.keys) - past), Expires: int64(n), AvgTTL: avg}
}
