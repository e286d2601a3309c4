package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// exactQuantile is the reference: the ceil(q*n)-th smallest sample.
func exactQuantile(sorted []int64, q float64) int64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

func TestHistogramIndexRoundTrip(t *testing.T) {
	// Every bucket's upper bound maps back to that bucket, and the next value
	// maps to the next bucket: buckets tile the value range without gaps.
	for i := 0; i < histBuckets-1; i++ {
		u := histUpper(i)
		if got := histIndex(u); got != i {
			t.Fatalf("histIndex(histUpper(%d)=%d) = %d", i, u, got)
		}
		if got := histIndex(u + 1); got != i+1 {
			t.Fatalf("histIndex(%d) = %d, want %d", u+1, got, i+1)
		}
	}
	if got := histIndex(math.MaxInt64); got != histBuckets-1 {
		t.Fatalf("histIndex(MaxInt64) = %d, want %d", got, histBuckets-1)
	}
}

func TestHistogramQuantilesBoundedError(t *testing.T) {
	seed := uint64(20261202)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	dists := map[string]func() int64{
		"uniform-small":   func() int64 { return r.Int64N(200) },
		"uniform-wide":    func() int64 { return r.Int64N(1e9) },
		"lognormal-micro": func() int64 { return int64(math.Exp(r.NormFloat64()*1.5 + 11)) },
		"bimodal":         func() int64 { return []int64{50_000, 8_000_000}[r.IntN(2)] + r.Int64N(1000) },
	}
	for name, gen := range dists {
		h := NewHistogram()
		vals := make([]int64, 50_000)
		for i := range vals {
			vals[i] = gen()
			h.Record(vals[i])
		}
		slices.Sort(vals)
		for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 0.999, 1} {
			want := exactQuantile(vals, q)
			got := h.Quantile(q)
			if got < want || float64(got) > float64(want)*(1+1.0/histSub)+1 {
				t.Errorf("%s q=%v: got %d, exact %d (allowed [%d, %.0f])", name, q, got, want, want, float64(want)*(1+1.0/histSub)+1)
			}
		}
		if h.Max() != vals[len(vals)-1] || h.Min() != vals[0] {
			t.Errorf("%s: min/max %d/%d, want %d/%d", name, h.Min(), h.Max(), vals[0], vals[len(vals)-1])
		}
		if h.Count() != uint64(len(vals)) {
			t.Errorf("%s: count %d", name, h.Count())
		}
	}
}

func TestHistogramMergeEqualsCombined(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	a, b, all := NewHistogram(), NewHistogram(), NewHistogram()
	for i := 0; i < 10_000; i++ {
		v := r.Int64N(5e6)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
		all.Record(v)
	}
	a.Merge(b)
	for _, q := range []float64{0.5, 0.99, 0.999} {
		if a.Quantile(q) != all.Quantile(q) {
			t.Errorf("q=%v: merged %d, combined %d", q, a.Quantile(q), all.Quantile(q))
		}
	}
	if a.Count() != all.Count() || a.Max() != all.Max() || a.Min() != all.Min() || math.Abs(a.Mean()-all.Mean()) > 1e-6*all.Mean() {
		t.Errorf("merged summary differs: %d/%d/%d/%f vs %d/%d/%d/%f",
			a.Count(), a.Min(), a.Max(), a.Mean(), all.Count(), all.Min(), all.Max(), all.Mean())
	}
	a.Reset()
	if a.Count() != 0 || a.Quantile(0.5) != 0 {
		t.Fatalf("reset histogram not empty")
	}
	for i, c := range a.counts {
		if c != 0 {
			t.Fatalf("bucket %d = %d after reset", i, c)
		}
	}
	a.Record(-5)
	if a.Quantile(1) != 0 {
		t.Fatalf("negative value should record as 0")
	}
}
