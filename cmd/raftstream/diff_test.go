package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// runDiff sends each command to raftstream and to redis-server on fresh
// connections of each and requires byte-identical replies.
func runDiff(t *testing.T, rsAddr, redisAddr string, script [][]string) {
	t.Helper()
	a, b := dial(t, rsAddr), dial(t, redisAddr)
	for i, cmd := range script {
		got, want := do(t, a, cmd...), do(t, b, cmd...)
		if len(cmd) == 3 && strings.EqualFold(cmd[0], "XINFO") && strings.EqualFold(cmd[1], "STREAM") {
			got = dropIdmpFields(t, got)
		}
		if got != want {
			t.Errorf("step %d %q:\n raftstream: %q\n redis:      %q", i, strings.Join(cmd, " "), got, want)
		}
	}
}

// idmpFields matches the field/value pairs Redis 8.6 added to XINFO STREAM
// (redis-server 7.0 lacks them; the Redis-8 tests check their values).
var idmpFields = regexp.MustCompile(`\$\d+\r\n(idmp-duration|idmp-maxsize|pids-tracked|iids-tracked|iids-added|iids-duplicates)\r\n:\d+\r\n`)

// dropIdmpFields removes the six IDMP pairs from a RESP2 XINFO STREAM reply
// and lowers the array's length to match.
func dropIdmpFields(t *testing.T, reply string) string {
	t.Helper()
	head, body, ok := strings.Cut(reply, "\r\n")
	n, err := strconv.Atoi(strings.TrimPrefix(head, "*"))
	if !ok || err != nil || !strings.HasPrefix(head, "*") {
		return reply // an error reply: compared as it is
	}
	if k := len(idmpFields.FindAllString(body, -1)); k != 6 {
		t.Errorf("XINFO STREAM has %d of the 6 IDMP fields: %q", k, reply)
		return reply
	}
	return fmt.Sprintf("*%d\r\n%s", n-12, idmpFields.ReplaceAllString(body, ""))
}

func script(lines ...string) [][]string {
	out := make([][]string, len(lines))
	for i, l := range lines {
		out[i] = strings.Fields(l)
	}
	return out
}

func TestDiffConnectionCommands(t *testing.T) {
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	runDiff(t, rs.Addr, redis, script(
		"PING",
		"PING hello",
		"ping a b",
		"ECHO message",
		"ECHO",
		"FOO a b",
		"foo",
		"SELECT 0",
		"SELECT x",
		"CLIENT SETNAME myconn",
		"CLIENT GETNAME",
		"CLIENT NOSUCH",
		"CLIENT",
		"AUTH secret",
		"HELLO 4",
		"HELLO x",
		"HELLO 2 FOO",
		"CONFIG GET stream-node-max-entries",
		"CONFIG GET stream-node-max-bytes",
		"CONFIG SET stream-node-max-entries 7",
		"CONFIG GET stream-node-max-entries",
		"CONFIG SET stream-node-max-entries x",
		"CONFIG SET nosuch-option 1",
		"CONFIG GET nosuch-option",
		"CONFIG SET stream-node-max-entries 100",
		"COMMAND GETKEYS xread COUNT 2 STREAMS a b 0 0",
		"COMMAND GETKEYS xadd s * f v",
		"COMMAND GETKEYS nosuch a b",
		"COMMAND INFO nosuchcommand",
		"XADD s",
		"XGROUP NOSUCH s g",
		"EXEC",
		"DISCARD",
		"WAIT 0 0",
		"FUNCTION LIST",
		"FUNCTION FLUSH",
	))
}

func TestDiffMultiExec(t *testing.T) {
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	runDiff(t, rs.Addr, redis, script(
		"MULTI",
		"MULTI",
		"XADD tx 1-1 a 1",
		"XADD tx 2-1 b 2",
		"PING",
		"EXEC",
		"MULTI",
		"XADD tx 3-1 c 3",
		"NOSUCHCMD",
		"EXEC",
		"MULTI",
		"XADD tx",
		"EXEC",
		"MULTI",
		"XADD tx 4-1 d 4",
		"DISCARD",
		"MULTI",
		"XADD tx 1-1 dup 1",
		"XADD tx 5-1 e 5",
		"EXEC",
		"MULTI",
		"XADD tx notanid f v",
		"XADD tx MAXLEN x 6-1 f v",
		"XADD tx 6-1 f v",
		"XLEN tx",
		"EXEC",
	))
}

func TestDiffStreams(t *testing.T) {
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	runDiff(t, rs.Addr, redis, script(
		"XADD race:france 1692632086370-0 rider Castilla speed 30.2 position 1 location_id 1",
		"XADD race:france 1692632094485-0 rider Norem speed 28.8 position 3 location_id 1",
		"XADD race:france 1692632102976-0 rider Prickett speed 29.7 position 2 location_id 1",
		"XLEN race:france",
		"XRANGE race:france 1692632086370-0 + COUNT 2",
		"XREAD COUNT 100 STREAMS race:france 0",
		"XADD race:france 1692632086370-0 rider Dup",
		"XGROUP CREATE race:france france_riders $",
		"XGROUP CREATE race:france france_riders $",
		"XADD race:france 1692632147973-0 rider Castilla",
		"XREADGROUP GROUP france_riders Alice COUNT 1 STREAMS race:france >",
		"XREADGROUP GROUP france_riders Alice STREAMS race:france 0",
		"XACK race:france france_riders 1692632147973-0",
		"XREADGROUP GROUP france_riders Alice STREAMS race:france 0",
		"XREADGROUP GROUP nogroup Alice STREAMS race:france >",
		"SET k v",
		"XADD k 1-1 a 1",
		"TYPE race:france",
		"EXISTS race:france k nokey",
		"DEL k",
		"DBSIZE",
	))
}

// TestPipelining sends many commands in one write and compares the whole
// reply stream.
func TestPipelining(t *testing.T) {
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	var cmds [][]string
	for i := 1; i <= 200; i++ {
		cmds = append(cmds, []string{"XADD", "p", fmt.Sprintf("%d-0", i), "n", fmt.Sprint(i)})
		if i%50 == 0 {
			cmds = append(cmds, []string{"XLEN", "p"}, []string{"PING"})
		}
	}
	cmds = append(cmds, []string{"XADD", "p", "1-0", "dup", "1"}, []string{"XRANGE", "p", "-", "+", "COUNT", "3"})
	// Reads and writes interleaved: each read sees exactly the writes
	// before it (reads are batched together, writes too, never reordered).
	for i := 1; i <= 60; i++ {
		cmds = append(cmds, []string{"XADD", "q", fmt.Sprintf("%d-0", i), "n", fmt.Sprint(i)})
		if i%3 == 0 {
			cmds = append(cmds, []string{"XLEN", "q"}, []string{"XREVRANGE", "q", "+", "-", "COUNT", "1"}, []string{"EXISTS", "q", "p"})
		}
		if i%7 == 0 {
			cmds = append(cmds, []string{"XLEN", "q"}, []string{"XDEL", "q", fmt.Sprintf("%d-0", i)}, []string{"XLEN", "q"})
		}
	}
	var replies [2]string
	for i, addr := range []string{rs.Addr, redis} {
		replies[i] = pipeline(t, addr, cmds...)
	}
	if replies[0] != replies[1] {
		t.Fatalf("pipelined replies differ:\n raftstream: %.400q\n redis:      %.400q", replies[0], replies[1])
	}
}

func TestDiffRESP3(t *testing.T) {
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	// HELLO's reply differs in id; compare its shape with the id masked.
	for _, addr := range []string{rs.Addr, redis} {
		c := dial(t, addr)
		r := do(t, c, "HELLO", "3")
		for _, want := range []string{"%7\r\n", "$6\r\nserver\r\n$5\r\nredis\r\n", "$5\r\nproto\r\n:3\r\n", "$4\r\nmode\r\n$10\r\nstandalone\r\n", "$7\r\nmodules\r\n*0\r\n"} {
			if !strings.Contains(r, want) {
				t.Errorf("%s: HELLO 3 reply %q lacks %q", addr, r, want)
			}
		}
	}
	runDiff(t, rs.Addr, redis, script(
		"HELLO 3 SETNAME x",
		"XADD r3 1-1 a 1 b 2",
		"XADD r3 2-1 c 3",
		"XRANGE r3 - +",
		"XREAD STREAMS r3 0",
		"XREAD STREAMS r3 9-9",
		"CLIENT GETNAME",
		"CONFIG GET stream-node-max-bytes",
		"NOSUCH",
		"XGROUP CREATE r3 g 0",
		"XREADGROUP GROUP g c STREAMS r3 >",
		"XINFO GROUPS r3",
	)[1:])
}

func TestAuthRequirePass(t *testing.T) {
	rs := startNode(t, "", "--requirepass", "s3cret")
	redis := testkit.StartRedis(t, "--requirepass", "s3cret")
	runDiff(t, rs.Addr, redis, script(
		"PING",
		"XADD a 1-1 f v",
		"FOO a",
		"XADD a",
		"MULTI",
		"EXEC",
		"HELLO 3",
		"AUTH wrong",
		"AUTH default wrong",
		"AUTH s3cret",
		"PING",
		"XADD a 1-1 f v",
		"RESET",
		"PING",
		"HELLO 2 AUTH default wrong",
	))
}

func TestSelectOtherDB(t *testing.T) {
	rs := startNode(t, "")
	c := dial(t, rs.Addr)
	if got := do(t, c, "SELECT", "1"); got != "-ERR DB index is out of range\r\n" {
		t.Fatalf("SELECT 1 = %q", got)
	}
}

func TestHealthSubcommand(t *testing.T) {
	rs := startNode(t, "")
	var out, errb strings.Builder
	if code := health([]string{"--addr", rs.Addr}, &out, &errb); code != 0 {
		t.Fatalf("health exit %d: %s", code, errb.String())
	}
	port := testkit.FreePort(t)
	if code := health([]string{"--addr", fmt.Sprintf("127.0.0.1:%d", port), "--timeout", "500ms"}, &out, &errb); code != 1 {
		t.Fatalf("health against a closed port exit %d, want 1", code)
	}
}

// TestHealthSubcommandWithPassword: health authenticates with
// --requirepass; without the password, or with a wrong one, the node is
// not reported healthy.
func TestHealthSubcommandWithPassword(t *testing.T) {
	rs := startNode(t, "", "--requirepass", "s3cret")
	for _, tc := range []struct {
		pass string
		code int
	}{{"s3cret", 0}, {"", 1}, {"wrong", 1}} {
		var out, errb strings.Builder
		if code := health([]string{"--addr", rs.Addr, "--requirepass", tc.pass}, &out, &errb); code != tc.code {
			t.Errorf("health --requirepass %q: exit %d, want %d (%s)", tc.pass, code, tc.code, errb.String())
		}
	}
}

func TestInfoAndClientList(t *testing.T) {
	rs := startNode(t, "")
	c := dial(t, rs.Addr)
	do(t, c, "XADD", "i", "1-1", "a", "1")
	info := do(t, c, "INFO")
	for _, want := range []string{"# Server", "redis_version:", "connected_clients:1", "blocked_clients:0", "# Keyspace", "db0:keys=1,", "# Raft", "shard0:role=leader"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q", want)
		}
	}
	do(t, c, "CLIENT", "SETNAME", "lister")
	if l := do(t, c, "CLIENT", "LIST"); !strings.Contains(l, "name=lister") {
		t.Errorf("CLIENT LIST = %q", l)
	}
}
