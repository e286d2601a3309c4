package resp

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp/command"
)

// infoParse splits an INFO reply into its sections' headers and, per
// section, its field lines by name.
func infoParse(t *testing.T, raw string) (headers []string, fields map[string]map[string]string) {
	t.Helper()
	if !strings.HasPrefix(raw, "$") {
		t.Fatalf("INFO: %q", raw)
	}
	body := raw[strings.Index(raw, "\r\n")+2 : len(raw)-2]
	fields = map[string]map[string]string{}
	sec := ""
	for _, l := range strings.Split(body, "\r\n") {
		switch {
		case strings.HasPrefix(l, "# "):
			sec = strings.ToLower(l[2:])
			headers = append(headers, l[2:])
			fields[sec] = map[string]string{}
		case l == "":
		default:
			k, v, ok := strings.Cut(l, ":")
			if !ok || sec == "" {
				t.Fatalf("INFO line %q", l)
			}
			fields[sec][k] = v
		}
	}
	return headers, fields
}

// infoOrder lists each section's field names in order.
func infoOrder(raw string) map[string][]string {
	out := map[string][]string{}
	sec := ""
	for _, l := range strings.Split(raw, "\r\n") {
		if strings.HasPrefix(l, "# ") {
			sec = strings.ToLower(l[2:])
		} else if k, _, ok := strings.Cut(l, ":"); ok && sec != "" {
			out[sec] = append(out[sec], k)
		}
	}
	return out
}

// infoExtras are raftstream's own fields, documented in deploy/OPERATIONS.md.
var infoExtras = regexp.MustCompile(`^(raftstream_version|go_version|go_maxprocs|go_godebug|colocated_nodes|raft_log_\w+|raft_entries_\w+|raft_entry_commands|raft_commit_usec|shard\d+|client_(query|output)_buffer_limit_disconnections)$`)

// TestInfoMatchesRedis: INFO's sections (which ones each selection gives,
// their order and headers), the field names of each (every one Redis's, but
// for raftstream's documented own), and the deterministic values, as
// redis-server 7 has them.
func TestInfoMatchesRedis(t *testing.T) {
	// redis-server with an AOF, as raftstream's log is one.
	oc, rc := dial(t, startServer(t, newFakeBackend(1), DefaultConfig())), dial(t, testkit.StartRedis(t, "--appendonly", "yes"))
	for _, sel := range [][]string{{}, {"default"}, {"all"}, {"everything"}, {"commandstats"}, {"nosuch"}, {"server", "clients"},
		{"SERVER"}, {"keyspace", "keyspace"}, {"default", "commandstats"}, {"modules"}, {"everything", "nosuch"}, {"errorstats", "latencystats"}} {
		got, _ := infoParse(t, do(t, oc, append([]string{"INFO"}, sel...)...))
		want, _ := infoParse(t, do(t, rc, append([]string{"INFO"}, sel...)...))
		// "Raft" and "Bus" are raftstream's own sections, last in default,
		// all and everything.
		for len(got) > len(want) && (got[len(got)-1] == "Raft" || got[len(got)-1] == "Bus") {
			got = got[:len(got)-1]
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("INFO %v sections: %v, redis-server %v", sel, got, want)
		}
	}
	script := [][]string{
		{"XADD", "a", "1-1", "f", "v"}, {"XADD", "b", "1-1", "f", "v"}, {"SET", "str", "x"},
		{"XADD", "str", "*", "f", "v"}, {"XADD", "a", "1-1", "f", "v"}, {"XADD", "a"}, {"XGROUP", "NOSUCH"},
		{"NOSUCHCMD", "x"}, {"XLEN", "a"}, {"XRANGE", "a", "-", "+"}, {"XRANGE", "a", "x", "+"},
		{"MULTI"}, {"XADD", "a", "2-1", "f", "v"}, {"XADD", "str", "*", "f", "v"}, {"XLEN", "b"}, {"EXEC"},
		{"MULTI"}, {"XADD", "a"}, {"EXEC"},
		{"CONFIG", "GET", "maxmemory"}, {"CONFIG", "SET", "nosuch", "1"}, {"PING"},
	}
	for _, c := range []*testkit.Conn{oc, rc} {
		do(t, c, "CONFIG", "RESETSTAT")
		for _, cmd := range script {
			do(t, c, cmd...)
		}
	}
	rawGot, rawWant := do(t, oc, "INFO", "everything"), do(t, rc, "INFO", "everything")
	_, got := infoParse(t, rawGot)
	_, want := infoParse(t, rawWant)
	// The fields both have come in the same order.
	for sec, order := range infoOrder(rawGot) {
		var ours, theirs []string
		for _, k := range order {
			if _, ok := want[sec][k]; ok && !strings.HasPrefix(sec, "cmd") {
				ours = append(ours, k)
			}
		}
		for _, k := range infoOrder(rawWant)[sec] {
			if _, ok := got[sec][k]; ok {
				theirs = append(theirs, k)
			}
		}
		if sec != "commandstats" && sec != "errorstats" && sec != "latencystats" && strings.Join(ours, ",") != strings.Join(theirs, ",") {
			t.Errorf("INFO %s field order:\n ours %v\nredis %v", sec, ours, theirs)
		}
	}
	for sec, fs := range got {
		for k := range fs {
			if _, ok := want[sec][k]; !ok && !infoExtras.MatchString(k) && sec != "raft" && sec != "bus" && sec != "latencystats" {
				t.Errorf("INFO %s: field %q is not Redis's", sec, k)
			}
		}
	}
	// What tools read, equal where deterministic.
	for _, f := range []struct{ sec, field, want string }{
		{"server", "redis_version", Version}, {"server", "redis_mode", ""}, {"server", "tcp_port", "6379"},
		{"clients", "maxclients", ""}, {"clients", "blocked_clients", ""},
		{"memory", "maxmemory", ""}, {"memory", "maxmemory_human", ""}, {"memory", "maxmemory_policy", ""},
		{"persistence", "loading", ""}, {"persistence", "async_loading", ""}, {"persistence", "rdb_bgsave_in_progress", ""},
		{"persistence", "rdb_last_bgsave_status", ""}, {"persistence", "rdb_last_bgsave_time_sec", ""},
		{"persistence", "rdb_current_bgsave_time_sec", ""}, {"persistence", "rdb_saves", ""},
		{"persistence", "aof_enabled", "1"}, {"persistence", "aof_last_write_status", ""}, {"persistence", "aof_rewrite_in_progress", ""},
		{"persistence", "rdb_changes_since_last_save", "0"}, // the fake backend has no snapshots to count from
		{"stats", "total_error_replies", ""}, {"stats", "rejected_connections", ""}, {"stats", "expired_keys", ""},
		{"replication", "role", ""}, {"replication", "connected_slaves", ""},
		{"cluster", "cluster_enabled", ""}, {"keyspace", "db0", ""},
	} {
		g, ok := got[f.sec][f.field]
		w := want[f.sec][f.field]
		if f.want != "" {
			w = f.want
		}
		if !ok || g != w {
			t.Errorf("INFO %s %s: %q (present %v), want %q", f.sec, f.field, g, ok, w)
		}
	}
	// commandstats: calls, rejected_calls and failed_calls as Redis counts
	// them (usec differ); errorstats equal.
	usec := regexp.MustCompile(`usec=\d+,usec_per_call=[\d.]+,`)
	for k, v := range want["commandstats"] {
		if k == "cmdstat_info" || k == "cmdstat_config|resetstat" {
			continue
		}
		if g := got["commandstats"][k]; usec.ReplaceAllString(g, "") != usec.ReplaceAllString(v, "") {
			t.Errorf("INFO commandstats %s: %q, redis-server %q", k, g, v)
		}
	}
	if g, w := sortedKeys(got["commandstats"]), sortedKeys(want["commandstats"]); g != w {
		t.Errorf("INFO commandstats commands: %s, redis-server %s", g, w)
	}
	if g, w := fmtMap(got["errorstats"]), fmtMap(want["errorstats"]); g != w {
		t.Errorf("INFO errorstats: %s, redis-server %s", g, w)
	}
	// latencystats: the commands that ran, Redis's format.
	pct := regexp.MustCompile(`^p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$`)
	for k, v := range got["latencystats"] {
		if _, ok := want["latencystats"][k]; !ok || !pct.MatchString(v) {
			t.Errorf("INFO latencystats %s:%s (redis-server has %q)", k, v, want["latencystats"][k])
		}
	}
	if g, w := len(got["latencystats"]), len(want["latencystats"]); g != w {
		t.Errorf("INFO latencystats: %d commands, redis-server %d:\n%v\n%v", g, w, got["latencystats"], want["latencystats"])
	}
	// CONFIG RESETSTAT zeroes the statistics.
	do(t, oc, "CONFIG", "RESETSTAT")
	_, after := infoParse(t, do(t, oc, "INFO", "commandstats", "errorstats", "stats"))
	if len(after["errorstats"]) != 0 || after["stats"]["total_error_replies"] != "0" ||
		!regexp.MustCompile(`^calls=1,`).MatchString(after["commandstats"]["cmdstat_config|resetstat"]) || len(after["commandstats"]) != 1 {
		t.Errorf("INFO after CONFIG RESETSTAT: %v", after)
	}
}

// TestRedisVersionIsTheStreamCommands: redis_version (INFO, HELLO) is the
// newest "since" of the table's stream commands.
func TestRedisVersionIsTheStreamCommands(t *testing.T) {
	newest := ""
	for _, c := range command.All() {
		if c.Group == "stream" && c.Since != "raftstream" && (newest == "" || versionLess(newest, c.Since)) {
			newest = c.Since
		}
	}
	if Version != newest || newest != "8.8.0" {
		t.Errorf("Version %q, newest stream command since %q", Version, newest)
	}
	c := dial(t, startServer(t, newFakeBackend(1), DefaultConfig()))
	if got := do(t, c, "HELLO", "3"); !strings.Contains(got, "$7\r\nversion\r\n$5\r\n"+Version+"\r\n") {
		t.Errorf("HELLO: %q", got)
	}
	if got := do(t, c, "INFO", "server"); !strings.Contains(got, "\r\nredis_version:"+Version+"\r\n") || !strings.Contains(got, "\r\nraftstream_version:"+RaftstreamVersion+"\r\n") {
		t.Errorf("INFO server: %q", got)
	}
}

func versionLess(a, b string) bool {
	va, _ := parseVersion(a)
	vb, _ := parseVersion(b)
	return compareVersions(va, vb) < 0
}

func sortedKeys(m map[string]string) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

func fmtMap(m map[string]string) string {
	var ks []string
	for k, v := range m {
		ks = append(ks, k+"="+v)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}
