package resp

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/resp/command"
	"github.com/raftstream/raftstream/resp/wire"
)

// elems splits an aggregate reply into the raw bytes of its elements (a
// map's keys and values alternate).
func elems(t *testing.T, raw []byte) [][]byte {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(raw))
	head, err := r.ReadString('\n')
	if err != nil || len(head) < 3 {
		t.Fatalf("no aggregate: %q", raw)
	}
	var n int
	for _, ch := range head[1 : len(head)-2] {
		n = n*10 + int(ch-'0')
	}
	if head[0] == '%' {
		n *= 2
	}
	out := make([][]byte, n)
	for i := range out {
		if out[i], err = wire.ReadReply(r); err != nil {
			t.Fatalf("element %d of %q: %v", i, raw, err)
		}
	}
	return out
}

// docFields returns the fields of one command's COMMAND DOCS entry (the
// reply to COMMAND DOCS name), without "subcommands": the subcommands are
// rows of their own, and Redis lists them in its dictionary's order.
func docFields(t *testing.T, raw []byte) [][]byte {
	t.Helper()
	top := elems(t, raw)
	if len(top) != 2 {
		t.Fatalf("COMMAND DOCS of one command: %q", raw)
	}
	fields := elems(t, top[1])
	for i := 0; i < len(fields); i += 2 {
		if bytes.HasSuffix(fields[i], []byte("\r\nsubcommands\r\n")) {
			return append(fields[:i:i], fields[i+2:]...)
		}
	}
	return fields
}

// TestCommandDocsMatchRedis: COMMAND DOCS of every command and subcommand
// redis-server 7.0 has is its reply byte for byte (RESP2 and RESP3), a
// container's subcommands aside, which are compared one by one.
func TestCommandDocsMatchRedis(t *testing.T) {
	rs, redis := startBoth(t)
	compared := 0
	for _, proto := range []string{"2", "3"} {
		a, b := dial(t, rs), dial(t, redis)
		do(t, a, "HELLO", proto)
		do(t, b, "HELLO", proto)
		for _, cmd := range command.All() {
			want := do(t, b, "COMMAND", "DOCS", cmd.Name)
			if want == "*0\r\n" || want == "%0\r\n" {
				continue // not in Redis 7.0
			}
			got := do(t, a, "COMMAND", "DOCS", cmd.Name)
			if cmd.Sub == nil {
				if got != want {
					t.Errorf("RESP%s COMMAND DOCS %s:\n got  %q\n want %q", proto, cmd.Name, got, want)
				}
			} else {
				g, w := docFields(t, []byte(got)), docFields(t, []byte(want))
				if !bytes.Equal(bytes.Join(g, nil), bytes.Join(w, nil)) {
					t.Errorf("RESP%s COMMAND DOCS %s:\n got  %q\n want %q", proto, cmd.Name, g, w)
				}
			}
			compared++
		}
	}
	t.Logf("%d COMMAND DOCS replies compared", compared)
	if compared < 100 {
		t.Errorf("only %d commands compared", compared)
	}
}

// TestRedisCLIHelpMatchesRedis: redis-cli builds its HELP and hints from
// COMMAND DOCS; `redis-cli help <command>` prints the same for every
// command both servers have.
func TestRedisCLIHelpMatchesRedis(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli: %v", err)
	}
	rs, redis := startBoth(t)
	cli := func(addr string, args ...string) string {
		host, port, _ := strings.Cut(addr, ":")
		out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	rc := dial(t, redis)
	n := 0
	for _, cmd := range command.All() {
		if cmd.Sub != nil || do(t, rc, "COMMAND", "DOCS", cmd.Name) == "*0\r\n" {
			// A container's help lists its subcommands, which differ;
			// each is compared on its own.
			continue
		}
		args := append([]string{"help"}, strings.Split(cmd.Name, "|")...)
		got, want := cli(rs, args...), cli(redis, args...)
		if got != want {
			t.Errorf("redis-cli %s:\n got  %q\n want %q", strings.Join(args, " "), got, want)
		}
		n++
	}
	// The hint of XADD comes from its arguments: without them redis-cli
	// prints the name alone.
	if out := cli(rs, "--no-raw", "help", "xadd"); !strings.Contains(out, "key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]") {
		t.Errorf("redis-cli help xadd: %q", out)
	}
	// A command Redis 7.0 lacks gets its hint from docs/added.json.
	if out := cli(rs, "help", "xackdel"); !strings.Contains(out, "key group [KEEPREF|DELREF|ACKED] IDS numids id [id ...]") {
		t.Errorf("redis-cli help xackdel: %q", out)
	}
	t.Logf("redis-cli help compared for %d commands", n)
}
