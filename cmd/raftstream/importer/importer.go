package importer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Result is what an import did.
type Result struct {
	Streams  int // streams found on the source
	Imported int // streams that needed writes
	Skipped  int // streams the target already held as the source does
	Vanished int // streams deleted on the source before their turn
	// Failed maps a stream to the reason it could not be imported.
	Failed map[string]error
	// Entries is the number of entries copied (this run); Strings the
	// string keys written (RunFrom).
	Entries int64
	Strings int
	Elapsed time.Duration
	// Differences is the number of differences --verify found (0 without
	// Verify).
	Differences int
}

// EntriesPerSecond is the copy's throughput over the whole run.
func (r *Result) EntriesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Entries) / r.Elapsed.Seconds()
}

// ErrDifferences is returned by Run when the import finished but the
// target differs from the source: streams that failed, or differences that
// --verify found.
var ErrDifferences = errors.New("the target differs from the source")

// importer is one run's state.
type importer struct {
	cfg      Config
	src      Source
	dst      *endpoint
	progress *progress
}

// Run imports every stream of cfg.From matching cfg.Match into cfg.To,
// cfg.Parallel streams at a time, then verifies them when cfg.Verify is
// set. It returns ErrDifferences (with a Result) when a stream failed or
// verification found a difference, another error when the import could
// not run at all (unreachable servers, ctx ended).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	src, err := dial(ctx, "source", cfg.From, cfg.Password, &cfg.Cluster, &cfg)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return run(ctx, cfg, src)
}

// RunFrom is Run reading from src instead of cfg.From (whose fields
// Cluster and Password are not used either): `raftstream restore` writes a
// backup back one decoded shard at a time (EngineSource). Besides the
// streams it copies the source's string keys matching cfg.Match.
func RunFrom(ctx context.Context, cfg Config, src Source) (*Result, error) {
	if err := cfg.validateCopy(); err != nil {
		return nil, err
	}
	return run(ctx, cfg, src)
}

// run is Run and RunFrom once the source is open.
func run(ctx context.Context, cfg Config, src Source) (*Result, error) {
	dst, err := dial(ctx, "target", cfg.To, cfg.ToPassword, nil, &cfg)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	im := &importer{cfg: cfg, src: src, dst: dst}

	// 1. Find the streams and their lengths (for the progress display).
	keys, err := src.scanStreams(ctx, cfg.Match)
	if err != nil {
		return nil, err
	}
	lens, err := lengths(ctx, src, keys, cfg.Chunk)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, n := range lens {
		total += n
	}
	cfg.Logger.Info("importing", "from", cmp.Or(cfg.From, src.label()), "to", dst.addr,
		"target-cluster", dst.cluster, "streams", len(keys), "entries", total)

	// 2. Import them, Parallel at a time.
	res := &Result{Streams: len(keys), Failed: map[string]error{}}
	im.progress = newProgress(cfg.Progress, cfg.Label, cfg.ProgressTTY, cfg.ProgressEvery, len(keys), total)
	stopProgress := im.progress.start()
	start := time.Now()
	var mu sync.Mutex
	work := make(chan int)
	var wg sync.WaitGroup
	for range cfg.Parallel {
		wg.Go(func() {
			for i := range work {
				key := keys[i]
				out, copied, err := im.importStream(ctx, key)
				im.progress.finished(lens[i], copied)
				mu.Lock()
				switch {
				case err != nil:
					res.Failed[key] = err
					cfg.Logger.Error("stream not imported", "key", key, "err", err)
				case out == skipped:
					res.Skipped++
				case out == vanished:
					res.Vanished++
				default:
					res.Imported++
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range keys {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if ctx.Err() == nil {
		res.Strings, err = im.copyStrings(ctx)
		if err != nil {
			res.Failed["(string keys)"] = err
		}
	}
	res.Elapsed = time.Since(start)
	res.Entries = im.progress.entries.Load()
	stopProgress()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	strs := ""
	if res.Strings > 0 {
		strs = fmt.Sprintf("; %d string keys copied", res.Strings)
	}
	fmt.Fprintf(cfg.Out, "streams: %d imported, %d already complete, %d failed, %d gone from the source; %d entries copied in %.1fs (%.0f entries/s)%s\n",
		res.Imported, res.Skipped, len(res.Failed), res.Vanished, res.Entries, res.Elapsed.Seconds(), res.EntriesPerSecond(), strs)
	for _, k := range append(keys, "(string keys)") {
		if err := res.Failed[k]; err != nil {
			fmt.Fprintf(cfg.Out, "FAILED %s: %v\n", k, err)
		}
	}

	// 3. Compare both sides.
	if cfg.Verify {
		if res.Differences, err = im.verify(ctx, keys); err != nil {
			return res, err
		}
	}
	if len(res.Failed) > 0 || res.Differences > 0 {
		return res, ErrDifferences
	}
	return res, nil
}
