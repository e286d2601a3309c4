package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/history"
)

// Meta describes the run in the report's header.
type Meta struct {
	Title   string
	Seed    int64
	Started time.Time
	Notes   []string // workload, nemesis schedule, cluster size …
}

// maxAnomalies bounds the anomalies listed per checker.
const maxAnomalies = 100

// WriteDir writes report.html and every result's Files (porcupine
// visualizations) into dir, creating it if needed, and returns the path of
// report.html.
func WriteDir(dir string, h history.History, rs []checker.Result, m Meta) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, r := range rs {
		for name, b := range r.Files {
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), b, 0o644); err != nil {
				return "", err
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, h, rs, m); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "report.html")
	return path, os.WriteFile(path, buf.Bytes(), 0o644)
}

type anomalyView struct {
	Checker string
	checker.Anomaly
	Events []string // JSON lines of the events of the ops named
}

type resultView struct {
	checker.Result
	Files []string
}

// WriteHTML renders the report. It is self-contained (inline CSS and SVG);
// porcupine visualizations are referenced by file name (written beside it
// by WriteDir) and embedded in iframes.
func WriteHTML(w io.Writer, h history.History, rs []checker.Result, m Meta) error {
	ops := h.Ops()
	byIndex := map[int64]history.Event{}
	for _, e := range h {
		byIndex[e.Index] = e
	}
	opByIndex := map[int64]history.Op{}
	for _, o := range ops {
		opByIndex[o.Index] = o
	}
	bad := map[int64]bool{}
	var avs []anomalyView
	var views []resultView
	for _, r := range rs {
		v := resultView{Result: r}
		for name := range r.Files {
			v.Files = append(v.Files, filepath.Base(name))
		}
		sort.Strings(v.Files)
		views = append(views, v)
		for i, a := range r.Anomalies {
			for _, ix := range a.Ops {
				bad[ix] = true
			}
			if i >= maxAnomalies {
				continue
			}
			av := anomalyView{Checker: r.Name, Anomaly: a}
			for _, ix := range a.Ops {
				o, ok := opByIndex[ix]
				if !ok {
					continue
				}
				for _, j := range []int64{o.Index, o.Done} {
					if e, ok := byIndex[j]; ok {
						av.Events = append(av.Events, eventLine(e))
					}
				}
			}
			avs = append(avs, av)
		}
	}
	faults, heal := h.Faults()
	counts := map[history.F]map[history.Type]int{}
	for _, o := range ops {
		if counts[o.F] == nil {
			counts[o.F] = map[history.Type]int{}
		}
		counts[o.F][o.Type]++
	}
	var fs []string
	for f := range counts {
		fs = append(fs, string(f))
	}
	sort.Strings(fs)
	var opRows []opRow
	for _, f := range fs {
		c := counts[history.F(f)]
		opRows = append(opRows, opRow{f, c[history.OK], c[history.Fail], c[history.Info]})
	}
	data := map[string]any{
		"Meta":      m,
		"Verdict":   checker.Merge(rs),
		"Results":   views,
		"Anomalies": avs,
		"Events":    len(h),
		"Ops":       opRows,
		"Faults":    faults,
		"Heal":      heal,
		"Duration":  fmt.Sprintf("%.3fs", float64(newFrame(h).t1-newFrame(h).t0)/1e9),
		"Timeline":  template.HTML(timelineSVG(h, ops, bad)),
		"Latency":   template.HTML(latencySVG(h, ops)),
	}
	return page.Execute(w, data)
}

type opRow struct {
	F              string
	OK, Fail, Info int
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"secs": func(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) },
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{or .Meta.Title "raftstream fault-injection report"}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
.ok{background:#d9f2dd}.illegal{background:#f8d0d0}.unknown{background:#fbe7c0}
pre{background:#f6f6f6;padding:4px;overflow-x:auto;font-size:11px;margin:2px 0}
.plot{border:1px solid #ddd}.note,.legend{font-size:12px;color:#555}
iframe{width:100%;height:600px;border:1px solid #ccc}
</style></head><body>
<h1>{{or .Meta.Title "raftstream fault-injection report"}}: <span class="{{.Verdict}}">{{.Verdict}}</span></h1>
<p>{{if .Meta.Seed}}seed {{.Meta.Seed}} · {{end}}{{if not .Meta.Started.IsZero}}started {{.Meta.Started.UTC.Format "2006-01-02 15:04:05Z"}} · {{end}}{{.Events}} events over {{.Duration}}{{if ge .Heal 0}} · final heal at {{secs .Heal}}{{end}}</p>
{{range .Meta.Notes}}<p class="note">{{.}}</p>{{end}}
<h2>Checkers</h2>
<table><tr><th>checker</th><th>verdict</th><th>anomalies</th><th>notes</th><th>files</th></tr>
{{range .Results}}<tr class="{{.Valid}}"><td>{{.Name}}</td><td>{{.Valid}}</td><td>{{len .Anomalies}}</td><td>{{range .Notes}}{{.}}<br>{{end}}</td><td>{{range .Files}}<a href="{{.}}">{{.}}</a><br>{{end}}</td></tr>
{{end}}</table>
<h2>Operations</h2>
<table><tr><th>f</th><th>ok</th><th>fail</th><th>info</th></tr>
{{range .Ops}}<tr><td>{{.F}}</td><td>{{.OK}}</td><td>{{.Fail}}</td><td>{{.Info}}</td></tr>{{end}}</table>
<h2>Faults</h2>
{{if .Faults}}<table><tr><th>fault</th><th>from</th><th>to</th></tr>
{{range .Faults}}<tr><td>{{.Fault}}</td><td>{{secs .Start}}</td><td>{{secs .End}}</td></tr>{{end}}</table>{{else}}<p>none</p>{{end}}
<h2>Timeline</h2>
<p class="legend"><span style="color:#3a9d4f">■ ok</span> <span style="color:#c0392b">■ fail</span> <span style="color:#e69a17">■ info (unknown outcome)</span> · outlined: named by an anomaly · shaded: fault window</p>
{{.Timeline}}
<h2>Latency and throughput</h2>
{{.Latency}}
<h2>Anomalies</h2>
{{if not .Anomalies}}<p>none</p>{{end}}
{{range .Anomalies}}<h3>{{.Checker}}: {{.Kind}}{{if .Key}} on {{.Key}}{{end}}</h3><p>{{.Msg}}</p>{{range .Events}}<pre>{{.}}</pre>{{end}}
{{end}}
{{range .Results}}{{range .Files}}<h2>Linearizability: {{.}}</h2><p><a href="{{.}}">open {{.}}</a></p><iframe src="{{.}}"></iframe>
{{end}}{{end}}
</body></html>
`))

// maxEventLine bounds an event's JSON in the anomaly list (full reads can
// hold thousands of entries).
const maxEventLine = 2000

func eventLine(e history.Event) string {
	b, _ := json.Marshal(e)
	if len(b) > maxEventLine {
		return fmt.Sprintf("%s … (%d bytes)", b[:maxEventLine], len(b))
	}
	return string(b)
}
