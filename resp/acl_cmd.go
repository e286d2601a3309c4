package resp

import (
	"strings"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/acl"
	"github.com/raftstream/raftstream/resp/command"
)

// The ACL command family: ACL SETUSER, GETUSER, DELUSER, LIST, USERS,
// WHOAMI, CAT, LOG and DRYRUN. The answers come from resp/acl; SETUSER and
// DELUSER go through the replicated ACL when it is on (acl_repl.go).

func cmdACLSetUser(s *Server, c *client, argv [][]byte) reply {
	ops := make([]string, 0, len(argv)-3)
	for _, a := range argv[3:] {
		ops = append(ops, string(a))
	}
	if er := s.aclSetUser(string(argv[2]), ops); er != nil {
		return er
	}
	return engine.OK
}

func cmdACLGetUser(s *Server, c *client, argv [][]byte) reply {
	u := s.acl.Get(string(argv[2]))
	if u == nil {
		return engine.NullBulk{}
	}
	flags := engine.Array{}
	for _, f := range u.Flags() {
		flags = append(flags, engine.Bulk(f))
	}
	pw := engine.Array{}
	for _, p := range u.Passwords() {
		pw = append(pw, engine.Bulk(p))
	}
	return engine.Map{
		engine.Bulk("flags"), flags,
		engine.Bulk("passwords"), pw,
		engine.Bulk("commands"), engine.Bulk(u.Commands()),
		engine.Bulk("keys"), engine.Bulk(u.Keys()),
		engine.Bulk("channels"), engine.Bulk(u.Channels()),
		engine.Bulk("selectors"), engine.Array{},
	}
}

func cmdACLDelUser(s *Server, c *client, argv [][]byte) reply {
	names := make([]string, 0, len(argv)-2)
	for _, a := range argv[2:] {
		names = append(names, string(a))
	}
	n, er := s.aclDelUsers(names)
	if er != nil {
		return er
	}
	return engine.Integer(n)
}

func cmdACLList(s *Server, c *client, argv [][]byte) reply {
	out := engine.Array{}
	for _, u := range s.acl.Users() {
		out = append(out, engine.Bulk("user "+u.Name()+" "+u.Describe()))
	}
	return out
}

func cmdACLUsers(s *Server, c *client, argv [][]byte) reply {
	out := engine.Array{}
	for _, u := range s.acl.Users() {
		out = append(out, engine.Bulk(u.Name()))
	}
	return out
}

func cmdACLWhoami(s *Server, c *client, argv [][]byte) reply {
	return engine.Bulk(c.userName())
}

func cmdACLCat(s *Server, c *client, argv [][]byte) reply {
	out := engine.Array{}
	switch len(argv) {
	case 2:
		for _, k := range acl.Categories() {
			out = append(out, engine.Bulk(k))
		}
	case 3:
		cat := strings.ToLower(string(argv[2]))
		if !acl.IsCategory(cat) || cat == "all" {
			return errorf("ERR Unknown category '%.128s'", argv[2])
		}
		for _, cmd := range command.Top() {
			if cmd.HasCategory(cat) {
				out = append(out, engine.Bulk(cmd.Name))
			}
			for _, sn := range cmd.Subs() {
				if sn.HasCategory(cat) {
					out = append(out, engine.Bulk(sn.Name))
				}
			}
		}
	default:
		return errSyntax
	}
	return out
}

func cmdACLLog(s *Server, c *client, argv [][]byte) reply {
	n := 10
	if len(argv) == 3 {
		if strings.EqualFold(string(argv[2]), "RESET") {
			s.aclLog.Reset()
			return engine.OK
		}
		v, ok := engine.ParseInt(argv[2])
		if !ok {
			return errorf("ERR value is not an integer or out of range")
		}
		n = int(max(0, min(v, acl.LogMax)))
	} else if len(argv) > 3 {
		return errSyntax
	}
	now := time.Now()
	out := engine.Array{}
	for _, e := range s.aclLog.Entries(n) {
		out = append(out, engine.Map{
			engine.Bulk("count"), engine.Integer(e.Count),
			engine.Bulk("reason"), engine.Bulk(e.Reason),
			engine.Bulk("context"), engine.Bulk(e.Context),
			engine.Bulk("object"), engine.Bulk(e.Object),
			engine.Bulk("username"), engine.Bulk(e.Username),
			engine.Bulk("age-seconds"), engine.Double(float64(now.Sub(e.Created).Milliseconds()) / 1000),
			engine.Bulk("client-info"), engine.Bulk(e.ClientInfo),
		})
	}
	return out
}

func cmdACLDryRun(s *Server, c *client, argv [][]byte) reply {
	u := s.acl.Get(string(argv[2]))
	if u == nil {
		return errorf("ERR User '%s' not found", argv[2])
	}
	cargv := argv[3:]
	cmd, er := command.Lookup(cargv)
	if er != nil {
		if strings.HasPrefix(er.Msg, "ERR unknown command") {
			return errorf("ERR Command '%s' not found", cargv[0])
		}
		return er
	}
	switch d := u.Allowed(cmd, cargv); {
	case d == nil:
	case d.Reason == acl.ReasonKey:
		return engine.Bulk("This user has no permissions to access the '" + d.Object + "' key")
	default:
		return engine.Bulk("This user has no permissions to run the '" + d.Object + "' command")
	}
	return engine.OK
}

// aclSetUser changes a user (through the replicated ACL when it is on).
func (s *Server) aclSetUser(name string, ops []string) *errReply {
	if s.aclReplicated() {
		return s.replicatedSetUser(name, ops)
	}
	return s.acl.SetUser(name, ops)
}

func (s *Server) aclDelUsers(names []string) (int, *errReply) {
	if s.aclReplicated() {
		return s.replicatedDelUsers(names)
	}
	return s.acl.DelUsers(names)
}
