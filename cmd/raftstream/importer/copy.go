package importer

import (
	"context"
	"fmt"

	"github.com/raftstream/raftstream/engine"
)

// Copying entries: XRANGE in chunks from the source, XADD with the same IDs
// and fields, one pipeline per chunk, in ID order. The next chunk is read
// while the current one is written.
//
// A pending entry whose stream entry was deleted (XDEL after delivery, or
// trimmed) cannot be made pending by XCLAIM: XCLAIM drops a PEL reference to
// an entry that does not exist, with or without FORCE. Such an ID is a hole:
// the copy writes a placeholder entry at its place, the group sync claims
// it like any other, and removeHoles deletes the placeholder afterwards,
// leaving the dangling reference that the source has.

// placeholder are the fields of a hole's stand-in entry.
var placeholder = []any{"raftstream-import", "placeholder for a deleted entry that is still pending"}

// entry is one stream entry as XRANGE returns it.
type entry struct {
	id     string
	fields []any // field, value, … (strings, in the source's order)
}

// chunk is one XRANGE reply, or the error that ended the reading.
type chunk struct {
	entries []entry
	err     error
}

// readEntries sends the source entries in (after, upTo], chunk by chunk,
// on the returned channel, which it closes after the last (or after an
// error, sent as the last chunk). It stops when ctx ends, so a reader
// whose consumer left (and cancelled ctx) never blocks.
func (j *streamJob) readEntries(ctx context.Context, after, upTo engine.ID) <-chan chunk {
	out := make(chan chunk, 2)
	go func() {
		defer close(out)
		start, end := "("+after.String(), upTo.String()
		for {
			reply, err := asSlice(j.im.src.do(ctx, "XRANGE", j.key, start, end, "COUNT", j.im.cfg.Chunk))
			var es []entry
			if err == nil {
				es, err = parseEntries(reply)
			}
			if err != nil {
				select {
				case out <- chunk{err: fmt.Errorf("%s XRANGE %s: %w", j.im.src.label(), j.key, err)}:
				case <-ctx.Done():
				}
				return
			}
			if len(es) == 0 {
				return
			}
			select {
			case out <- chunk{entries: es}:
			case <-ctx.Done():
				return
			}
			if len(es) < j.im.cfg.Chunk {
				return
			}
			start = "(" + es[len(es)-1].id
		}
	}()
	return out
}

// parseEntries reads an XRANGE reply.
func parseEntries(reply []any) ([]entry, error) {
	es := make([]entry, 0, len(reply))
	for _, v := range reply {
		e, ok := v.([]any)
		if !ok || len(e) != 2 {
			return nil, fmt.Errorf("entry %v: want [id fields]", v)
		}
		id, ok := e[0].(string)
		fs, ok2 := e[1].([]any)
		if !ok || !ok2 {
			return nil, fmt.Errorf("entry %v: want [id fields]", v)
		}
		es = append(es, entry{id: id, fields: fs})
	}
	return es, nil
}

// copyEntries copies the source entries in (after, upTo] to the target,
// with a placeholder at every hole in that range (holes: sorted). It
// returns the number of entries copied, placeholders not counted. The
// IDs of XADDs that failed are added to j.failed, for the next try to
// check for a gap (stream.go).
func (j *streamJob) copyEntries(ctx context.Context, after, upTo engine.ID, holes []engine.ID) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for len(holes) > 0 && !after.Less(holes[0]) {
		holes = holes[1:]
	}
	var copied int64
	var batch []xaddCmd
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := j.xadd(ctx, batch)
		copied += n
		batch = batch[:0]
		return err
	}
	// addHoles queues the placeholders of the holes before id (all the
	// holes up to upTo when last).
	addHoles := func(id engine.ID, last bool) {
		for len(holes) > 0 && (holes[0].Less(id) || last && !upTo.Less(holes[0])) {
			batch = append(batch, xaddCmd{id: holes[0], hole: true,
				argv: append([]any{"XADD", j.key, holes[0].String()}, placeholder...)})
			holes = holes[1:]
		}
	}
	for c := range j.readEntries(ctx, after, upTo) {
		if c.err != nil {
			return copied, c.err
		}
		for _, e := range c.entries {
			id, err := engine.ParseID([]byte(e.id), 0)
			if err != nil {
				return copied, fmt.Errorf("%s XRANGE %s: bad entry ID %q", j.im.src.label(), j.key, e.id)
			}
			addHoles(id, false)
			batch = append(batch, xaddCmd{id: id, argv: append([]any{"XADD", j.key, e.id}, e.fields...)})
		}
		if err := flush(); err != nil {
			return copied, err
		}
	}
	if err := ctx.Err(); err != nil {
		return copied, err
	}
	addHoles(engine.MaxID, true)
	return copied, flush()
}

// copyStrings copies the source's string keys matching Match (a backup's:
// a Redis source lists none). Each is read on both sides (GET) and set
// (SET) where the target lacks it or holds another value, Chunk keys per
// pipeline. It says how many it wrote.
func (im *importer) copyStrings(ctx context.Context) (int, error) {
	keys, err := im.src.scanStrings(ctx, im.cfg.Match)
	if err != nil {
		return 0, err
	}
	wrote := 0
	for len(keys) > 0 {
		n := min(len(keys), im.cfg.Chunk)
		gets := make([][]any, n)
		for i, k := range keys[:n] {
			gets[i] = []any{"GET", k}
		}
		src, err := im.src.doAll(ctx, gets)
		if err != nil {
			return wrote, fmt.Errorf("%s GET: %w", im.src.label(), err)
		}
		dst, err := im.dst.doAll(ctx, gets)
		if err != nil {
			return wrote, fmt.Errorf("target GET: %w", err)
		}
		var sets [][]any
		for i, k := range keys[:n] {
			if src[i] != nil && src[i] != dst[i] {
				sets = append(sets, []any{"SET", k, src[i]})
			}
		}
		if len(sets) > 0 {
			if _, err := im.dst.doAll(ctx, sets); err != nil {
				return wrote, fmt.Errorf("target SET: %w", err)
			}
		}
		wrote += len(sets)
		if _, err := im.syncExpiries(ctx, keys[:n]); err != nil {
			return wrote, err
		}
		keys = keys[n:]
	}
	return wrote, nil
}

// xaddCmd is one XADD of a copy: of an entry, or of a hole's placeholder.
type xaddCmd struct {
	id   engine.ID
	hole bool
	argv []any
}

// xadd sends the XADDs as one pipeline and returns how many entries (not
// placeholders) were added. Every failed XADD's ID is recorded in
// j.failed; the first error is returned.
func (j *streamJob) xadd(ctx context.Context, batch []xaddCmd) (int64, error) {
	p := j.im.dst.c.Pipeline()
	for _, x := range batch {
		p.Do(ctx, x.argv...)
	}
	cmds, _ := p.Exec(ctx)
	var added int64
	var first error
	for i, c := range cmds {
		if err := c.Err(); err != nil {
			j.failed = append(j.failed, batch[i].id)
			if first == nil {
				first = fmt.Errorf("target XADD %s %s: %w", j.key, batch[i].id, err)
			}
			continue
		}
		if !batch[i].hole {
			added++
		}
	}
	j.copied += added
	j.im.progress.entries.Add(added)
	return added, first
}

// syncExpiries gives the target's keys the source's expiry times (a key's
// time to live is part of its state: a backup carries it, and a Redis key
// may have one): PEXPIRETIME is read on both sides, and a difference is
// set with PEXPIREAT (a time already past deletes the key, as on the
// source it is gone) or cleared with PERSIST. It says how many keys it
// changed.
func (im *importer) syncExpiries(ctx context.Context, keys []string) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	reads := make([][]any, len(keys))
	for i, k := range keys {
		reads[i] = []any{"PEXPIRETIME", k}
	}
	src, err := im.src.doAll(ctx, reads)
	if err != nil {
		return 0, fmt.Errorf("%s PEXPIRETIME: %w", im.src.label(), err)
	}
	dst, err := im.dst.doAll(ctx, reads)
	if err != nil {
		return 0, fmt.Errorf("target PEXPIRETIME: %w", err)
	}
	var fix [][]any
	for i, k := range keys {
		s, okS := src[i].(int64)
		d, okD := dst[i].(int64)
		switch {
		case !okS || !okD || s == d || s == -2 || d == -2:
			// An error, the same expiry, or a key missing on a side (a
			// source key gone meanwhile, a target key not written).
		case s >= 0:
			fix = append(fix, []any{"PEXPIREAT", k, s})
		default:
			fix = append(fix, []any{"PERSIST", k})
		}
	}
	if len(fix) > 0 {
		if _, err := im.dst.doAll(ctx, fix); err != nil {
			return 0, fmt.Errorf("target PEXPIREAT: %w", err)
		}
	}
	return len(fix), nil
}
