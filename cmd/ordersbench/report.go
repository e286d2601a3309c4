package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Latency summarises one histogram; times in microseconds.
type Latency struct {
	Name      string  `json:"name"`
	Count     uint64  `json:"count"`
	Errors    uint64  `json:"errors"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	P999us    float64 `json:"p999_us"`
	MaxUs     float64 `json:"max_us"`
	MeanUs    float64 `json:"mean_us"`
}

func summarize(name string, h *Histogram, errs uint64, secs float64) Latency {
	l := Latency{Name: name, Count: h.Count(), Errors: errs,
		P50us: us(h.Quantile(0.5)), P99us: us(h.Quantile(0.99)), P999us: us(h.Quantile(0.999)),
		MaxUs: us(h.Max()), MeanUs: h.Mean() / 1e3}
	if secs > 0 {
		l.OpsPerSec = float64(h.Count()) / secs
	}
	return l
}

// GroupTotal is one consumer group's consumption.
type GroupTotal struct {
	Group string `json:"group"`
	// Delivered counts this run's orders delivered (with redeliveries);
	// Foreign entries of other runs found in the streams.
	Delivered uint64 `json:"delivered"`
	Foreign   uint64 `json:"foreign"`
	// PerSec is Delivered over the consumers' time: the whole run, or the
	// drain alone with ConsumeAfter.
	PerSec float64 `json:"per_sec"`
	// E2E is produce (ts_ns, taken just before the XADD pipeline is sent)
	// to XACK reply.
	E2E Latency `json:"e2e"`
}

// RunConfig is the part of Config a report records.
type RunConfig struct {
	Addrs      []string `json:"addrs"`
	Cluster    bool     `json:"cluster"`
	Partitions int      `json:"partitions"`
	Producers  int      `json:"producers"`
	Pipeline   int      `json:"pipeline"`
	Consumers  int      `json:"consumers_per_group"`
	Groups     []string `json:"groups"`
	DurationS  float64  `json:"duration_s"`
	Count      int64    `json:"count"`
	// ConsumeAfter: the consumers started when production ended.
	ConsumeAfter bool    `json:"consume_after"`
	Rate         float64 `json:"rate"`
	MaxLen       int64   `json:"maxlen"`
	ValueSize    int     `json:"value_size"`
	Seed         uint64  `json:"seed"`
}

// Report is the result of a run: the JSON document, the table and the HTML
// page are all rendered from it.
type Report struct {
	Config    RunConfig `json:"config"`
	StartedAt string    `json:"started_at"`
	// ProduceSeconds is the production phase; TotalSeconds includes the
	// drain; ConsumeSeconds is the consumers' time (TotalSeconds, or the
	// drain alone with ConsumeAfter).
	ProduceSeconds float64 `json:"produce_seconds"`
	ConsumeSeconds float64 `json:"consume_seconds"`
	TotalSeconds   float64 `json:"total_seconds"`
	Totals         struct {
		Produced      uint64       `json:"produced"`
		ProduceErrors uint64       `json:"produce_errors"`
		ProducePerSec float64      `json:"produce_per_sec"`
		Groups        []GroupTotal `json:"groups"`
	} `json:"totals"`
	Latency       []Latency `json:"latency"`
	Timeline      []Point   `json:"timeline"`
	Errors        []string  `json:"errors"`
	DrainTimedOut bool      `json:"drain_timed_out"`
	Verify        *Verdict  `json:"verify,omitempty"`
}

func buildReport(cfg *Config, st *Stats, start, prodEnd, consStart, end time.Time, errs []string) *Report {
	r := &Report{
		Config: RunConfig{Addrs: cfg.Addrs, Cluster: cfg.Cluster, Partitions: cfg.Partitions, Producers: cfg.Producers,
			Pipeline: cfg.Pipeline, Consumers: cfg.Consumers, Groups: cfg.Groups, DurationS: cfg.Duration.Seconds(),
			Count: cfg.Count, ConsumeAfter: cfg.ConsumeAfter, Rate: cfg.Rate, MaxLen: cfg.MaxLen, ValueSize: cfg.ValueSize, Seed: cfg.Seed},
		StartedAt:      start.UTC().Format(time.RFC3339),
		ProduceSeconds: prodEnd.Sub(start).Seconds(),
		TotalSeconds:   end.Sub(start).Seconds(),
		ConsumeSeconds: end.Sub(consStart).Seconds(),
		Timeline:       st.Timeline,
		Errors:         errs,
	}
	if r.Errors == nil {
		r.Errors = []string{}
	}
	tot := st.total
	r.Totals.Produced = tot.ops[opXAdd]
	r.Totals.ProduceErrors = tot.errs[opXAdd]
	if r.ProduceSeconds > 0 {
		r.Totals.ProducePerSec = float64(tot.ops[opXAdd]) / r.ProduceSeconds
	}
	for gi, g := range cfg.Groups {
		gt := GroupTotal{Group: g, Delivered: tot.msgs[gi], Foreign: tot.foreign[gi],
			E2E: summarize("e2e "+g, tot.e2e[gi], 0, 0)}
		if r.ConsumeSeconds > 0 {
			gt.PerSec = float64(tot.msgs[gi]) / r.ConsumeSeconds
		}
		r.Totals.Groups = append(r.Totals.Groups, gt)
	}
	for o := range numOps {
		secs := r.ConsumeSeconds
		if o == opXAdd {
			secs = r.ProduceSeconds
		}
		r.Latency = append(r.Latency, summarize(opNames[o], tot.lat[o], tot.errs[o], secs))
	}
	return r
}

// progressLine is the once-a-second line on stderr.
func progressLine(cfg *Config, p Point, draining bool) string {
	var b strings.Builder
	phase := "produce"
	if draining {
		phase = "drain"
	}
	fmt.Fprintf(&b, "[%5.1fs %s] xadd %8.0f/s p50 %s p99 %s", p.T, phase, p.ProducedPerSec, fmtUs(p.XAddP50us), fmtUs(p.XAddP99us))
	for gi, g := range cfg.Groups {
		fmt.Fprintf(&b, " | %s %8.0f/s", g, p.ConsumedPerSec[gi])
	}
	fmt.Fprintf(&b, " | e2e p99 %s | errors %d", fmtUs(p.E2EP99us), p.Errors)
	return b.String()
}

// fmtUs renders microseconds with a unit that keeps 3 significant digits.
func fmtUs(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fs", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.2fms", v/1e3)
	default:
		return fmt.Sprintf("%.0fµs", v)
	}
}

// writeTable prints the final summary.
func writeTable(w io.Writer, r *Report) {
	c := r.Config
	fmt.Fprintf(w, "ordersbench %s: %d producers (pipeline %d), %d partitions, groups %s × %d consumers, produced for %.2fs, total %.2fs\n",
		strings.Join(c.Addrs, ","), c.Producers, c.Pipeline, c.Partitions, strings.Join(c.Groups, ","), c.Consumers,
		r.ProduceSeconds, r.TotalSeconds)
	if c.ConsumeAfter {
		fmt.Fprintf(w, "consumers started after production: drained for %.2fs\n", r.ConsumeSeconds)
	}
	fmt.Fprintf(w, "produced %d orders (%.0f/s), %d errors\n", r.Totals.Produced, r.Totals.ProducePerSec, r.Totals.ProduceErrors)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tcount\terrors\tops/s\tp50\tp99\tp99.9\tmax\t")
	row := func(l Latency) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t\n", l.Name, l.Count, l.Errors, l.OpsPerSec,
			fmtUs(l.P50us), fmtUs(l.P99us), fmtUs(l.P999us), fmtUs(l.MaxUs))
	}
	for _, l := range r.Latency {
		row(l)
	}
	for _, g := range r.Totals.Groups {
		l := g.E2E
		l.OpsPerSec = g.PerSec
		row(l)
	}
	_ = tw.Flush()
	for _, g := range r.Totals.Groups {
		fmt.Fprintf(w, "group %s: delivered %d (%.0f/s), foreign entries %d\n", g.Group, g.Delivered, g.PerSec, g.Foreign)
	}
	if r.DrainTimedOut {
		fmt.Fprintln(w, "drain timed out: consumers had not caught up when -drain-timeout expired")
	}
	for _, e := range r.Errors {
		fmt.Fprintln(w, "error:", e)
	}
	if v := r.Verify; v != nil {
		status := "OK"
		if !v.OK {
			status = "FAILED"
		}
		fmt.Fprintf(w, "verify %s: %d acknowledged, %d unknown outcome\n", status, v.Acked, v.Unknown)
		for _, g := range v.Groups {
			fmt.Fprintf(w, "  %s: %d orders delivered, %d deliveries, %d redelivered\n", g.Group, g.Unique, g.Deliveries, g.Duplicates)
		}
		var cs []string
		for _, c := range v.Checks {
			cs = append(cs, c.Name+" "+string(c.Valid))
		}
		fmt.Fprintf(w, "  checks: %s\n", strings.Join(cs, ", "))
		for _, c := range v.Checks {
			for _, k := range slices.Sorted(maps.Keys(c.Kinds)) {
				fmt.Fprintf(w, "  %s: %d %s\n", c.Name, c.Kinds[k], k)
			}
			for _, e := range c.Examples {
				fmt.Fprintln(w, "    e.g.", e)
			}
		}
	}
}

func writeJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
