package resp

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// CONFIG GET/SET/RESETSTAT/REWRITE/HELP: one table of parameters.
//
// A parameter is either per node (this server's: connection limits, logs,
// slowlog, ...) or replicated per shard (the engine's: engine/config.go,
// set through the log of every shard this node leads, read from a local
// replica). Every CONFIG SET either takes effect at once or is refused with
// Redis's error:
//
//   - a parameter Redis never sets at run time (databases, cluster-enabled)
//     is refused as immutable, dir as protected, whatever the value;
//   - a parameter whose value raftstream's design fixes (appendonly yes,
//     appendfsync always and save "": the Raft log is an always-fsynced
//     AOF and snapshots are Raft's; maxmemory-policy noeviction: data that
//     was acknowledged is never evicted; port, bind, requirepass: set at
//     start) takes the value in force as a no-op, and refuses another valid
//     value as immutable; an invalid one gets the error Redis gives for it;
//   - the others apply at once, to the connections already open too.
//
// Names are case-insensitive. Redis checks every name (unknown, immutable,
// duplicate; the first problem wins) before any value, and applies all
// pairs or none: so does SET here, proposing the replicated pairs as one
// command (per shard: all or none) before applying the node's.

// configParam is one CONFIG parameter.
type configParam struct {
	name string
	// replicated parameters are the engine's: read from a local replica,
	// set through the log (engine.CheckConfigValue says what is valid).
	replicated bool
	// immutable and protected parameters are refused whatever the value,
	// before any value is looked at, as Redis refuses them.
	immutable, protected bool
	get                  func(s *Server) string
	// set checks v and returns what applies it, or CONFIG SET's error.
	// Nothing is applied until every pair has been checked.
	set func(s *Server, v []byte) (func(), *errReply)
}

// configParams is the table, sorted by name (init).
var configParams []configParam

func init() {
	configParams = []configParam{
		fixed("appendfsync", func(*Server) string { return "always" }, enumArg("everysec", "always", "no")),
		fixed("appendonly", func(*Server) string { return "yes" }, boolArg),
		fixed("bind", func(s *Server) string { return s.cfg.Bind }, anyArg),
		{name: "client-output-buffer-limit", get: func(s *Server) string { return s.buf.outputLimitString() },
			set: func(s *Server, v []byte) (func(), *errReply) { return s.buf.setOutputLimit(string(v)) }},
		{name: "client-query-buffer-limit", get: func(s *Server) string { return strconv.FormatInt(s.buf.query.Load(), 10) },
			set: func(s *Server, v []byte) (func(), *errReply) { return s.buf.setQueryLimit(string(v)) }},
		{name: "cluster-enabled", immutable: true, get: func(s *Server) string { return yesNo(s.cfg.ClusterMode) }},
		{name: "databases", immutable: true, get: func(*Server) string { return "1" }},
		{name: "dir", protected: true, get: func(s *Server) string {
			if abs, err := filepath.Abs(s.cfg.Dir); err == nil && s.cfg.Dir != "" {
				return abs
			}
			return s.cfg.Dir
		}},
		intParam("latency-monitor-threshold", 0, math.MaxInt64, func(s *Server) int64 { return s.lat.threshold.Load() },
			func(s *Server, v int64) { s.lat.threshold.Store(v) }),
		{name: "loglevel", get: func(s *Server) string { return logLevelName(s.cfg.LogLevel.Level()) },
			set: func(s *Server, v []byte) (func(), *errReply) {
				name, why := enumArg("debug", "verbose", "notice", "warning")(v)
				if why != "" {
					return nil, engine.ConfigFailed("loglevel", why)
				}
				return func() { s.cfg.LogLevel.Set(logLevels[name]) }, nil
			}},
		{name: "maxclients", get: func(s *Server) string { return strconv.FormatInt(s.conns.maxClients.Load(), 10) },
			set: func(s *Server, v []byte) (func(), *errReply) {
				n, why := engine.ParseBoundedInt(v, 1, math.MaxUint32)
				if why == "" {
					why = checkFileLimit(n)
				}
				if why != "" {
					return nil, engine.ConfigFailed("maxclients", why)
				}
				return func() { s.conns.maxClients.Store(n) }, nil
			}},
		{name: "maxmemory", get: func(s *Server) string { return strconv.FormatUint(s.mem.max.Load(), 10) },
			set: func(s *Server, v []byte) (func(), *errReply) {
				n, why := engine.ParseMemoryArg(v, 0, math.MaxUint64)
				if why != "" {
					return nil, engine.ConfigFailed("maxmemory", why)
				}
				return func() { s.setMaxMemory(n) }, nil
			}},
		fixed("maxmemory-policy", func(*Server) string { return "noeviction" }, enumArg("volatile-lru", "volatile-lfu",
			"volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction")),
		fixed("notify-keyspace-events", func(*Server) string { return "" }, keyspaceEventsArg),
		fixed("port", func(s *Server) string { return strconv.Itoa(s.cfg.Port) }, intArg(0, 65535)),
		{name: "proto-max-bulk-len", get: func(s *Server) string { return strconv.FormatInt(s.maxBulk.Load(), 10) },
			set: func(s *Server, v []byte) (func(), *errReply) {
				n, why := engine.ParseMemoryArg(v, 1<<20, math.MaxInt64)
				if why != "" {
					return nil, engine.ConfigFailed("proto-max-bulk-len", why)
				}
				return func() { s.maxBulk.Store(int64(n)) }, nil
			}},
		fixed("requirepass", func(s *Server) string { return s.cfg.RequirePass }, anyArg),
		fixed("save", func(*Server) string { return "" }, saveArg),
		intParam("slowlog-log-slower-than", -1, math.MaxInt64, func(s *Server) int64 { return s.slow.slower.Load() },
			func(s *Server, v int64) { s.slow.slower.Store(v) }),
		intParam("slowlog-max-len", 0, math.MaxInt64, func(s *Server) int64 { return s.slow.maxLen.Load() },
			func(s *Server, v int64) { s.slow.maxLen.Store(v) }),
		intParam("tcp-keepalive", 0, math.MaxInt32, func(s *Server) int64 { return s.conns.keepAlive.Load() },
			func(s *Server, v int64) { s.conns.keepAlive.Store(v) }),
		intParam("timeout", 0, math.MaxInt32, func(s *Server) int64 {
			return int64(math.Ceil(time.Duration(s.conns.idle.Load()).Seconds()))
		}, func(s *Server, v int64) { s.conns.setIdle(time.Duration(v) * time.Second) }),
	}
	for _, name := range engine.ConfigNames() {
		configParams = append(configParams, configParam{name: name, replicated: true,
			get: func(s *Server) string { v, _ := s.engineConfig().Get(name); return v }})
	}
	sort.Slice(configParams, func(i, j int) bool { return configParams[i].name < configParams[j].name })
}

func findParam(name string) *configParam {
	i, ok := slices.BinarySearchFunc(configParams, name, func(p configParam, n string) int { return strings.Compare(p.name, n) })
	if !ok {
		return nil
	}
	return &configParams[i]
}

// A valueArg checks a CONFIG SET value as Redis does for the parameter's
// type: the value in canonical form, or Redis's reason for refusing it.
type valueArg func(v []byte) (string, string)

// fixed is a parameter whose value raftstream's design fixes: the value in
// force is accepted (nothing changes), another valid one refused as
// immutable.
func fixed(name string, get func(*Server) string, check valueArg) configParam {
	return configParam{name: name, get: get, set: func(s *Server, v []byte) (func(), *errReply) {
		canon, why := check(v)
		switch {
		case why != "":
			return nil, engine.ConfigFailed(name, why)
		case canon != get(s):
			return nil, engine.ConfigFailed(name, "can't set immutable config")
		}
		return func() {}, nil
	}}
}

// intParam is an integer parameter in [lo, hi] that applies at once.
func intParam(name string, lo, hi int64, get func(*Server) int64, apply func(*Server, int64)) configParam {
	return configParam{name: name, get: func(s *Server) string { return strconv.FormatInt(get(s), 10) },
		set: func(s *Server, v []byte) (func(), *errReply) {
			n, why := engine.ParseBoundedInt(v, lo, hi)
			if why != "" {
				return nil, engine.ConfigFailed(name, why)
			}
			return func() { apply(s, n) }, nil
		}}
}

func anyArg(v []byte) (string, string) { return string(v), "" }

func intArg(lo, hi int64) valueArg {
	return func(v []byte) (string, string) {
		n, why := engine.ParseBoundedInt(v, lo, hi)
		return strconv.FormatInt(n, 10), why
	}
}

func boolArg(v []byte) (string, string) {
	switch {
	case engine.EqFold(v, "yes"):
		return "yes", ""
	case engine.EqFold(v, "no"):
		return "no", ""
	}
	return "", "argument must be 'yes' or 'no'"
}

// enumArg accepts one of names (case-insensitive), in Redis's order for
// the error.
func enumArg(names ...string) valueArg {
	return func(v []byte) (string, string) {
		for _, n := range names {
			if engine.EqFold(v, n) {
				return n, ""
			}
		}
		return "", "argument(s) must be one of the following: " + strings.Join(names, ", ")
	}
}

// saveArg is Redis's check of save: "" or pairs of seconds (>= 1) and
// changes (>= 0).
func saveArg(v []byte) (string, string) {
	if len(v) == 0 {
		return "", ""
	}
	f := strings.Fields(string(v))
	if len(f) == 0 || len(f)%2 != 0 {
		return "", "Invalid save parameters"
	}
	for i, a := range f {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || (i%2 == 0 && n < 1) || n < 0 {
			return "", "Invalid save parameters"
		}
	}
	return strings.Join(f, " "), ""
}

// keyspaceEventsArg is Redis's check of notify-keyspace-events; raftstream
// sends no keyspace notifications, so only "" is in force.
func keyspaceEventsArg(v []byte) (string, string) {
	for _, ch := range v {
		if !strings.ContainsRune("Ag$lshzxeKEtmdn", rune(ch)) {
			return "", "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
		}
	}
	return string(v), ""
}

// reservedFDs are the file descriptors Redis keeps for other uses than
// clients (CONFIG_MIN_RESERVED_FDS).
const reservedFDs = 32

// checkFileLimit refuses a maxclients the process's file descriptor limit
// cannot serve, as Redis does ("" when it can).
func checkFileLimit(n int64) string {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > math.MaxInt64 {
		return ""
	}
	if most := int64(lim.Cur) - reservedFDs; n > most {
		return fmt.Sprintf("The operating system is not able to handle the specified number of clients, try with %d", max(most, 1))
	}
	return ""
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Redis's log levels on slog's: verbose sits between debug and info.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "verbose": slog.LevelDebug + 2,
	"notice": slog.LevelInfo, "warning": slog.LevelWarn}

// logLevelName is the Redis level of l (error and above report warning,
// Redis's highest).
func logLevelName(l slog.Level) string {
	switch {
	case l <= slog.LevelDebug:
		return "debug"
	case l < slog.LevelInfo:
		return "verbose"
	case l < slog.LevelWarn:
		return "notice"
	}
	return "warning"
}

// engineConfig is the replicated configuration in force on this node's
// replicas: read from a shard this node leads (a linearizable read, so CONFIG
// GET right after a restart sees every replayed CONFIG SET), else from a
// local replica.
func (s *Server) engineConfig() engine.Config { return s.engineConfigExcept(-1) }

// engineConfigExcept is engineConfig from the shards other than skip.
func (s *Server) engineConfigExcept(skip int) engine.Config {
	cfg := engine.DefaultConfig()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	read := func(e *engine.Engine) { cfg = e.Config() }
	hosted := -1
	for sh := 0; sh < s.be.NumShards(); sh++ {
		if sh == skip {
			continue
		}
		if s.leads(sh) && s.be.Read(ctx, sh, false, read) == nil {
			return cfg
		}
		if _, ok := s.be.ShardStatus(sh); ok && hosted < 0 {
			hosted = sh
		}
	}
	if hosted >= 0 {
		_ = s.be.Read(ctx, hosted, true, read)
	}
	return cfg
}

// cmdConfigGet implements CONFIG GET pattern [pattern ...]; the reply lists
// the matches sorted by name (Redis's order is its hash table's).
func cmdConfigGet(s *Server, c *client, argv [][]byte) reply {
	out := engine.Map{}
	for _, p := range configParams {
		for _, pat := range argv[2:] {
			if engine.GlobMatch(strings.ToLower(string(pat)), p.name, false) {
				out = append(out, engine.Bulk(p.name), engine.Bulk(p.get(s)))
				break
			}
		}
	}
	return out
}

// cmdConfigSet implements CONFIG SET param value [param value ...].
func cmdConfigSet(s *Server, c *client, argv [][]byte) reply {
	args := argv[2:]
	if len(args)%2 != 0 {
		return command.WrongArity("config|set")
	}
	ps := make([]*configParam, 0, len(args)/2)
	for i := 0; i < len(args); i += 2 {
		p := findParam(engine.Lower(args[i]))
		switch {
		case p == nil:
			return engine.ConfigUnknown(string(args[i]))
		case p.immutable:
			return engine.ConfigFailed(string(args[i]), "can't set immutable config")
		case p.protected:
			return engine.ConfigFailed(string(args[i]), "can't set protected config")
		case slices.Contains(ps, p):
			return engine.ConfigFailed(string(args[i]), "duplicate parameter")
		}
		ps = append(ps, p)
	}
	var applies []func()
	replicated := [][]byte{[]byte("CONFIG"), []byte("SET")}
	for i, p := range ps {
		v := args[2*i+1]
		if p.replicated {
			if er := engine.CheckConfigValue(p.name, v); er != nil {
				return er
			}
			replicated = append(replicated, []byte(p.name), v)
			continue
		}
		apply, er := p.set(s, v)
		if er != nil {
			return er
		}
		applies = append(applies, apply)
	}
	if len(replicated) > 2 {
		if er := s.setReplicated(replicated); er != nil {
			return er
		}
	}
	for _, apply := range applies {
		apply()
	}
	return engine.OK
}

// setReplicated proposes CONFIG SET of engine parameters to every shard
// this node leads. Like Redis Cluster's CONFIG SET, which each master takes
// for itself, it covers the shards led here: to set every shard, send it to
// every node (redis-cli --cluster call).
func (s *Server) setReplicated(cmd [][]byte) reply {
	leads := false
	for sh := 0; sh < s.be.NumShards() && !leads; sh++ {
		leads = s.leads(sh)
	}
	if !leads {
		return errorf("TRYAGAIN this node leads no shard now: replicated parameters are set through a shard's leader")
	}
	if r, isErr := s.allShardsWrite(cmd).(*engine.Error); isErr {
		return r
	}
	return nil
}

func cmdConfigResetStat(s *Server, c *client, argv [][]byte) reply {
	s.stats.commands.Store(0)
	s.stats.connections.Store(0)
	s.conns.refused.Store(0)
	s.buf.queryDrops.Store(0)
	s.buf.outDrops.Store(0)
	s.cmdm.reset()
	return engine.OK
}

func cmdConfigRewrite(s *Server, c *client, argv [][]byte) reply {
	return errorf("ERR The server is running without a config file")
}
