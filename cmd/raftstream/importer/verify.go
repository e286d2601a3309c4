package importer

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// --verify: for every imported stream, XINFO STREAM key FULL COUNT n on
// both sides (n covering the largest PEL, so that every pending entry is
// compared, and the first n entries), field by field, and then every entry
// with XRANGE in chunks on both sides.

// notCompared are the XINFO STREAM FULL fields that legitimately differ
// between the source and the target: no command can make them equal
// (doc.go says why; so do `raftstream import -h` and the README).
var notCompared = map[string]bool{
	"radix-tree-keys": true, "radix-tree-nodes": true, // each server packs entries its own way
	"seen-time": true, "active-time": true, // the time of the import
	"pids-tracked": true, "iids-tracked": true, "iids-added": true, "iids-duplicates": true, // IDMP memory: not copied
}

// verifyReport collects one verification's findings.
type verifyReport struct {
	diffs    []string
	skipped  map[string]int // not compared (notCompared), by field
	oneSided map[string]int // "source"/"target" + field present on one side only
}

// counts formats m as "name (n), …" in name order.
func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s (%d)", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func (r *verifyReport) diff(key, path string, src, dst any) {
	r.diffs = append(r.diffs, fmt.Sprintf("%s %s: source %s, target %s", key, path, show(src), show(dst)))
}

// maxDiffsPerStream bounds the differences listed for one stream.
const maxDiffsPerStream = 20

// verify compares every key on both sides, writes the report to Out and
// returns the number of differences.
func (im *importer) verify(ctx context.Context, keys []string) (int, error) {
	r := &verifyReport{skipped: map[string]int{}, oneSided: map[string]int{}}
	for _, key := range keys {
		before := len(r.diffs)
		if err := im.verifyStream(ctx, key, r); err != nil {
			return 0, err
		}
		if len(r.diffs)-before > maxDiffsPerStream {
			n := len(r.diffs) - before - maxDiffsPerStream
			r.diffs = append(r.diffs[:before+maxDiffsPerStream], fmt.Sprintf("%s: %d more differences", key, n))
		}
	}
	out := im.cfg.Out
	fmt.Fprintf(out, "verify: %d streams compared (XINFO STREAM FULL and every entry): %d differences\n", len(keys), len(r.diffs))
	for _, d := range r.diffs {
		fmt.Fprintf(out, "DIFF %s\n", d)
	}
	if len(r.skipped) > 0 {
		fmt.Fprintf(out, "verify: not compared, as documented (raftstream import -h): %s\n", counts(r.skipped))
	}
	if len(r.oneSided) > 0 {
		fmt.Fprintf(out, "verify: reported by one side only (the servers' versions differ): %s\n", counts(r.oneSided))
	}
	return len(r.diffs), nil
}

// verifyStream compares one stream.
func (im *importer) verifyStream(ctx context.Context, key string, r *verifyReport) error {
	src, err := fetchInfo(ctx, im.src, key, 1)
	if err != nil {
		return fmt.Errorf("verify: source: %w", err)
	}
	dst, err := fetchInfo(ctx, im.dst, key, src.count)
	if err != nil {
		return fmt.Errorf("verify: target: %w", err)
	}
	if src.exists && dst.count > src.count {
		if src, err = fetchInfo(ctx, im.src, key, dst.count); err != nil {
			return fmt.Errorf("verify: source: %w", err)
		}
	}
	switch {
	case !src.exists && !dst.exists:
		return nil
	case !src.exists || !dst.exists:
		r.diff(key, "(key)", src.exists, dst.exists)
		return nil
	}
	r.compareFields(key, "", src.full, dst.full)
	return im.compareEntries(ctx, key, r)
}

// compareFields compares two maps of XINFO STREAM FULL: the stream, a
// group or a consumer. Groups and consumers are matched by name.
func (r *verifyReport) compareFields(key, path string, a, b fields) {
	names := slices.Clone(a.names)
	for _, n := range b.names {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		av, bv := a.get(n), b.get(n)
		inA, inB := slices.Contains(a.names, n), slices.Contains(b.names, n)
		switch {
		case notCompared[n]:
			r.skipped[n]++
		case !inB:
			r.oneSided["source "+n]++
		case !inA:
			r.oneSided["target "+n]++
		case n == "groups" || n == "consumers":
			r.compareNamed(key, path+n, av, bv)
		case !reflect.DeepEqual(av, bv):
			r.diff(key, path+n, av, bv)
		}
	}
}

// compareNamed compares two arrays of maps that have a "name" field.
func (r *verifyReport) compareNamed(key, path string, a, b any) {
	byName := func(v any) ([]string, map[string]fields) {
		var order []string
		m := map[string]fields{}
		l, _ := v.([]any)
		for _, x := range l {
			f, err := asFields(x)
			if err != nil {
				r.diff(key, path, a, b)
				continue
			}
			name, _ := f.get("name").(string)
			order = append(order, name)
			m[name] = f
		}
		return order, m
	}
	ao, am := byName(a)
	bo, bm := byName(b)
	for _, n := range ao {
		if f, ok := bm[n]; ok {
			r.compareFields(key, fmt.Sprintf("%s[%s].", path, n), am[n], f)
		} else {
			r.diff(key, fmt.Sprintf("%s[%s]", path, n), "present", "missing")
		}
	}
	for _, n := range bo {
		if _, ok := am[n]; !ok {
			r.diff(key, fmt.Sprintf("%s[%s]", path, n), "missing", "present")
		}
	}
}

// compareEntries reads both streams with XRANGE in chunks and compares
// them entry by entry.
func (im *importer) compareEntries(ctx context.Context, key string, r *verifyReport) error {
	start := "-"
	for n := 0; ; n++ {
		var sides [2][]any
		for i, r := range []reader{im.src, im.dst} {
			reply, err := asSlice(r.do(ctx, "XRANGE", key, start, "+", "COUNT", im.cfg.Chunk))
			if err != nil {
				return fmt.Errorf("verify: %s XRANGE %s: %w", r.label(), key, err)
			}
			sides[i] = reply
		}
		a, b := sides[0], sides[1]
		for i := range max(len(a), len(b)) {
			var av, bv any
			if i < len(a) {
				av = a[i]
			}
			if i < len(b) {
				bv = b[i]
			}
			if !reflect.DeepEqual(av, bv) {
				r.diff(key, fmt.Sprintf("entry #%d", n*im.cfg.Chunk+i), av, bv)
				return nil // the entries after are misaligned: one report is enough
			}
		}
		if len(a) < im.cfg.Chunk {
			return nil
		}
		e, _ := a[len(a)-1].([]any)
		start = "(" + fmt.Sprint(e[0])
	}
}

// show formats a reply value for a report line, shortened.
func show(v any) string {
	s := fmt.Sprint(v)
	if v == nil {
		s = "(nil)"
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
