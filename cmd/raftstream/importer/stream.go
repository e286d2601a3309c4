package importer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/raftstream/raftstream/engine"
)

// One stream's import. Every try starts by reading both sides, so a try
// after a failure, a second run and a run after an interrupted one all do
// the same thing: write what the target lacks, in this order.
//
//  1. Entries after the target's last-generated-id (nothing on a complete
//     target), with placeholders at holes (copy.go). The target's
//     last-generated-id is the last XADD an earlier run made, since the
//     metadata is set last.
//  2. Consumer groups, consumers and PELs, from their difference (groups.go),
//     then a backup's dead-letter settings (XGROUP SETDLQ).
//  3. Placeholders removed: XTRIM MINID for the holes before the source's
//     first entry (trimmed there), XDEL for the others.
//  4. The IDMP settings, when the source reports them (Redis 8.6, a backup)
//     and the target's differ: XCFGSET.
//  5. XSETID key last-generated-id ENTRIESADDED n MAXDELETEDID id, when the
//     target's differ.
//
// A stream whose target already equals the source (same last-generated-id,
// entries-added, length, max-deleted-entry-id, groups and PELs, IDMP
// settings) gets no write at all, but for dead-letter settings, which no
// command reads back.

// streamJob is one stream's import, across its tries.
type streamJob struct {
	im  *importer
	key string
	// failed are the IDs of XADDs that failed in the last try: a later
	// XADD of the same pipeline may have been applied, leaving a gap that
	// the next try looks for.
	failed []engine.ID
	// copied counts the entries this run copied, over every try.
	copied int64
	// gap is set when the target was found to hold fewer entries than the
	// source after a copy: entries before its last one are missing.
	gap bool
	// repaired is set once the target's key was deleted to repair a gap;
	// a second gap is an error.
	repaired bool
}

// outcome is what a stream's import did.
type outcome int

const (
	imported outcome = iota // something was written
	skipped                 // the target was already equal
	vanished                // the key left the source before its turn
)

// permanentError is a stream's failure that trying again cannot fix.
type permanentError struct{ error }

func permanent(err error) error { return permanentError{err} }

func (e permanentError) Unwrap() error { return e.error }

// errGap says the target lacked entries before its last one; the key was
// deleted on the target and the next try imports the stream again.
var errGap = errors.New("the target stream had a gap (an XADD of a pipeline failed after a later one was applied); deleted it on the target to import it again")

// importStream imports one stream, trying up to Retries times, and says
// how many entries it copied.
func (im *importer) importStream(ctx context.Context, key string) (outcome, int64, error) {
	j := &streamJob{im: im, key: key}
	backoff := 100 * time.Millisecond
	for try := 1; ; try++ {
		out, err := j.try(ctx)
		if try > 1 && out == skipped {
			out = imported // the failed tries before wrote what this one found in place
		}
		if err == nil || ctx.Err() != nil || errors.As(err, new(permanentError)) || try >= im.cfg.Retries {
			return out, j.copied, err
		}
		im.cfg.Logger.Warn("stream import failed; trying again from what the target holds",
			"key", key, "try", try, "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return out, j.copied, ctx.Err()
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// try is one attempt at the stream; see the top of the file.
func (j *streamJob) try(ctx context.Context) (outcome, error) {
	src, err := fetchInfo(ctx, j.im.src, j.key, 1)
	if err != nil {
		return imported, fmt.Errorf("source: %w", err)
	}
	if !src.exists {
		return vanished, nil
	}
	dst, err := fetchInfo(ctx, j.im.dst, j.key, src.maxPEL())
	if err != nil {
		return imported, fmt.Errorf("target: %w", err)
	}
	if err := j.checkGap(ctx, &dst); err != nil {
		return imported, err
	}
	if dst.exists && src.lastGen.Less(dst.lastGen) {
		return imported, permanent(fmt.Errorf("the target's last-generated-id %s is past the source's %s: "+
			"the target stream is not an earlier import of this one; DEL it on the target to import it", dst.lastGen, src.lastGen))
	}
	holes, err := j.holes(ctx, &src)
	if err != nil {
		return imported, err
	}
	wrote := false
	if !dst.exists || dst.lastGen.Less(src.lastGen) {
		if _, err := j.copyEntries(ctx, dst.lastGen, src.lastGen, holes); err != nil {
			return imported, err
		}
		wrote = true
	}
	if !dst.exists && len(src.groups) == 0 && src.length == 0 && len(holes) == 0 {
		if err := j.createEmpty(ctx); err != nil {
			return imported, err
		}
		wrote = true
	}
	if wrote {
		if dst, err = fetchInfo(ctx, j.im.dst, j.key, src.maxPEL()); err != nil {
			return imported, fmt.Errorf("target: %w", err)
		}
	}
	onTarget, err := j.exist(ctx, holes)
	if err != nil {
		return imported, err
	}
	gone := map[engine.ID]bool{}
	for i, h := range holes {
		gone[h] = !onTarget[i]
	}
	n, err := j.syncGroups(ctx, &src, &dst, gone)
	if err != nil {
		return imported, err
	}
	wrote = wrote || n > 0
	w, err := j.removeHoles(ctx, &src, holes, onTarget)
	if err != nil {
		return imported, err
	}
	wrote = wrote || w
	w, err = j.syncSettings(ctx, &src)
	if err != nil {
		return imported, err
	}
	wrote = wrote || w
	w, err = j.setMeta(ctx, &src)
	if err != nil {
		return imported, err
	}
	wrote = wrote || w
	n, err = j.im.syncExpiries(ctx, []string{j.key})
	if err != nil {
		return imported, err
	}
	if wrote = wrote || n > 0; wrote {
		return imported, nil
	}
	return skipped, nil
}

// syncGroups brings the target's groups to the source's (groups.go) and
// says how many commands it sent (0: the groups were equal). gone holds
// the holes (copy.go) whose placeholder is no longer on the target: their
// pending entries can no longer be reproduced. Dead-letter settings (a
// backup's) are set after: no command shows the target's, so they are
// set on every run and not counted.
func (j *streamJob) syncGroups(ctx context.Context, src, dst *streamInfo, gone map[engine.ID]bool) (int, error) {
	n := 0
	for i := range src.groups {
		cs, err := j.groupDiff(&src.groups[i], dst.group(src.groups[i].name), gone)
		if err != nil {
			return n, err
		}
		if err := j.run(ctx, cs); err != nil {
			return n, err
		}
		n += len(cs)
	}
	var dlq []groupCmd
	for _, d := range j.im.src.deadLetters(j.key) {
		dlq = append(dlq, groupCmd{argv: []any{"XGROUP", "SETDLQ", j.key, d.Group, d.MaxDeliveries, d.Key}})
	}
	return n, j.run(ctx, dlq)
}

// idmpSettings are the IDMP fields of XINFO STREAM (Redis 8.6) that
// XCFGSET sets.
var idmpSettings = []string{"idmp-duration", "idmp-maxsize"}

// syncSettings gives the target stream the source's IDMP settings
// (XCFGSET key IDMP-DURATION d IDMP-MAXSIZE n) when the source reports
// them (Redis 8.6, a backup) and they differ; it reports whether it
// wrote. The IDMP memory of producers is not copied: no command writes it.
func (j *streamJob) syncSettings(ctx context.Context, src *streamInfo) (bool, error) {
	dur, size := src.full.get(idmpSettings[0]), src.full.get(idmpSettings[1])
	if dur == nil || size == nil {
		return false, nil
	}
	dst, err := j.im.dst.do(ctx, "XINFO", "STREAM", j.key)
	if err != nil {
		return false, fmt.Errorf("target XINFO STREAM %s: %w", j.key, err)
	}
	f, err := asFields(dst)
	if err != nil {
		return false, fmt.Errorf("target XINFO STREAM %s: %w", j.key, err)
	}
	if f.get(idmpSettings[0]) == dur && f.get(idmpSettings[1]) == size {
		return false, nil
	}
	argv := []any{"XCFGSET", j.key, "IDMP-DURATION", dur, "IDMP-MAXSIZE", size}
	if err := j.im.dst.c.Do(ctx, argv...).Err(); err != nil {
		return false, permanent(fmt.Errorf("target %v: %w", argv, err))
	}
	return true, nil
}

// checkGap looks, after a try whose XADDs failed, for a failed ID that the
// target lacks although it holds later entries, or takes the gap that the
// last try found (j.gap). It deletes the target's
// key then (once per stream) and returns errGap, so that the next try
// imports the stream from the start.
func (j *streamJob) checkGap(ctx context.Context, dst *streamInfo) error {
	failed := j.failed
	j.failed = nil
	var before []engine.ID
	for _, id := range failed {
		if dst.exists && id.Less(dst.lastGen) {
			before = append(before, id)
		}
	}
	present, err := j.exist(ctx, before)
	if err != nil {
		return err
	}
	if !j.gap && !slices.Contains(present, false) {
		return nil
	}
	j.gap = false
	if j.repaired {
		return permanent(errors.New("the target stream had a gap again after it was imported anew"))
	}
	if err := j.im.dst.c.Del(ctx, j.key).Err(); err != nil {
		return fmt.Errorf("target DEL %s (a gap): %w", j.key, err)
	}
	j.repaired = true
	j.im.cfg.Logger.Warn("a gap in the target stream: deleted it there to import it again", "key", j.key)
	return errGap
}

// holes are the IDs of the source's pending entries whose stream entry is
// gone from the source (copy.go), sorted.
func (j *streamJob) holes(ctx context.Context, src *streamInfo) ([]engine.ID, error) {
	var ids []engine.ID
	for _, g := range src.groups {
		for _, n := range g.pending {
			ids = append(ids, n.id)
		}
	}
	slices.SortFunc(ids, engine.ID.Compare)
	ids = slices.Compact(ids)
	exist, err := existOn(ctx, j.im.src, j.key, ids, j.im.cfg.Chunk)
	if err != nil {
		return nil, err
	}
	var holes []engine.ID
	for i, id := range ids {
		if !exist[i] {
			holes = append(holes, id)
		}
	}
	return holes, nil
}

// exist says which of ids the target's stream holds.
func (j *streamJob) exist(ctx context.Context, ids []engine.ID) ([]bool, error) {
	return existOn(ctx, j.im.dst, j.key, ids, j.im.cfg.Chunk)
}

// existOn says which of ids r's stream key holds (XRANGE key id id,
// pipelined in batches of chunk).
func existOn(ctx context.Context, r reader, key string, ids []engine.ID, chunk int) ([]bool, error) {
	out := make([]bool, 0, len(ids))
	for len(ids) > 0 {
		n := min(len(ids), chunk)
		cmds := make([][]any, n)
		for i, id := range ids[:n] {
			s := id.String()
			cmds[i] = []any{"XRANGE", key, s, s, "COUNT", 1}
		}
		replies, err := r.doAll(ctx, cmds)
		if err != nil {
			return nil, fmt.Errorf("%s XRANGE %s: %w", r.label(), key, err)
		}
		for _, v := range replies {
			a, _ := v.([]any)
			out = append(out, len(a) > 0)
		}
		ids = ids[n:]
	}
	return out, nil
}

// createEmpty creates an empty stream at the key on the target (the source
// has one with no entries and no groups): XGROUP CREATE … MKSTREAM with a
// group removed at once.
func (j *streamJob) createEmpty(ctx context.Context) error {
	const tmp = "raftstream-import-mkstream"
	p := j.im.dst.c.TxPipeline()
	p.Do(ctx, "XGROUP", "CREATE", j.key, tmp, "$", "MKSTREAM")
	p.Do(ctx, "XGROUP", "DESTROY", j.key, tmp)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("target: creating the empty stream %s: %w", j.key, err)
	}
	return nil
}

// removeHoles deletes the placeholders still on the target (onTarget[i]
// for holes[i]): those before the source's first entry with XTRIM MINID
// (all of them with XTRIM MAXLEN 0 when the source stream is empty), the
// others with XDEL. It reports whether it wrote.
func (j *streamJob) removeHoles(ctx context.Context, src *streamInfo, holes []engine.ID, onTarget []bool) (bool, error) {
	var trim bool
	var del []any
	for i, h := range holes {
		switch {
		case !onTarget[i]:
		case src.length == 0 || h.Less(src.first):
			trim = true
		default:
			del = append(del, h.String())
		}
	}
	if trim {
		argv := []any{"XTRIM", j.key, "MAXLEN", 0}
		if src.length > 0 {
			argv = []any{"XTRIM", j.key, "MINID", src.first.String()}
		}
		if err := j.im.dst.c.Do(ctx, argv...).Err(); err != nil {
			return false, fmt.Errorf("target %v: %w", argv, err)
		}
	}
	if len(del) > 0 {
		argv := append([]any{"XDEL", j.key}, del...)
		if err := j.im.dst.c.Do(ctx, argv...).Err(); err != nil {
			return false, fmt.Errorf("target XDEL %s: %w", j.key, err)
		}
	}
	return trim || len(del) > 0, nil
}

// setMeta gives the target the source's last-generated-id, entries-added
// and max-deleted-entry-id (XSETID), when they differ, and checks that
// both now hold as many entries. It reports whether it wrote.
func (j *streamJob) setMeta(ctx context.Context, src *streamInfo) (bool, error) {
	dst, err := fetchMeta(ctx, j.im.dst, j.key)
	if err != nil {
		return false, err
	}
	wrote := false
	if dst.lastGen != src.lastGen || dst.entriesAdded != src.entriesAdded || dst.maxDeleted != src.maxDeleted {
		if src.maxDeleted.IsZero() && !dst.maxDeleted.IsZero() {
			// XSETID cannot reset it (MAXDELETEDID 0-0 leaves it as is).
			return false, permanent(fmt.Errorf("the target's max-deleted-entry-id is %s and the source's 0-0, which XSETID cannot set; DEL %s on the target and import again",
				dst.maxDeleted, j.key))
		}
		argv := []any{"XSETID", j.key, src.lastGen.String(), "ENTRIESADDED", src.entriesAdded, "MAXDELETEDID", src.maxDeleted.String()}
		if err := j.im.dst.c.Do(ctx, argv...).Err(); err != nil {
			return false, permanent(fmt.Errorf("target %v: %w", argv, err))
		}
		wrote = true
	}
	switch {
	case dst.length < src.length:
		// Entries before the last one are missing: a gap that no failed
		// XADD of this run explains (an earlier, interrupted run).
		j.gap = true
		return wrote, fmt.Errorf("the target holds %d entries, the source %d", dst.length, src.length)
	case dst.length > src.length:
		return wrote, permanent(fmt.Errorf("the target holds %d entries, the source %d: entries were deleted on the source after an earlier import; DEL %s on the target and import again",
			dst.length, src.length, j.key))
	}
	return wrote, nil
}

// meta is XINFO STREAM's (not FULL) first fields.
type meta struct {
	length              int64
	lastGen, maxDeleted engine.ID
	entriesAdded        int64
}

// fetchMeta reads key's meta from r.
func fetchMeta(ctx context.Context, r reader, key string) (meta, error) {
	reply, err := r.do(ctx, "XINFO", "STREAM", key)
	if err != nil {
		return meta{}, fmt.Errorf("%s XINFO STREAM %s: %w", r.label(), key, err)
	}
	var rr replyReader
	f := rr.fields(reply, "XINFO STREAM")
	m := meta{length: rr.int(f, "length"), lastGen: rr.id(f.get("last-generated-id")),
		maxDeleted: rr.id(f.get("max-deleted-entry-id")), entriesAdded: rr.int(f, "entries-added")}
	if rr.err != nil {
		return meta{}, fmt.Errorf("%s XINFO STREAM %s: %w", r.label(), key, rr.err)
	}
	return m, nil
}
