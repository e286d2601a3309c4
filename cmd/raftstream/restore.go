package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/raftstream/raftstream/cmd/raftstream/backupfile"
	"github.com/raftstream/raftstream/cmd/raftstream/importer"
	"github.com/raftstream/raftstream/engine"
)

// raftstream restore: write a backup (backup.go) into a new node or
// cluster. The file is checked whole before anything is written; then each
// shard's engine state is decoded in memory, one shard at a time, and its
// keys are written through RESP by the import's writer (importer.RunFrom
// with an importer.EngineSource), so the target's shard count and slot
// layout need not be the source's.

const restoreUsage = `Usage: raftstream restore --in FILE --to host:port [--password …] [--force] [--verify]

Writes the backup FILE (raftstream backup) into a raftstream node or cluster: every stream
with its entries and IDs, last-generated-id, entries-added, max-deleted-entry-id, consumer
groups (last-delivered-id, entries-read, dead-letter settings), consumers, pending entries
(owner, delivery time, delivery count) and IDMP settings, every string key, and the ACL
users (a replicated stream). The target may have another shard count and slot layout than
the source.

FILE is checked first (manifest, and every shard's SHA-256): a partial, truncated or damaged
file is refused, naming what is wrong, and nothing is written. A target that holds keys is
refused unless --force: then only what the target lacks is written, so an interrupted
restore is continued by running it again with --force.

Flags:
`

// restoreConfig is one restore.
type restoreConfig struct {
	in, to, pass   string
	force, verify  bool
	parallel       int
	chunk          int
	timeout        time.Duration
	stdout, stderr io.Writer
}

// restoreResult is what a restore wrote.
type restoreResult struct {
	shards, streams, imported, strings int
	entries                            int64
	differences                        int
	elapsed                            time.Duration
}

// entriesPerSec is the restore's throughput over the whole run.
func (r *restoreResult) entriesPerSec() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.entries) / r.elapsed.Seconds()
}

func restoreCmd(args []string, stdout, stderr io.Writer) int {
	cfg := restoreConfig{stdout: stdout, stderr: stderr}
	d := importer.DefaultConfig()
	fs := flag.NewFlagSet("raftstream restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.in, "in", "", "the backup file to restore (required)")
	fs.StringVar(&cfg.to, "to", d.To, "the target node, or any node of the target cluster")
	passwordFlags(fs, &cfg.pass)
	fs.BoolVar(&cfg.force, "force", false, "write into a target that already holds keys (only what it lacks is written)")
	fs.BoolVar(&cfg.verify, "verify", false, "after each shard, compare XINFO STREAM FULL and every entry of its streams with the target's; exit 1 on a difference")
	fs.IntVar(&cfg.parallel, "parallel", d.Parallel, "streams written at once")
	fs.IntVar(&cfg.chunk, "chunk", d.Chunk, "entries per XADD pipeline")
	fs.DurationVar(&cfg.timeout, "timeout", d.Timeout, "per-request timeout")
	if code := parseSubcommand(fs, restoreUsage, args, "in"); code >= 0 {
		return code
	}
	return untilInterrupted(fs.Name(), stderr, func(ctx context.Context) error {
		res, err := runRestore(ctx, cfg)
		if res != nil {
			fmt.Fprintf(stdout, "restore: %d shards, %d streams (%d written, %d already there), %d entries, %d string keys in %.1fs (%.0f entries/s)\n",
				res.shards, res.streams, res.imported, res.streams-res.imported, res.entries, res.strings, res.elapsed.Seconds(), res.entriesPerSec())
		}
		return err
	})
}

// errRestoreDiffers is runRestore's error when every shard was written but
// a stream failed or --verify found a difference.
var errRestoreDiffers = errors.New("the target differs from the backup (see above)")

// runRestore checks the file, then the target, then writes the shards.
func runRestore(ctx context.Context, cfg restoreConfig) (*restoreResult, error) {
	start := time.Now()
	b, err := backupfile.Open(cfg.in)
	if err != nil {
		return nil, fmt.Errorf("refused: %w", err)
	}
	defer b.Close()
	if err := b.Verify(); err != nil {
		return nil, fmt.Errorf("refused: %w", err)
	}
	m := b.Manifest
	fmt.Fprintf(cfg.stderr, "restore: %s: %d shards, %d bytes, taken %s through %s (%d nodes), raftstream %s; each shard at its own point\n",
		cfg.in, m.ShardCount, b.Size(), m.Created.Format(time.RFC3339), m.Source.Addr, len(m.Source.Nodes), m.RaftstreamVersion)
	if !cfg.force {
		n, err := targetKeys(cfg.to, cfg.pass, cfg.timeout)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", cfg.to, err)
		}
		if n > 0 {
			return nil, fmt.Errorf("target %s holds %d keys: restore into a new node or cluster, or add --force to write what it lacks (an interrupted restore continues that way)", cfg.to, n)
		}
	}
	res := &restoreResult{shards: m.ShardCount}
	failed := false
	for i, s := range m.Shards {
		e, err := engine.Restore(b.Shard(i))
		if err != nil {
			return nil, fmt.Errorf("refused: shard %d: %w", s.Shard, err)
		}
		if e.Exec(s.Time, [][]byte{[]byte("DBSIZE")}) == engine.Integer(0) {
			continue // nothing to write, nothing to say
		}
		icfg := importer.DefaultConfig()
		icfg.To, icfg.ToPassword, icfg.Verify = cfg.to, cfg.pass, cfg.verify
		icfg.Parallel, icfg.Chunk, icfg.Timeout = cfg.parallel, cfg.chunk, cfg.timeout
		icfg.Label = fmt.Sprintf("restore shard %d/%d", s.Shard+1, m.ShardCount)
		icfg.Out = &linePrefix{w: cfg.stdout, prefix: fmt.Sprintf("shard %d: ", s.Shard)}
		icfg.Progress = cfg.stderr
		src := importer.EngineSource(fmt.Sprintf("backup shard %d", s.Shard), e, s.Time)
		r, err := importer.RunFrom(ctx, icfg, src)
		if r != nil {
			res.streams += r.Streams
			res.imported += r.Imported
			res.entries += r.Entries
			res.strings += r.Strings
			res.differences += r.Differences
		}
		switch {
		case errors.Is(err, importer.ErrDifferences):
			failed = true
		case err != nil:
			return nil, fmt.Errorf("shard %d: %w", s.Shard, err)
		}
	}
	res.elapsed = time.Since(start)
	if failed {
		return res, errRestoreDiffers
	}
	return res, nil
}

// targetKeys counts the keys of the node or cluster at addr: DBSIZE on
// every member (each counts the shards it leads).
func targetKeys(addr, pass string, timeout time.Duration) (int64, error) {
	nodes, _, err := clusterStatus(addr, pass, timeout)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, n := range nodes {
		c, err := adminDial(n.Addr, pass, timeout)
		if err != nil {
			return 0, err
		}
		v, err := adminDo(c, "DBSIZE")
		c.Close()
		if err != nil {
			return 0, fmt.Errorf("%s: DBSIZE: %w", n.Addr, err)
		}
		k, _ := v.(int64)
		total += k
	}
	return total, nil
}

// linePrefix starts every line written through it with prefix.
type linePrefix struct {
	w      io.Writer
	prefix string
	mid    bool // the last write did not end a line
}

func (p *linePrefix) Write(b []byte) (int, error) {
	n := len(b)
	var out bytes.Buffer
	for len(b) > 0 {
		if !p.mid {
			out.WriteString(p.prefix)
		}
		line, rest, found := bytes.Cut(b, []byte("\n"))
		out.Write(line)
		if found {
			out.WriteByte('\n')
		}
		p.mid, b = !found, rest
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return n, nil
}
