package fsm

import (
	"fmt"
	"sync"
	"testing"
)

// TestHistogramBuckets checks bucket placement (a value equal to a bound
// falls in that bound's bucket), values above the last bound counting only
// in Count and Sum, and ObserveN.
func TestHistogramBuckets(t *testing.T) {
	h := NewHistogram([]float64{1, 2, 4})
	for _, v := range []float64{0.5, 1, 1.5, 4, 9} {
		h.Observe(v)
	}
	h.ObserveN(3, 4)
	got := h.Snapshot()
	want := HistSnapshot{Bounds: []float64{1, 2, 4}, Counts: []uint64{2, 1, 5}, Count: 9, Sum: 0.5 + 1 + 1.5 + 4 + 9 + 12}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Snapshot() = %+v, want %+v", got, want)
	}
}

// TestHistogramConcurrentObserve checks no observation is lost when many
// goroutines record at once (run with -race).
func TestHistogramConcurrentObserve(t *testing.T) {
	h := NewHistogram(LatencyBuckets)
	const goroutines, each = 8, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				h.Observe(0.25)
			}
		}()
	}
	wg.Wait()
	s := h.Snapshot()
	if s.Count != goroutines*each || s.Sum != 0.25*goroutines*each {
		t.Errorf("Count = %d, Sum = %v after %d observations of 0.25", s.Count, s.Sum, goroutines*each)
	}
}
