package importer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/engine"
)

// A stream's state as XINFO STREAM FULL reports it, on either side: what
// the import compares to decide what to write. Every client speaks RESP2,
// so a map arrives as a flat array of name, value, name, value…, in the
// server's order.

// streamInfo is one stream, read with XINFO STREAM key FULL COUNT n where n
// covers the largest PEL of its groups (so that every pending entry is in
// the reply; the first n entries of the stream come with it).
type streamInfo struct {
	exists       bool
	length       int64
	lastGen      engine.ID // last-generated-id
	maxDeleted   engine.ID // max-deleted-entry-id
	entriesAdded int64
	// first is the stream's first entry, when length > 0.
	first  engine.ID
	groups []groupInfo
	// full is the parsed reply and count the COUNT it was read with, for
	// --verify.
	full  fields
	count int64
}

// groupInfo is one consumer group.
type groupInfo struct {
	name        string
	lastID      engine.ID // last-delivered-id
	entriesRead int64     // -1 when the reply says null (unknown)
	pelCount    int64
	pending     []nackInfo // the whole PEL, in ID order
	consumers   []consumerInfo
}

// nackInfo is one pending entry of a group.
type nackInfo struct {
	id            engine.ID
	consumer      string // "" for an entry released by XNACK (Redis 8.x)
	deliveryTime  int64  // Unix ms
	deliveryCount int64
}

// consumerInfo is one consumer of a group.
type consumerInfo struct {
	name     string
	pelCount int64
}

// fields is a RESP2 map reply: names and values in the server's order.
type fields struct {
	names  []string
	values []any
}

// asFields reads a flat name/value array.
func asFields(v any) (fields, error) {
	a, ok := v.([]any)
	if !ok || len(a)%2 != 0 {
		return fields{}, fmt.Errorf("want a map (array of name, value pairs), got %T", v)
	}
	f := fields{names: make([]string, 0, len(a)/2), values: make([]any, 0, len(a)/2)}
	for i := 0; i < len(a); i += 2 {
		name, ok := a[i].(string)
		if !ok {
			return fields{}, fmt.Errorf("map key %v is not a string", a[i])
		}
		f.names = append(f.names, name)
		f.values = append(f.values, a[i+1])
	}
	return f, nil
}

// get returns the value named name, nil when absent.
func (f fields) get(name string) any {
	for i, n := range f.names {
		if n == name {
			return f.values[i]
		}
	}
	return nil
}

// replyReader collects the first error met while reading a reply's parts,
// so that parsing reads as a list of fields.
type replyReader struct{ err error }

func (r *replyReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *replyReader) int(f fields, name string) int64 {
	n, ok := f.get(name).(int64)
	if !ok {
		r.fail("field %q: want an integer, got %v", name, f.get(name))
	}
	return n
}

// intOrNull reads an integer that may be null (-1 then).
func (r *replyReader) intOrNull(f fields, name string) int64 {
	if f.get(name) == nil {
		return -1
	}
	return r.int(f, name)
}

func (r *replyReader) str(f fields, name string) string {
	s, ok := f.get(name).(string)
	if !ok {
		r.fail("field %q: want a string, got %v", name, f.get(name))
	}
	return s
}

func (r *replyReader) id(v any) engine.ID {
	s, _ := v.(string)
	id, err := engine.ParseID([]byte(s), 0)
	if err != nil {
		r.fail("bad entry ID %v", v)
	}
	return id
}

func (r *replyReader) list(v any, what string) []any {
	a, ok := v.([]any)
	if !ok {
		r.fail("%s: want an array, got %T", what, v)
	}
	return a
}

func (r *replyReader) fields(v any, what string) fields {
	f, err := asFields(v)
	if err != nil {
		r.fail("%s: %v", what, err)
	}
	return f
}

// parseStreamInfo reads an XINFO STREAM FULL reply.
func parseStreamInfo(reply any) (streamInfo, error) {
	var r replyReader
	top := r.fields(reply, "XINFO STREAM FULL")
	if r.err != nil {
		return streamInfo{}, r.err
	}
	s := streamInfo{exists: true, full: top,
		length:       r.int(top, "length"),
		lastGen:      r.id(top.get("last-generated-id")),
		maxDeleted:   r.id(top.get("max-deleted-entry-id")),
		entriesAdded: r.int(top, "entries-added"),
	}
	if es := r.list(top.get("entries"), "entries"); len(es) > 0 {
		if e := r.list(es[0], "entry"); len(e) == 2 {
			s.first = r.id(e[0])
		}
	}
	for _, gv := range r.list(top.get("groups"), "groups") {
		gf := r.fields(gv, "group")
		if r.err != nil {
			break
		}
		g := groupInfo{name: r.str(gf, "name"), lastID: r.id(gf.get("last-delivered-id")),
			entriesRead: r.intOrNull(gf, "entries-read"), pelCount: r.int(gf, "pel-count")}
		for _, pv := range r.list(gf.get("pending"), "pending") {
			p := r.list(pv, "pending entry")
			if len(p) != 4 {
				r.fail("pending entry %v: want [id consumer delivery-time delivery-count]", pv)
				break
			}
			owner, _ := p[1].(string)
			t, _ := p[2].(int64)
			n, _ := p[3].(int64)
			g.pending = append(g.pending, nackInfo{id: r.id(p[0]), consumer: owner, deliveryTime: t, deliveryCount: n})
		}
		for _, cv := range r.list(gf.get("consumers"), "consumers") {
			cf := r.fields(cv, "consumer")
			if r.err != nil {
				break
			}
			g.consumers = append(g.consumers, consumerInfo{name: r.str(cf, "name"), pelCount: r.int(cf, "pel-count")})
		}
		s.groups = append(s.groups, g)
	}
	return s, r.err
}

// complete reports whether the reply holds every pending entry (COUNT was
// large enough for every group's PEL).
func (s *streamInfo) complete() bool {
	for _, g := range s.groups {
		if int64(len(g.pending)) < g.pelCount {
			return false
		}
	}
	return true
}

// maxPEL is the largest pel-count of the stream's groups.
func (s *streamInfo) maxPEL() int64 {
	var m int64
	for _, g := range s.groups {
		m = max(m, g.pelCount)
	}
	return m
}

// group returns the group named name, nil if there is none.
func (s *streamInfo) group(name string) *groupInfo {
	for i := range s.groups {
		if s.groups[i].name == name {
			return &s.groups[i]
		}
	}
	return nil
}

// Errors of a server, recognised by their text (the only form a client
// sees them in).
func isNoSuchKey(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "ERR no such key")
}

// isWrongType says err is a WRONGTYPE reply: the key holds another type.
func isWrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE")
}

// fetchInfo reads key's state from r: XINFO GROUPS for the size of the
// largest PEL, then XINFO STREAM FULL with a COUNT that covers it (again,
// larger, if the PEL grew in between). A missing key is a streamInfo with
// exists false; a key of another type is an error.
func fetchInfo(ctx context.Context, r reader, key string, minCount int64) (streamInfo, error) {
	count := max(minCount, 1)
	gs, err := asSlice(r.do(ctx, "XINFO", "GROUPS", key))
	if isNoSuchKey(err) {
		return streamInfo{}, nil
	}
	if isWrongType(err) {
		return streamInfo{}, permanent(fmt.Errorf("%s holds a key of another type", key))
	}
	if err != nil {
		return streamInfo{}, err
	}
	for _, gv := range gs {
		var rr replyReader
		if f := rr.fields(gv, "group"); rr.err == nil {
			count = max(count, rr.int(f, "pending"))
		}
	}
	for range 3 {
		reply, err := r.do(ctx, "XINFO", "STREAM", key, "FULL", "COUNT", count)
		if isNoSuchKey(err) {
			return streamInfo{}, nil
		}
		if err != nil {
			return streamInfo{}, err
		}
		s, err := parseStreamInfo(reply)
		if err != nil {
			return streamInfo{}, fmt.Errorf("XINFO STREAM %s FULL: %w", key, err)
		}
		if s.complete() {
			s.count = count
			return s, nil
		}
		count = 2 * max(count, s.maxPEL())
	}
	return streamInfo{}, fmt.Errorf("XINFO STREAM %s FULL: the PEL keeps growing past COUNT %d; stop the consumers during the import", key, count)
}
