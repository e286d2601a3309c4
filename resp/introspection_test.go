package resp

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/command"
	"github.com/raftstream/raftstream/resp/wire"
)

// Differential tests of the introspection commands (HELP, CLIENT, MONITOR)
// against redis-server 7.0. Where raftstream follows a later Redis (7.2's
// CLIENT SETINFO, 7.4's CLIENT KILL MAXAGE and HELP footer), the test says
// so and checks the later version's documented text.

// startBoth starts raftstream (over the test backend) and redis-server.
func startBoth(t *testing.T, extra ...string) (rs, redis string) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ClusterMode = len(extra) > 0
	return startServer(t, newFakeBackend(1), cfg), testkit.StartRedis(t, extra...)
}

// strs decodes a reply that is an array of strings.
func strs(t *testing.T, raw string) []string {
	t.Helper()
	v, err := wire.Parse([]byte(raw))
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("not an array: %q", raw)
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		out[i], _ = x.(string)
	}
	return out
}

// helpBlocks splits a HELP body into blocks: a usage line and the indented
// lines after it.
func helpBlocks(lines []string) [][]string {
	var out [][]string
	for _, l := range lines {
		if strings.HasPrefix(l, " ") && len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], l)
			continue
		}
		out = append(out, []string{l})
	}
	return out
}

// TestHelpMatchesRedis: every HELP is Redis 7.0's text for the subcommands
// the table has, in Redis's order, and lists every subcommand the table
// has. Lines Redis added after 7.0 (helpBlock.since) and the raftstream
// extensions are left out of the comparison and checked to be present;
// the footer is 7.4's.
func TestHelpMatchesRedis(t *testing.T) {
	rs, redis := startBoth(t)
	_, redisCluster := startBoth(t, "--cluster-enabled", "yes")
	c := dial(t, rs)
	for _, parent := range []string{"client", "cluster", "command", "config", "acl", "function", "raftstream",
		"xinfo", "xgroup", "object", "memory"} {
		got := strs(t, do(t, c, strings.ToUpper(parent), "HELP"))
		header := strings.ToUpper(parent) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
		if got[0] != header || got[len(got)-2] != "HELP" || got[len(got)-1] != "    Print this help." {
			t.Errorf("%s HELP: header or footer: %q", parent, got)
			continue
		}
		body := got[1 : len(got)-2]
		// Every subcommand of the table is documented.
		documented := map[string]bool{}
		for _, b := range helpBlocks(body) {
			documented[strings.ToLower(strings.Fields(b[0])[0])] = true
		}
		for _, sub := range command.Get(parent).Subs() {
			if name := strings.TrimPrefix(sub.Name, parent+"|"); name != "help" && !documented[name] {
				t.Errorf("%s HELP does not document %s", parent, name)
			}
		}
		if parent == "raftstream" {
			continue // no Redis text
		}
		// What is not Redis 7.0's: the later lines, checked present.
		later := map[string]bool{}
		for _, b := range helpTexts[parent] {
			if b.since != "" && (b.sub == "" || command.Get(parent+"|"+b.sub) != nil) {
				for _, l := range b.lines {
					later[l] = true
				}
			}
		}
		var ours []string
		skip := false
		for _, l := range body {
			if strings.HasPrefix(l, "SETDLQ ") {
				skip = true // XGROUP SETDLQ: raftstream's extension
			} else if !strings.HasPrefix(l, " ") {
				skip = false
			}
			if later[l] {
				delete(later, l)
				continue
			}
			if !skip {
				ours = append(ours, l)
			}
		}
		if len(later) > 0 {
			t.Errorf("%s HELP lacks %v", parent, later)
		}
		rc := dial(t, redis)
		if parent == "cluster" {
			rc = dial(t, redisCluster)
		}
		want := strs(t, do(t, rc, strings.ToUpper(parent), "HELP"))
		if want[0] != header || want[len(want)-1] != "    Prints this help." {
			t.Fatalf("redis %s HELP: %q", parent, want)
		}
		var theirs []string
		for _, b := range helpBlocks(want[1 : len(want)-2]) {
			word := strings.ToLower(strings.Fields(b[0])[0])
			if word == "(no" || command.Get(parent+"|"+word) != nil {
				theirs = append(theirs, b...)
			}
		}
		if strings.Join(ours, "\n") != strings.Join(theirs, "\n") {
			t.Errorf("%s HELP:\n got  %q\n want %q", parent, ours, theirs)
		}
	}
}

// TestClientMatchesRedis runs CLIENT and MONITOR requests whose replies do
// not depend on the connection on both servers and compares the replies
// byte for byte.
func TestClientMatchesRedis(t *testing.T) {
	rs, redis := startBoth(t)
	a, b := dial(t, rs), dial(t, redis)
	for _, cmd := range [][]string{
		{"CLIENT", "LIST", "TYPE", "foo"}, {"CLIENT", "LIST", "TYPE", "normal", "x"}, {"CLIENT", "LIST", "ID"},
		{"CLIENT", "LIST", "ID", "x"}, {"CLIENT", "LIST", "ID", "-5", "0"}, {"CLIENT", "LIST", "foo"},
		{"CLIENT", "LIST", "TYPE", "pubsub"}, {"CLIENT", "LIST", "TYPE", "replica"}, {"CLIENT", "LIST", "TYPE", "MASTER"},
		{"CLIENT", "KILL", "1.2.3.4:5"}, {"CLIENT", "KILL", "ID", "0"}, {"CLIENT", "KILL", "ID", "x"},
		{"CLIENT", "KILL", "ID", "5", "TYPE", "foo"}, {"CLIENT", "KILL", "USER", "nouser"},
		{"CLIENT", "KILL", "SKIPME", "maybe"}, {"CLIENT", "KILL", "foo", "bar"}, {"CLIENT", "KILL", "ID", "99999"},
		{"CLIENT", "KILL", "ADDR", "1.2.3.4:5", "LADDR", "x"}, {"CLIENT", "KILL", "ID"}, {"CLIENT", "KILL", "a", "b", "c"},
		{"CLIENT", "KILL", "ADDR", "1.2.3.4:5", "SKIPME"}, {"CLIENT", "KILL", "TYPE", "pubsub", "SKIPME", "no"},
		{"CLIENT", "KILL", "USER", "default", "ADDR", "1.2.3.4:5"}, {"CLIENT", "KILL"},
		{"CLIENT", "NO-EVICT", "maybe"}, {"CLIENT", "NO-EVICT", "on"}, {"CLIENT", "NO-EVICT", "OFF"},
		{"CLIENT", "SETNAME", "a b"}, {"CLIENT", "SETNAME", "a\nb"}, {"CLIENT", "SETNAME", ""}, {"CLIENT", "GETNAME"},
		{"CLIENT", "SETNAME", "cli-1"}, {"CLIENT", "GETNAME"},
		{"CLIENT", "INFO", "x"}, {"CLIENT", "ID", "x"}, {"CLIENT", "GETNAME", "x"},
		{"CLIENT", "PAUSE"}, {"CLIENT", "PAUSE", "x"}, {"CLIENT", "PAUSE", "-1"}, {"CLIENT", "PAUSE", "10", "foo"},
		{"CLIENT", "PAUSE", "10", "write", "x"},
		{"CLIENT", "PAUSE", "10", "WRITE"}, {"CLIENT", "UNPAUSE"}, {"CLIENT", "UNPAUSE", "x"},
		{"CLIENT", "UNBLOCK"}, {"CLIENT", "UNBLOCK", "x"}, {"CLIENT", "UNBLOCK", "99999"},
		{"CLIENT", "UNBLOCK", "99999", "foo"}, {"CLIENT", "UNBLOCK", "99999", "error"},
		{"CLIENT", "UNBLOCK", "99999", "timeout", "x"},
		{"CLIENT", "foo"}, {"CLIENT"}, {"CLIENT", "HELP", "x"}, {"MONITOR", "x"},
		{"CONFIG", "HELP", "x"}, {"COMMAND", "HELP", "x"}, {"OBJECT", "HELP", "x"}, {"MEMORY", "HELP", "x"},
	} {
		if got, want := do(t, a, cmd...), do(t, b, cmd...); got != want {
			t.Errorf("%q:\n got  %q\n want %q", cmd, got, want)
		}
	}
	// Later Redis versions, as their source has it: CLIENT SETINFO (7.2),
	// CLIENT KILL MAXAGE (7.4).
	for _, tc := range []struct{ cmd, want string }{
		{"CLIENT SETINFO lib-name redis-py", "+OK\r\n"},
		{"CLIENT SETINFO LIB-VER 1.2", "+OK\r\n"},
		{"CLIENT SETINFO lib-name a\x01b", "-ERR lib-name cannot contain spaces, newlines or special characters.\r\n"},
		{"CLIENT SETINFO Lib-Ver a\x02", "-ERR Lib-Ver cannot contain spaces, newlines or special characters.\r\n"},
		{"CLIENT SETINFO foo a\x02", "-ERR Unrecognized option 'foo'\r\n"},
		{"CLIENT NO-TOUCH on", "+OK\r\n"},
		{"CLIENT NO-TOUCH maybe", "-ERR syntax error\r\n"},
		{"CLIENT KILL MAXAGE x", "-ERR maxage is not an integer or out of range\r\n"},
		{"CLIENT KILL MAXAGE 0", "-ERR maxage should be greater than 0\r\n"},
		{"CLIENT KILL MAXAGE 100000", ":0\r\n"},
		// 7.4 refuses a deadline past the clock's range (7.0 overflows).
		{"CLIENT PAUSE 9223372036854775807", "-ERR timeout is out of range\r\n"},
	} {
		if got := do(t, a, strings.Fields(tc.cmd)...); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.cmd, got, tc.want)
		}
	}
	if info := do(t, a, "CLIENT", "INFO"); !strings.Contains(info, " lib-name=redis-py lib-ver=1.2\n") ||
		!strings.Contains(info, " flags=T ") {
		t.Errorf("CLIENT INFO after SETINFO and NO-TOUCH: %q", info)
	}
}

// clientFields parses a CLIENT INFO line into its field names, in order,
// and values.
func clientFields(line string) ([]string, map[string]string) {
	var names []string
	vals := map[string]string{}
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		names = append(names, k)
		vals[k] = v
	}
	return names, vals
}

// TestClientListShowsBatchedCommand: a connection that has only pipelined
// batched writes shows its last one in CLIENT LIST's cmd= (xadd, not NULL),
// and a later batched read shows too, as in redis-server.
func TestClientListShowsBatchedCommand(t *testing.T) {
	rs, redis := startBoth(t)
	for name, addr := range map[string]string{"raftstream": rs, "redis": redis} {
		w, l := dial(t, addr), dial(t, addr)
		do(t, w, "CLIENT", "SETNAME", "writer")
		cmdOf := func() string {
			t.Helper()
			for _, line := range strings.Split(do(t, l, "CLIENT", "LIST"), "\n") {
				if _, f := clientFields(line); f["name"] == "writer" {
					return f["cmd"]
				}
			}
			t.Fatalf("%s: no writer in CLIENT LIST", name)
			return ""
		}
		for _, step := range []struct {
			cmds [][]string
			want string
		}{
			{[][]string{{"XADD", "k", "*", "f", "v"}, {"XADD", "k", "*", "f", "v"}, {"XADD", "k", "*", "f", "v"}}, "xadd"},
			{[][]string{{"XADD", "k", "*", "f", "v"}, {"XLEN", "k"}}, "xlen"},
			{[][]string{{"XLEN", "k"}, {"XTRIM", "k", "MAXLEN", "1"}}, "xtrim"},
		} {
			var pipe []byte
			for _, c := range step.cmds {
				pipe = append(pipe, testkit.EncodeCommand(c...)...)
			}
			if err := w.WriteRaw(pipe); err != nil {
				t.Fatal(err)
			}
			for range step.cmds {
				if r, err := w.ReadReply(); err != nil || r[0] == '-' {
					t.Fatalf("%s: %v: %q %v", name, step.cmds, r, err)
				}
			}
			if got := cmdOf(); got != step.want {
				t.Fatalf("%s: after %v: cmd=%s, want %s", name, step.cmds, got, step.want)
			}
		}
	}
}

// TestClientInfoMatchesRedis: CLIENT INFO and CLIENT LIST have Redis 7.0's
// fields in its order (then 7.2's lib-name and lib-ver), and the same
// values where they do not depend on the connection or its buffers.
func TestClientInfoMatchesRedis(t *testing.T) {
	rs, redis := startBoth(t)
	lines := map[string]string{}
	for name, addr := range map[string]string{"raftstream": rs, "redis": redis} {
		c := dial(t, addr)
		do(t, c, "CLIENT", "SETNAME", "probe")
		do(t, c, "CLIENT", "NO-EVICT", "on")
		id := strings.TrimSuffix(strings.TrimPrefix(do(t, c, "CLIENT", "ID"), ":"), "\r\n")
		list := do(t, c, "CLIENT", "LIST", "ID", id, "99999", id)
		if n := strings.Count(list, "id="+id+" "); n != 2 {
			t.Errorf("%s: CLIENT LIST ID id 99999 id lists the client %d times: %q", name, n, list)
		}
		v, err := wire.Parse([]byte(do(t, c, "CLIENT", "INFO")))
		if err != nil {
			t.Fatal(err)
		}
		lines[name], _ = v.(string)
	}
	gotNames, got := clientFields(lines["raftstream"])
	wantNames, want := clientFields(lines["redis"])
	if strings.Join(gotNames, " ") != strings.Join(wantNames, " ")+" lib-name lib-ver" {
		t.Errorf("fields:\n got  %v\n want %v + lib-name lib-ver", gotNames, wantNames)
	}
	for _, k := range []string{"name", "flags", "db", "sub", "psub", "ssub", "multi", "events", "cmd", "user", "redir", "resp"} {
		if got[k] != want[k] {
			t.Errorf("%s = %q, redis %q", k, got[k], want[k])
		}
	}
}

// pauseScenario runs CLIENT PAUSE against addr and returns how long each
// probe waited: a read and a write under WRITE, a PING under ALL, and a
// write under a long WRITE pause ended by CLIENT UNPAUSE after 150ms.
func pauseScenario(t *testing.T, addr string) (read, write, ping, unpaused time.Duration) {
	t.Helper()
	admin, c := dial(t, addr), dial(t, addr)
	timed := func(args ...string) time.Duration {
		start := time.Now()
		do(t, c, args...)
		return time.Since(start)
	}
	do(t, admin, "CLIENT", "PAUSE", "400", "WRITE")
	read = timed("XLEN", "s")
	write = timed("XADD", "s", "*", "f", "v")
	do(t, admin, "CLIENT", "PAUSE", "400", "ALL")
	ping = timed("PING")
	do(t, admin, "CLIENT", "PAUSE", "20000", "WRITE")
	go func() {
		time.Sleep(150 * time.Millisecond)
		do(t, admin, "CLIENT", "UNPAUSE")
	}()
	unpaused = timed("XADD", "s", "*", "f", "v")
	return
}

// TestClientPauseLikeRedis: the same CLIENT PAUSE scenario holds the same
// commands back on both servers (timings within bounds on each).
func TestClientPauseLikeRedis(t *testing.T) {
	rs, redis := startBoth(t)
	for name, addr := range map[string]string{"raftstream": rs, "redis": redis} {
		read, write, ping, unpaused := pauseScenario(t, addr)
		t.Logf("%s: read %v, write %v, ping under ALL %v, write until UNPAUSE %v", name, read, write, ping, unpaused)
		if read > 200*time.Millisecond || write < 200*time.Millisecond || ping < 300*time.Millisecond ||
			unpaused < 100*time.Millisecond || unpaused > 5*time.Second {
			t.Errorf("%s: read %v (want fast), write %v (want held), ping %v (want held), write until UNPAUSE %v",
				name, read, write, ping, unpaused)
		}
	}
	// raftstream only (see pausedBy): a blocking read waits for the end of
	// a WRITE pause before it blocks.
	admin, c := dial(t, rs), dial(t, rs)
	do(t, admin, "CLIENT", "PAUSE", "300", "WRITE")
	start := time.Now()
	do(t, c, "XREAD", "BLOCK", "10", "STREAMS", "s", "$")
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("blocking read under WRITE pause took %v", d)
	}
	if got := do(t, admin, "INFO", "clients"); !strings.Contains(got, "blocked_clients:0") {
		t.Errorf("INFO after the pause: %q", got)
	}
}

// waitFlag waits until CLIENT LIST shows client id with flag f.
func waitFlag(t *testing.T, c *testkit.Conn, id string, f byte) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		list := do(t, c, "CLIENT", "LIST", "ID", id)
		_, v := clientFields(strings.TrimPrefix(list[strings.Index(list, "\n")+1:], ""))
		if strings.IndexByte(v["flags"], f) >= 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("client %s never showed flag %c", id, f)
}

// unblockScenario blocks a client in XREAD and in XREADGROUP and unblocks
// it with CLIENT UNBLOCK, returning every reply of both connections.
func unblockScenario(t *testing.T, addr string) []string {
	t.Helper()
	admin, c := dial(t, addr), dial(t, addr)
	id := strings.TrimSuffix(strings.TrimPrefix(do(t, c, "CLIENT", "ID"), ":"), "\r\n")
	out := []string{do(t, admin, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"), do(t, admin, "CLIENT", "UNBLOCK", id)}
	for _, tc := range []struct {
		block  []string
		reason []string
	}{
		{[]string{"XREAD", "BLOCK", "0", "STREAMS", "s", "$"}, nil},
		{[]string{"XREAD", "BLOCK", "0", "STREAMS", "s", "$"}, []string{"ERROR"}},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"}, []string{"timeout"}},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"}, []string{"error"}},
	} {
		if err := c.Send(tc.block...); err != nil {
			t.Fatal(err)
		}
		waitFlag(t, admin, id, 'b')
		out = append(out, do(t, admin, append([]string{"CLIENT", "UNBLOCK", id}, tc.reason...)...))
		r, err := c.ReadReply()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(r), do(t, admin, "CLIENT", "UNBLOCK", id))
	}
	// RESP3: the timeout reply is a null.
	do(t, c, "HELLO", "3")
	if err := c.Send("XREAD", "BLOCK", "0", "STREAMS", "s", "$"); err != nil {
		t.Fatal(err)
	}
	waitFlag(t, admin, id, 'b')
	out = append(out, do(t, admin, "CLIENT", "UNBLOCK", id))
	r, err := c.ReadReply()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, string(r), do(t, c, "PING"))
	return out
}

// TestClientUnblockLikeRedis: CLIENT UNBLOCK wakes clients blocked in XREAD
// and XREADGROUP with the replies Redis gives.
func TestClientUnblockLikeRedis(t *testing.T) {
	sameOnBoth(t, unblockScenario)
}

// sameOnBoth runs scenario against raftstream and redis-server and
// requires the same outputs; it returns the servers' addresses.
func sameOnBoth(t *testing.T, scenario func(*testing.T, string) []string) (rs, redis string) {
	t.Helper()
	rs, redis = startBoth(t)
	got, want := scenario(t, rs), scenario(t, redis)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("\n got  %q\n want %q", got, want)
	}
	return rs, redis
}

// monitorLine is a MONITOR line: timestamp, client address, arguments.
var monitorLine = regexp.MustCompile(`^\+(\d+)\.(\d{6}) \[0 ([^\]]+)\] (.*)$`)

// monitorScenario runs commands on one connection while another monitors
// and returns the monitor's lines with the timestamp and address checked
// and cut off.
func monitorScenario(t *testing.T, addr string) []string {
	t.Helper()
	m, c := dial(t, addr), dial(t, addr)
	if got := do(t, m, "MONITOR"); got != "+OK\r\n" {
		t.Fatalf("MONITOR: %q", got)
	}
	_, info := clientFields(do(t, c, "CLIENT", "INFO"))
	for _, cmd := range [][]string{
		{"SET", "k", "v"}, {"get", "k"}, {"XADD", "s", "1-1", "f", "a b\n\"c\"\\\x00\xff\t\r\a\b"},
		{"AUTH", "secret"}, {"AUTH", "user", "secret"}, {"AUTH", "a", "b", "c"},
		{"HELLO", "2", "SETNAME", "x", "AUTH", "default", "pw"}, {"HELLO", "2", "AUTH", "default"}, {"HELLO", "9", "AUTH", "u", "p"},
		{"CLIENT", "LIST"}, {"CONFIG", "GET", "maxmemory"}, {"CLIENT", "GETNAME"},
		{"NOSUCH"}, {"GET"}, {"XREAD", "BLOCK", "10", "STREAMS", "s", "$"},
		{"MULTI"}, {"SET", "k", "w"}, {"GET", "k"}, {"EXEC"},
		{"MULTI"}, {"GET", "k"}, {"DISCARD"},
		{"MULTI"}, {"GET"}, {"EXEC"},
		{"EXEC"}, {"PING", "last"},
	} {
		c.Do(cmd...)
	}
	var out []string
	m.SetDeadline(time.Now().Add(5 * time.Second))
	for {
		raw, err := m.ReadReply()
		if err != nil {
			t.Fatalf("monitor: %v after %q", err, out)
		}
		line := strings.TrimSuffix(string(raw), "\r\n")
		g := monitorLine.FindStringSubmatch(line)
		if g == nil {
			t.Fatalf("not a monitor line: %q", raw)
		}
		if sec, _ := strconv.ParseInt(g[1], 10, 64); time.Since(time.Unix(sec, 0)).Abs() > time.Minute {
			t.Errorf("timestamp %s", g[1])
		}
		if g[3] != info["addr"] {
			t.Errorf("address %q, the client is %q", g[3], info["addr"])
		}
		out = append(out, g[4])
		if g[4] == `"PING" "last"` {
			return out
		}
	}
}

// TestMonitorLikeRedis: a monitor sees the same lines from both servers:
// the admitted commands, not the admin ones, credentials redacted, a
// transaction's commands before its EXEC, arguments quoted as Redis does.
func TestMonitorLikeRedis(t *testing.T) {
	rs, redis := sameOnBoth(t, monitorScenario)
	// A monitor keeps its connection for other commands, but not for the
	// keyspace; RESET ends monitoring; nothing is fed once none monitors.
	for name, addr := range map[string]string{"raftstream": rs, "redis": redis} {
		m := dial(t, addr)
		do(t, m, "MONITOR")
		if got := do(t, m, "XLEN", "s"); got != "-ERR Replica can't interact with the keyspace\r\n" {
			t.Errorf("%s: XLEN on a monitor: %q", name, got)
		}
		if got := do(t, m, "CLIENT", "ID"); !strings.HasPrefix(got, ":") {
			t.Errorf("%s: CLIENT ID on a monitor: %q", name, got)
		}
		line, _ := m.ReadReply() // its own CLIENT ID
		if !strings.Contains(string(line), `"CLIENT" "ID"`) {
			t.Errorf("%s: monitor's own command: %q", name, line)
		}
		if got := do(t, m, "RESET"); got != "+RESET\r\n" {
			// The RESET line may come first.
			if got2, _ := m.ReadReply(); string(got2) != "+RESET\r\n" {
				t.Errorf("%s: RESET: %q %q", name, got, got2)
			}
		}
		if got := do(t, m, "XLEN", "s"); got != ":1\r\n" {
			t.Errorf("%s: XLEN after RESET: %q", name, got)
		}
	}
}

// TestMonitorLineFormat checks the quoting of every byte value against
// sdscatrepr's rules.
func TestMonitorLineFormat(t *testing.T) {
	var all []byte
	for i := 0; i < 256; i++ {
		all = append(all, byte(i))
	}
	got := string(appendRepr(nil, all))
	var want strings.Builder
	want.WriteByte('"')
	for _, ch := range all {
		switch {
		case ch == '\\' || ch == '"':
			want.WriteString(`\` + string(ch))
		case ch == '\n':
			want.WriteString(`\n`)
		case ch == '\r':
			want.WriteString(`\r`)
		case ch == '\t':
			want.WriteString(`\t`)
		case ch == 7:
			want.WriteString(`\a`)
		case ch == 8:
			want.WriteString(`\b`)
		case ch >= 32 && ch < 127:
			want.WriteByte(ch)
		default:
			fmt.Fprintf(&want, `\x%02x`, ch)
		}
	}
	want.WriteByte('"')
	if got != want.String() {
		t.Errorf("repr:\n got  %q\n want %q", got, want.String())
	}
	line := string(appendMonitorLine(nil, time.Unix(1339518083, 7412000), "127.0.0.1:60866", [][]byte{[]byte("keys"), []byte("*")}))
	if line != "+1339518083.007412 [0 127.0.0.1:60866] \"keys\" \"*\"\r\n" {
		t.Errorf("line %q", line)
	}
}

// TestClusterIntrospection: CLUSTER REPLICAS, MYSHARDID, LINKS, and the
// followers in SLOTS and SHARDS, on a two-node topology where node b leads
// shard 1 and node a follows it.
func TestClusterIntrospection(t *testing.T) {
	be := newFakeBackend(2)
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	be.top.Shards[1].Leader = b
	be.top.Shards[1].Replicas = []string{a, b}
	be.top.Nodes[1].UpSince = time.UnixMilli(1_700_000_000_123)
	cfg := DefaultConfig()
	cfg.ClusterMode = true
	c := dial(t, startServer(t, be, cfg))
	redis := dial(t, testkit.StartRedis(t, "--cluster-enabled", "yes"))
	for _, cmd := range [][]string{{"CLUSTER", "REPLICAS", "nosuch"}, {"CLUSTER", "REPLICAS"}, {"CLUSTER", "LINKS", "x"}} {
		if got, want := do(t, c, cmd...), do(t, redis, cmd...); got != want {
			t.Errorf("%q:\n got  %q\n want %q", cmd, got, want)
		}
	}
	if got := do(t, c, "CLUSTER", "REPLICAS", b); got != "*0\r\n" {
		t.Errorf("REPLICAS of a node: %q", got)
	}
	if got := do(t, c, "CLUSTER", "MYSHARDID"); got != "$40\r\n"+shardID(a)+"\r\n" || shardID(a) == shardID(b) {
		t.Errorf("MYSHARDID: %q", got)
	}
	link := func(dir string) string {
		return "*12\r\n$9\r\ndirection\r\n$" + strconv.Itoa(len(dir)) + "\r\n" + dir + "\r\n$4\r\nnode\r\n$40\r\n" + b +
			"\r\n$11\r\ncreate-time\r\n:1700000000123\r\n$6\r\nevents\r\n$1\r\nr\r\n" +
			"$21\r\nsend-buffer-allocated\r\n:0\r\n$16\r\nsend-buffer-used\r\n:0\r\n"
	}
	if got := do(t, c, "CLUSTER", "LINKS"); got != "*2\r\n"+link("to")+link("from") {
		t.Errorf("LINKS: %q", got)
	}
	// Shard 1: leader b, then follower a (a replica in SLOTS and SHARDS).
	entry := func(id string, port int) string {
		return fmt.Sprintf("*4\r\n$9\r\n127.0.0.1\r\n:%d\r\n$40\r\n%s\r\n*0\r\n", port, id)
	}
	if got := do(t, c, "CLUSTER", "SLOTS"); !strings.Contains(got, ":8192\r\n:16383\r\n"+entry(b, 7002)+entry(a, 7001)) {
		t.Errorf("SLOTS lacks shard 1's follower: %q", got)
	}
	shards := do(t, c, "CLUSTER", "SHARDS")
	if !strings.Contains(shards, "$4\r\nrole\r\n$7\r\nreplica\r\n") || !strings.Contains(shards, "$4\r\nrole\r\n$6\r\nmaster\r\n") {
		t.Errorf("SHARDS: %q", shards)
	}
	// A follower seen down is left out of SLOTS (Redis leaves out failed
	// replicas) and shown failed in SHARDS.
	be.mu.Lock()
	be.top.Nodes[0].Up = false
	be.mu.Unlock()
	if got := do(t, c, "CLUSTER", "SLOTS"); strings.Contains(got, ":8192\r\n:16383\r\n"+entry(b, 7002)+entry(a, 7001)) {
		t.Errorf("SLOTS lists a follower that is down: %q", got)
	}
	if got := do(t, c, "CLUSTER", "SHARDS"); !strings.Contains(got, "$6\r\nhealth\r\n$4\r\nfail\r\n") {
		t.Errorf("SHARDS: %q", got)
	}
}

// TestNewRowsMatchRedisCommandInfo: the rows added for MONITOR, CLIENT
// PAUSE/UNPAUSE/UNBLOCK, CLUSTER REPLICAS/LINKS and the HELP subcommands have
// Redis 7.0's arity, flags, key positions and categories.
func TestNewRowsMatchRedisCommandInfo(t *testing.T) {
	rs, redis := startBoth(t)
	a, b := dial(t, rs), dial(t, redis)
	for _, name := range []string{"monitor", "client|pause", "client|unpause", "client|unblock", "client|help",
		"config|help", "command|help", "object|help", "memory|help", "acl|help", "cluster|help", "function|help",
		"cluster|replicas", "cluster|links"} {
		got, want := commandInfoHead(do(t, a, "COMMAND", "INFO", name)), commandInfoHead(do(t, b, "COMMAND", "INFO", name))
		if got != want {
			t.Errorf("COMMAND INFO %s:\n got  %q\n want %q", name, got, want)
		}
	}
}
