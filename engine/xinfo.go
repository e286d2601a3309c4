package engine

// XINFO STREAM [FULL [COUNT n]] / GROUPS / CONSUMERS / HELP with Redis 7.4's
// fields (t_stream.c xinfoCommand).

func init() {
	register("xinfo", cmdXInfo)
	registerValidator("xinfo", func(_ int64, argv [][]byte) *Error { return xinfoSyntax(argv) })
}

var xinfoHelp = []string{
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
}

var xinfoSubArity = map[string]int{"CONSUMERS": 4, "GROUPS": 3, "STREAM": -3, "HELP": 2}

// xinfoSyntax checks what Redis checks before looking at the key: the
// subcommand and its arity.
func xinfoSyntax(argv [][]byte) *Error {
	_, err := checkSubArity(argv, xinfoSubArity)
	return err
}

func cmdXInfo(e *Engine, now int64, argv [][]byte) Reply {
	sub, err := checkSubArity(argv, xinfoSubArity)
	if err != nil {
		return err
	}
	if sub == "HELP" {
		return HelpReply(argv[0], xinfoHelp)
	}
	key := argv[2]
	s, werr := e.lookupStream(key, now)
	if werr != nil {
		return werr
	}
	if s == nil {
		return ErrNoSuchKey
	}
	switch {
	case sub == "CONSUMERS" && len(argv) == 4:
		g := s.lookupGroup(argv[3])
		if g == nil {
			return noGroupForKeyErr(argv[3], key)
		}
		out := make(Array, 0, len(g.Consumers))
		for _, c := range g.Consumers {
			inactive := int64(-1)
			if c.ActiveTime != -1 {
				inactive = now - c.ActiveTime
			}
			idle := now - c.SeenTime
			if idle < 0 {
				idle = 0
			}
			out = append(out, Map{
				Bulk("name"), BulkString(c.Name),
				Bulk("pending"), Integer(c.PEL.Len()),
				Bulk("idle"), Integer(idle),
				Bulk("inactive"), Integer(inactive),
			})
		}
		return out
	case sub == "GROUPS" && len(argv) == 3:
		out := make(Array, 0, len(s.Groups))
		for _, g := range s.Groups {
			out = append(out, Map{
				Bulk("name"), BulkString(g.Name),
				Bulk("consumers"), Integer(len(g.Consumers)),
				Bulk("pending"), Integer(g.PEL.Len()),
				Bulk("last-delivered-id"), idBulk(g.LastID),
				Bulk("entries-read"), entriesReadReply(g),
				Bulk("lag"), lagReply(s, g),
			})
		}
		return out
	case sub == "STREAM":
		r := xinfoStream(s, argv, e.cfg)
		if m, ok := r.(Map); ok {
			// raftstream extension: the retention policy governing the
			// stream, as a last field pair (retention.go)
			r = append(m, e.retentionXInfo(key)...)
		}
		return r
	}
	return SubcommandSyntaxError(argv)
}

func entriesReadReply(g *Group) Reply {
	if g.EntriesRead == entriesReadInvalid {
		return NullBulk{}
	}
	return Integer(g.EntriesRead)
}

func lagReply(s *Stream, g *Group) Reply {
	if lag, ok := s.lag(g); ok {
		return Integer(lag)
	}
	return NullBulk{}
}

// xinfoStream is xinfoReplyWithStreamInfo.
func xinfoStream(s *Stream, argv [][]byte, cfg Config) Reply {
	opts := argv[3:]
	full := len(opts) > 0
	count := int64(10)
	if full {
		if len(opts) != 1 && len(opts) != 3 {
			return SubcommandSyntaxError(argv)
		}
		if !EqFold(opts[0], "FULL") {
			return SubcommandSyntaxError(argv)
		}
		if len(opts) == 3 {
			if !EqFold(opts[1], "COUNT") {
				return SubcommandSyntaxError(argv)
			}
			v, err := intArg(opts[2], "")
			if err != nil {
				return err
			}
			if v < 0 {
				v = 10
			}
			count = v
		}
	}
	m := Map{
		Bulk("length"), Integer(int64(s.Length)),
		Bulk("radix-tree-keys"), Integer(s.RaxKeys()),
		Bulk("radix-tree-nodes"), Integer(s.RaxNodes()),
		Bulk("last-generated-id"), idBulk(s.LastID),
		Bulk("max-deleted-entry-id"), idBulk(s.MaxDeletedID),
		Bulk("entries-added"), Integer(int64(s.EntriesAdded)),
		Bulk("recorded-first-entry-id"), idBulk(s.FirstID),
	}
	m = append(m, s.idmpXInfo(cfg)...)
	if !full {
		m = append(m, Bulk("groups"), Integer(len(s.Groups)))
		var first, last Reply = NullBulk{}, NullBulk{}
		if it := s.Iter(MinID, MaxID, false); it.Next() {
			first = entryReply(it.ID, it.Fields)
		}
		if it := s.Iter(MinID, MaxID, true); it.Next() {
			last = entryReply(it.ID, it.Fields)
		}
		return append(m, Bulk("first-entry"), first, Bulk("last-entry"), last)
	}
	entries := Array{}
	for it := s.Iter(MinID, MaxID, false); (count == 0 || int64(len(entries)) < count) && it.Next(); {
		entries = append(entries, entryReply(it.ID, it.Fields))
	}
	groups := make(Array, 0, len(s.Groups))
	for _, g := range s.Groups {
		pending := Array{}
		g.PEL.Ascend(MinID, MaxID, func(nk *NACK) bool {
			if count != 0 && int64(len(pending)) >= count {
				return false
			}
			owner := "" // released by XNACK
			if nk.Consumer != nil {
				owner = nk.Consumer.Name
			}
			pending = append(pending, Array{idBulk(nk.ID), BulkString(owner),
				Integer(nk.DeliveryTime), Integer(int64(nk.DeliveryCount))})
			return true
		})
		consumers := make(Array, 0, len(g.Consumers))
		for _, c := range g.Consumers {
			cp := Array{}
			c.PEL.Ascend(MinID, MaxID, func(nk *NACK) bool {
				if count != 0 && int64(len(cp)) >= count {
					return false
				}
				cp = append(cp, Array{idBulk(nk.ID), Integer(nk.DeliveryTime), Integer(int64(nk.DeliveryCount))})
				return true
			})
			consumers = append(consumers, Map{
				Bulk("name"), BulkString(c.Name),
				Bulk("seen-time"), Integer(c.SeenTime),
				Bulk("active-time"), Integer(c.ActiveTime),
				Bulk("pel-count"), Integer(c.PEL.Len()),
				Bulk("pending"), cp,
			})
		}
		groups = append(groups, Map{
			Bulk("name"), BulkString(g.Name),
			Bulk("last-delivered-id"), idBulk(g.LastID),
			Bulk("entries-read"), entriesReadReply(g),
			Bulk("lag"), lagReply(s, g),
			Bulk("pel-count"), Integer(g.PEL.Len()),
			Bulk("nacked-count"), Integer(g.nackedCount()),
			Bulk("pending"), pending,
			Bulk("consumers"), consumers,
		})
	}
	return append(m, Bulk("entries"), entries, Bulk("groups"), groups)
}
