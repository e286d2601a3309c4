package engine

// XCLAIM and XAUTOCLAIM: moving pending entries between consumers of a
// group, with Redis 7.4's rules (t_stream.c xclaimCommand,
// xautoclaimCommand). Entries deleted from the stream lose their NACK when
// a claim meets them.

// ---- XCLAIM ---------------------------------------------------------------

func cmdXClaim(e *Engine, now int64, argv [][]byte) Reply {
	if err := arityMin(argv, 6, "xclaim"); err != nil {
		return err
	}
	s, g, gerr := e.lookupStreamGroup(argv[1], argv[2], now)
	if gerr != nil {
		return gerr
	}
	minIdle, err := intArg(argv[4], "Invalid min-idle-time argument for XCLAIM")
	if err != nil {
		return err
	}
	if minIdle < 0 {
		minIdle = 0
	}
	// IDs come first; the first argument that is not an ID starts the
	// options.
	j := 5
	var ids []ID
	for ; j < len(argv); j++ {
		id, err := parseStrictID(argv[j], 0)
		if err != nil {
			break
		}
		ids = append(ids, id)
	}
	retry := int64(-1)
	delivery := int64(-1)
	force, justid := false, false
	var lastID ID
	for ; j < len(argv); j++ {
		more := len(argv) - 1 - j
		o := argv[j]
		switch {
		case EqFold(o, "FORCE"):
			force = true
		case EqFold(o, "JUSTID"):
			justid = true
		case EqFold(o, "IDLE") && more > 0:
			j++
			v, err := intArg(argv[j], "Invalid IDLE option argument for XCLAIM")
			if err != nil {
				return err
			}
			delivery = now - v
		case EqFold(o, "TIME") && more > 0:
			j++
			v, err := intArg(argv[j], "Invalid TIME option argument for XCLAIM")
			if err != nil {
				return err
			}
			delivery = v
		case EqFold(o, "RETRYCOUNT") && more > 0:
			j++
			v, err := intArg(argv[j], "Invalid RETRYCOUNT option argument for XCLAIM")
			if err != nil {
				return err
			}
			retry = v
		case EqFold(o, "LASTID") && more > 0:
			j++
			if lastID, err = parseStrictID(argv[j], 0); err != nil {
				return err
			}
		default:
			return Errorf("ERR Unrecognized XCLAIM option '%s'", o)
		}
	}
	if g.LastID.Less(lastID) {
		g.LastID = lastID
	}
	if delivery == -1 || delivery < 0 || delivery > now {
		// A delivery time in the future or before the epoch is taken as
		// now rather than refused (clients compute it from their clocks).
		delivery = now
	}
	c, _ := g.lookupOrCreateConsumer(argv[3], now)
	c.SeenTime = now
	out := Array{}
	for _, id := range ids {
		nk, pending := g.PEL.Get(id)
		fields, exists := s.Lookup(id)
		if !exists {
			// The entry is gone: drop its NACK.
			if pending {
				g.PEL.Delete(id)
				nk.disown()
			}
			continue
		}
		if force && !pending {
			nk = &NACK{ID: id, DeliveryTime: now, DeliveryCount: 1}
			g.PEL.Insert(nk)
			pending = true
		}
		if !pending {
			continue
		}
		if nk.Consumer != nil && minIdle != 0 && now-nk.DeliveryTime < minIdle {
			continue
		}
		if retry < 0 && !justid && e.deadLetter(argv[1], s, g, nk, fields, now) {
			continue
		}
		nk.own(c)
		nk.DeliveryTime = delivery
		if retry >= 0 {
			nk.DeliveryCount = uint64(retry)
		} else if !justid {
			nk.bumpDeliveries()
		}
		if justid {
			out = append(out, idBulk(id))
		} else {
			out = append(out, entryReply(id, fields))
		}
		c.ActiveTime = now
	}
	return out
}

// ---- XAUTOCLAIM -----------------------------------------------------------

type xautoclaimArgs struct {
	minIdle int64
	start   ID
	count   int64
	justid  bool
}

func xautoclaimSyntax(argv [][]byte) (xautoclaimArgs, *Error) {
	a := xautoclaimArgs{count: 100}
	if err := arityMin(argv, 6, "xautoclaim"); err != nil {
		return a, err
	}
	v, err := intArg(argv[4], "Invalid min-idle-time argument for XAUTOCLAIM")
	if err != nil {
		return a, err
	}
	if v < 0 {
		v = 0
	}
	a.minIdle = v
	if a.start, err = parseIntervalStart(argv[5]); err != nil {
		return a, err
	}
	// LONG_MAX / max(sizeof(streamID), attempts factor of 10)
	const maxCount = (1<<63 - 1) / 16
	for j := 6; j < len(argv); j++ {
		more := len(argv) - 1 - j
		switch {
		case EqFold(argv[j], "COUNT") && more > 0:
			c, ok := ParseInt(argv[j+1])
			if !ok || c < 1 || c > maxCount {
				return a, Errorf("ERR COUNT must be > 0")
			}
			a.count = c
			j++
		case EqFold(argv[j], "JUSTID"):
			a.justid = true
		default:
			return a, ErrSyntax
		}
	}
	return a, nil
}

func cmdXAutoClaim(e *Engine, now int64, argv [][]byte) Reply {
	a, err := xautoclaimSyntax(argv)
	if err != nil {
		return err
	}
	s, g, gerr := e.lookupStreamGroup(argv[1], argv[2], now)
	if gerr != nil {
		return gerr
	}
	c, _ := g.lookupOrCreateConsumer(argv[3], now)
	c.SeenTime = now

	// Like Redis, scan at most COUNT*10 PEL entries; deleted entries count
	// towards COUNT. The cursor is the entry after the last one scanned, or
	// 0-0 when the scan reached the end of the PEL.
	attempts := a.count * 10
	count := a.count
	claimed := Array{}
	deleted := Array{}
	cu := g.PEL.Seek(a.start)
	exhausted := false
	for attempts > 0 && count > 0 {
		attempts--
		nk, ok := cu.Next()
		if !ok {
			exhausted = true
			break
		}
		fields, exists := s.Lookup(nk.ID)
		if !exists {
			g.PEL.Delete(nk.ID)
			nk.disown()
			deleted = append(deleted, idBulk(nk.ID))
			cu = g.PEL.Seek(nk.ID)
			count--
			continue
		}
		// An owner-less (XNACK-released) entry is claimable whatever the
		// min-idle-time, as in Redis.
		if nk.Consumer != nil && a.minIdle != 0 && now-nk.DeliveryTime < a.minIdle {
			continue
		}
		if !a.justid && e.deadLetter(argv[1], s, g, nk, fields, now) {
			cu = g.PEL.Seek(nk.ID)
			count--
			continue
		}
		nk.own(c)
		nk.DeliveryTime = now
		if a.justid {
			claimed = append(claimed, idBulk(nk.ID))
		} else {
			nk.bumpDeliveries()
			claimed = append(claimed, entryReply(nk.ID, fields))
		}
		count--
		c.ActiveTime = now
	}
	var cursor ID
	if !exhausted {
		if nk, ok := cu.Next(); ok {
			cursor = nk.ID
		}
	}
	return Array{idBulk(cursor), claimed, deleted}
}
