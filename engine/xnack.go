package engine

import (
	"math"
	"sort"
)

// XNACK (Redis 8.8): a consumer gives pending entries back to its group
// without acknowledging them, so they can be redelivered at once
// (https://redis.io/docs/latest/commands/xnack/, t_stream.c xnackCommand).
//
//	XNACK key group SILENT|FAIL|FATAL IDS numids id [id ...] [RETRYCOUNT count] [FORCE]
//
// For each ID pending in the group the entry is released:
//   - it loses its owner: it leaves its consumer's PEL and XPENDING shows
//     it with the consumer "" and the idle time -1 (XINFO STREAM FULL with
//     the consumer "" and the delivery time 0);
//   - its delivery time becomes 0 and it joins the group's "NACK zone":
//     released entries come before every other pending entry, in the order
//     they were released, for XREADGROUP ... CLAIM; XCLAIM and XAUTOCLAIM
//     take an owner-less entry whatever their min-idle-time;
//   - its delivery count is decremented (SILENT, saturating at 0), kept
//     (FAIL) or set to LLONG_MAX (FATAL), or set to RETRYCOUNT if given.
//
// IDs not pending in the group are skipped, unless FORCE is given and the
// entry exists in the stream: then an owner-less pending entry is created
// with the delivery count 0 (RETRYCOUNT if given, LLONG_MAX under FATAL).
// The reply is the number of entries released or created.
//
// Errors, in Redis's order: arity; WRONGTYPE; NOGROUP when the key or the
// group is missing (before any other argument is looked at); then the mode,
// the options and the IDs. Redis passes most of XNACK's messages to
// addReplyError with their "ERR " already in them, and addReplyError adds
// its own, so the server replies "ERR ERR mode must be ..." and so on; the
// texts below are those replies.

func init() {
	register("xnack", cmdXNack)
	// Every error but arity depends on the key (NOGROUP comes first).
	registerValidator("xnack", func(_ int64, argv [][]byte) *Error {
		if len(argv) < 7 {
			return WrongArity("xnack")
		}
		return nil
	})
}

// nackMode is XNACK's delivery-count adjustment.
type nackMode uint8

const (
	nackSilent nackMode = iota
	nackFail
	nackFatal
)

// nackFatalCount is the delivery count FATAL sets (LLONG_MAX).
const nackFatalCount = math.MaxInt64

var (
	errXNackMode       = &Error{Msg: "ERR ERR mode must be SILENT, FAIL, or FATAL"}
	errXNackNumIDs     = &Error{Msg: "ERR numids must be a positive integer"}
	errXNackIDsCount   = &Error{Msg: "ERR ERR number of IDs doesn't match numids"}
	errXNackRetryCount = &Error{Msg: "ERR ERR Invalid RETRYCOUNT value, must be >= 0"}
	errXNackNoIDS      = &Error{Msg: "ERR ERR syntax error, expected IDS keyword"}
)

type xnackArgs struct {
	mode  nackMode
	ids   []ID
	retry int64 // -1: not given
	force bool
}

// xnackSyntax parses argv[3:] as xnackCommand does, after the key and group
// were found.
func xnackSyntax(argv [][]byte) (xnackArgs, *Error) {
	a := xnackArgs{retry: -1}
	switch m := argv[3]; {
	case EqFold(m, "SILENT"):
		a.mode = nackSilent
	case EqFold(m, "FAIL"):
		a.mode = nackFail
	case EqFold(m, "FATAL"):
		a.mode = nackFatal
	default:
		return a, errXNackMode
	}
	idsAt, numids := 0, 0
	for i := 4; i < len(argv); i++ {
		more := len(argv) - 1 - i
		switch o := argv[i]; {
		case EqFold(o, "IDS") && more > 0:
			// A later IDS block replaces an earlier one, as in Redis.
			n, ok := ParseInt(argv[i+1])
			if !ok || n < 1 || n > math.MaxInt32 {
				return a, errXNackNumIDs
			}
			idsAt = i + 2
			if n > int64(len(argv)-idsAt) {
				return a, errXNackIDsCount
			}
			numids = int(n)
			i = idsAt + numids - 1
		case EqFold(o, "FORCE"):
			a.force = true
		case EqFold(o, "RETRYCOUNT") && more > 0:
			i++
			v, err := intArg(argv[i], "")
			if err != nil {
				return a, err
			}
			if v < 0 {
				return a, errXNackRetryCount
			}
			a.retry = v
		default:
			return a, Errorf("ERR ERR Unrecognized XNACK option '%s'", o)
		}
	}
	if idsAt == 0 {
		return a, errXNackNoIDS
	}
	a.ids = make([]ID, 0, numids)
	for _, b := range argv[idsAt : idsAt+numids] {
		id, err := parseStrictID(b, 0)
		if err != nil {
			return a, err
		}
		a.ids = append(a.ids, id)
	}
	return a, nil
}

func cmdXNack(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) < 7 {
		return WrongArity("xnack")
	}
	s, g, gerr := e.lookupStreamGroup(argv[1], argv[2], now)
	if gerr != nil {
		return gerr
	}
	a, err := xnackSyntax(argv)
	if err != nil {
		return err
	}
	released := 0
	for _, id := range a.ids {
		nk, ok := g.PEL.Get(id)
		switch {
		case ok:
		case a.force:
			if _, exists := s.Lookup(id); !exists {
				continue
			}
			nk = &NACK{ID: id}
			g.PEL.Insert(nk)
		default:
			continue
		}
		switch {
		case a.retry >= 0:
			nk.DeliveryCount = uint64(a.retry)
		case a.mode == nackSilent:
			if nk.DeliveryCount > 0 {
				nk.DeliveryCount--
			}
		case a.mode == nackFatal:
			nk.DeliveryCount = nackFatalCount
		}
		g.release(nk)
		released++
	}
	if released > 0 {
		e.signal(string(argv[1]))
	}
	return Integer(released)
}

// release puts nk at the end of g's NACK zone: no owner, delivery time 0.
func (g *Group) release(nk *NACK) {
	if nk.Consumer != nil {
		nk.Consumer.PEL.Delete(nk.ID)
		nk.Consumer = nil
	}
	g.nackSeq++
	nk.nackSeq = g.nackSeq
	nk.DeliveryTime = 0
}

// own makes c the owner of nk (already in the group PEL), taking it from its
// previous owner or out of the NACK zone.
func (nk *NACK) own(c *Consumer) {
	if nk.Consumer == c {
		return
	}
	if nk.Consumer != nil {
		nk.Consumer.PEL.Delete(nk.ID)
	}
	nk.Consumer = c
	nk.nackSeq = 0
	c.PEL.Insert(nk)
}

// disown removes nk from its owner's PEL, if it has one (the group PEL is
// the caller's business).
func (nk *NACK) disown() {
	if nk.Consumer != nil {
		nk.Consumer.PEL.Delete(nk.ID)
	}
}

// bumpDeliveries increments nk's delivery count, saturating at LLONG_MAX as
// Redis does (so a FATAL count stays FATAL).
func (nk *NACK) bumpDeliveries() {
	if nk.DeliveryCount < nackFatalCount {
		nk.DeliveryCount++
	}
}

// nackedCount is the number of entries in g's NACK zone (XINFO STREAM
// FULL's nacked-count).
func (g *Group) nackedCount() int {
	n := 0
	g.PEL.Ascend(MinID, MaxID, func(nk *NACK) bool {
		if nk.Consumer == nil {
			n++
		}
		return true
	})
	return n
}

// claimOrder sorts pending entries in the order Redis's time-ordered PEL
// list holds them: the NACK zone first in release order, then by delivery
// time (ties in ID order; the caller passes them in ID order).
func claimOrder(nks []*NACK) {
	sort.SliceStable(nks, func(i, j int) bool {
		a, b := nks[i], nks[j]
		switch {
		case a.Consumer == nil && b.Consumer == nil:
			return a.nackSeq < b.nackSeq
		case a.Consumer == nil:
			return true
		case b.Consumer == nil:
			return false
		}
		return a.DeliveryTime < b.DeliveryTime
	})
}
