package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestDebugFlags: the fault-injection harness's test-only flags reach
// cluster.Config, are off by default, and an unknown injected bug is
// refused at startup.
func TestDebugFlags(t *testing.T) {
	o, err := parseFlags([]string{"--debug-clock-offset", "5s", "--debug-inject-bug", "stale-read",
		"--debug-dial-map", "127.0.0.1:1=127.0.0.1:2, 127.0.0.1:3=127.0.0.1:4"})
	if err != nil {
		t.Fatal(err)
	}
	c := clusterConfig(o, slog.New(slog.DiscardHandler))
	if c.Now == nil || c.Now().Sub(time.Now()) < 4*time.Second {
		t.Error("clock offset not applied")
	}
	if c.InjectBug != "stale-read" || len(c.DebugDialMap) != 2 || c.DebugDialMap["127.0.0.1:3"] != "127.0.0.1:4" {
		t.Errorf("InjectBug %q, DebugDialMap %v", c.InjectBug, c.DebugDialMap)
	}
	o, err = parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := clusterConfig(o, slog.New(slog.DiscardHandler)); c.Now != nil || c.InjectBug != "" || c.DebugDialMap != nil {
		t.Error("a debug hook is on by default")
	}
	if _, err := parseFlags([]string{"--debug-inject-bug", "lose-everything"}); err == nil {
		t.Error("unknown bug accepted")
	}
}

// TestEnvSwitchesReachClusterConfig: the environment-only switches fill
// cluster.Config, are off when unset or empty, and a segment size that is
// not a positive byte count is refused at startup naming the variable.
func TestEnvSwitchesReachClusterConfig(t *testing.T) {
	for _, env := range []string{logStoreEnv, nodeLogSegmentEnv, logStoreFaultEnv} {
		t.Setenv(env, "")
	}
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := clusterConfig(o, slog.New(slog.DiscardHandler)); c.LogStore != "" || c.NodeLogSegmentBytes != 0 || c.LogStoreFaultFile != "" {
		t.Errorf("unset: LogStore %q, NodeLogSegmentBytes %d, LogStoreFaultFile %q", c.LogStore, c.NodeLogSegmentBytes, c.LogStoreFaultFile)
	}
	t.Setenv(logStoreEnv, "bolt")
	t.Setenv(nodeLogSegmentEnv, "262144")
	t.Setenv(logStoreFaultEnv, "/tmp/fail-fsync")
	if o, err = parseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if c := clusterConfig(o, slog.New(slog.DiscardHandler)); c.LogStore != "bolt" || c.NodeLogSegmentBytes != 262144 || c.LogStoreFaultFile != "/tmp/fail-fsync" {
		t.Errorf("set: LogStore %q, NodeLogSegmentBytes %d, LogStoreFaultFile %q", c.LogStore, c.NodeLogSegmentBytes, c.LogStoreFaultFile)
	}
	for _, bad := range []string{"0", "-1", "256k", "x"} {
		t.Setenv(nodeLogSegmentEnv, bad)
		if _, err := parseFlags(nil); err == nil || !strings.Contains(err.Error(), nodeLogSegmentEnv) {
			t.Errorf("%s=%q: %v", nodeLogSegmentEnv, bad, err)
		}
	}
}
