package engine

// XREADGROUP ... CLAIM min-idle-time (Redis 8.4,
// https://redis.io/docs/latest/commands/xreadgroup/, t_stream.c
// streamReplyWithRange). With the ">" ID, pending entries of the group idle
// for at least min-idle-time are claimed by the reading consumer and
// returned before new entries, in the order of Redis's time-ordered PEL
// list: entries released by XNACK first (in release order), then by last
// delivery time (claimOrder, xnack.go). COUNT bounds claimed plus new
// entries per stream. With CLAIM every entry of the reply has four
// elements:
//
//	[id, [field value ...], ms-since-last-delivery, delivery-count]
//
// for a claimed entry the idle time and the delivery count as they were
// before this read (an entry released by XNACK has the delivery time 0, so
// its idle time is now in Unix ms), and 0 and 0 for a new entry. Claiming
// sets the delivery time to now and increments the delivery count
// (saturating at LLONG_MAX), as XCLAIM does; NOACK does not apply to
// claimed entries. A pending entry whose stream entry was deleted is
// skipped and stays pending (Redis does not drop it here, unlike
// XAUTOCLAIM). With an ID other than ">" CLAIM is ignored and replies keep
// the two-element shape. Idle entries are ordered per stream, as Redis
// does (each stream's PEL is scanned in its own streamReplyWithRange call).

// parseClaimIdle parses CLAIM's min-idle-time: a non-negative integer.
func parseClaimIdle(b []byte) (int64, *Error) {
	v, err := intArg(b, "min-idle-time is not an integer or out of range")
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, Errorf("ERR min-idle-time must be a positive integer")
	}
	return v, nil
}

// claimIdle claims up to count (0 = all) entries of g's PEL idle for at least
// minIdle for consumer c and returns their 4-element replies. key names the
// stream for dead-lettering (deadletter.go).
func (e *Engine) claimIdle(key []byte, s *Stream, g *Group, c *Consumer, minIdle, count, now int64) Array {
	var idle []*NACK
	g.PEL.Ascend(MinID, MaxID, func(nk *NACK) bool {
		if now-nk.DeliveryTime >= minIdle {
			idle = append(idle, nk)
		}
		return true
	})
	claimOrder(idle)
	var out Array
	for _, nk := range idle {
		if count > 0 && int64(len(out)) >= count {
			break
		}
		fields, ok := s.Lookup(nk.ID)
		if !ok {
			continue
		}
		if e.deadLetter(key, s, g, nk, fields, now) {
			continue
		}
		idleMs, prev := now-nk.DeliveryTime, nk.DeliveryCount
		nk.own(c)
		nk.DeliveryTime = now
		nk.bumpDeliveries()
		c.ActiveTime = now
		r := entryReply(nk.ID, fields).(Array)
		out = append(out, Array{r[0], r[1], Integer(idleMs), Integer(int64(prev))})
	}
	return out
}

// withClaimFields gives new entries delivered by XREADGROUP ... CLAIM the
// idle time 0 and delivery count 0 that Redis appends to them.
func withClaimFields(entries Array) {
	for i, r := range entries {
		if e, ok := r.(*EntryReply); ok {
			r = e.Array()
		}
		if a, ok := r.(Array); ok && len(a) == 2 {
			entries[i] = Array{a[0], a[1], Integer(0), Integer(0)}
		}
	}
}
