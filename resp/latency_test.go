package resp

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/wire"
)

// TestLatencyMatchesRedis: LATENCY's replies, shapes and errors as
// redis-server gives them, driven by latency-monitor-threshold set at run
// time: off, nothing is sampled; at 10 ms, a command that takes 30 ms is a
// "command" event in LATEST and HISTORY until RESET.
func TestLatencyMatchesRedis(t *testing.T) {
	oc, rc := dial(t, startServer(t, newFakeBackend(1), DefaultConfig())), dial(t, testkit.StartRedis(t, "--enable-debug-command", "yes"))
	same := func(cmd ...string) string {
		t.Helper()
		got, want := do(t, oc, cmd...), do(t, rc, cmd...)
		if got != want {
			t.Errorf("%q:\n got %q\nwant %q", cmd, got, want)
		}
		return got
	}
	same("LATENCY", "LATEST")
	same("LATENCY", "HISTORY", "command")
	same("LATENCY", "RESET")
	same("LATENCY", "DOCTOR")
	same("LATENCY", "NOSUCH")
	same("LATENCY", "HISTORY")
	same("LATENCY")
	same("DEBUG", "SLEEP", "0.03") // below no threshold: not sampled
	same("LATENCY", "LATEST")
	same("CONFIG", "SET", "latency-monitor-threshold", "10")
	same("LATENCY", "DOCTOR") // on, nothing yet
	same("PING")
	same("LATENCY", "LATEST")
	same("DEBUG", "SLEEP", "0.03")
	latest := regexp.MustCompile(`^\*1\r\n\*4\r\n\$7\r\ncommand\r\n:(\d+)\r\n:(\d+)\r\n:(\d+)\r\n$`)
	for name, c := range map[string]*testkit.Conn{"ours": oc, "redis-server": rc} {
		m := latest.FindStringSubmatch(do(t, c, "LATENCY", "LATEST"))
		if m == nil || len(m[2]) < 2 || m[2] != m[3] {
			t.Errorf("%s: LATENCY LATEST after a 30 ms command: %q", name, m)
		}
		h, err := wire.Parse([]byte(do(t, c, "LATENCY", "HISTORY", "command")))
		if samples, _ := h.([]any); err != nil || len(samples) != 1 || len(samples[0].([]any)) != 2 {
			t.Errorf("%s: LATENCY HISTORY command: %v %v", name, h, err)
		}
		if d := do(t, c, "LATENCY", "DOCTOR"); !strings.Contains(d, "1. command: 1 latency spikes (average ") {
			t.Errorf("%s: LATENCY DOCTOR: %q", name, d)
		}
	}
	same("LATENCY", "RESET", "nosuch")
	same("LATENCY", "RESET", "COMMAND", "command")
	same("LATENCY", "LATEST")
	same("CONFIG", "SET", "latency-monitor-threshold", "0")
	got, want := do(t, oc, "LATENCY", "HELP"), do(t, rc, "LATENCY", "HELP")
	// Redis 7.4's footer; GRAPH and HISTOGRAM are not implemented.
	want = strings.Replace(want, "Prints this help", "Print this help", 1)
	for _, l := range []string{"+GRAPH <event>\r\n", "+    Return an ASCII latency graph for the <event> class.\r\n",
		"+HISTOGRAM [COMMAND ...]\r\n", "+    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.\r\n",
		"+    If no commands are specified then all histograms are replied.\r\n"} {
		want = strings.Replace(want, l, "", 1)
	}
	want = "*" + strconv.Itoa(strings.Count(want, "\r\n")-1) + want[strings.Index(want, "\r\n"):]
	if got != want {
		t.Errorf("LATENCY HELP:\n got %q\nwant %q", got, want)
	}
}
