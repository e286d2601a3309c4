package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/raftstream/raftstream/cmd/raftstream/backupfile"
	"github.com/raftstream/raftstream/resp/wire"
)

// raftstream backup: a consistent copy of every shard of a running node or
// cluster into one file (backupfile has the format). Each shard is read
// on its leader with RAFTSTREAM BACKUP (resp/backup.go): a read fence,
// then the engine state at one log position, streamed in chunks to the
// file. deploy/OPERATIONS.md ("Backup and restore") says what cut that is.

const backupUsage = `Usage: raftstream backup --addr host:port --out FILE [--password …]

Copies every shard of a running raftstream node or cluster into FILE, while writes go on.
Each shard is copied on its leader at a linearizable point: every write acknowledged before
the backup began is in the copy; writes made while it runs may or may not be, shard by shard
(there is no cross-shard atomicity). It waits while a slot move is in flight, and starts
again when slots moved while it ran (at most 5 times), so every slot is in one shard's copy.
FILE holds a manifest (versions, times, the source's nodes, per shard its slots, log index
and term, size and SHA-256); raftstream restore refuses a file that is partial, truncated or
damaged. FILE is written as FILE.partial and renamed when complete; an existing FILE is
refused.

Flags:
`

// backupConfig is one backup.
type backupConfig struct {
	addr, pass, out string
	timeout         time.Duration // per request
	shardTimeout    time.Duration // per shard, retries included
	progress        io.Writer     // a line per shard (stderr)
}

// backupResult is what a backup wrote.
type backupResult struct {
	manifest backupfile.Manifest
	bytes    int64
	elapsed  time.Duration
}

// mbPerSec is the backup's throughput in MB/s (10^6 bytes).
func (r *backupResult) mbPerSec() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.bytes) / 1e6 / r.elapsed.Seconds()
}

func backupCmd(args []string, stdout, stderr io.Writer) int {
	cfg := backupConfig{progress: stderr}
	fs := flag.NewFlagSet("raftstream backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:6379", "RESP address of the node, or of any node of the cluster")
	fs.StringVar(&cfg.out, "out", "", "the backup file to write (required; must not exist)")
	passwordFlags(fs, &cfg.pass)
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.DurationVar(&cfg.shardTimeout, "shard-timeout", 2*time.Minute, "how long a shard may go without a leader to copy it from before the backup fails")
	if code := parseSubcommand(fs, backupUsage, args, "out"); code >= 0 {
		return code
	}
	return untilInterrupted(fs.Name(), stderr, func(ctx context.Context) error {
		res, err := runBackup(ctx, cfg)
		if err == nil {
			fmt.Fprintf(stdout, "backup: %d shards, %d bytes in %.1fs (%.1f MB/s) to %s\n",
				len(res.manifest.Shards), res.bytes, res.elapsed.Seconds(), res.mbPerSec(), cfg.out)
		}
		return err
	})
}

// parseSubcommand parses args into fs, whose help is usage followed by the
// flags; the flags named required must be given a value. It returns the
// exit status when parsing ends the command (0 after -h, 2 for a bad or
// missing flag or an argument after the flags), -1 to go on.
func parseSubcommand(fs *flag.FlagSet, usage string, args []string, required ...string) int {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2
	}
	for _, name := range required {
		if fs.Lookup(name).Value.String() == "" {
			fmt.Fprintf(fs.Output(), "%s: --%s is required (-h for help)\n", fs.Name(), name)
			return 2
		}
	}
	return -1
}

// untilInterrupted runs fn with a context that SIGINT and SIGTERM end, and
// returns its exit status: 0, or 1 with its error printed after name.
func untilInterrupted(name string, stderr io.Writer, fn func(context.Context) error) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := fn(ctx); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// passwordFlags registers --password (and --requirepass, the other admin
// subcommands' name for it) into pass.
func passwordFlags(fs *flag.FlagSet, pass *string) {
	def := os.Getenv("RAFTSTREAM_REQUIREPASS")
	fs.StringVar(pass, "password", def, "password, if the cluster requires one (default $RAFTSTREAM_REQUIREPASS)")
	fs.StringVar(pass, "requirepass", def, "the same as --password")
}

// maxBackupPasses bounds how often a backup starts again because slots
// moved while it ran.
const maxBackupPasses = 5

// runBackup copies every shard, one after another, into a new file. Each
// shard is cut at its own point, so a slot that moves between two cuts
// would be in both shards' copies or in neither: a pass counts only if no
// slot move was in flight when it began, the slot map epoch is the same
// when it ends, and the shards' slots cover every slot once. Otherwise
// the pass is dropped and the backup starts again (the shard policy moves
// slots by itself), at most maxBackupPasses times.
func runBackup(ctx context.Context, cfg backupConfig) (*backupResult, error) {
	start := time.Now()
	for pass := 1; ; pass++ {
		epoch, err := settledSlots(ctx, cfg)
		if err != nil {
			return nil, err
		}
		res, moved, err := backupPass(ctx, cfg, epoch)
		if err != nil || moved == "" {
			if res != nil {
				res.elapsed = time.Since(start)
			}
			return res, err
		}
		if pass == maxBackupPasses {
			return nil, fmt.Errorf("slots moved during each of %d passes (the last: %s); take the backup once they stay put "+
				"(raftstream slots status; raftstream shard policy --set off stops the policy's moves)", pass, moved)
		}
		fmt.Fprintf(cfg.progress, "backup: slots moved while it ran (%s); starting again\n", moved)
	}
}

// settledSlots waits (up to the shard timeout) until no slot move is in
// flight and returns the slot map epoch.
func settledSlots(ctx context.Context, cfg backupConfig) (int64, error) {
	deadline := time.Now().Add(cfg.shardTimeout)
	for said := false; ; {
		epoch, moves, err := slotLayout(cfg)
		if err != nil || moves == 0 {
			return epoch, err
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d slot move(s) still in flight after %v (raftstream slots status)", moves, cfg.shardTimeout)
		}
		if !said {
			said = true
			fmt.Fprintf(cfg.progress, "backup: waiting for %d slot move(s) in flight\n", moves)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// slotLayout asks cfg.addr for the slot map epoch and the moves in flight.
func slotLayout(cfg backupConfig) (epoch int64, moves int, err error) {
	c, err := adminDial(cfg.addr, cfg.pass, cfg.timeout)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	epoch, rows, err := slotStatus(c)
	if err != nil {
		return 0, 0, fmt.Errorf("RAFTSTREAM SLOTS STATUS: %w", err)
	}
	return epoch, len(rows), nil
}

// backupPass copies every shard into a new file, which it completes unless
// slots moved meanwhile (the slot map epoch is no longer epoch, a move is
// in flight, or the shards' slots do not cover every slot once): it then
// removes the file and says what moved.
func backupPass(ctx context.Context, cfg backupConfig, epoch int64) (*backupResult, string, error) {
	start := time.Now()
	nodes, rows, err := clusterStatus(cfg.addr, cfg.pass, cfg.timeout)
	if err != nil {
		return nil, "", err
	}
	version, err := serverVersion(cfg.addr, cfg.pass, cfg.timeout)
	if err != nil {
		return nil, "", err
	}
	w, err := backupfile.Create(cfg.out)
	if err != nil {
		return nil, "", err
	}
	done := false
	defer func() {
		if !done {
			w.Abort()
		}
	}()
	m := backupfile.Manifest{Created: start.UTC(), RaftstreamVersion: version, Tool: toolVersion(),
		Cut: "per-shard", Source: backupfile.Source{Addr: cfg.addr}}
	for _, n := range nodes {
		m.Source.Nodes = append(m.Source.Nodes, backupfile.Node{ID: n.ID, Addr: n.Addr})
	}
	b := &shardCopier{cfg: cfg, w: w, rows: rows}
	var total int64
	var shards []backupfile.Shard
	// The shard count comes with the first shard's header.
	for shard, count := 0, 1; shard < count; shard++ {
		info, n, err := b.copy(ctx, shard)
		if err != nil {
			return nil, "", fmt.Errorf("shard %d: %w", shard, err)
		}
		count = n
		total += info.Bytes
		shards = append(shards, info)
		fmt.Fprintf(cfg.progress, "backup: shard %d/%d: %d bytes at index %d (term %d) from %s\n",
			shard+1, count, info.Bytes, info.Index, info.Term, short(info.Node))
	}
	after, moves, err := slotLayout(cfg)
	switch {
	case err != nil:
		return nil, "", err
	case after != epoch:
		return nil, fmt.Sprintf("slot map epoch %d, then %d", epoch, after), nil
	case moves > 0:
		return nil, fmt.Sprintf("%d slot move(s) in flight", moves), nil
	}
	if err := backupfile.CheckSlots(shards); err != nil {
		return nil, err.Error(), nil
	}
	m.Completed = time.Now().UTC()
	m.ShardCount = b.count
	if m, err = w.Finish(m); err != nil {
		return nil, "", err
	}
	done = true
	return &backupResult{manifest: m, bytes: total}, "", nil
}

// shardCopier copies shards into a backup file, finding each one's leader
// from a status report that it refreshes when the leader moved.
type shardCopier struct {
	cfg   backupConfig
	w     *backupfile.Writer
	rows  []statusRow
	count int // the cluster's shard count, from the first header
}

// errRetry marks a failure that another try, on the leader found anew,
// may not have: no leader, a redirect, a lost connection.
type errRetry struct{ error }

func (e errRetry) Unwrap() error { return e.error }

// copy copies one shard, trying again (on a freshly found leader) until
// shardTimeout passes, and returns its manifest entry and the cluster's
// shard count.
func (b *shardCopier) copy(ctx context.Context, shard int) (backupfile.Shard, int, error) {
	deadline := time.Now().Add(b.cfg.shardTimeout)
	begun := false
	for attempt := 1; ; attempt++ {
		info, err := b.try(shard, &begun)
		if err == nil {
			info, err = b.w.EndShard()
			return info, b.count, err
		}
		var rt errRetry
		if !errors.As(err, &rt) || time.Now().After(deadline) {
			return backupfile.Shard{}, 0, err
		}
		fmt.Fprintf(b.cfg.progress, "backup: shard %d: %v; trying again\n", shard, err)
		select {
		case <-ctx.Done():
			return backupfile.Shard{}, 0, ctx.Err()
		case <-time.After(min(time.Duration(attempt)*200*time.Millisecond, 2*time.Second)):
		}
		_, rows, err := clusterStatus(b.cfg.addr, b.cfg.pass, b.cfg.timeout)
		if err == nil {
			b.rows = rows
		}
	}
}

// try is one attempt: RAFTSTREAM BACKUP shard on its leader, then NEXT
// until the last chunk, each chunk written to the file as it arrives.
// begun says whether an earlier attempt began the shard in the file.
func (b *shardCopier) try(shard int, begun *bool) (backupfile.Shard, error) {
	leader, id := "", ""
	for _, r := range b.rows {
		if r.Shard == shard && r.Role == "leader" {
			leader, id = r.Addr, r.NodeID
		}
	}
	if leader == "" {
		return backupfile.Shard{}, errRetry{errors.New("no replica reports leading it")}
	}
	c, err := adminDial(leader, b.cfg.pass, b.cfg.timeout)
	if err != nil {
		return backupfile.Shard{}, errRetry{err}
	}
	defer c.Close()
	v, err := adminDo(c, "RAFTSTREAM", "BACKUP", strconv.Itoa(shard))
	if err != nil {
		var we wire.Error
		if errors.As(err, &we) && !retryable(string(we)) {
			return backupfile.Shard{}, err
		}
		return backupfile.Shard{}, errRetry{fmt.Errorf("%s: %w", leader, err)}
	}
	info, count, err := parseBackupHeader(v)
	if err != nil {
		return backupfile.Shard{}, err
	}
	if b.count != 0 && count != b.count {
		return backupfile.Shard{}, fmt.Errorf("%s reports %d shards, an earlier node %d", leader, count, b.count)
	}
	b.count = count
	info.Node = id
	var sw io.Writer
	if *begun {
		sw, err = b.w.RestartShard(info)
	} else {
		sw, err = b.w.BeginShard(info)
	}
	if err != nil {
		return backupfile.Shard{}, err
	}
	*begun = true
	// Two NEXTs in flight: the node encodes the next chunk while this one
	// travels and is written. The one sent after the last chunk is
	// answered "no backup in progress", which is read and dropped.
	next := func() error { return c.Send("RAFTSTREAM", "BACKUP", "NEXT") }
	for range 2 {
		if err := next(); err != nil {
			return backupfile.Shard{}, errRetry{fmt.Errorf("%s: %w", leader, err)}
		}
	}
	for {
		raw, err := c.ReadReply()
		if err != nil {
			return backupfile.Shard{}, errRetry{fmt.Errorf("%s: %w", leader, err)}
		}
		chunk, end, err := bulkReply(raw)
		if err != nil {
			return backupfile.Shard{}, errRetry{fmt.Errorf("%s: %w", leader, err)}
		}
		if end {
			_, _ = c.ReadReply()
			return info, nil
		}
		if err := next(); err != nil {
			return backupfile.Shard{}, errRetry{fmt.Errorf("%s: %w", leader, err)}
		}
		if _, err := sw.Write(chunk); err != nil {
			return backupfile.Shard{}, err
		}
	}
}

// retryable says whether an error reply to RAFTSTREAM BACKUP shard may go
// away: the node does not lead the shard or none does yet (TRYAGAIN,
// CLUSTERDOWN, MOVED from older nodes), or it serves as many backups as it
// will.
func retryable(msg string) bool {
	for _, p := range []string{"TRYAGAIN", "CLUSTERDOWN", "MOVED"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return strings.Contains(msg, "backups are in progress on this node")
}

// parseBackupHeader reads RAFTSTREAM BACKUP's reply.
func parseBackupHeader(v any) (backupfile.Shard, int, error) {
	a, ok := v.([]any)
	if !ok || len(a)%2 != 0 {
		return backupfile.Shard{}, 0, fmt.Errorf("RAFTSTREAM BACKUP replied %v", v)
	}
	f := map[string]any{}
	for i := 0; i < len(a); i += 2 {
		k, _ := a[i].(string)
		f[k] = a[i+1]
	}
	num := func(k string) int64 { n, _ := f[k].(int64); return n }
	info := backupfile.Shard{Shard: int(num("shard")), Index: uint64(num("index")), Term: uint64(num("term")), Time: num("time")}
	rs, _ := f["slots"].([]any)
	for _, r := range rs {
		p, _ := r.([]any)
		if len(p) != 2 {
			return backupfile.Shard{}, 0, fmt.Errorf("RAFTSTREAM BACKUP slots %v", f["slots"])
		}
		lo, _ := p[0].(int64)
		hi, _ := p[1].(int64)
		info.Slots = append(info.Slots, [2]int{int(lo), int(hi)})
	}
	count := int(num("shards"))
	if count < 1 || info.Index == 0 {
		return backupfile.Shard{}, 0, fmt.Errorf("RAFTSTREAM BACKUP replied %v", v)
	}
	return info, count, nil
}

// bulkReply reads a NEXT reply without copying it: the chunk (pointing
// into raw), or end for the null bulk string that ends the shard. An
// error reply is returned as a wire.Error.
func bulkReply(raw []byte) (chunk []byte, end bool, err error) {
	if len(raw) > 0 && raw[0] == '$' {
		if i := bytes.Index(raw, []byte("\r\n")); i > 0 {
			n, err := strconv.Atoi(string(raw[1:i]))
			switch {
			case err == nil && n == -1:
				return nil, true, nil
			case err == nil && n >= 0 && len(raw) == i+2+n+2:
				return raw[i+2 : i+2+n], false, nil
			}
		}
	}
	v, err := wire.Parse(raw)
	if err == nil {
		if we, ok := v.(wire.Error); ok {
			err = we
		} else {
			err = fmt.Errorf("RAFTSTREAM BACKUP NEXT replied %.100v", v)
		}
	}
	return nil, false, err
}

// serverVersion is addr's raftstream_version (INFO server).
func serverVersion(addr, pass string, timeout time.Duration) (string, error) {
	c, err := adminDial(addr, pass, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	v, err := adminDo(c, "INFO", "server")
	if err != nil {
		return "", err
	}
	s, _ := v.(string)
	for _, line := range strings.Split(s, "\r\n") {
		if k, val, ok := strings.Cut(line, ":"); ok && k == "raftstream_version" {
			return val, nil
		}
	}
	return "", fmt.Errorf("%s: INFO server has no raftstream_version: is it a raftstream node?", addr)
}

// toolVersion names this binary's build: its module version and VCS
// revision when the build recorded them.
func toolVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "raftstream (unknown build)"
	}
	v := "raftstream " + bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return v
}
