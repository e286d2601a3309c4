package main

import (
	"math"
	"math/bits"
)

// histSubBits sets the histogram's precision: every value v >= 2^histSubBits
// falls in a bucket whose width is at most v/2^histSubBits, so a quantile is
// reported with a relative error below 1/128 (0.8%). Values below
// 2^histSubBits are counted exactly.
const histSubBits = 7

const (
	histSub     = 1 << histSubBits
	histBuckets = (64 - histSubBits) * histSub
)

// Histogram is an HDR-style log-linear histogram of non-negative int64
// values (nanoseconds here). Buckets are linear within each power of two and
// the powers of two are logarithmic, so recording is O(1), memory is fixed
// (~58 KiB) and every reported quantile is within 1/128 of a true sample
// value. The zero value is not usable; call NewHistogram.
//
// A Histogram is not safe for concurrent use: give each goroutine its own and
// Merge them.
type Histogram struct {
	counts []uint64
	// Invariant: every non-zero counts[i] has lo <= i <= hi; lo > hi when empty.
	lo, hi int
	n      uint64
	sum    float64
	min    int64
	max    int64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	h := &Histogram{counts: make([]uint64, histBuckets)}
	h.Reset()
	return h
}

// histIndex maps v >= 0 to its bucket.
func histIndex(v int64) int {
	u := uint64(v)
	if u < histSub {
		return int(u)
	}
	s := bits.Len64(u) - histSubBits - 1
	return s*histSub + int(u>>uint(s))
}

// histUpper is the largest value that maps to bucket i.
func histUpper(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	s := i/histSub - 1
	m := uint64(i%histSub + histSub)
	u := (m+1)<<uint(s) - 1
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(u)
}

// Record adds one value; negative values are recorded as 0.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	i := histIndex(v)
	h.counts[i]++
	if i < h.lo {
		h.lo = i
	}
	if i > h.hi {
		h.hi = i
	}
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Merge adds every value recorded in o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i := o.lo; i <= o.hi; i++ {
		h.counts[i] += o.counts[i]
	}
	if o.lo < h.lo {
		h.lo = o.lo
	}
	if o.hi > h.hi {
		h.hi = o.hi
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Reset empties h, keeping its memory.
func (h *Histogram) Reset() {
	if h.lo <= h.hi {
		clear(h.counts[h.lo : h.hi+1])
	}
	h.lo, h.hi = histBuckets, -1
	h.n, h.sum, h.min, h.max = 0, 0, 0, 0
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest recorded value (exact), 0 when empty.
func (h *Histogram) Max() int64 { return h.max }

// Min is the smallest recorded value (exact), 0 when empty.
func (h *Histogram) Min() int64 { return h.min }

// Mean is the exact arithmetic mean, 0 when empty.
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Quantile returns the value at quantile q in [0,1]: the upper bound of the
// bucket holding the ceil(q*n)-th smallest value, clamped to [Min, Max]. The
// result r for a true sample value v satisfies v <= r <= v*(1+1/128). It
// returns 0 when empty.
func (h *Histogram) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var seen uint64
	for i := h.lo; i <= h.hi; i++ {
		seen += h.counts[i]
		if seen >= rank {
			v := histUpper(i)
			if v > h.max {
				v = h.max
			}
			if v < h.min {
				v = h.min
			}
			return v
		}
	}
	return h.max
}
