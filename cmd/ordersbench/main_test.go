package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestRunAgainstRedisVerified runs a short bounded workload through run()
// against a real redis-server and checks the verdict and every output.
func TestRunAgainstRedisVerified(t *testing.T) {
	addr := testkit.StartRedis(t)
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Addrs = []string{addr}
	cfg.Partitions = 4
	cfg.Producers = 4
	cfg.Consumers = 2
	cfg.Pipeline = 4
	cfg.Duration = 2 * time.Second
	cfg.Rate = 3000
	cfg.Block = 50 * time.Millisecond
	cfg.MinIdle = 500 * time.Millisecond
	cfg.DrainTimeout = 10 * time.Second
	cfg.Verify = true
	cfg.JSONPath = filepath.Join(dir, "out.json")
	cfg.HTMLPath = filepath.Join(dir, "out.html")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, cfg, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("stdout:\n%s", stdout.String())

	var rep struct {
		Totals struct {
			Produced      uint64  `json:"produced"`
			ProducePerSec float64 `json:"produce_per_sec"`
			Groups        []struct {
				Group     string  `json:"group"`
				Delivered uint64  `json:"delivered"`
				PerSec    float64 `json:"per_sec"`
				E2E       Latency `json:"e2e"`
			} `json:"groups"`
		} `json:"totals"`
		Latency  []Latency `json:"latency"`
		Timeline []Point   `json:"timeline"`
		Verify   *Verdict  `json:"verify"`
	}
	b, err := os.ReadFile(cfg.JSONPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, b)
	}
	if rep.Totals.Produced == 0 || rep.Totals.ProducePerSec <= 0 {
		t.Fatalf("no throughput: %+v", rep.Totals)
	}
	// The rate cap (3000/s for ~2s) bounds production from above.
	if rep.Totals.Produced > 3000*3 {
		t.Errorf("rate cap ignored: produced %d", rep.Totals.Produced)
	}
	if rep.Verify == nil || !rep.Verify.OK || rep.Verify.Acked != int(rep.Totals.Produced) {
		t.Fatalf("verify: %+v (produced %d)", rep.Verify, rep.Totals.Produced)
	}
	for _, g := range rep.Verify.Groups {
		if g.Unique != rep.Verify.Acked {
			t.Errorf("group %s: %+v", g.Group, g)
		}
	}
	if len(rep.Totals.Groups) != 2 || rep.Totals.Groups[0].Group != "billing" || rep.Totals.Groups[1].Group != "analytics" {
		t.Fatalf("groups: %+v", rep.Totals.Groups)
	}
	for _, g := range rep.Totals.Groups {
		if g.Delivered < rep.Totals.Produced || g.E2E.Count == 0 || g.E2E.P99us <= 0 || g.E2E.P50us > g.E2E.P99us {
			t.Errorf("group %s consumption: %+v", g.Group, g)
		}
	}
	ops := map[string]Latency{}
	for _, l := range rep.Latency {
		ops[l.Name] = l
	}
	if x := ops["xadd"]; x.Count != rep.Totals.Produced || x.P50us <= 0 || x.P99us < x.P50us || x.MaxUs < x.P999us {
		t.Errorf("xadd latency: %+v", x)
	}
	if ops["xreadgroup"].Count == 0 || ops["xack"].Count == 0 {
		t.Errorf("consumer ops not measured: %+v", ops)
	}
	if len(rep.Timeline) < 2 {
		t.Errorf("timeline has %d points", len(rep.Timeline))
	}
	page, err := os.ReadFile(cfg.HTMLPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("<svg")) || !bytes.Contains(page, []byte("<polyline")) {
		t.Errorf("html has no svg plot")
	}
	for _, ext := range []string{"<script src", "<link ", "http://", "https://"} {
		if ext == "http://" {
			// The SVG namespace is the only URL allowed.
			if strings.Count(string(page), "http://") != strings.Count(string(page), "http://www.w3.org/2000/svg") {
				t.Errorf("html references an external URL")
			}
			continue
		}
		if bytes.Contains(page, []byte(ext)) {
			t.Errorf("html not self-contained: contains %q", ext)
		}
	}
	if !strings.Contains(stderr.String(), "xadd") || !strings.Contains(stdout.String(), "verify OK") {
		t.Errorf("progress or table missing:\nstderr:\n%s", stderr.String())
	}
}

// TestRunVerifyDetectsLoss deletes entries behind the consumers' back
// (XTRIM MAXLEN 0 in a loop while a deliberately slow consumer reads one
// entry at a time): --verify must report missing orders and run must fail.
func TestRunVerifyDetectsLoss(t *testing.T) {
	addr := testkit.StartRedis(t)
	cfg := DefaultConfig()
	cfg.Addrs = []string{addr}
	cfg.Partitions = 1
	cfg.Producers = 2
	cfg.Pipeline = 64
	cfg.Consumers = 1
	cfg.Groups = []string{"billing"}
	cfg.ReadCount = 1
	cfg.Block = 20 * time.Millisecond
	cfg.Duration = time.Second
	cfg.Rate = 4000
	cfg.DrainTimeout = 5 * time.Second
	cfg.Verify = true
	cfg.Progress = false
	cfg.JSONPath = filepath.Join(t.TempDir(), "out.json")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := testkit.Dial(addr)
		if err != nil {
			return
		}
		defer conn.Close()
		for i := 0; i < 100_000; i++ { // bounded; the run ends much sooner
			select {
			case <-stop:
				return
			default:
			}
			if _, err := conn.Do("XTRIM", streamKey(cfg.Prefix, 0), "MAXLEN", "0"); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var stdout, stderr bytes.Buffer
	err := run(ctx, cfg, &stdout, &stderr)
	close(stop)
	<-done
	if !errors.Is(err, ErrVerifyFailed) {
		t.Fatalf("run = %v, want ErrVerifyFailed\n%s", err, stdout.String())
	}
	var rep struct {
		Verify Verdict `json:"verify"`
	}
	b, _ := os.ReadFile(cfg.JSONPath)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	// Every acknowledged order was delivered, or is named never delivered.
	missing := 0
	for _, c := range rep.Verify.Checks {
		missing += c.Kinds["never-delivered"]
	}
	if rep.Verify.OK || len(rep.Verify.Groups) != 1 || missing == 0 ||
		rep.Verify.Groups[0].Unique+missing != rep.Verify.Acked {
		t.Fatalf("verdict: %+v", rep.Verify)
	}
	if !strings.Contains(stdout.String(), "verify FAILED") {
		t.Fatalf("table does not say FAILED:\n%s", stdout.String())
	}
}

// TestSVGChartGapsAndEscaping: labels are escaped and NaN (an interval with
// no samples) splits a line instead of drawing a drop to zero.
func TestSVGChartGapsAndEscaping(t *testing.T) {
	svg := svgChart("a<b", "ms", []float64{1, 2, 3, 4}, []series{{name: "x&y", color: "#000", ys: []float64{1, 5, math.NaN(), 2}}})
	if strings.Contains(svg, "a<b") || !strings.Contains(svg, "a&lt;b") || !strings.Contains(svg, "x&amp;y") {
		t.Fatalf("labels not escaped: %s", svg)
	}
	if n := strings.Count(svg, "<polyline"); n != 2 {
		t.Fatalf("NaN should split the line into 2 polylines, got %d", n)
	}
	if strings.Contains(svg, "NaN") {
		t.Fatalf("NaN leaked into the SVG")
	}
}

// TestConsumeAfterDrainsBacklog runs with -consume-after against a real
// redis-server: the consumers start only when production has ended, drain
// the whole backlog, and consumed/s is measured over the drain alone.
func TestConsumeAfterDrainsBacklog(t *testing.T) {
	addr := testkit.StartRedis(t)
	cfg := DefaultConfig()
	cfg.Addrs = []string{addr}
	cfg.Partitions = 4
	cfg.Producers = 4
	cfg.Consumers = 2
	cfg.Pipeline = 8
	cfg.Duration = 0
	cfg.Count = 4000
	cfg.Block = 50 * time.Millisecond
	cfg.MinIdle = 500 * time.Millisecond
	cfg.DrainTimeout = 20 * time.Second
	cfg.ConsumeAfter = true
	cfg.Verify = true
	cfg.Progress = false
	cfg.JSONPath = filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := run(ctx, cfg, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var rep Report
	b, err := os.ReadFile(cfg.JSONPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Produced != 4000 || rep.Verify == nil || !rep.Verify.OK {
		t.Fatalf("produced %d, verify %+v\n%s", rep.Totals.Produced, rep.Verify, stdout.String())
	}
	// The consumers' window is the drain only: it starts after production.
	if rep.ConsumeSeconds <= 0 || rep.ConsumeSeconds > rep.TotalSeconds-rep.ProduceSeconds+0.01 {
		t.Fatalf("consume window %.3fs, total %.3fs, produce %.3fs", rep.ConsumeSeconds, rep.TotalSeconds, rep.ProduceSeconds)
	}
	for _, g := range rep.Totals.Groups {
		if g.Delivered < 4000 {
			t.Errorf("group %s delivered %d of 4000", g.Group, g.Delivered)
		}
		if want := float64(g.Delivered) / rep.ConsumeSeconds; math.Abs(g.PerSec-want) > 1e-6*want {
			t.Errorf("group %s per_sec %.1f, want %.1f (over the drain)", g.Group, g.PerSec, want)
		}
	}
	if !strings.Contains(stdout.String(), "consumers started after production") {
		t.Errorf("table does not say the consumers started late:\n%s", stdout.String())
	}
}
