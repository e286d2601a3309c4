package engine

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/raftstream/raftstream/slots"
)

// The slot index: each key is findable by its Redis Cluster hash slot, as
// Redis keeps a slot-to-keys index, so that a slot's keys can be counted
// (CLUSTER COUNTKEYSINSLOT), listed (CLUSTER GETKEYSINSLOT) and exported to
// another shard (a slot move) without visiting the whole keyspace. It is
// updated where keys are created and deleted (setKey, deleteKey; Restore
// creates its keys through setKey), so it is never part of the snapshot
// encoding and is the same on every replica.
//
// A key moves between shards as its snapshot encoding (DumpKey, RestoreKey):
// the whole value, for a stream its entries, IDs and counters, consumer
// groups, consumers and PELs, IDMP tables and per-stream settings.

func (e *Engine) indexSlot(key string) {
	sl := uint16(slots.OfString(key))
	if e.slotKeys == nil {
		e.slotKeys = make(map[uint16]map[string]struct{})
	}
	m := e.slotKeys[sl]
	if m == nil {
		m = make(map[string]struct{})
		e.slotKeys[sl] = m
	}
	m[key] = struct{}{}
}

func (e *Engine) unindexSlot(key string) {
	sl := uint16(slots.OfString(key))
	m := e.slotKeys[sl]
	delete(m, key)
	if len(m) == 0 {
		delete(e.slotKeys, sl)
	}
}

// CountKeysInSlot is the number of keys in hash slot.
func (e *Engine) CountKeysInSlot(slot int) int { return len(e.slotKeys[uint16(slot)]) }

// KeysInSlot returns at most count keys of hash slot in byte order (all of
// them when count < 0).
func (e *Engine) KeysInSlot(slot, count int) []string {
	m := e.slotKeys[uint16(slot)]
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	if count >= 0 && count < len(out) {
		out = out[:count]
	}
	return out
}

// SlotsWithKeys returns the hash slots in r that hold at least one key, in
// order.
func (e *Engine) SlotsWithKeys(r slots.Range) []int {
	var out []int
	if r.Len() < len(e.slotKeys) {
		for s := r.First; s <= r.Last; s++ {
			if len(e.slotKeys[uint16(s)]) > 0 {
				out = append(out, s)
			}
		}
		return out
	}
	for s := range e.slotKeys {
		if r.Contains(int(s)) {
			out = append(out, int(s))
		}
	}
	slices.Sort(out)
	return out
}

// Exists reports whether key holds a value.
func (e *Engine) Exists(key []byte) bool {
	_, ok := e.keys[string(key)]
	return ok
}

// DumpKey returns the snapshot encoding of key alone (Snapshot.WriteTo of
// an engine holding only that key), and false if key does not exist. It
// changes nothing, so it may run under a read lock.
func (e *Engine) DumpKey(key string) ([]byte, bool) {
	if _, ok := e.keys[key]; !ok {
		return nil, false
	}
	sn := &Snapshot{cfg: e.cfg, keys: []snapKey{e.snapKey(key, false)}}
	var b bytes.Buffer
	if _, err := sn.WriteTo(&b); err != nil {
		panic(err) // a bytes.Buffer does not fail
	}
	return b.Bytes(), true
}

// RestoreKey decodes a DumpKey encoding (checksum and structure checked as
// by Restore) and stores its key here, replacing any value it has, with
// the signal a new value gives blocked readers. It returns the key.
func (e *Engine) RestoreKey(data []byte) (string, error) {
	one, err := Restore(bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	if len(one.keys) != 1 {
		return "", fmt.Errorf("%w: %d keys in a one-key encoding", ErrBadSnapshot, len(one.keys))
	}
	for k, v := range one.keys {
		e.setKey(k, v)
		return k, nil
	}
	panic("unreachable")
}

// KeySize estimates the bytes key holds (MEMORY USAGE's estimate), 0 if it
// does not exist: what a slot move sizes its batches by.
func (e *Engine) KeySize(key string) int64 {
	v, ok := e.keys[key]
	if !ok {
		return 0
	}
	return int64(len(key)+mapEntryOverhead) + v.memoryUsage(memorySamplesDefault)
}

// SlotUsage is what one hash slot holds: its key count and an estimate of
// their bytes (MEMORY USAGE's, 5 samples per stream).
type SlotUsage struct {
	Slot  int
	Keys  int
	Bytes int64
}

// SlotsUsage reports every slot that holds a key, in slot order: what the
// shard policy spreads slots by (key count and bytes).
func (e *Engine) SlotsUsage() []SlotUsage {
	out := make([]SlotUsage, 0, len(e.slotKeys))
	for sl, keys := range e.slotKeys {
		u := SlotUsage{Slot: int(sl), Keys: len(keys)}
		for k := range keys {
			if v := e.keys[k]; v != nil {
				u.Bytes += int64(len(k)+mapEntryOverhead) + v.memoryUsage(5)
			}
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b SlotUsage) int { return a.Slot - b.Slot })
	return out
}
