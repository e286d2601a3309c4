package resp

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/resp/command"
)

// Connection and server commands answered by the server itself.

func cmdPing(s *Server, c *client, argv [][]byte) reply {
	switch len(argv) {
	case 1:
		return engine.SimpleString("PONG")
	case 2:
		return engine.BulkString(argv[1])
	}
	return command.WrongArity("ping")
}

func cmdEcho(s *Server, c *client, argv [][]byte) reply { return engine.BulkString(argv[1]) }

// cmdHello implements HELLO [protover [AUTH username password] [SETNAME name]].
func cmdHello(s *Server, c *client, argv [][]byte) reply {
	proto := c.proto
	if len(argv) >= 2 {
		v, ok := engine.ParseInt(argv[1])
		if !ok {
			return errorf("ERR Protocol version is not an integer or out of range")
		}
		if v < 2 || v > 3 {
			return errorf("NOPROTO unsupported protocol version")
		}
		proto = int(v)
	}
	var setname []byte
	var user, pass []byte
	hasAuth, hasName := false, false
	for i := 2; i < len(argv); i++ {
		more := len(argv) - i - 1
		switch {
		case bytes.EqualFold(argv[i], []byte("AUTH")) && more >= 2:
			user, pass, hasAuth = argv[i+1], argv[i+2], true
			i += 2
		case bytes.EqualFold(argv[i], []byte("SETNAME")) && more >= 1:
			setname, hasName = argv[i+1], true
			i++
		default:
			return errorf("ERR Syntax error in HELLO option '%s'", argv[i])
		}
	}
	if hasAuth {
		if er := s.aclAuth(c, user, pass); er != nil {
			return er
		}
	}
	if !c.authed {
		return errHelloNoAuth
	}
	if hasName {
		if er := validClientName(setname); er != nil {
			return er
		}
		c.mu.Lock()
		c.name = string(setname)
		c.mu.Unlock()
	}
	c.proto = proto
	mode := "standalone"
	if s.cfg.ClusterMode {
		mode = "cluster"
	}
	return engine.Map{
		engine.Bulk("server"), engine.Bulk("redis"),
		engine.Bulk("version"), engine.Bulk(Version),
		engine.Bulk("proto"), engine.Integer(proto),
		engine.Bulk("id"), engine.Integer(c.id),
		engine.Bulk("mode"), engine.Bulk(mode),
		engine.Bulk("role"), engine.Bulk("master"),
		engine.Bulk("modules"), engine.Array{},
	}
}

// checkAuth checks a username/password pair against requirepass (the only
// user is "default").
func (s *Server) checkAuth(user, pass []byte) *errReply {
	if string(user) != "default" {
		return errWrongPass
	}
	if s.cfg.RequirePass == "" || string(pass) == s.cfg.RequirePass {
		return nil
	}
	return errWrongPass
}

func cmdAuth(s *Server, c *client, argv [][]byte) reply {
	switch len(argv) {
	case 2:
		if d := s.acl.Get("default"); d == nil || d.NoPass() {
			return errAuthNoPass
		}
		if er := s.aclAuth(c, []byte("default"), argv[1]); er != nil {
			return er
		}
	case 3:
		if er := s.aclAuth(c, argv[1], argv[2]); er != nil {
			return er
		}
	default:
		return errSyntax
	}
	return engine.OK
}

func cmdSelect(s *Server, c *client, argv [][]byte) reply {
	n, ok := engine.ParseInt(argv[1])
	if !ok {
		return errorf("ERR value is not an integer or out of range")
	}
	if n < -(1<<31) || n > (1<<31-1) {
		return errorf("ERR value is out of range, value must between -2147483648 and 2147483647")
	}
	if s.cfg.ClusterMode && n != 0 {
		return errorf("ERR SELECT is not allowed in cluster mode")
	}
	if n != 0 {
		return errDBRange
	}
	return engine.OK
}

func cmdQuit(s *Server, c *client, argv [][]byte) reply {
	c.write(engine.OK, c.proto)
	c.quitting = true
	return nil
}

func cmdReset(s *Server, c *client, argv [][]byte) reply {
	s.unmonitor(c)
	c.multi = nil
	c.readonly = false
	c.asking = false
	c.proto = 2
	c.user = s.acl.DefaultAuto()
	c.authed = c.user != nil
	c.mu.Lock()
	c.name = ""
	c.mu.Unlock()
	return engine.SimpleString("RESET")
}

func cmdReadonly(s *Server, c *client, argv [][]byte) reply {
	if !s.cfg.ClusterMode {
		return errorf("ERR This instance has cluster support disabled")
	}
	c.readonly = true
	return engine.OK
}

func cmdReadwrite(s *Server, c *client, argv [][]byte) reply {
	if !s.cfg.ClusterMode {
		return errorf("ERR This instance has cluster support disabled")
	}
	c.readonly = false
	return engine.OK
}

func cmdAsking(s *Server, c *client, argv [][]byte) reply {
	if !s.cfg.ClusterMode {
		return errorf("ERR This instance has cluster support disabled")
	}
	c.asking = true
	return engine.OK
}

func cmdTime(s *Server, c *client, argv [][]byte) reply {
	now := time.Now()
	return engine.Array{
		engine.Bulk(strconv.FormatInt(now.Unix(), 10)),
		engine.Bulk(strconv.FormatInt(int64(now.Nanosecond()/1000), 10)),
	}
}

// cmdDebug implements DEBUG RELOAD (proposed to every shard: each replica
// round-trips its engine through the snapshot encoding) and DEBUG SLEEP.
func cmdDebug(s *Server, c *client, argv [][]byte) reply {
	switch strings.ToLower(string(argv[1])) {
	case "reload":
		if len(argv) != 2 {
			return errSyntax
		}
		return s.allShardsWrite([][]byte{[]byte("DEBUG"), []byte("RELOAD")})
	case "sleep":
		if len(argv) != 3 {
			return errSyntax
		}
		f, err := strconv.ParseFloat(string(argv[2]), 64)
		if err != nil {
			return errorf("ERR value is not a valid float")
		}
		if f > 0 {
			time.Sleep(time.Duration(f * float64(time.Second)))
		}
		return engine.OK
	}
	return errorf("ERR unknown subcommand '%.128s'. Try DEBUG HELP.", argv[1])
}

// allShardsWrite proposes argv to every shard this node leads and returns
// the first error, or the first shard's reply.
func (s *Server) allShardsWrite(argv [][]byte) reply {
	var futs []*fsm.Future
	for sh := 0; sh < s.be.NumShards(); sh++ {
		if !s.leads(sh) {
			continue
		}
		futs = append(futs, s.be.Submit(sh, [][][]byte{argv}))
	}
	var first reply = engine.OK
	for i, f := range futs {
		r := s.waitOne(f, -1)
		if _, isErr := r.(*engine.Error); isErr {
			return r
		}
		if i == 0 {
			first = r
		}
	}
	return first
}

// leads reports whether this node leads shard sh (single node: always).
func (s *Server) leads(sh int) bool {
	st, ok := s.be.ShardStatus(sh)
	if !ok {
		return false
	}
	return strings.EqualFold(st.Role, "leader")
}

// ---- FUNCTION (no functions exist) ----

func cmdFunctionFlush(s *Server, c *client, argv [][]byte) reply {
	if len(argv) > 3 {
		return errSyntax
	}
	if len(argv) == 3 {
		switch strings.ToLower(string(argv[2])) {
		case "async", "sync":
		default:
			return errorf("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		}
	}
	return engine.OK
}

func cmdFunctionList(s *Server, c *client, argv [][]byte) reply { return engine.Array{} }
