package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/raftstream/raftstream/cmd/raftstream/importer"
)

// raftstream import: copy streams from Redis (cmd/raftstream/importer has
// the manual). This file reads the flags and prints.

const importUsage = `Usage: raftstream import --from host:port [--cluster] [--match pattern] [--to host:port] [--password …] [--verify]

Copies streams from Redis into raftstream: entries with their IDs, last-generated-id,
entries-added, max-deleted-entry-id, consumer groups (last-delivered-id, entries-read),
consumers and pending entries (owner, delivery time, delivery count). Running it again
writes only what the target lacks; an interrupted run continues where it stopped. Stop
the source's producers and consumers for an exact copy.

--verify compares XINFO STREAM FULL and every entry on both sides. Not compared, because no
command can make them equal: radix-tree-keys and radix-tree-nodes (each server packs entries
its own way), consumers' seen-time and active-time (the time of the import: XCLAIM TIME sets
a pending entry's delivery time, nothing sets a consumer's), Redis 8.6's IDMP memory of
producers (not imported; the IDMP settings are).

About 85k entries/s into a single node (100k entries of ~100 bytes, one 2-vCPU machine).
Manual: go doc github.com/raftstream/raftstream/cmd/raftstream/importer

Flags:
`

// importCmd is `raftstream import`; its exit status is 0 when every stream
// was imported (and, with --verify, found equal), 1 when a stream failed or
// differs, 2 for bad flags.
func importCmd(args []string, stdout, stderr io.Writer) int {
	cfg := importer.DefaultConfig()
	fs := flag.NewFlagSet("raftstream import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.From, "from", "", "source redis-server (or, with --cluster, any Redis Cluster node) host:port")
	fs.BoolVar(&cfg.Cluster, "cluster", false, "the source is a Redis Cluster: scan every master")
	fs.StringVar(&cfg.Match, "match", cfg.Match, "SCAN MATCH pattern of the streams to import")
	fs.StringVar(&cfg.To, "to", cfg.To, "target raftstream node (single node or any node of a cluster) host:port")
	fs.StringVar(&cfg.Password, "password", os.Getenv("REDISCLI_AUTH"), "source password (AUTH); default $REDISCLI_AUTH")
	fs.StringVar(&cfg.ToPassword, "to-password", os.Getenv("RAFTSTREAM_REQUIREPASS"), "target password; default $RAFTSTREAM_REQUIREPASS")
	fs.BoolVar(&cfg.Verify, "verify", false, "after the import, compare XINFO STREAM FULL and every entry on both sides; exit 1 on a difference")
	fs.IntVar(&cfg.Parallel, "parallel", cfg.Parallel, "streams imported at once")
	fs.IntVar(&cfg.Chunk, "chunk", cfg.Chunk, "entries per XRANGE read and per XADD pipeline")
	fs.IntVar(&cfg.Retries, "retries", cfg.Retries, "tries per stream before giving up on it")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "per-request timeout")
	fs.DurationVar(&cfg.ProgressEvery, "progress-every", cfg.ProgressEvery, "interval of the progress lines when stderr is not a terminal")
	logLevel := fs.String("log-level", "warn", "log level of retries and failures on stderr: debug, info, warn, error")
	if code := parseSubcommand(fs, importUsage, args); code >= 0 {
		return code
	}
	if cfg.From == "" {
		fmt.Fprintln(stderr, "raftstream import: --from host:port is required (the Redis to copy from)")
		return 2
	}
	log, err := newLogger(*logLevel, "text", stderr, new(slog.LevelVar))
	if err != nil {
		fmt.Fprintln(stderr, "raftstream import:", err)
		return 2
	}
	cfg.Logger, cfg.Out, cfg.Progress = log, stdout, stderr
	cfg.ProgressTTY = isTerminal(stderr)
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "raftstream import:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if _, err := importer.Run(ctx, cfg); err != nil {
		if ctx.Err() != nil {
			err = errors.New("interrupted; run the same command again to continue where it stopped")
		}
		fmt.Fprintln(stderr, "raftstream import:", err)
		return 1
	}
	return 0
}

// isTerminal says whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
