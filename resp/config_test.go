package resp

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/wire"
)

// configGet is CONFIG GET's reply as a map.
func configGet(t *testing.T, c *testkit.Conn, pattern string) map[string]string {
	t.Helper()
	raw := do(t, c, "CONFIG", "GET", pattern)
	v, err := wire.Parse([]byte(raw))
	if err != nil {
		t.Fatalf("CONFIG GET %s: %q: %v", pattern, raw, err)
	}
	kv, _ := v.([]any)
	out := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(string)
	}
	return out
}

// configDocumented are the parameters whose value legitimately differs from
// a redis-server's, with raftstream's (deploy/OPERATIONS.md): persistence is
// the Raft log, one database, a larger default output buffer limit, and
// Redis 8.6's IDMP parameters that Redis 7.0 lacks. port and dir are the
// server's own.
func configDocumented(s *Server) map[string]string {
	return map[string]string{
		"appendonly":                 "yes",
		"appendfsync":                "always",
		"databases":                  "1",
		"port":                       strconv.Itoa(s.cfg.Port),
		"dir":                        s.cfg.Dir,
		"client-output-buffer-limit": "normal 1073741824 268435456 60 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
		"stream-idmp-duration":       "100",
		"stream-idmp-maxsize":        "100",
	}
}

// configFixed are the parameters whose value raftstream's design fixes: a
// value Redis accepts is refused as immutable unless it is the one in force.
var configFixed = map[string]bool{"appendonly": true, "appendfsync": true, "save": true, "maxmemory-policy": true,
	"notify-keyspace-events": true, "port": true, "bind": true, "requirepass": true}

// configNotOnRedis are values not sent to the redis-server compared with,
// because setting them would cut the test off from it (a new port or bind
// address, a password); raftstream must refuse them as immutable.
func configNotOnRedis(name, v string) bool {
	switch name {
	case "bind", "requirepass":
		return v != ""
	case "port":
		n, err := strconv.Atoi(v)
		return err == nil && n >= 0 && n <= 65535 && strconv.Itoa(n) == v
	}
	return false
}

var configValues = []string{"abc", "-1", "-2", "0", "1", "5", "1mb", "2GB", "99999999999999999999", "yes", "NO", "", " ",
	"always", "everysec", "noeviction", "allkeys-lru", "KEA", "3600 1", "0 0", "1 2 3", "warning", "Debug",
	"normal 1mb 1mb 1", "normal 1 2", "100000", "4294967296", "65536"}

// TestConfigMatchesRedis: for every parameter CONFIG GET lists, the value
// is redis-server's (or the documented one), and CONFIG SET of a range of
// good and bad values answers as redis-server does, byte for byte, leaving
// the same value behind; where the design fixes a value, another one is
// refused with Redis's immutable error.
func TestConfigMatchesRedis(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	s := New(newFakeBackend(1), cfg)
	oc, rc := dial(t, serveOn(t, s)), dial(t, testkit.StartRedis(t))
	ours := configGet(t, oc, "*")
	if len(ours) < 20 {
		t.Fatalf("CONFIG GET * lists %d parameters: %v", len(ours), ours)
	}
	documented := configDocumented(s)
	initial := map[string]string{}
	for name, v := range ours {
		want, ok := documented[name]
		if !ok {
			r := configGet(t, rc, name)
			if want, ok = r[name]; !ok {
				t.Errorf("%s: redis-server has no such parameter", name)
				continue
			}
		}
		if v != want {
			t.Errorf("CONFIG GET %s = %q, want %q", name, v, want)
		}
		initial[name] = configGet(t, rc, name)[name]
	}
	for name := range ours {
		if strings.HasPrefix(name, "stream-idmp-") {
			continue // Redis 8.6: TestConfigSetIdmp
		}
		for _, v := range configValues {
			got := do(t, oc, "CONFIG", "SET", name, v)
			if configNotOnRedis(name, v) {
				if want := "-ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config\r\n"; got != want && v != ours[name] {
					t.Errorf("CONFIG SET %s %q: %q, want %q", name, v, got, want)
				}
				continue
			}
			want := do(t, rc, "CONFIG", "SET", name, v)
			if want == "+OK\r\n" && configFixed[name] {
				if canon := configGet(t, rc, name)[name]; canon != ours[name] {
					want = "-ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config\r\n"
				}
			}
			if got != want {
				t.Errorf("CONFIG SET %s %q:\n got %q\nwant %q", name, v, got, want)
			}
			if want == "+OK\r\n" {
				if _, doc := documented[name]; !doc && !configFixed[name] {
					if g, w := configGet(t, oc, name)[name], configGet(t, rc, name)[name]; g != w {
						t.Errorf("after CONFIG SET %s %q: CONFIG GET %q, redis-server %q", name, v, g, w)
					}
				}
				do(t, rc, "CONFIG", "SET", name, initial[name])
				do(t, oc, "CONFIG", "SET", name, ours[name])
			}
		}
	}
	// Several pairs: every name (unknown, immutable, duplicate: the first
	// problem wins) before any value; all or nothing.
	for _, cmd := range [][]string{
		{"CONFIG", "SET", "maxmemory", "1mb", "databases", "2", "nosuch", "1"},
		{"CONFIG", "SET", "nosuch", "1", "databases", "2"},
		{"CONFIG", "SET", "maxmemory", "1", "MAXMEMORY", "2"},
		{"CONFIG", "SET", "maxmemory", "1", "dir", "/tmp"},
		{"CONFIG", "SET", "timeout", "7", "maxclients", "0"},
		{"CONFIG", "SET", "timeout", "7", "stream-node-max-entries", "x"},
		{"CONFIG", "SET", "slowlog-max-len", "7", "stream-node-max-entries", "9", "STREAM-NODE-max-bytes", "1kb"},
		{"CONFIG", "SET", "timeout"},
		{"CONFIG", "GET", "timeout"},
		{"CONFIG", "GET", "slowlog-max-len"},
		{"CONFIG", "GET", "stream-node-max-*"},
		{"CONFIG", "GET", "nosuch*"},
		{"CONFIG", "GET"},
		{"CONFIG", "REWRITE"},
		{"CONFIG", "NOSUCH"},
	} {
		got, want := do(t, oc, cmd...), do(t, rc, cmd...)
		if cmd[1] == "GET" && len(cmd) > 2 {
			// Redis's order is its hash table's: compare as maps.
			got, want = fmtMap(configGet(t, oc, cmd[2])), fmtMap(configGet(t, rc, cmd[2]))
		}
		if got != want {
			t.Errorf("%q:\n got %q\nwant %q", cmd, got, want)
		}
	}
	// HELP: Redis 7.4's footer ("Print this help.", 7.0: "Prints").
	got, want := do(t, oc, "CONFIG", "HELP"), do(t, rc, "CONFIG", "HELP")
	if strings.Replace(want, "Prints this help", "Print this help", 1) != got {
		t.Errorf("CONFIG HELP:\n got %q\nwant %q", got, want)
	}
}

// TestConfigSetIdmp: Redis 8.6's stream-idmp-* parameters, replicated.
func TestConfigSetIdmp(t *testing.T) {
	c := dial(t, startServer(t, newFakeBackend(2), DefaultConfig()))
	for _, tc := range []struct{ args, want string }{
		{"stream-idmp-duration 0", "-ERR CONFIG SET failed (possibly related to argument 'stream-idmp-duration') - argument must be between 1 and 86400 inclusive\r\n"},
		{"stream-idmp-maxsize x", "-ERR CONFIG SET failed (possibly related to argument 'stream-idmp-maxsize') - argument couldn't be parsed into an integer\r\n"},
		{"stream-idmp-duration 300 stream-idmp-maxsize 42", "+OK\r\n"},
	} {
		if got := do(t, c, append([]string{"CONFIG", "SET"}, strings.Fields(tc.args)...)...); got != tc.want {
			t.Errorf("CONFIG SET %s: %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := configGet(t, c, "stream-idmp-*"); got["stream-idmp-duration"] != "300" || got["stream-idmp-maxsize"] != "42" {
		t.Errorf("CONFIG GET stream-idmp-*: %v", got)
	}
}

// TestConfigSetMaxmemory: CONFIG SET maxmemory 1 makes the next XADD fail
// with -OOM; 0 lifts the limit at once.
func TestConfigSetMaxmemory(t *testing.T) {
	c := dial(t, startServer(t, newFakeBackend(1), DefaultConfig()))
	do(t, c, "XADD", "s", "*", "f", "v")
	do(t, c, "CONFIG", "SET", "maxmemory", "1")
	if got := do(t, c, "XADD", "s", "*", "f", "v"); got != "-OOM command not allowed when used memory > 'maxmemory'.\r\n" {
		t.Errorf("XADD above maxmemory: %q", got)
	}
	if got := do(t, c, "XLEN", "s"); got != ":1\r\n" {
		t.Errorf("XLEN above maxmemory: %q", got)
	}
	do(t, c, "CONFIG", "SET", "maxmemory", "0")
	if got := do(t, c, "XADD", "s", "*", "f", "v"); !strings.HasPrefix(got, "$") {
		t.Errorf("XADD with no limit: %q", got)
	}
}

// TestConfigSetMaxclients: lowering maxclients refuses the next client
// with Redis's error (those connected stay), and INFO counts it.
func TestConfigSetMaxclients(t *testing.T) {
	addr := startServer(t, newFakeBackend(1), DefaultConfig())
	a, b := dial(t, addr), dial(t, addr)
	do(t, b, "PING")
	do(t, a, "CONFIG", "SET", "maxclients", "2")
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 64)
	n, _ := nc.Read(got)
	if string(got[:n]) != "-ERR max number of clients reached\r\n" {
		t.Errorf("third client: %q", got[:n])
	}
	if info := do(t, a, "INFO", "stats"); !strings.Contains(info, "rejected_connections:1\r\n") {
		t.Errorf("INFO stats: %q", info)
	}
	do(t, a, "CONFIG", "SET", "maxclients", "3")
	c := dial(t, addr)
	if got := do(t, c, "PING"); got != "+PONG\r\n" {
		t.Errorf("after raising maxclients: %q", got)
	}
}

// TestConfigSetTimeout: a client already connected and idle is closed once
// CONFIG SET timeout makes it idle for too long; one that keeps sending
// commands stays.
func TestConfigSetTimeout(t *testing.T) {
	addr := startServer(t, newFakeBackend(1), DefaultConfig())
	idle, busy := dial(t, addr), dial(t, addr)
	do(t, idle, "PING")
	do(t, busy, "CONFIG", "SET", "timeout", "1")
	start := time.Now()
	for range 15 {
		time.Sleep(100 * time.Millisecond)
		if got := do(t, busy, "PING"); got != "+PONG\r\n" {
			t.Fatalf("busy client: %q", got)
		}
	}
	idle.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := idle.ReadReply(); err == nil {
		t.Error("idle client still connected after the timeout")
	}
	t.Logf("idle client closed within %v", time.Since(start))
	if got := configGet(t, dial(t, addr), "timeout")["timeout"]; got != "1" {
		t.Errorf("CONFIG GET timeout: %q", got)
	}
}

// TestConfigSetProtoMaxBulkLen: lowering proto-max-bulk-len applies to the
// connections already open: a bulk over it is a protocol error, as with
// redis-server.
func TestConfigSetProtoMaxBulkLen(t *testing.T) {
	addrs := map[string]string{"redis": testkit.StartRedis(t), "ours": startServer(t, newFakeBackend(1), DefaultConfig())}
	replies := map[string]string{}
	for side, addr := range addrs {
		c := dial(t, addr)
		do(t, c, "CONFIG", "SET", "proto-max-bulk-len", "1mb")
		big := strings.Repeat("x", 1<<20)
		if got := do(t, c, "SET", "k", big); got != "+OK\r\n" {
			t.Errorf("%s: a bulk of exactly the limit: %q", side, got[:min(len(got), 80)])
		}
		if err := c.WriteRaw([]byte(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n", 1<<20+1))); err != nil {
			t.Fatal(err)
		}
		r, _ := c.ReadReply()
		replies[side] = string(r)
	}
	if replies["ours"] != replies["redis"] || !strings.Contains(replies["ours"], "invalid bulk length") {
		t.Errorf("a bulk over the limit: ours %q, redis-server %q", replies["ours"], replies["redis"])
	}
}

// TestConfigSetLogLevel: loglevel drives the level of the node's logger.
func TestConfigSetLogLevel(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LogLevel = new(slog.LevelVar)
	s := New(newFakeBackend(1), cfg)
	c := dial(t, serveOn(t, s))
	for name, lv := range map[string]slog.Level{"debug": slog.LevelDebug, "verbose": slog.LevelDebug + 2, "notice": slog.LevelInfo, "WARNING": slog.LevelWarn} {
		do(t, c, "CONFIG", "SET", "loglevel", name)
		if got := cfg.LogLevel.Level(); got != lv {
			t.Errorf("loglevel %s: slog level %v, want %v", name, got, lv)
		}
		if got := configGet(t, c, "loglevel")["loglevel"]; got != strings.ToLower(name) {
			t.Errorf("CONFIG GET loglevel after %s: %q", name, got)
		}
	}
}
