package admin

import (
	"bytes"
	"testing"
)

// TestScrapeTextFormat checks the exposition: HELP/TYPE once per family,
// families sorted, label values escaped, histogram buckets cumulative with
// +Inf equal to the count.
func TestScrapeTextFormat(t *testing.T) {
	sc := NewScrape()
	sc.Counter("b_total", "B things.", 3, "k", `a"b\c`+"\n")
	sc.Counter("b_total", "B things.", 4, "k", "x")
	sc.Gauge("a_gauge", "A gauge.", 1.5)
	sc.Histogram("c_seconds", "C.", []float64{0.1, 1}, []uint64{2, 3}, 7, 9.5, "s", "0")
	var b bytes.Buffer
	if _, err := sc.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	want := `# HELP a_gauge A gauge.
# TYPE a_gauge gauge
a_gauge 1.5
# HELP b_total B things.
# TYPE b_total counter
b_total{k="a\"b\\c\n"} 3
b_total{k="x"} 4
# HELP c_seconds C.
# TYPE c_seconds histogram
c_seconds_bucket{s="0",le="0.1"} 2
c_seconds_bucket{s="0",le="1"} 5
c_seconds_bucket{s="0",le="+Inf"} 7
c_seconds_sum{s="0"} 9.5
c_seconds_count{s="0"} 7
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestScrapeOddLabels checks a label name without a value is refused
// rather than written as a malformed series.
func TestScrapeOddLabels(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("Gauge with an odd label list did not panic")
		}
	}()
	NewScrape().Gauge("g", "G.", 1, "shard")
}
