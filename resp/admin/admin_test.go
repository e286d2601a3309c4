package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAdminReadyz checks /readyz and raftstream_ready follow Sources.Ready:
// 200 or 503 with the reason as the body.
func TestAdminReadyz(t *testing.T) {
	for _, c := range []struct {
		ready bool
		why   string
		code  int
		gauge string
	}{
		{true, "2 local shard replicas have a leader and are caught up", http.StatusOK, "raftstream_ready 1\n"},
		{false, "shard 1 has no leader (role candidate, term 9)", http.StatusServiceUnavailable, "raftstream_ready 0\n"},
	} {
		a := New(Config{}, Sources{Ready: func() (bool, string) { return c.ready, c.why }})
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		if rec.Code != c.code || rec.Body.String() != c.why+"\n" {
			t.Errorf("ready=%v: /readyz = %d %q, want %d %q", c.ready, rec.Code, rec.Body.String(), c.code, c.why+"\n")
		}
		rec = httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if !strings.Contains(rec.Body.String(), c.gauge) {
			t.Errorf("ready=%v: /metrics has no %q:\n%s", c.ready, c.gauge, rec.Body.String())
		}
	}
}

// TestAdminMetricsCollectors checks every collector writes into the one
// scrape /metrics serves, and /healthz answers ok.
func TestAdminMetricsCollectors(t *testing.T) {
	a := New(Config{}, Sources{
		Ready: func() (bool, string) { return true, "" },
		Collect: []func(*Scrape){
			func(sc *Scrape) { sc.Gauge("x_nodes", "X.", 1, "state", "up") },
			func(sc *Scrape) { sc.Gauge("x_nodes", "X.", 2, "state", "down") },
			func(sc *Scrape) { sc.Counter("a_total", "A.", 5) },
		},
	})
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	want := "# HELP a_total A.\n# TYPE a_total counter\na_total 5\n" +
		"# HELP raftstream_ready 1 when /readyz would answer 200.\n# TYPE raftstream_ready gauge\nraftstream_ready 1\n" +
		"# HELP x_nodes X.\n# TYPE x_nodes gauge\nx_nodes{state=\"up\"} 1\nx_nodes{state=\"down\"} 2\n"
	if rec.Body.String() != want {
		t.Errorf("/metrics:\n%s\nwant:\n%s", rec.Body.String(), want)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	rec = httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 || rec.Body.String() != "ok\n" {
		t.Errorf("/healthz = %d %q", rec.Code, rec.Body.String())
	}
}

func TestAdminPprofFlag(t *testing.T) {
	src := Sources{Ready: func() (bool, string) { return true, "" }}
	for _, on := range []bool{false, true} {
		rec := httptest.NewRecorder()
		New(Config{Pprof: on}, src).ServeHTTP(rec, httptest.NewRequest("GET", "/debug/pprof/", nil))
		if (rec.Code == 200) != on {
			t.Errorf("pprof %v: /debug/pprof/ = %d", on, rec.Code)
		}
	}
}
