package main

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestWithSysmonSetting: the setting is added to GODEBUG (kept otherwise
// as it was), and not when GODEBUG already sets schedtrace.
func TestWithSysmonSetting(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string // GODEBUG after, "" = unchanged
	}{
		{[]string{"HOME=/h"}, "GODEBUG=" + sysmonSetting},
		{[]string{"GODEBUG=madvdontneed=1", "HOME=/h"}, "GODEBUG=madvdontneed=1," + sysmonSetting},
		{[]string{"GODEBUG=", "HOME=/h"}, "GODEBUG=" + sysmonSetting},
		{[]string{"GODEBUG=schedtrace=0"}, ""},
		{[]string{"GODEBUG=gctrace=1, schedtrace=1000"}, ""},
	} {
		got, ok := withSysmonSetting(tc.env)
		if tc.want == "" {
			if ok || !slices.Equal(got, tc.env) {
				t.Errorf("%q: got %q, %v; want it unchanged", tc.env, got, ok)
			}
			continue
		}
		var godebug []string
		for _, kv := range got {
			if strings.HasPrefix(kv, "GODEBUG=") {
				godebug = append(godebug, kv)
			}
		}
		if !ok || len(godebug) != 1 || godebug[0] != tc.want || !slices.Contains(got, "HOME=/h") {
			t.Errorf("%q: got %q, %v; want one %q and HOME kept", tc.env, got, ok, tc.want)
		}
	}
}

// TestServerRunsWithSysmonBackoff: the server process (same PID as
// started) runs with the setting in its GODEBUG, after the caller's own
// settings, and INFO's go_godebug shows it; a GODEBUG that sets schedtrace
// is left as it is.
func TestServerRunsWithSysmonBackoff(t *testing.T) {
	environ := func(nd *testkit.Node) string {
		t.Helper()
		b, err := os.ReadFile("/proc/" + strconv.Itoa(nd.Pid()) + "/environ")
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
				return v
			}
		}
		return "(none)"
	}
	t.Setenv("GODEBUG", "madvdontneed=1")
	nd := testkit.StartNode(t, "")
	if got := environ(nd); got != "madvdontneed=1,"+sysmonSetting {
		t.Errorf("GODEBUG %q, want %q", got, "madvdontneed=1,"+sysmonSetting)
	}
	if info := rawBulk(t, nd.Addr, "INFO", "server"); !strings.Contains(info, "\r\ngo_godebug:madvdontneed=1,"+sysmonSetting+"\r\n") {
		t.Errorf("INFO server does not show the GODEBUG setting:\n%s", info)
	}
	t.Setenv("GODEBUG", "schedtrace=0")
	nd2 := testkit.StartNode(t, "")
	if got := environ(nd2); got != "schedtrace=0" {
		t.Errorf("GODEBUG %q, want schedtrace=0 left alone", got)
	}
}
