package cluster

import (
	"fmt"
	"strings"
	"testing"
)

func TestReadiness(t *testing.T) {
	lead := ShardStatus{Role: "leader", Term: 3, CommitIndex: 100, AppliedIndex: 100, Leader: "a"}
	cases := []struct {
		name  string
		local []replicaState
		ready bool
		why   string
	}{
		{"all led and caught up", []replicaState{{0, lead, ""}, {1, ShardStatus{Role: "follower", CommitIndex: 50, AppliedIndex: 45, Leader: "b"}, ""}}, true, "2 local shard"},
		{"shard not hosted is ignored", []replicaState{{1, lead, ""}}, true, "1 local shard"},
		{"no replicas yet", nil, false, "no shard replicas"},
		{"no leader", []replicaState{{0, lead, ""}, {1, ShardStatus{Role: "candidate", Term: 9, Leader: ""}, ""}}, false, "shard 1 has no leader (role candidate, term 9)"},
		{"follower behind", []replicaState{{0, ShardStatus{Role: "follower", CommitIndex: 5000, AppliedIndex: 10, Leader: "b"}, ""}, {1, lead, ""}}, false, "shard 0 is catching up: applied 10 of 5000"},
		{"lag within bound", []replicaState{{0, ShardStatus{Role: "follower", CommitIndex: 1010, AppliedIndex: 10, Leader: "b"}, ""}, {1, lead, ""}}, true, ""},
		{"storage fault", []replicaState{{0, lead, ""}, {1, lead, "shard 1: Raft log store failed: disk full"}}, false, "shard 1: Raft log store failed: disk full"},
	}
	for _, c := range cases {
		ok, why := readiness(c.local, 0)
		if ok != c.ready || !strings.Contains(why, c.why) {
			t.Errorf("%s: readiness = %v %q, want %v %q", c.name, ok, why, c.ready, c.why)
		}
	}
	behind := []replicaState{{0, ShardStatus{Role: "follower", CommitIndex: 1010, AppliedIndex: 10, Leader: "b"}, ""}}
	if ok, why := readiness(behind, 999); ok {
		t.Errorf("1000 entries behind with maxLag 999: ready (%q)", why)
	}
}

// seriesRecorder is a MetricWriter that keeps every sample as
// name{labels} -> value and checks each family keeps one help text.
type seriesRecorder struct {
	t      *testing.T
	help   map[string]string
	series map[string]float64
}

func (r *seriesRecorder) add(name, help string, v float64, labels []string) {
	if h, ok := r.help[name]; ok && h != help {
		r.t.Errorf("%s written with two help texts: %q and %q", name, h, help)
	}
	r.help[name] = help
	var l []string
	for i := 0; i+1 < len(labels); i += 2 {
		l = append(l, fmt.Sprintf("%s=%q", labels[i], labels[i+1]))
	}
	key := name
	if len(l) > 0 {
		key += "{" + strings.Join(l, ",") + "}"
	}
	if _, dup := r.series[key]; dup {
		r.t.Errorf("series %s written twice", key)
	}
	r.series[key] = v
}

func (r *seriesRecorder) Gauge(name, help string, v float64, labels ...string) {
	r.add(name, help, v, labels)
}
func (r *seriesRecorder) Counter(name, help string, v float64, labels ...string) {
	r.add(name, help, v, labels)
}
func (r *seriesRecorder) Histogram(name, help string, bounds []float64, counts []uint64, count uint64, sum float64, labels ...string) {
	r.add(name+"_count", help, float64(count), labels)
}

// TestNodeMetricsAndReady runs a single node: it is ready, and its series
// describe one up member and a leading shard 0.
func TestNodeMetricsAndReady(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	defer n.Close()
	if ok, why := n.Ready(0); !ok || why != "1 local shard replicas have a leader and are caught up" {
		t.Errorf("Ready = %v %q", ok, why)
	}
	r := &seriesRecorder{t: t, help: map[string]string{}, series: map[string]float64{}}
	n.CollectMetrics(r)
	for k, v := range map[string]float64{
		`raftstream_cluster_nodes{state="up"}`:               1,
		`raftstream_cluster_nodes{state="down"}`:             0,
		`raftstream_cluster_shards`:                          1,
		`raftstream_shard_role{shard="0",role="leader"}`:     1,
		`raftstream_shard_role{shard="0",role="follower"}`:   0,
		`raftstream_shard_has_leader{shard="0"}`:             1,
		`raftstream_shard_storage_fault{shard="0"}`:          0,
		`raftstream_shard_snapshot_seconds_count{shard="0"}`: 0,
	} {
		if got, ok := r.series[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	for _, name := range []string{"raftstream_node_log_writes_total", "raftstream_node_log_segments", "raftstream_shard_batch_commands_count", "raftstream_shard_commit_seconds_count"} {
		if _, ok := r.help[name]; !ok {
			t.Errorf("no %s series", name)
		}
	}
}
