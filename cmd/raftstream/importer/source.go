package importer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp"
	"github.com/raftstream/raftstream/resp/wire"
)

// Where an import reads from. A Source is a Redis server or Redis Cluster
// (an *endpoint, dialed from Config.From by Run), or one shard of a
// raftstream backup decoded into an engine (EngineSource, for `raftstream
// restore`). Both answer the read commands the import sends (SCAN, XLEN,
// XINFO, XRANGE) with the values go-redis decodes from RESP2 — string,
// int64, []any, nil, an error reply as a redis.Error — so the import
// decides what to write in the same way whichever it reads from, and the
// same code writes it.

// reader runs read commands on one side of an import (the target is read
// through its *endpoint too).
type reader interface {
	// label names the side in messages ("source", "target", "backup
	// shard 3").
	label() string
	// do runs one command; a null reply is redis.Nil.
	do(ctx context.Context, args ...any) (any, error)
	// doAll runs cmds as one pipeline and returns their replies (nil for
	// a null one); the error is the first error reply or failure.
	doAll(ctx context.Context, cmds [][]any) ([]any, error)
}

// Source is where an import reads streams from: a Redis (Run dials it) or
// a decoded backup shard (EngineSource).
type Source interface {
	reader
	// scanStreams lists the stream keys matching match, sorted.
	scanStreams(ctx context.Context, match string) ([]string, error)
	// scanStrings lists the string keys matching match, sorted: what a
	// backup holds besides streams (an import from Redis copies streams
	// only, and lists none).
	scanStrings(ctx context.Context, match string) ([]string, error)
	// deadLetters lists the dead-letter settings of key's groups (a
	// raftstream extension that no command shows: a backup's engine has
	// them, a Redis none).
	deadLetters(key string) []engine.DeadLetterSetting
	Close() error
}

// asSlice is go-redis's Cmd.Slice for a reply of do.
func asSlice(v any, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("redis: unexpected type=%T for Slice", v)
	}
	return a, nil
}

func (e *endpoint) label() string { return e.name }

func (e *endpoint) do(ctx context.Context, args ...any) (any, error) {
	return e.c.Do(ctx, args...).Result()
}

func (e *endpoint) doAll(ctx context.Context, cmds [][]any) ([]any, error) {
	p := e.c.Pipeline()
	sent := make([]*redis.Cmd, len(cmds))
	for i, c := range cmds {
		sent[i] = p.Do(ctx, c...)
	}
	_, _ = p.Exec(ctx) // each command's error is its own
	out := make([]any, len(sent))
	for i, c := range sent {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		out[i] = c.Val()
	}
	return out, nil
}

func (e *endpoint) scanStrings(context.Context, string) ([]string, error) { return nil, nil }

func (e *endpoint) deadLetters(string) []engine.DeadLetterSetting { return nil }

// EngineSource is a decoded raftstream backup shard (engine.Restore's
// engine) as an import source, named name in messages. Its commands run at
// now (unix ms): the backup's time, which XINFO's idle times count from.
// The engine is only read.
func EngineSource(name string, e *engine.Engine, now int64) Source {
	return &engineSource{name: name, e: e, now: now}
}

type engineSource struct {
	name string
	now  int64
	// mu serialises the workers' commands on the engine.
	mu sync.Mutex
	e  *engine.Engine
}

func (s *engineSource) label() string { return s.name }
func (s *engineSource) Close() error  { return nil }

// do runs the command on the engine and decodes its RESP2 encoding, so the
// values are those a client of a node holding the engine would read.
func (s *engineSource) do(_ context.Context, args ...any) (any, error) {
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = fmt.Append(nil, a)
	}
	s.mu.Lock()
	r := s.e.Exec(s.now, argv)
	s.mu.Unlock()
	v, err := wire.Parse(resp.AppendReply(nil, r, 2))
	switch e := v.(type) {
	case nil:
		if err == nil {
			err = redis.Nil
		}
		return nil, err
	case wire.Error:
		return nil, replyError(e)
	}
	return v, nil
}

func (s *engineSource) doAll(ctx context.Context, cmds [][]any) ([]any, error) {
	out := make([]any, len(cmds))
	for i, c := range cmds {
		v, err := s.do(ctx, c...)
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (s *engineSource) scanStreams(ctx context.Context, match string) ([]string, error) {
	return s.scan(ctx, match, "stream")
}

func (s *engineSource) scanStrings(ctx context.Context, match string) ([]string, error) {
	return s.scan(ctx, match, "string")
}

// scan runs SCAN … TYPE typ over the whole engine.
func (s *engineSource) scan(ctx context.Context, match, typ string) ([]string, error) {
	var keys []string
	cursor := "0"
	for {
		a, err := asSlice(s.do(ctx, "SCAN", cursor, "MATCH", match, "COUNT", 1000, "TYPE", typ))
		if err != nil || len(a) != 2 {
			return nil, fmt.Errorf("%s: SCAN: %v %v", s.name, a, err)
		}
		ks, _ := a[1].([]any)
		for _, k := range ks {
			keys = append(keys, k.(string))
		}
		if cursor, _ = a[0].(string); cursor == "0" {
			break
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

func (s *engineSource) deadLetters(key string) []engine.DeadLetterSetting {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.e.DeadLetterSettings([]byte(key))
}

// replyError is an error reply of an engine source, a redis.Error as
// go-redis returns it from a server.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}
