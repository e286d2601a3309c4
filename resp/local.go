package resp

import (
	"bytes"
	"context"
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

// cmdWait answers WAIT numreplicas timeout. Every acknowledged write is
// already on a majority of its shard's replicas, so the answer is the
// number of other replicas in a majority (0 for a single node) without
// waiting.
func cmdWait(s *Server, c *client, argv [][]byte) reply {
	if _, ok := engine.ParseInt(argv[1]); !ok {
		return errNotInteger
	}
	t, ok := engine.ParseInt(argv[2])
	if !ok {
		return errorf("ERR timeout is not an integer or out of range")
	}
	if t < 0 {
		return errorf("ERR timeout is negative")
	}
	top := s.be.Topology()
	n := 0
	for _, sh := range top.Shards {
		if m := len(sh.Replicas) / 2; n == 0 || m < n {
			n = m
		}
	}
	return engine.Integer(n)
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

// ---- CONFIG ----

// configParam is one CONFIG GET/SET parameter. Replicated parameters are
// read from the engine and set through the log on every shard.
type configParam struct {
	name       string
	replicated bool
	get        func(s *Server) string
}

func (s *Server) engineConfig() engine.Config {
	cfg := engine.DefaultConfig()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// A linearizable read where this node leads shard 0, so CONFIG GET
	// right after a restart sees every replayed CONFIG SET; a possibly
	// stale local read otherwise (the value is replicated to every shard).
	read := func(e *engine.Engine) { cfg = e.Config() }
	if err := s.be.Read(ctx, 0, false, read); err != nil {
		_ = s.be.Read(ctx, 0, true, read)
	}
	return cfg
}

func (s *Server) localConf(name, def string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.conf[name]; ok {
		return v
	}
	return def
}

func constParam(name, v string) configParam {
	return configParam{name: name, get: func(s *Server) string { return s.localConf(name, v) }}
}

var configParams = []configParam{
	{name: "stream-node-max-bytes", replicated: true, get: func(s *Server) string { return strconv.Itoa(s.engineConfig().NodeMaxBytes) }},
	{name: "stream-node-max-entries", replicated: true, get: func(s *Server) string { return strconv.Itoa(s.engineConfig().NodeMaxEntries) }},
	{name: "stream-idmp-duration", replicated: true, get: func(s *Server) string { return strconv.Itoa(s.engineConfig().IdmpDuration) }},
	{name: "stream-idmp-maxsize", replicated: true, get: func(s *Server) string { return strconv.Itoa(s.engineConfig().IdmpMaxSize) }},
	{name: "port", get: func(s *Server) string { return strconv.Itoa(s.cfg.Port) }},
	{name: "bind", get: func(s *Server) string { return s.cfg.Bind }},
	{name: "dir", get: func(s *Server) string { return s.cfg.Dir }},
	{name: "requirepass", get: func(s *Server) string { return s.cfg.RequirePass }},
	{name: "proto-max-bulk-len", get: func(s *Server) string { return strconv.FormatInt(s.cfg.ProtoMaxBulkLen, 10) }},
	{name: "client-output-buffer-limit", get: func(s *Server) string { return s.buf.outputLimitString() }},
	{name: "client-query-buffer-limit", get: func(s *Server) string { return strconv.FormatInt(s.buf.query.Load(), 10) }},
	{name: "cluster-enabled", get: func(s *Server) string {
		if s.cfg.ClusterMode {
			return "yes"
		}
		return "no"
	}},
	constParam("appendonly", "no"),
	constParam("appendfsync", "everysec"),
	constParam("save", ""),
	constParam("databases", "1"),
	constParam("maxmemory", "0"),
	constParam("maxmemory-policy", "noeviction"),
	constParam("maxclients", "10000"),
	constParam("timeout", "0"),
	constParam("tcp-keepalive", "300"),
	constParam("loglevel", "notice"),
	constParam("notify-keyspace-events", ""),
	constParam("slowlog-log-slower-than", "10000"),
	constParam("slowlog-max-len", "128"),
	constParam("lua-time-limit", "5000"),
	constParam("busy-reply-threshold", "5000"),
	constParam("lazyfree-lazy-user-del", "no"),
	constParam("lazyfree-lazy-user-flush", "no"),
}

func findParam(name string) *configParam {
	for i := range configParams {
		if configParams[i].name == name {
			return &configParams[i]
		}
	}
	return nil
}

// cmdConfigGet implements CONFIG GET pattern [pattern ...]; the reply lists
// matches sorted by name.
func cmdConfigGet(s *Server, c *client, argv [][]byte) reply {
	var out engine.Map
	seen := map[string]bool{}
	var names []string
	for _, pat := range argv[2:] {
		p := strings.ToLower(string(pat))
		for _, cp := range configParams {
			if !seen[cp.name] && engine.GlobMatch(p, cp.name, false) {
				seen[cp.name] = true
				names = append(names, cp.name)
			}
		}
	}
	sortStrings(names)
	for _, n := range names {
		out = append(out, engine.Bulk(n), engine.Bulk(findParam(n).get(s)))
	}
	if out == nil {
		out = engine.Map{}
	}
	return out
}

// cmdConfigSet implements CONFIG SET param value [param value ...]. The
// stream-node-* parameters are replicated: they are proposed to every shard.
func cmdConfigSet(s *Server, c *client, argv [][]byte) reply {
	if (len(argv)-2)%2 != 0 {
		return errorf("ERR wrong number of arguments for 'config|set' command")
	}
	var replicated [][]byte
	var limits []func() // buffer limits (limits_buf.go), applied once all parsed
	local := map[string]string{}
	for i := 2; i < len(argv); i += 2 {
		name := strings.ToLower(string(argv[i]))
		p := findParam(name)
		if p == nil {
			return errorf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", argv[i])
		}
		if p.replicated {
			replicated = append(replicated, argv[i], argv[i+1])
			continue
		}
		switch name {
		case "port", "bind", "dir", "requirepass", "proto-max-bulk-len", "cluster-enabled", "databases":
			return errorf("ERR CONFIG SET failed (possibly related to argument '%s') - can't set immutable config", argv[i])
		case "client-output-buffer-limit", "client-query-buffer-limit":
			apply, er := s.buf.set(name, string(argv[i+1]))
			if er != nil {
				return er
			}
			limits = append(limits, apply)
			continue
		}
		local[name] = string(argv[i+1])
	}
	if len(replicated) > 0 {
		cmd := append([][]byte{[]byte("CONFIG"), []byte("SET")}, replicated...)
		if r := s.allShardsWrite(cmd); r != engine.OK {
			if _, isErr := r.(*engine.Error); isErr {
				return r
			}
		}
	}
	for _, apply := range limits {
		apply()
	}
	s.mu.Lock()
	for k, v := range local {
		s.conf[k] = v
	}
	s.mu.Unlock()
	return engine.OK
}

func cmdConfigResetStat(s *Server, c *client, argv [][]byte) reply {
	s.stats.commands.Store(0)
	s.stats.connections.Store(0)
	s.stats.rejected.Store(0)
	s.buf.queryDrops.Store(0)
	s.buf.outDrops.Store(0)
	return engine.OK
}
