package engine

import (
	"fmt"
	"math"
	"strconv"
)

// The engine's configuration parameters: the replicated part of CONFIG.
//
// Config is replicated state, so CONFIG SET of these parameters is an
// engine command like any write: the server proposes
//
//	CONFIG SET param value [param value ...]
//
// to a shard's log, the leader validates it before proposing (Validate) and
// every replica applies it at the same point. All pairs apply or none; names
// are case-insensitive; values are parsed, bounded and refused exactly as
// Redis 7 (stream-node-*) and 8.6 (stream-idmp-*) do. The command's form is
// part of the log format: entries written by earlier versions replay the
// same way.
//
// The server's other CONFIG parameters are per node (resp) and never enter
// the log; proposed to the engine, one fails with Redis's unknown-option
// error on every replica alike.

// configParam is one engine parameter.
type configParam struct {
	name string
	// parse returns the value to set, or Redis's reason for refusing v.
	parse func(v []byte) (int, string)
	get   func(c *Config) int
	set   func(c *Config, v int)
}

var configParams = []configParam{
	{name: "stream-idmp-duration", parse: boundedInt(1, 86400), // Redis 8.6
		get: func(c *Config) int { return c.IdmpDuration }, set: func(c *Config, v int) { c.IdmpDuration = v }},
	{name: "stream-idmp-maxsize", parse: boundedInt(1, 10000), // Redis 8.6
		get: func(c *Config) int { return c.IdmpMaxSize }, set: func(c *Config, v int) { c.IdmpMaxSize = v }},
	{name: "stream-node-max-bytes", parse: memoryArg,
		get: func(c *Config) int { return c.NodeMaxBytes }, set: func(c *Config, v int) { c.NodeMaxBytes = v }},
	{name: "stream-node-max-entries", parse: boundedInt(0, math.MaxInt64),
		get: func(c *Config) int { return c.NodeMaxEntries }, set: func(c *Config, v int) { c.NodeMaxEntries = v }},
}

func init() {
	register("config", cmdConfig)
	registerValidator("config", func(now int64, argv [][]byte) *Error {
		_, err := parseConfigSet(argv)
		return err
	})
}

// ConfigNames returns the names of the engine's parameters, sorted.
func ConfigNames() []string {
	out := make([]string, len(configParams))
	for i := range configParams {
		out[i] = configParams[i].name
	}
	return out
}

// Get returns parameter name (lower case) as CONFIG GET prints it; false if
// name is not an engine parameter.
func (c Config) Get(name string) (string, bool) {
	if p := findConfigParam(name); p != nil {
		return strconv.Itoa(p.get(&c)), true
	}
	return "", false
}

// IsConfigParam reports whether name (lower case) is an engine parameter.
func IsConfigParam(name string) bool { return findConfigParam(name) != nil }

// CheckConfigValue returns the error CONFIG SET gives for value of the
// engine parameter name (lower case), or nil if it would be accepted.
func CheckConfigValue(name string, value []byte) *Error {
	p := findConfigParam(name)
	if p == nil {
		return ConfigUnknown(name)
	}
	if _, msg := p.parse(value); msg != "" {
		return ConfigFailed(p.name, msg)
	}
	return nil
}

func findConfigParam(name string) *configParam {
	for i := range configParams {
		if configParams[i].name == name {
			return &configParams[i]
		}
	}
	return nil
}

// ConfigFailed is Redis's CONFIG SET error for a parameter it refuses: arg
// names it (as the client wrote it for an immutable or duplicate one, as
// the server spells it for a bad value), why says why.
func ConfigFailed(arg, why string) *Error {
	return &Error{Msg: "ERR CONFIG SET failed (possibly related to argument '" + arg + "') - " + why}
}

// ConfigUnknown is Redis's CONFIG SET error for an unknown parameter.
func ConfigUnknown(arg string) *Error {
	return &Error{Msg: "ERR Unknown option or number of arguments for CONFIG SET - '" + arg + "'"}
}

// cmdConfig executes CONFIG SET of engine parameters.
func cmdConfig(e *Engine, now int64, argv [][]byte) Reply {
	set, err := parseConfigSet(argv)
	if err != nil {
		return err
	}
	cfg := e.cfg
	for _, s := range set {
		s.p.set(&cfg, s.v)
	}
	e.cfg = cfg
	return OK
}

type configSetting struct {
	p *configParam
	v int
}

// parseConfigSet parses CONFIG SET param value [param value ...] in Redis's
// order: every name (unknown, duplicate) before any value, values in turn.
func parseConfigSet(argv [][]byte) ([]configSetting, *Error) {
	if len(argv) < 2 || !EqFold(argv[1], "set") {
		return nil, Errorf("ERR unknown subcommand '%.128s'. Try CONFIG HELP.", argAt(argv, 1))
	}
	args := argv[2:]
	if len(args) == 0 || len(args)%2 != 0 {
		return nil, Errorf("ERR wrong number of arguments for 'config|set' command")
	}
	set := make([]configSetting, 0, len(args)/2)
	for i := 0; i < len(args); i += 2 {
		p := findConfigParam(Lower(args[i]))
		if p == nil {
			return nil, ConfigUnknown(string(args[i]))
		}
		for _, s := range set {
			if s.p == p {
				return nil, ConfigFailed(string(args[i]), "duplicate parameter")
			}
		}
		set = append(set, configSetting{p: p})
	}
	for i := range set {
		v, msg := set[i].p.parse(args[2*i+1])
		if msg != "" {
			return nil, ConfigFailed(set[i].p.name, msg)
		}
		set[i].v = v
	}
	return set, nil
}

func argAt(argv [][]byte, i int) []byte {
	if i < len(argv) {
		return argv[i]
	}
	return nil
}

// boundedInt parses an integer parameter in [lo, hi] with Redis's wording.
func boundedInt(lo, hi int64) func([]byte) (int, string) {
	return func(b []byte) (int, string) {
		v, msg := ParseBoundedInt(b, lo, hi)
		return int(v), msg
	}
}

// ParseBoundedInt parses an integer CONFIG value in [lo, hi]; on failure it
// returns Redis's reason ("argument couldn't be parsed into an integer",
// "argument must be between lo and hi inclusive").
func ParseBoundedInt(b []byte, lo, hi int64) (int64, string) {
	v, ok := ParseInt(b)
	if !ok {
		return 0, "argument couldn't be parsed into an integer"
	}
	return v, outOfRange(v, lo, hi)
}

// memoryArg parses a memory parameter (ParseMemory) in [0, MaxInt64].
func memoryArg(b []byte) (int, string) {
	v, msg := ParseMemoryArg(b, 0, math.MaxInt64)
	return int(v), msg
}

// ParseMemoryArg parses a memory CONFIG value (ParseMemory) in [lo, hi];
// on failure it returns Redis's reason.
func ParseMemoryArg(b []byte, lo, hi uint64) (uint64, string) {
	v, ok := ParseMemory(b)
	if !ok {
		return 0, "argument must be a memory value"
	}
	return v, outOfRange(v, lo, hi)
}

// outOfRange is Redis's reason for a value outside [lo, hi], "" inside.
func outOfRange[T int64 | uint64](v, lo, hi T) string {
	if v < lo || v > hi {
		return fmt.Sprintf("argument must be between %d and %d inclusive", lo, hi)
	}
	return ""
}
