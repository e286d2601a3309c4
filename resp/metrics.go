package resp

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
// stats, the server's atomics) and a Collect function copies them into a
// Scrape when /metrics is read, so scraping never blocks a hot path.

// MetricKind is a Prometheus metric type.
type MetricKind string

// The metric types the writer knows.
const (
	Counter   MetricKind = "counter"
	Gauge     MetricKind = "gauge"
	Histogram MetricKind = "histogram"
)

// Label is one name="value" pair.
type Label struct{ Name, Value string }

// HistogramValue is a cumulative-bucket snapshot: Counts[i] observations
// were ≤ Bounds[i] (non-cumulative counts are accepted too, see
// Scrape.Histogram); Count and Sum cover all observations (+Inf included).
type HistogramValue struct {
	Bounds []float64
	Counts []uint64 // per bucket, NOT cumulative; len(Bounds)
	Count  uint64
	Sum    float64
}

type sample struct {
	labels []Label
	value  float64
	hist   *HistogramValue
}

type family struct {
	name, help string
	kind       MetricKind
	samples    []sample
}

// Scrape collects the samples of one /metrics response. Not safe for
// concurrent use; a Scrape lives for one request.
type Scrape struct {
	fams  map[string]*family
	order []string
}

// NewScrape returns an empty scrape.
func NewScrape() *Scrape { return &Scrape{fams: map[string]*family{}} }

func (sc *Scrape) fam(name, help string, kind MetricKind) *family {
	f, ok := sc.fams[name]
	if !ok {
		f = &family{name: name, help: help, kind: kind}
		sc.fams[name] = f
		sc.order = append(sc.order, name)
	}
	return f
}

// Add records one counter or gauge sample of family name.
func (sc *Scrape) Add(name, help string, kind MetricKind, v float64, labels ...Label) {
	f := sc.fam(name, help, kind)
	f.samples = append(f.samples, sample{labels: labels, value: v})
}

// Histogram records one histogram sample of family name.
func (sc *Scrape) Histogram(name, help string, h HistogramValue, labels ...Label) {
	f := sc.fam(name, help, Histogram)
	f.samples = append(f.samples, sample{labels: labels, hist: &h})
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
			for i, b := range h.Bounds {
				if i < len(h.Counts) {
					cum += h.Counts[i]
				}
				writeSample(bw, f.name+"_bucket", append(append([]Label(nil), s.labels...), Label{"le", formatFloat(b)}), float64(cum))
			}
			writeSample(bw, f.name+"_bucket", append(append([]Label(nil), s.labels...), Label{"le", "+Inf"}), float64(h.Count))
			writeSample(bw, f.name+"_sum", s.labels, h.Sum)
			writeSample(bw, f.name+"_count", s.labels, float64(h.Count))
		}
	}
	return 0, bw.Flush()
}

func writeSample(w *bufio.Writer, name string, labels []Label, v float64) {
	w.WriteString(name)
	if len(labels) > 0 {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(l.Name + `="` + escapeLabel(l.Value) + `"`)
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
