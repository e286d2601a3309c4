package engine

import (
	"strconv"

	"github.com/raftstream/raftstream/slots"
)

// Dead-letter streams: a raftstream extension, NOT a Redis feature, off by
// default.
//
//	XGROUP SETDLQ key group max-deliveries dlq-key
//	XGROUP SETDLQ key group OFF
//
// With a setting, a pending entry of the group whose delivery count would
// exceed max-deliveries when it is delivered again (XREADGROUP reading the
// consumer's history, XREADGROUP ... CLAIM, XCLAIM, XAUTOCLAIM) is not
// delivered: it is appended to the stream at dlq-key (created if missing)
// and acknowledged in the group, in the same command execution and so in
// the same Raft entry. The dead-letter entry has an ID generated as by
// XADD * at the command's time, the original field/value pairs, then the
// fields dlq-source-id (the original entry ID), dlq-group and
// dlq-deliveries (the delivery count reached). XNACK ... FATAL sets the count
// to the maximum, so the next delivery attempt dead-letters the entry.
// Claims that set the count explicitly (RETRYCOUNT) or leave it unchanged
// (JUSTID) do not dead-letter.
//
// dlq-key must be another key in the same hash slot as key (use a hash tag,
// e.g. {orders} and {orders}:dlq), or SETDLQ fails with CROSSSLOT. If
// dlq-key holds another type when an entry should move, the entry is
// delivered normally. The setting is shown by neither XINFO nor Redis
// clients; it is kept in snapshots (stream_ext_codec.go).

var (
	errDLQMax       = &Error{Msg: "ERR max-deliveries must be a positive integer"}
	errDLQSameKey   = &Error{Msg: "ERR the dead-letter stream must be another key"}
	errDLQCrossSlot = &Error{Msg: "CROSSSLOT Keys in request don't hash to the same slot"}
)

// setdlqSyntax checks XGROUP SETDLQ key group (OFF | max-deliveries dlq-key);
// max is 0 for OFF.
func setdlqSyntax(argv [][]byte) (max uint64, dlq []byte, err *Error) {
	switch {
	case len(argv) == 5 && EqFold(argv[4], "OFF"):
		return 0, nil, nil
	case len(argv) == 6:
		v, ok := ParseInt(argv[4])
		if !ok || v <= 0 {
			return 0, nil, errDLQMax
		}
		if string(argv[5]) == string(argv[2]) {
			return 0, nil, errDLQSameKey
		}
		if slots.Of(argv[5]) != slots.Of(argv[2]) {
			return 0, nil, errDLQCrossSlot
		}
		return uint64(v), argv[5], nil
	}
	return 0, nil, ErrSyntax
}

// xgroupSetDLQ executes XGROUP SETDLQ on the existing group g.
func xgroupSetDLQ(g *Group, argv [][]byte) Reply {
	max, dlq, err := setdlqSyntax(argv)
	if err != nil {
		return err
	}
	g.DLQMax, g.DLQKey = max, string(dlq)
	return OK
}

// deadLetter moves the pending entry nk (fields are its field/value pairs)
// of group g of the stream at key to g's dead-letter stream if delivering
// it once more would exceed the group's max-deliveries, acknowledging it.
// It reports whether it did; the caller must then not deliver nk.
func (e *Engine) deadLetter(key []byte, s *Stream, g *Group, nk *NACK, fields [][]byte, now int64) bool {
	if g.DLQMax == 0 || nk.DeliveryCount < g.DLQMax {
		return false
	}
	var dlq *Stream
	if v, ok := e.keys[g.DLQKey]; ok {
		if v.Kind != KindStream || v.Stream.LastID == MaxID {
			return false
		}
		dlq = v.Stream
	} else {
		dlq = e.newStream()
		e.addKey(g.DLQKey, &Value{Kind: KindStream, Stream: dlq})
	}
	id := nextID(dlq.LastID, now)
	f := make([][]byte, 0, len(fields)+6)
	f = append(f, fields...)
	f = append(f, []byte("dlq-source-id"), nk.ID.Append(nil),
		[]byte("dlq-group"), []byte(g.Name),
		[]byte("dlq-deliveries"), strconv.AppendUint(nil, nk.DeliveryCount, 10))
	dlq.appendEntry(e.cfg, id, f)
	dlq.Length++
	dlq.EntriesAdded++
	dlq.LastID = id
	if dlq.Length == 1 {
		dlq.FirstID = id
	}
	g.PEL.Delete(nk.ID)
	nk.disown() // owner-less: XCLAIM FORCE's new NACK, or released by XNACK
	e.signal(g.DLQKey)
	return true
}
