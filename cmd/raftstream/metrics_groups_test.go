package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestGroupMetricsWithoutFlags: a node started with --admin-addr and no
// metrics flag exports every consumer group's lag, pending count and
// oldest-pending age; with --metrics-max-groups 2 and 5 groups, the two
// with the largest backlog keep their series and the dropped gauge says 3.
func TestGroupMetricsWithoutFlags(t *testing.T) {
	load := func(addr string) {
		t.Helper()
		c := dial(t, addr)
		for i := 1; i <= 10; i++ {
			do(t, c, "XADD", "jobs", fmt.Sprintf("%d-1", i), "f", "v")
		}
		// Group gK reads all 10 entries and acknowledges K of them: its
		// backlog (lag + pending) is 10-K; a second stream has one group
		// that read nothing (lag 3).
		for k := 0; k < 4; k++ {
			g := fmt.Sprintf("g%d", k)
			do(t, c, "XGROUP", "CREATE", "jobs", g, "0")
			do(t, c, "XREADGROUP", "GROUP", g, "c", "STREAMS", "jobs", ">")
			for i := 1; i <= k; i++ {
				do(t, c, "XACK", "jobs", g, fmt.Sprintf("%d-1", i))
			}
		}
		for i := 1; i <= 3; i++ {
			do(t, c, "XADD", "mail", "*", "f", "v")
		}
		do(t, c, "XGROUP", "CREATE", "mail", "senders", "0")
	}

	t.Run("default", func(t *testing.T) {
		admin := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
		n := startNode(t, "", "--admin-addr", admin)
		load(n.Addr)
		m := scrape(t, admin)
		want := map[string]float64{
			`raftstream_stream_group_pending{shard="0",stream="jobs",group="g0"}`:                     10,
			`raftstream_stream_group_lag{shard="0",stream="jobs",group="g0"}`:                         0,
			`raftstream_stream_group_pending{shard="0",stream="jobs",group="g3"}`:                     7,
			`raftstream_stream_group_lag{shard="0",stream="jobs",group="g3"}`:                         0,
			`raftstream_stream_group_pending{shard="0",stream="mail",group="senders"}`:                0,
			`raftstream_stream_group_lag{shard="0",stream="mail",group="senders"}`:                    3,
			`raftstream_stream_group_oldest_pending_seconds{shard="0",stream="mail",group="senders"}`: 0,
			`raftstream_metrics_groups`:         5,
			`raftstream_metrics_groups_dropped`: 0,
		}
		for k, v := range want {
			if got, ok := m[k]; !ok || got != v {
				t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
			}
		}
		if age, ok := m[`raftstream_stream_group_oldest_pending_seconds{shard="0",stream="jobs",group="g1"}`]; !ok || age < 0 || age > 60 {
			t.Errorf("g1's oldest pending age %v (present %v)", age, ok)
		}
		for k := range m {
			if strings.HasPrefix(k, "raftstream_stream_length{") {
				t.Errorf("a stream length series without --metrics-streams: %s", k)
			}
		}
	})

	t.Run("cap", func(t *testing.T) {
		admin := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
		n := startNode(t, "", "--admin-addr", admin, "--metrics-max-groups", "2")
		load(n.Addr)
		m := scrape(t, admin)
		var groups []string
		for k := range m {
			if strings.HasPrefix(k, "raftstream_stream_group_pending{") {
				groups = append(groups, k)
			}
		}
		if len(groups) != 2 || m[`raftstream_stream_group_pending{shard="0",stream="jobs",group="g0"}`] != 10 ||
			m[`raftstream_stream_group_pending{shard="0",stream="jobs",group="g1"}`] != 9 {
			t.Errorf("with --metrics-max-groups 2: %q, want g0 and g1 (the largest backlogs)", groups)
		}
		if m[`raftstream_metrics_groups_dropped`] != 3 || m[`raftstream_metrics_groups`] != 5 {
			t.Errorf("groups %v, dropped %v, want 5 and 3", m[`raftstream_metrics_groups`], m[`raftstream_metrics_groups_dropped`])
		}
	})
}
