package report

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strings"

	"github.com/raftstream/raftstream/jepsen/history"
)

// Plot geometry, in SVG user units.
const (
	plotW    = 1100.0
	marginL  = 80.0
	marginR  = 10.0
	laneH    = 14.0
	maxDrawn = 20000 // operations drawn in the timeline; the rest are counted
)

var typeColor = map[history.Type]string{history.OK: "#3a9d4f", history.Fail: "#c0392b", history.Info: "#e69a17"}

// fColor colors operations by f in the latency plot.
var fColor = map[history.F]string{
	history.XAdd: "#1f77b4", history.XAddIdmp: "#17becf", history.XRange: "#2ca02c", history.XRead: "#98df8a",
	history.XReadGroup: "#9467bd", history.XAck: "#8c564b", history.XAutoClaim: "#e377c2", history.XPending: "#7f7f7f",
}

// frame is the time axis shared by the plots.
type frame struct {
	t0, t1 int64
}

func newFrame(h history.History) frame {
	f := frame{}
	if len(h) > 0 {
		f.t0, f.t1 = h[0].Time, h[len(h)-1].Time
	}
	if f.t1 <= f.t0 {
		f.t1 = f.t0 + 1
	}
	return f
}

func (f frame) x(t int64) float64 {
	if t > f.t1 {
		t = f.t1
	}
	return marginL + (plotW-marginL-marginR)*float64(t-f.t0)/float64(f.t1-f.t0)
}

func (f frame) axis(b *strings.Builder, y float64) {
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444"/>`, marginL, y, plotW-marginR, y)
	for i := 0; i <= 10; i++ {
		t := f.t0 + (f.t1-f.t0)*int64(i)/10
		x := f.x(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444"/><text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%.2fs</text>`,
			x, y, x, y+4, x, y+15, float64(t)/1e9)
	}
}

func (f frame) shadeFaults(b *strings.Builder, faults []history.Fault, top, height float64) {
	for _, w := range faults {
		x0, x1 := f.x(w.Start), f.x(w.End)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f4b6b6" fill-opacity="0.45"><title>%s</title></rect>`,
			x0, top, math.Max(x1-x0, 1), height, html.EscapeString(w.Fault))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="9" fill="#922">%s</text>`, x0+2, top+9, html.EscapeString(w.Fault))
	}
}

// timelineSVG draws one lane per process: each operation is a bar from
// invocation to completion colored by outcome (unknown outcomes run to the
// end), anomalous operations outlined in black, fault windows shaded.
func timelineSVG(h history.History, ops []history.Op, bad map[int64]bool) string {
	f := newFrame(h)
	faults, _ := h.Faults()
	var procs []history.Process
	seen := map[history.Process]bool{}
	for _, o := range ops {
		if !seen[o.Process] {
			seen[o.Process] = true
			procs = append(procs, o.Process)
		}
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i] < procs[j] })
	lane := map[history.Process]int{}
	for i, p := range procs {
		lane[p] = i
	}
	height := float64(len(procs))*laneH + 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" class="plot">`, plotW, height)
	f.shadeFaults(&b, faults, 0, float64(len(procs))*laneH+10)
	for i, p := range procs {
		fmt.Fprintf(&b, `<text x="4" y="%.1f" font-size="10">process %s</text>`, 10+float64(i)*laneH+9, p)
	}
	drawn := 0
	for _, o := range ops {
		if drawn == maxDrawn && !bad[o.Index] {
			continue
		}
		drawn++
		x0, x1 := f.x(o.Call), f.x(o.Return)
		y := 10 + float64(lane[o.Process])*laneH
		stroke := ""
		if bad[o.Index] {
			stroke = ` stroke="#000" stroke-width="1.5"`
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"%s><title>%s</title></rect>`,
			x0, y, math.Max(x1-x0, 1), laneH-3, typeColor[o.Type], stroke, html.EscapeString(describe(o)))
	}
	f.axis(&b, float64(len(procs))*laneH+12)
	b.WriteString(`</svg>`)
	if len(ops) > drawn {
		fmt.Fprintf(&b, `<p class="note">%d of %d operations drawn.</p>`, drawn, len(ops))
	}
	return b.String()
}

func describe(o history.Op) string {
	s := o.String()
	v := o.Value
	switch {
	case v.Value != "":
		s += " value=" + v.Value
	case v.Group != "":
		s += " group=" + v.Group + " consumer=" + v.Consumer
	}
	if v.ID != "" {
		s += " id=" + v.ID
	}
	if len(v.Entries) > 0 {
		s += fmt.Sprintf(" entries=%d", len(v.Entries))
	}
	if o.Error != "" {
		s += " error=" + o.Error
	}
	if o.Done >= 0 {
		s += fmt.Sprintf(" latency=%.3fms", float64(o.Return-o.Call)/1e6)
	}
	return s
}

// latencySVG plots each completed operation's latency (log scale) at its
// completion time, colored by f, with ok throughput per time bucket drawn as
// a line against the right-hand scale, and fault windows shaded.
func latencySVG(h history.History, ops []history.Op) string {
	const plotH, buckets = 260.0, 100
	f := newFrame(h)
	faults, _ := h.Faults()
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" class="plot">`, plotW, plotH+40)
	f.shadeFaults(&b, faults, 0, plotH)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, o := range ops {
		if o.Done >= 0 {
			l := math.Log10(math.Max(float64(o.Return-o.Call), 1))
			lo, hi = math.Min(lo, l), math.Max(hi, l)
		}
	}
	if hi <= lo {
		hi = lo + 1
	}
	y := func(l float64) float64 { return plotH - 5 - (plotH-15)*(l-lo)/(hi-lo) }
	for e := math.Ceil(lo); e <= hi; e++ {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="4" y="%.1f" font-size="10">%s</text>`,
			marginL, y(e), plotW-marginR, y(e), y(e)+3, latencyLabel(math.Pow(10, e)))
	}
	var counts [buckets]int
	for _, o := range ops {
		if o.Done < 0 {
			continue
		}
		l := math.Log10(math.Max(float64(o.Return-o.Call), 1))
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="1.6" fill="%s" fill-opacity="0.7"/>`, f.x(o.Return), y(l), fColor[o.F])
		if o.Type == history.OK {
			i := int(float64(buckets) * float64(o.Return-f.t0) / float64(f.t1-f.t0+1))
			counts[i]++
		}
	}
	peak := 1
	for _, c := range counts {
		peak = max(peak, c)
	}
	bucketSec := float64(f.t1-f.t0) / 1e9 / buckets
	var pts []string
	for i, c := range counts {
		x := f.x(f.t0 + (f.t1-f.t0)*int64(2*i+1)/(2*buckets))
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, plotH-5-(plotH-15)*float64(c)/float64(peak)))
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#000" stroke-width="1.2"/>`, strings.Join(pts, " "))
	fmt.Fprintf(&b, `<text x="%.1f" y="12" font-size="10" text-anchor="end">throughput peak %.0f ok ops/s (line)</text>`,
		plotW-marginR, float64(peak)/math.Max(bucketSec, 1e-9))
	f.axis(&b, plotH)
	b.WriteString(`</svg><p class="legend">`)
	var fs []string
	for k := range fColor {
		fs = append(fs, string(k))
	}
	sort.Strings(fs)
	for _, k := range fs {
		fmt.Fprintf(&b, `<span style="color:%s">● %s</span> `, fColor[history.F(k)], k)
	}
	b.WriteString(`</p>`)
	return b.String()
}

func latencyLabel(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.0fs", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.0fms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.0fµs", ns/1e3)
	}
	return fmt.Sprintf("%.0fns", ns)
}
