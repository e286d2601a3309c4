package engine

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
)

// Idempotent producers (Redis 8.6; https://redis.io/docs/latest/commands/xadd/,
// https://redis.io/docs/latest/commands/xcfgset/, t_stream.c).
//
//	XADD key ... IDMP pid iid ... * field value ...
//	XADD key ... IDMPAUTO pid ... * field value ...
//	XCFGSET key [IDMP-DURATION 1..86400] [IDMP-MAXSIZE 1..10000]
//
// A stream remembers, per producer ID (pid), the idempotency IDs (iid) of
// the entries it added and the entry ID each got. An XADD whose (pid, iid)
// is remembered adds nothing and replies the original entry ID, even if
// that entry has since been deleted or trimmed. IDMPAUTO derives the iid
// from the field/value pairs, ignoring their order (idmpAutoIID). IDMP and
// IDMPAUTO need the "*" ID.
//
// An iid is remembered for idmp-duration seconds and, per producer, only
// the idmp-maxsize most recent are kept. Time is Exec's now (the log's
// time), so every replica forgets the same iids: expiry runs at the start
// of each XADD with IDMP/IDMPAUTO on the stream, over all its producers,
// in record order. Streams use the engine Config's values
// (stream-idmp-duration, stream-idmp-maxsize) until XCFGSET sets their own;
// XCFGSET that changes a value clears the remembered iids.
//
// XINFO STREAM reports idmp-duration, idmp-maxsize, pids-tracked,
// iids-tracked, iids-added and iids-duplicates for every stream, after
// recorded-first-entry-id, as Redis 8.6 does.
//
// As in Redis (streamNew), a stream takes the stream-idmp-* values of the
// moment it is created (newStream); a later CONFIG SET changes only streams
// created after it. Streams restored from snapshots written before this
// rule have no values of their own and follow the configuration.
//
// Differences left: Redis forgets expired iids from a timer (serverCron, by
// entry ID time); here expiry runs at each XADD with IDMP/IDMPAUTO on the
// stream (by record time), which every replica does at the same log
// position. IDMPAUTO's digest is not XXH3 (its value is never shown).

func init() {
	register("xcfgset", cmdXCfgSet)
	// The key is looked up before the options are read (no such key or
	// WRONGTYPE come first), so only the arity is certain.
	registerValidator("xcfgset", func(_ int64, argv [][]byte) *Error {
		if len(argv) < 2 {
			return WrongArity("xcfgset")
		}
		return nil
	})
}

// Defaults and ranges of the IDMP settings.
const (
	idmpDefaultDuration = 100 // seconds
	idmpDefaultMaxSize  = 100
	idmpMaxDuration     = 86400
	idmpMaxMaxSize      = 10000
)

// Error texts of t_stream.c (streamParseAddOrTrimArgsOrReply, xcfgsetCommand).
// The XCFGSET page lists "ERR invalid duration" / "ERR invalid maxsize";
// the server sends the range messages below.
var (
	errIdmpExplicitID    = &Error{Msg: "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"}
	errIdmpTwice         = &Error{Msg: "ERR syntax error, IDMP/IDMPAUTO specified multiple times"}
	errIdmpAutoEmptyPID  = &Error{Msg: "ERR syntax error, IDMPAUTO requires a non-empty producer ID"}
	errIdmpEmptyPID      = &Error{Msg: "ERR syntax error, IDMP requires a non-empty producer ID"}
	errIdmpEmptyIID      = &Error{Msg: "ERR syntax error, IDMP requires a non-empty idempotent ID"}
	errIdmpDuration      = &Error{Msg: "ERR IDMP-DURATION must be between 1 and 86400 seconds"}
	errIdmpMaxSize       = &Error{Msg: "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"}
	errIdmpDurationTwice = &Error{Msg: "ERR IDMP-DURATION specified multiple times"}
	errIdmpMaxSizeTwice  = &Error{Msg: "ERR IDMP-MAXSIZE specified multiple times"}
	errXCfgSetNoOpt      = &Error{Msg: "ERR At least one parameter must be specified"}
)

// idmpState is a stream's idempotency memory.
//
// Invariant: producers is sorted by pid, holds no producer with an empty
// log, and every producer's byIID indexes exactly the records of its log.
type idmpState struct {
	duration  int64 // seconds; 0 = Config.IdmpDuration
	maxSize   int64 // 0 = Config.IdmpMaxSize
	added     uint64
	dups      uint64
	producers []*idmpProducer
}

// idmpProducer is one pid's remembered iids, oldest first.
type idmpProducer struct {
	pid   string
	log   []idmpRecord
	byIID map[string]ID
}

type idmpRecord struct {
	iid string
	id  ID
	at  int64 // Unix ms of the XADD
}

// IdmpDuration and IdmpMaxSize of Config are read through these, so that a
// zero Config (or an old snapshot) means Redis's defaults.
func (c Config) idmpDuration() int64 {
	if c.IdmpDuration <= 0 {
		return idmpDefaultDuration
	}
	return int64(c.IdmpDuration)
}

func (c Config) idmpMaxSize() int64 {
	if c.IdmpMaxSize <= 0 {
		return idmpDefaultMaxSize
	}
	return int64(c.IdmpMaxSize)
}

// newStream is a new stream for a command of e: it keeps the configured
// IDMP settings of this moment, as Redis's streamNew does.
func (e *Engine) newStream() *Stream {
	s := NewStream()
	s.idmp = &idmpState{duration: e.cfg.idmpDuration(), maxSize: e.cfg.idmpMaxSize()}
	return s
}

// settings returns the stream's effective duration (s) and max size.
func (st *idmpState) settings(cfg Config) (int64, int64) {
	d, m := cfg.idmpDuration(), cfg.idmpMaxSize()
	if st != nil && st.duration > 0 {
		d = st.duration
	}
	if st != nil && st.maxSize > 0 {
		m = st.maxSize
	}
	return d, m
}

func (st *idmpState) producerIndex(pid string) int {
	return sort.Search(len(st.producers), func(i int) bool { return st.producers[i].pid >= pid })
}

// expire forgets records older than the duration.
func (st *idmpState) expire(now int64, cfg Config) {
	d, _ := st.settings(cfg)
	keep := st.producers[:0]
	for _, p := range st.producers {
		n := 0
		for n < len(p.log) && now-p.log[n].at >= d*1000 {
			delete(p.byIID, p.log[n].iid)
			n++
		}
		p.log = p.log[n:]
		if len(p.log) > 0 {
			keep = append(keep, p)
		}
	}
	clear(st.producers[len(keep):])
	st.producers = keep
}

// lookup returns the entry ID remembered for (pid, iid).
func (st *idmpState) lookup(pid, iid string) (ID, bool) {
	i := st.producerIndex(pid)
	if i < len(st.producers) && st.producers[i].pid == pid {
		id, ok := st.producers[i].byIID[iid]
		return id, ok
	}
	return ID{}, false
}

// record remembers (pid, iid) -> id at now, evicting the producer's oldest
// records beyond the max size.
func (st *idmpState) record(pid, iid string, id ID, now int64, cfg Config) {
	_, m := st.settings(cfg)
	i := st.producerIndex(pid)
	if i == len(st.producers) || st.producers[i].pid != pid {
		st.producers = append(st.producers, nil)
		copy(st.producers[i+1:], st.producers[i:])
		st.producers[i] = &idmpProducer{pid: pid, byIID: map[string]ID{}}
	}
	p := st.producers[i]
	p.log = append(p.log, idmpRecord{iid: iid, id: id, at: now})
	p.byIID[iid] = id
	for int64(len(p.log)) > m {
		delete(p.byIID, p.log[0].iid)
		p.log = p.log[1:]
	}
	st.added++
}

// tracked returns pids-tracked and iids-tracked.
func (st *idmpState) tracked() (pids, iids int64) {
	for _, p := range st.producers {
		iids += int64(len(p.log))
	}
	return int64(len(st.producers)), iids
}

// idmpAutoIID is IDMPAUTO's iid: a 128-bit digest of the field/value pairs
// that does not depend on their order. Each pair is hashed with FNV-128a
// over its length-prefixed field and value; the digests are added as two
// 64-bit lanes (a commutative combination, so equal multisets of pairs give
// equal iids).
func idmpAutoIID(fields [][]byte) string {
	var lo, hi uint64
	var lenbuf [binary.MaxVarintLen64]byte
	var sum [16]byte
	for i := 0; i+1 < len(fields); i += 2 {
		h := fnv.New128a()
		for _, b := range fields[i : i+2] {
			n := binary.PutUvarint(lenbuf[:], uint64(len(b)))
			h.Write(lenbuf[:n])
			h.Write(b)
		}
		d := h.Sum(sum[:0])
		hi += binary.BigEndian.Uint64(d[:8])
		lo += binary.BigEndian.Uint64(d[8:])
	}
	var out [16]byte
	binary.BigEndian.PutUint64(out[:8], hi)
	binary.BigEndian.PutUint64(out[8:], lo)
	return string(out[:])
}

// ---- XCFGSET ----------------------------------------------------------------

type xcfgsetArgs struct {
	duration, maxSize int64 // 0 = not given
}

// xcfgsetSyntax parses XCFGSET's options as xcfgsetCommand does (after the
// key was found).
func xcfgsetSyntax(argv [][]byte) (xcfgsetArgs, *Error) {
	var a xcfgsetArgs
	for i := 2; i < len(argv); i += 2 {
		more := len(argv) - 1 - i
		switch o := argv[i]; {
		case EqFold(o, "IDMP-DURATION") && more > 0:
			if a.duration != 0 {
				return a, errIdmpDurationTwice
			}
			v, err := intArg(argv[i+1], "")
			if err != nil {
				return a, err
			}
			if v < 1 || v > idmpMaxDuration {
				return a, errIdmpDuration
			}
			a.duration = v
		case EqFold(o, "IDMP-MAXSIZE") && more > 0:
			if a.maxSize != 0 {
				return a, errIdmpMaxSizeTwice
			}
			v, err := intArg(argv[i+1], "")
			if err != nil {
				return a, err
			}
			if v < 1 || v > idmpMaxMaxSize {
				return a, errIdmpMaxSize
			}
			a.maxSize = v
		default:
			return a, ErrSyntax
		}
	}
	if a.duration == 0 && a.maxSize == 0 {
		return a, errXCfgSetNoOpt
	}
	return a, nil
}

func cmdXCfgSet(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) < 2 {
		return WrongArity("xcfgset")
	}
	s, werr := e.lookupStream(argv[1], now)
	if werr != nil {
		return werr
	}
	if s == nil {
		return ErrNoSuchKey
	}
	a, err := xcfgsetSyntax(argv)
	if err != nil {
		return err
	}
	if s.idmp == nil {
		s.idmp = &idmpState{}
	}
	st := s.idmp
	d, m := st.settings(e.cfg)
	nd, nm := d, m
	if a.duration != 0 {
		nd = a.duration
	}
	if a.maxSize != 0 {
		nm = a.maxSize
	}
	st.duration, st.maxSize = nd, nm
	if nd != d || nm != m {
		clear(st.producers)
		st.producers = nil
	}
	return OK
}

// idmpXInfo is the XINFO STREAM fields of the stream's IDMP state.
func (s *Stream) idmpXInfo(cfg Config) Map {
	d, m := s.idmp.settings(cfg)
	var pids, iids int64
	var added, dups uint64
	if s.idmp != nil {
		pids, iids = s.idmp.tracked()
		added, dups = s.idmp.added, s.idmp.dups
	}
	return Map{
		Bulk("idmp-duration"), Integer(d),
		Bulk("idmp-maxsize"), Integer(m),
		Bulk("pids-tracked"), Integer(pids),
		Bulk("iids-tracked"), Integer(iids),
		Bulk("iids-added"), Integer(int64(added)),
		Bulk("iids-duplicates"), Integer(int64(dups)),
	}
}
