package engine

import "math"

// XNACK (Redis 8.8): a consumer gives pending entries back to its group
// without acknowledging them, so they can be redelivered at once.
//
//	XNACK key group SILENT|FAIL|FATAL IDS numids id [id ...] [RETRYCOUNT n] [FORCE]
//
// For each ID pending in the group:
//   - SILENT decrements the delivery count (saturating at 0): the delivery
//     did not count;
//   - FAIL keeps the delivery count;
//   - FATAL sets it to math.MaxInt64, the largest count Redis reports, so
//     that dead-letter logic (deadletter.go) picks the entry up;
//   - RETRYCOUNT n sets it to n whatever the mode.
//
// The entry's delivery time becomes 0 (the epoch), so its idle time is the
// largest possible and XAUTOCLAIM, XCLAIM or XREADGROUP ... CLAIM with any
// min-idle-time take it first. The reply is the number of entries
// released. IDs not pending in the group are skipped.
//
// NB: this engine keeps every pending entry owned by a consumer (the PEL
// invariant in group.go), so a released entry stays in its consumer's PEL
// until it is claimed; Redis 8.8 may detach it. FORCE is accepted and, as
// an entry with no owner cannot be represented here, has no further effect:
// IDs that are not pending are skipped with or without it.

func init() {
	register("xnack", cmdXNack)
	registerValidator("xnack", func(argv [][]byte) *Error { _, err := xnackSyntax(argv); return err })
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

var errXNackMode = &Error{Msg: "ERR syntax error, XNACK mode must be SILENT, FAIL or FATAL"}

type xnackArgs struct {
	mode  nackMode
	ids   []ID
	retry int64 // -1: not given
	force bool
}

func xnackSyntax(argv [][]byte) (xnackArgs, *Error) {
	a := xnackArgs{retry: -1}
	if len(argv) < 7 {
		return a, WrongArity("xnack")
	}
	switch m := argv[3]; {
	case eqFold(m, "SILENT"):
		a.mode = nackSilent
	case eqFold(m, "FAIL"):
		a.mode = nackFail
	case eqFold(m, "FATAL"):
		a.mode = nackFatal
	default:
		return a, errXNackMode
	}
	idsGiven := false
	for i := 4; i < len(argv); i++ {
		more := len(argv) - 1 - i
		switch o := argv[i]; {
		case eqFold(o, "IDS") && more > 0 && !idsGiven:
			n, ok := cgParseLL(argv[i+1])
			if !ok || n <= 0 {
				return a, errNumIDs
			}
			if n > int64(more-1) {
				return a, errNumIDsMismatch
			}
			a.ids = make([]ID, 0, n)
			for _, b := range argv[i+2 : i+2+int(n)] {
				id, err := parseStrictID(b, 0)
				if err != nil {
					return a, err
				}
				a.ids = append(a.ids, id)
			}
			idsGiven = true
			i += 1 + int(n)
		case eqFold(o, "RETRYCOUNT") && more > 0:
			v, err := cgArgInt(argv[i+1], "Invalid RETRYCOUNT option argument for XNACK")
			if err != nil {
				return a, err
			}
			if v < 0 {
				return a, Errorf("ERR Invalid RETRYCOUNT option argument for XNACK")
			}
			a.retry = v
			i++
		case eqFold(o, "FORCE"):
			a.force = true
		default:
			return a, ErrSyntax
		}
	}
	if !idsGiven {
		return a, ErrSyntax
	}
	return a, nil
}

func cmdXNack(e *Engine, now int64, argv [][]byte) Reply {
	a, err := xnackSyntax(argv)
	if err != nil {
		return err
	}
	_, g, gerr := e.lookupStreamGroup(argv[1], argv[2])
	if gerr != nil {
		return gerr
	}
	released := 0
	for _, id := range a.ids {
		nk, ok := g.PEL.Get(id)
		if !ok {
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
		nk.DeliveryTime = 0
		released++
	}
	return Integer(released)
}
