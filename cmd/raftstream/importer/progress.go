package importer

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progress counts what the import did and shows it: on a terminal, one
// line redrawn in place several times a second; elsewhere (a file, a pipe,
// a CI log), a plain line every interval. Both end with a final line.
type progress struct {
	w        io.Writer
	label    string // what each plain line starts with
	tty      bool
	every    time.Duration
	streamsN int
	entriesN int64
	// streams (finished, whatever the outcome), entries (copied) and
	// present (entries of finished streams that were on the target
	// already) are counted by the workers.
	streams atomic.Int64
	entries atomic.Int64
	present atomic.Int64
	begin   time.Time
}

func newProgress(w io.Writer, label string, tty bool, every time.Duration, streams int, entries int64) *progress {
	return &progress{w: w, label: label, tty: tty, every: every, streamsN: streams, entriesN: entries}
}

// finished counts a stream done: n entries on the source (when the import
// began), copied of them by this run.
func (p *progress) finished(n, copied int64) {
	p.streams.Add(1)
	p.present.Add(max(0, n-copied))
}

// start shows progress until the returned function is called; that
// function writes the final line and returns once nothing more is
// written.
func (p *progress) start() (stop func()) {
	p.begin = time.Now()
	every := p.every
	if p.tty {
		every = 200 * time.Millisecond
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.show(false)
			case <-done:
				p.show(true)
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// show writes the current state (last: the final line).
func (p *progress) show(last bool) {
	streams, entries, present := p.streams.Load(), p.entries.Load(), p.present.Load()
	el := time.Since(p.begin)
	rate := 0.0
	if el > 0 {
		rate = float64(entries) / el.Seconds()
	}
	counts := fmt.Sprintf("%d/%d streams  %d/%d entries", streams, p.streamsN, entries+present, p.entriesN)
	if present > 0 {
		counts += fmt.Sprintf(" (%d were there)", present)
	}
	counts += fmt.Sprintf("  %.0f entries/s  %s", rate, el.Round(time.Second))
	if !p.tty {
		fmt.Fprintf(p.w, "%s: %s\n", p.label, counts)
		return
	}
	const width = 30
	frac := 1.0
	if p.entriesN > 0 {
		frac = min(1, float64(entries+present)/float64(p.entriesN))
	} else if p.streamsN > 0 {
		frac = float64(streams) / float64(p.streamsN)
	}
	fill := int(frac * width)
	end := ""
	if last {
		end = "\n"
	}
	// \r and erase-line: the line is redrawn in place.
	fmt.Fprintf(p.w, "\r\x1b[2K[%s%s] %3.0f%%  %s%s", strings.Repeat("#", fill), strings.Repeat(".", width-fill), 100*frac, counts, end)
}
