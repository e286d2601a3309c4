package resp

import (
	"strings"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// COMMAND and its subcommands, answered from the command table in Redis 7's
// reply shapes.

func statusSet(names []string) engine.Set {
	out := engine.Set{}
	for _, n := range names {
		out = append(out, engine.SimpleString(n))
	}
	return out
}

// keySpecs derives the COMMAND INFO key specifications from the table.
func keySpecs(cmd *command.Command) engine.Set {
	if cmd.StreamsKeyword {
		start := 1
		if cmd.Name == "xreadgroup" {
			start = 4
		}
		return engine.Set{engine.Map{
			engine.Bulk("flags"), statusSet(keyFlags(cmd)),
			engine.Bulk("begin_search"), engine.Map{engine.Bulk("type"), engine.Bulk("keyword"), engine.Bulk("spec"),
				engine.Map{engine.Bulk("keyword"), engine.Bulk("STREAMS"), engine.Bulk("startfrom"), engine.Integer(start)}},
			engine.Bulk("find_keys"), engine.Map{engine.Bulk("type"), engine.Bulk("range"), engine.Bulk("spec"),
				engine.Map{engine.Bulk("lastkey"), engine.Integer(-1), engine.Bulk("keystep"), engine.Integer(1), engine.Bulk("limit"), engine.Integer(2)}},
		}}
	}
	if cmd.First == 0 {
		return engine.Set{}
	}
	last := 0
	if cmd.Last < 0 {
		last = cmd.Last
	} else {
		last = cmd.Last - cmd.First
	}
	return engine.Set{engine.Map{
		engine.Bulk("flags"), statusSet(keyFlags(cmd)),
		engine.Bulk("begin_search"), engine.Map{engine.Bulk("type"), engine.Bulk("index"), engine.Bulk("spec"),
			engine.Map{engine.Bulk("index"), engine.Integer(cmd.First)}},
		engine.Bulk("find_keys"), engine.Map{engine.Bulk("type"), engine.Bulk("range"), engine.Bulk("spec"),
			engine.Map{engine.Bulk("lastkey"), engine.Integer(last), engine.Bulk("keystep"), engine.Integer(cmd.Step), engine.Bulk("limit"), engine.Integer(0)}},
	}}
}

func keyFlags(cmd *command.Command) []string {
	switch {
	case cmd.Flags&command.FlagWrite != 0:
		return []string{"RW", "update"}
	default:
		return []string{"RO", "access"}
	}
}

// info is the COMMAND INFO entry of cmd.
func commandInfo(cmd *command.Command) engine.Array {
	name := cmd.Name
	first, last, step := cmd.First, cmd.Last, cmd.Step
	flags := cmd.Flags
	if cmd.StreamsKeyword {
		first, last, step = 0, 0, 0
	}
	subs := engine.Array{}
	for _, sc := range cmd.Subs() {
		subs = append(subs, commandInfo(sc))
	}
	return engine.Array{
		engine.Bulk(name),
		engine.Integer(cmd.Arity),
		statusSet(flags.Names()),
		engine.Integer(first), engine.Integer(last), engine.Integer(step),
		statusSet(strings.Fields(cmd.Categories)),
		tipsSet(cmd.Tips),
		keySpecs(cmd),
		subs,
	}
}

func tipsSet(tips []string) engine.Set {
	out := engine.Set{}
	for _, t := range tips {
		out = append(out, engine.SimpleString(t))
	}
	return out
}

func cmdCommand(s *Server, c *client, argv [][]byte) reply {
	out := engine.Array{}
	for _, cmd := range command.Top() {
		out = append(out, commandInfo(cmd))
	}
	return out
}

func cmdCommandCount(s *Server, c *client, argv [][]byte) reply {
	return engine.Integer(len(command.Top()))
}

func cmdCommandInfo(s *Server, c *client, argv [][]byte) reply {
	if len(argv) == 2 {
		return cmdCommand(s, c, argv)
	}
	out := engine.Array{}
	for _, a := range argv[2:] {
		if cmd := command.Get(string(a)); cmd != nil {
			out = append(out, commandInfo(cmd))
		} else {
			out = append(out, engine.NullBulk{})
		}
	}
	return out
}

// commandDocs is cmd's COMMAND DOCS entry, in Redis 7.0's field order:
// the row's summary, since and group, then its Doc (docs data).
func commandDocs(cmd *command.Command) engine.Map {
	m := engine.Map{
		engine.Bulk("summary"), engine.Bulk(cmd.Summary),
		engine.Bulk("since"), engine.Bulk(cmd.Since),
		engine.Bulk("group"), engine.Bulk(cmd.Group),
	}
	if d := cmd.Doc; d != nil {
		m = appendIf(m, "complexity", d.Complexity)
		if len(d.DocFlags) > 0 {
			m = append(m, engine.Bulk("doc_flags"), statusSet(d.DocFlags))
		}
		m = appendIf(m, "deprecated_since", d.DeprecatedSince)
		m = appendIf(m, "replaced_by", d.ReplacedBy)
		if len(d.History) > 0 {
			h := engine.Set{}
			for _, e := range d.History {
				h = append(h, engine.Array{engine.Bulk(e[0]), engine.Bulk(e[1])})
			}
			m = append(m, engine.Bulk("history"), h)
		}
		if len(d.Arguments) > 0 {
			m = append(m, engine.Bulk("arguments"), docArgs(d.Arguments))
		}
	}
	if cmd.Sub != nil {
		subs := engine.Map{}
		for _, sc := range cmd.Subs() {
			subs = append(subs, engine.Bulk(sc.Name), commandDocs(sc))
		}
		m = append(m, engine.Bulk("subcommands"), subs)
	}
	return m
}

// appendIf adds the field k with the bulk value v to m unless v is empty.
func appendIf(m engine.Map, k, v string) engine.Map {
	if v == "" {
		return m
	}
	return append(m, engine.Bulk(k), engine.Bulk(v))
}

// docArgs is an argument list of COMMAND DOCS (Redis's
// addReplyCommandArgList).
func docArgs(args []command.Arg) engine.Array {
	out := make(engine.Array, 0, len(args))
	for _, a := range args {
		m := engine.Map{engine.Bulk("name"), engine.Bulk(a.Name), engine.Bulk("type"), engine.Bulk(a.Type)}
		if a.KeySpecIndex != nil {
			m = append(m, engine.Bulk("key_spec_index"), engine.Integer(*a.KeySpecIndex))
		}
		if a.Token != nil {
			m = append(m, engine.Bulk("token"), engine.Bulk(*a.Token))
		}
		m = appendIf(m, "summary", a.Summary)
		m = appendIf(m, "since", a.Since)
		m = appendIf(m, "deprecated_since", a.DeprecatedSince)
		if len(a.Flags) > 0 {
			m = append(m, engine.Bulk("flags"), statusSet(a.Flags))
		}
		if a.Type == "oneof" || a.Type == "block" {
			m = append(m, engine.Bulk("arguments"), docArgs(a.Arguments))
		}
		out = append(out, m)
	}
	return out
}

func cmdCommandDocs(s *Server, c *client, argv [][]byte) reply {
	out := engine.Map{}
	if len(argv) == 2 {
		for _, cmd := range command.Top() {
			out = append(out, engine.Bulk(cmd.Name), commandDocs(cmd))
		}
		return out
	}
	for _, a := range argv[2:] {
		if cmd := command.Get(string(a)); cmd != nil {
			out = append(out, engine.Bulk(cmd.Name), commandDocs(cmd))
		}
	}
	return out
}

func cmdCommandGetKeys(s *Server, c *client, argv [][]byte) reply {
	sub := argv[2:]
	cmd, er := command.Lookup(sub)
	if er != nil {
		if command.Get(string(sub[0])) == nil {
			return errorf("ERR Invalid command specified")
		}
		return errorf("ERR Invalid number of arguments specified for command")
	}
	idx := cmd.Keys(sub)
	if len(idx) == 0 {
		if cmd.StreamsKeyword {
			return errorf("ERR Invalid arguments specified for command")
		}
		return errorf("ERR The command has no key arguments")
	}
	out := engine.Array{}
	for _, i := range idx {
		out = append(out, engine.BulkString(sub[i]))
	}
	return out
}

// cmdCommandList implements COMMAND LIST [FILTERBY MODULE m|ACLCAT c|PATTERN p].
func cmdCommandList(s *Server, c *client, argv [][]byte) reply {
	filter := func(cmd *command.Command) bool { return true }
	if len(argv) == 5 && strings.EqualFold(string(argv[2]), "FILTERBY") {
		v := string(argv[4])
		switch strings.ToLower(string(argv[3])) {
		case "module":
			filter = func(*command.Command) bool { return false }
		case "aclcat":
			filter = func(cmd *command.Command) bool {
				for _, cat := range strings.Fields(cmd.Categories) {
					if strings.EqualFold(cat, "@"+v) {
						return true
					}
				}
				return false
			}
		case "pattern":
			filter = func(cmd *command.Command) bool { return engine.GlobMatch(strings.ToLower(v), cmd.Name, false) }
		default:
			return errSyntax
		}
	} else if len(argv) != 2 {
		return errSyntax
	}
	out := engine.Array{}
	for _, cmd := range command.Top() {
		if filter(cmd) {
			out = append(out, engine.Bulk(cmd.Name))
		}
		for _, sc := range cmd.Subs() {
			if filter(sc) {
				out = append(out, engine.Bulk(sc.Name))
			}
		}
	}
	return out
}
