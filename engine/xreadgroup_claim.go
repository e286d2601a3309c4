package engine

import "sort"

// XREADGROUP ... CLAIM min-idle-time (Redis 8.4). With the ">" ID, pending
// entries of the group idle for at least min-idle-time are claimed by the
// reading consumer and returned before new entries: longest idle first
// (ties by ID). COUNT bounds claimed plus new entries per stream. A claimed
// entry is reported as
//
//	[id, [field value ...], ms-since-last-delivery, delivery-count]
//
// with the idle time and the number of previous deliveries as they were
// before this read (integers); new entries keep the two-element shape.
// Claiming sets the delivery time to now and increments the delivery count,
// as XCLAIM does; NOACK does not apply to claimed entries. Pending entries
// whose stream entry was deleted are dropped from the PEL, as XAUTOCLAIM
// does. With an ID other than ">" CLAIM is ignored, as documented.
//
// NB: Redis orders idle entries across all the streams of one call; here
// they are ordered within each stream's reply.

// parseClaimIdle parses CLAIM's min-idle-time: a non-negative integer.
func parseClaimIdle(b []byte) (int64, *Error) {
	v, err := cgArgInt(b, "min-idle-time is not an integer or out of range")
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
	sort.SliceStable(idle, func(i, j int) bool { return idle[i].DeliveryTime < idle[j].DeliveryTime })
	var out Array
	for _, nk := range idle {
		if count > 0 && int64(len(out)) >= count {
			break
		}
		fields, ok := s.Lookup(nk.ID)
		if !ok {
			g.PEL.Delete(nk.ID)
			nk.Consumer.PEL.Delete(nk.ID)
			continue
		}
		if e.deadLetter(key, s, g, nk, fields, now) {
			continue
		}
		idleMs, prev := now-nk.DeliveryTime, nk.DeliveryCount
		if nk.Consumer != c {
			nk.Consumer.PEL.Delete(nk.ID)
			nk.Consumer = c
			c.PEL.Insert(nk)
		}
		nk.DeliveryTime = now
		nk.DeliveryCount++
		c.ActiveTime = now
		r := entryReply(nk.ID, fields).(Array)
		out = append(out, Array{r[0], r[1], Integer(idleMs), Integer(int64(prev))})
	}
	return out
}
