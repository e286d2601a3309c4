package admin

import (
	"bufio"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// A tiny Prometheus text-format (0.0.4) writer: metric families of
// counters, gauges and histograms, each sample with optional labels. It
// exists so /metrics needs no new dependency; it supports exactly what the
// admin server exports.
//
// Most values are not stored here: they live where they are counted (fsm
// stats, the server's atomics) and a collector copies them into a Scrape
// when /metrics is read, so scraping never blocks a hot path.

// kind is a Prometheus metric type.
type kind string

const (
	counter   kind = "counter"
	gauge     kind = "gauge"
	histogram kind = "histogram"
)

// histValue is one histogram sample: Counts[i] observations fell in
// (Bounds[i-1], Bounds[i]] (not cumulative); Count and Sum cover all
// observations, above the last bound included.
type histValue struct {
	bounds []float64
	counts []uint64
	count  uint64
	sum    float64
}

type sample struct {
	labels []string // name, value pairs
	value  float64
	hist   *histValue
}

type family struct {
	name, help string
	kind       kind
	samples    []sample
}

// Scrape collects the samples of one /metrics response. Samples of a
// family are written in the order they were added; the family's help text
// and type are those of its first sample. Labels are name, value pairs.
// Not safe for concurrent use; a Scrape lives for one request.
type Scrape struct {
	fams  map[string]*family
	order []string
}

// NewScrape returns an empty scrape.
func NewScrape() *Scrape { return &Scrape{fams: map[string]*family{}} }

func (sc *Scrape) add(name, help string, k kind, s sample) {
	if len(s.labels)%2 != 0 {
		panic("admin: odd label list for " + name)
	}
	f, ok := sc.fams[name]
	if !ok {
		f = &family{name: name, help: help, kind: k}
		sc.fams[name] = f
		sc.order = append(sc.order, name)
	}
	f.samples = append(f.samples, s)
}

// Gauge records one sample of gauge family name.
func (sc *Scrape) Gauge(name, help string, v float64, labels ...string) {
	sc.add(name, help, gauge, sample{labels: labels, value: v})
}

// Counter records one sample of counter family name.
func (sc *Scrape) Counter(name, help string, v float64, labels ...string) {
	sc.add(name, help, counter, sample{labels: labels, value: v})
}

// Histogram records one sample of histogram family name: counts[i]
// observations fell in (bounds[i-1], bounds[i]] (not cumulative; the
// writer accumulates them), count and sum cover every observation.
func (sc *Scrape) Histogram(name, help string, bounds []float64, counts []uint64, count uint64, sum float64, labels ...string) {
	sc.add(name, help, histogram, sample{labels: labels, hist: &histValue{bounds, counts, count, sum}})
}

// WriteTo writes the scrape in the Prometheus text format, families sorted
// by name so the output is stable.
func (sc *Scrape) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	names := append([]string(nil), sc.order...)
	sort.Strings(names)
	for _, n := range names {
		f := sc.fams[n]
		bw.WriteString("# HELP " + f.name + " " + escapeHelp(f.help) + "\n")
		bw.WriteString("# TYPE " + f.name + " " + string(f.kind) + "\n")
		for _, s := range f.samples {
			if s.hist == nil {
				writeSample(bw, f.name, s.labels, s.value)
				continue
			}
			h := s.hist
			var cum uint64
			for i, b := range h.bounds {
				if i < len(h.counts) {
					cum += h.counts[i]
				}
				writeSample(bw, f.name+"_bucket", append(append([]string(nil), s.labels...), "le", formatFloat(b)), float64(cum))
			}
			writeSample(bw, f.name+"_bucket", append(append([]string(nil), s.labels...), "le", "+Inf"), float64(h.count))
			writeSample(bw, f.name+"_sum", s.labels, h.sum)
			writeSample(bw, f.name+"_count", s.labels, float64(h.count))
		}
	}
	return 0, bw.Flush()
}

func writeSample(w *bufio.Writer, name string, labels []string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 {
		w.WriteByte('{')
		for i := 0; i < len(labels); i += 2 {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(labels[i] + `="` + escapeLabel(labels[i+1]) + `"`)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
