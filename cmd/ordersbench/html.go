package main

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"os"
	"strings"
)

// series is one line of a chart.
type series struct {
	name  string
	color string
	ys    []float64
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// niceStep rounds span/n up to 1, 2 or 5 times a power of ten.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// svgChart renders a line chart (NaN values are gaps) as an inline SVG element with axes, grid
// lines and a legend. Labels are escaped; everything else is numbers.
func svgChart(title, unit string, xs []float64, ss []series) string {
	const w, h, left, right, top, bottom = 820.0, 300.0, 70.0, 20.0, 34.0, 40.0
	pw, ph := w-left-right, h-top-bottom
	maxX, maxY := 1.0, 0.0
	for _, x := range xs {
		maxX = math.Max(maxX, x)
	}
	for _, s := range ss {
		for _, y := range s.ys {
			if !math.IsNaN(y) {
				maxY = math.Max(maxY, y)
			}
		}
	}
	ystep := niceStep(maxY, 5)
	maxY = math.Max(ystep, math.Ceil(maxY/ystep)*ystep)
	xstep := niceStep(maxX, 10)
	px := func(x float64) float64 { return left + x/maxX*pw }
	py := func(y float64) float64 { return top + ph - y/maxY*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`, w, h, w, h)
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14" font-weight="bold">%s</text>`, left, html.EscapeString(title))
	for y := 0.0; y <= maxY+ystep/2; y += ystep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, left, py(y), left+pw, py(y))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, left-6, py(y)+4, html.EscapeString(axisLabel(y)))
	}
	for x := 0.0; x <= maxX*(1+1e-9); x += xstep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`, px(x), top, px(x), top+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, px(x), top+ph+16, html.EscapeString(axisLabel(x)))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">seconds</text>`, left+pw/2, h-4)
	fmt.Fprintf(&b, `<text x="14" y="%.1f" transform="rotate(-90 14 %.1f)" text-anchor="middle">%s</text>`, top+ph/2, top+ph/2, html.EscapeString(unit))
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`, left, top, pw, ph)
	lx := left + pw
	for i, s := range ss {
		// A NaN (an interval without samples) breaks the line.
		var pts []string
		flush := func() {
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`, s.color, strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		for j, y := range s.ys {
			if j >= len(xs) || math.IsNaN(y) {
				flush()
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[j]), py(y)))
		}
		flush()
		ly := top + 14 + float64(i)*14
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="3" fill="%s"/>`, lx-150, ly-4, s.color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`, lx-136, ly, html.EscapeString(s.name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func axisLabel(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	default:
		return fmt.Sprintf("%g", math.Round(v*100)/100)
	}
}

var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>ordersbench {{.R.StartedAt}}</title>
<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:12px 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}td:first-child{text-align:left}
.bad{color:#b00;font-weight:bold}.ok{color:#070;font-weight:bold}</style></head><body>
<h1>ordersbench</h1>
<p>{{.Summary}}</p>
{{.Throughput}}
{{.Latency}}
<table><tr><th>op</th><th>count</th><th>errors</th><th>ops/s</th><th>p50 µs</th><th>p99 µs</th><th>p99.9 µs</th><th>max µs</th></tr>
{{range .Rows}}<tr><td>{{.Name}}</td><td>{{.Count}}</td><td>{{.Errors}}</td><td>{{printf "%.0f" .OpsPerSec}}</td><td>{{printf "%.0f" .P50us}}</td><td>{{printf "%.0f" .P99us}}</td><td>{{printf "%.0f" .P999us}}</td><td>{{printf "%.0f" .MaxUs}}</td></tr>
{{end}}</table>
{{with .R.Verify}}<p>verify: {{if .OK}}<span class="ok">OK</span>{{else}}<span class="bad">FAILED</span>{{end}} — {{.Acked}} acknowledged, {{.Unknown}} unknown outcome</p>
<table><tr><th>group</th><th>orders delivered</th><th>deliveries</th><th>redelivered</th></tr>
{{range .Groups}}<tr><td>{{.Group}}</td><td>{{.Unique}}</td><td>{{.Deliveries}}</td><td>{{.Duplicates}}</td></tr>
{{end}}</table>
<table><tr><th>check</th><th>verdict</th><th>anomalies</th></tr>
{{range .Checks}}<tr><td>{{.Name}}</td><td>{{.Valid}}</td><td>{{range $k, $n := .Kinds}}{{$n}} {{$k}} {{end}}{{range .Examples}}<br>{{.}}{{end}}</td></tr>
{{end}}</table>{{end}}
{{range .R.Errors}}<p class="bad">error: {{.}}</p>{{end}}
</body></html>
`))

// writeHTML writes a self-contained page (no external assets) with
// throughput and p99 latency over time.
func writeHTML(path string, r *Report) error {
	xs := make([]float64, len(r.Timeline))
	prod := series{name: "xadd/s", color: palette[0]}
	cons := make([]series, len(r.Config.Groups))
	for gi, g := range r.Config.Groups {
		cons[gi] = series{name: g + " consumed/s", color: palette[(gi+1)%len(palette)]}
	}
	lat := []series{{name: "xadd p99", color: palette[0]}, {name: "e2e p99", color: palette[1]}}
	ms := func(us float64) float64 { // 0 means no sample in the interval: a gap
		if us == 0 {
			return math.NaN()
		}
		return us / 1e3
	}
	for i, p := range r.Timeline {
		xs[i] = p.T
		prod.ys = append(prod.ys, p.ProducedPerSec)
		for gi := range cons {
			cons[gi].ys = append(cons[gi].ys, p.ConsumedPerSec[gi])
		}
		lat[0].ys = append(lat[0].ys, ms(p.XAddP99us))
		lat[1].ys = append(lat[1].ys, ms(p.E2EP99us))
	}
	rows := append([]Latency{}, r.Latency...)
	for _, g := range r.Totals.Groups {
		l := g.E2E
		l.OpsPerSec = g.PerSec
		rows = append(rows, l)
	}
	c := r.Config
	data := struct {
		R                   *Report
		Summary             string
		Throughput, Latency template.HTML
		Rows                []Latency
	}{
		R: r,
		Summary: fmt.Sprintf("%s — %s: %d producers (pipeline %d), %d partitions, groups %s × %d consumers; produced %d orders in %.2fs (%.0f/s), %d errors.",
			r.StartedAt, strings.Join(c.Addrs, ","), c.Producers, c.Pipeline, c.Partitions, strings.Join(c.Groups, ","), c.Consumers,
			r.Totals.Produced, r.ProduceSeconds, r.Totals.ProducePerSec, r.Totals.ProduceErrors),
		// svgChart escapes every label it emits; the rest is numbers.
		Throughput: template.HTML(svgChart("Throughput", "entries/s", xs, append([]series{prod}, cons...))),
		Latency:    template.HTML(svgChart("p99 latency", "ms", xs, lat)),
		Rows:       rows,
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pageTmpl.Execute(f, data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
