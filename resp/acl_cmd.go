package resp

import (
	"strings"
	"sync"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// aclLogMax is how many ACL LOG entries are kept (Redis's acllog-max-len).
const aclLogMax = 128

// aclLog is ACL LOG: denied commands and keys and failed AUTHs, newest
// first; a repeat of the same denial within 60 s bumps the entry's count.
type aclLog struct {
	mu      sync.Mutex
	entries []*aclLogEntry
}

type aclLogEntry struct {
	count                           int64
	reason, context, object, userNm string
	created, updated                time.Time
	clientInfo                      string
}

func (l *aclLog) add(c *client, reason, object, user string) {
	now := time.Now()
	ctx := "toplevel"
	if c.multi != nil {
		ctx = "multi"
	}
	info := c.infoLine()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.entries {
		if e.reason == reason && e.context == ctx && e.object == object && e.userNm == user &&
			now.Sub(e.updated) < 60*time.Second {
			e.count++
			e.updated, e.clientInfo = now, info
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = e
			return
		}
	}
	e := &aclLogEntry{count: 1, reason: reason, context: ctx, object: object, userNm: user,
		created: now, updated: now, clientInfo: info}
	l.entries = append([]*aclLogEntry{e}, l.entries...)
	if len(l.entries) > aclLogMax {
		l.entries = l.entries[:aclLogMax]
	}
}

func (l *aclLog) reply(n int) reply {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	out := engine.Array{}
	for i, e := range l.entries {
		if i >= n {
			break
		}
		out = append(out, engine.Map{
			engine.Bulk("count"), engine.Integer(e.count),
			engine.Bulk("reason"), engine.Bulk(e.reason),
			engine.Bulk("context"), engine.Bulk(e.context),
			engine.Bulk("object"), engine.Bulk(e.object),
			engine.Bulk("username"), engine.Bulk(e.userNm),
			engine.Bulk("age-seconds"), engine.Double(float64(now.Sub(e.created).Milliseconds()) / 1000),
			engine.Bulk("client-info"), engine.Bulk(e.clientInfo),
		})
	}
	return out
}

func (l *aclLog) reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

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
	u := s.acl.get(string(argv[2]))
	if u == nil {
		return engine.NullBulk{}
	}
	flags := engine.Array{}
	if u.enabled {
		flags = append(flags, engine.Bulk("on"))
	} else {
		flags = append(flags, engine.Bulk("off"))
	}
	if u.nopass {
		flags = append(flags, engine.Bulk("nopass"))
	}
	if u.sanitize {
		flags = append(flags, engine.Bulk("sanitize-payload"))
	}
	pw := engine.Array{}
	for _, p := range u.passwords {
		pw = append(pw, engine.Bulk(p))
	}
	var keys []string
	if u.allKeys {
		keys = []string{"~*"}
	}
	for _, p := range u.keys {
		keys = append(keys, p.String())
	}
	channels := ""
	if u.name == "default" && u.unrestricted() {
		channels = "&*"
	}
	return engine.Map{
		engine.Bulk("flags"), flags,
		engine.Bulk("passwords"), pw,
		engine.Bulk("commands"), engine.Bulk(u.describeRules()),
		engine.Bulk("keys"), engine.Bulk(strings.Join(keys, " ")),
		engine.Bulk("channels"), engine.Bulk(channels),
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
	for _, u := range s.acl.sortedUsers() {
		out = append(out, engine.Bulk("user "+u.name+" "+u.describe()))
	}
	return out
}

func cmdACLUsers(s *Server, c *client, argv [][]byte) reply {
	out := engine.Array{}
	for _, u := range s.acl.sortedUsers() {
		out = append(out, engine.Bulk(u.name))
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
		for _, k := range aclCategories {
			out = append(out, engine.Bulk(k))
		}
	case 3:
		cat := strings.ToLower(string(argv[2]))
		if !isACLCategory(cat) || cat == "all" {
			return errorf("ERR Unknown category '%.128s'", argv[2])
		}
		for _, cmd := range command.Top() {
			if hasCategory(cmd, cat) {
				out = append(out, engine.Bulk(cmd.Name))
			}
			for _, sn := range cmd.Subs() {
				if hasCategory(sn, cat) {
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
			s.acl.log.reset()
			return engine.OK
		}
		v, ok := engine.ParseInt(argv[2])
		if !ok {
			return errorf("ERR value is not an integer or out of range")
		}
		n = int(max(0, min(v, aclLogMax)))
	} else if len(argv) > 3 {
		return errSyntax
	}
	return s.acl.log.reply(n)
}

func cmdACLDryRun(s *Server, c *client, argv [][]byte) reply {
	u := s.acl.get(string(argv[2]))
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
	if !u.unrestricted() {
		if !u.allowed(cmd) {
			return engine.Bulk("This user has no permissions to run the '" + cmd.Name + "' command")
		}
		if k := deniedKey(u, cmd, cargv); k != nil {
			return engine.Bulk("This user has no permissions to access the '" + string(k) + "' key")
		}
	}
	return engine.OK
}

// aclSetUser changes a user (through the replicated ACL when it is on).
func (s *Server) aclSetUser(name string, ops []string) *errReply {
	if s.aclReplicated() {
		return s.replicatedSetUser(name, ops)
	}
	return s.acl.setUser(name, ops)
}

func (s *Server) aclDelUsers(names []string) (int, *errReply) {
	if s.aclReplicated() {
		return s.replicatedDelUsers(names)
	}
	return s.acl.delUsers(names)
}
