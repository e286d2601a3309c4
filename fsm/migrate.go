package fsm

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/slots"
)

// Slot moves, as this shard's log sees them. A slot range moves from shard
// A to shard B (cluster/migrate.go drives it); every step that changes who
// may write a key is a command in A's or B's log, so it happens at one log
// position on every replica, and the decision to serve or redirect a
// command is taken in Apply, at its own log position: a key is never
// writable on both shards.
//
// Per slot a shard is in one of these modes (the default, owned, is what a
// shard is for the slots the slot map routes to it):
//
//	owned      serve every command
//	importing  B, from IMPORTING until IMPORTED: serve only commands sent
//	           with ASKING (the client followed A's -ASK); MOVED to A for
//	           others. A multi-key command missing some keys: TRYAGAIN.
//	migrating  A, from MIGRATING (the fence) until MIGRATED: serve keys that
//	           are here; a key not here gets -ASK B (after the fence no key
//	           is created here); a key being exported (in transit) gets
//	           TRYAGAIN; some keys here and some not: TRYAGAIN (Redis's rules).
//	migrated   A, every key has left: -ASK B for everything.
//	gone       A, after DONE (the controller flipped the slot map): -MOVED B.
//
// A key in transit is frozen: EXPORT marks it (no command may touch it from
// that position), the driver copies its snapshot encoding to B, and
// EXPORTED deletes it here once B has it. B stores a key sent whole with
// PUT, or a large one in CHUNKs staged in this state (replicated, and in
// snapshots) and installed atomically by COMMIT. A key already on B is
// never overwritten: after a restart the driver may send a key again, and
// from the moment B has it only B serves it.
//
// The commands (RSSLOTS …) come only from cluster's driver; resp never
// proposes them (they are not in the command table). A unit whose first
// command is ASKING was sent with ASKING; the marker replies OK.
//
//	RSSLOTS IMPORTING move first last from     B: importing
//	RSSLOTS MIGRATING move first last to       A: migrating (the fence)
//	RSSLOTS EXPORT move key...                 A: mark keys in transit; replies those marked
//	RSSLOTS EXPORTED move key...               A: delete keys in transit; replies the count
//	RSSLOTS MIGRATED move first last           A: migrated, if no key is left
//	RSSLOTS DONE move first last               A: gone
//	RSSLOTS PUT move key data [key data ...]   B: store whole keys; per key "ok" or "exists"
//	RSSLOTS CHUNK move key total offset data   B: stage part of a key; replies the bytes staged
//	RSSLOTS COMMIT move key total crc          B: install a staged key; "ok" or "exists"
//	RSSLOTS IMPORTED move first last           B: owned
//
// Every command is idempotent for the same move, so a driver that lost its
// place (a new leader on either side) resumes by repeating what it is not
// sure happened.

// Slot modes (migration.mode); slotOwned is the zero value.
const (
	slotOwned uint8 = iota
	slotImporting
	slotMigrating
	slotMigrated
	slotGone
)

var slotModeNames = [...]string{"owned", "importing", "migrating", "migrated", "gone"}

// slotInfo is the move a slot not simply owned belongs to, and the other
// shard of that move.
type slotInfo struct {
	move uint64
	peer int
}

type stageKey struct {
	move uint64
	key  string
}

// migration is a shard's slot-move state. nil until the first RSSLOTS
// command: a shard that never took part in a move pays nothing per command.
type migration struct {
	mode [slots.Count]uint8
	info map[uint16]slotInfo
	// transit holds the keys being exported (A), by move.
	transit map[string]uint64
	// staged holds the parts of large keys received so far (B).
	staged map[stageKey][]byte
	// imported lists the moves whose import completed here (B), so that a
	// late IMPORTING of the same move changes nothing.
	imported map[uint64]bool
	// special counts slots not owned: while zero, commands are not checked.
	special int
}

func newMigration() *migration {
	return &migration{info: map[uint16]slotInfo{}, transit: map[string]uint64{},
		staged: map[stageKey][]byte{}, imported: map[uint64]bool{}}
}

func (mg *migration) set(slot int, mode uint8, move uint64, peer int) {
	if (mg.mode[slot] == slotOwned) != (mode == slotOwned) {
		if mode == slotOwned {
			mg.special--
		} else {
			mg.special++
		}
	}
	mg.mode[slot] = mode
	if mode == slotOwned {
		delete(mg.info, uint16(slot))
	} else {
		mg.info[uint16(slot)] = slotInfo{move: move, peer: peer}
	}
}

// RedirectKind says where a command the FSM did not run must go.
type RedirectKind uint8

const (
	// RedirectAsk: the key is (or will be created) on the target shard of
	// a move in flight; the client asks there once, with ASKING.
	RedirectAsk RedirectKind = iota + 1
	// RedirectMoved: the slot belongs to another shard.
	RedirectMoved
	// RedirectTryAgain: a key is being moved, or a multi-key command has
	// keys on both sides of a move; retry shortly.
	RedirectTryAgain
)

// Redirect is the FSM's answer to a command it did not run because, at
// that log position, its keys are not served here. Apply returns it as an
// error reply (Reply) that resp turns into -ASK, -MOVED or -TRYAGAIN with
// the address of Shard's leader (AsRedirect): the FSM is deterministic and
// knows shards, not addresses.
type Redirect struct {
	Kind  RedirectKind
	Slot  int
	Shard int // the shard to ask (Ask, Moved); -1 for TryAgain
	// Multi marks a TryAgain for a multi-key command split by a move.
	Multi bool
}

// redirectPrefix starts the message of every redirect reply. No engine
// error starts so: only the FSM makes these, and resp rewrites every one.
const redirectPrefix = "RSREDIRECT "

// Reply is r as a command reply.
func (r Redirect) Reply() *engine.Error {
	return &engine.Error{Msg: fmt.Sprintf("%s%d %d %d %t", redirectPrefix, r.Kind, r.Slot, r.Shard, r.Multi)}
}

// AsRedirect reports whether reply is a redirect the FSM (or a checked read)
// answered, and which.
func AsRedirect(reply engine.Reply) (Redirect, bool) {
	e, ok := reply.(*engine.Error)
	if !ok || len(e.Msg) < len(redirectPrefix) || e.Msg[:len(redirectPrefix)] != redirectPrefix {
		return Redirect{}, false
	}
	var r Redirect
	if _, err := fmt.Sscanf(e.Msg[len(redirectPrefix):], "%d %d %d %t", &r.Kind, &r.Slot, &r.Shard, &r.Multi); err != nil {
		return Redirect{}, false
	}
	return r, true
}

var askingMarker = []byte("ASKING")

// isAsking reports whether argv is the ASKING marker of a unit.
func isAsking(argv [][]byte) bool { return len(argv) == 1 && engine.EqFold(argv[0], "ASKING") }

// AskingUnit returns unit marked as sent with ASKING (its first command is
// the marker, whose reply is OK and which the caller drops).
func AskingUnit(unit Unit) Unit {
	return append(Unit{{askingMarker}}, unit...)
}

// check decides whether one command may run here: nil, or where it must
// go. Redis Cluster's rules (getNodeByQuery) at this log position.
func (mg *migration) check(e *engine.Engine, keysOf func([][]byte) []int, argv [][]byte, asking bool) *Redirect {
	if mg == nil || mg.special == 0 || keysOf == nil {
		return nil
	}
	idx := keysOf(argv)
	if len(idx) == 0 {
		return nil
	}
	var (
		missing, existing    int
		migrating, importing bool
		slot, peer           = -1, -1
		first                []byte
		multi                bool
	)
	for _, i := range idx {
		key := argv[i]
		if first == nil {
			first = key
		} else if !bytes.Equal(first, key) {
			multi = true
		}
		sl := slots.Of(key)
		mode := mg.mode[sl]
		in := mg.info[uint16(sl)]
		switch mode {
		case slotOwned:
			continue
		case slotGone:
			return &Redirect{Kind: RedirectMoved, Slot: sl, Shard: in.peer}
		case slotMigrated:
			return &Redirect{Kind: RedirectAsk, Slot: sl, Shard: in.peer}
		case slotImporting:
			if !asking {
				return &Redirect{Kind: RedirectMoved, Slot: sl, Shard: in.peer}
			}
			importing = true
		case slotMigrating:
			if _, moving := mg.transit[string(key)]; moving {
				return &Redirect{Kind: RedirectTryAgain, Slot: sl, Shard: -1}
			}
			migrating = true
		}
		slot, peer = sl, in.peer
		if e.Exists(key) {
			existing++
		} else {
			missing++
		}
	}
	switch {
	case migrating && missing > 0 && existing > 0:
		return &Redirect{Kind: RedirectTryAgain, Slot: slot, Shard: -1, Multi: true}
	case migrating && missing > 0:
		return &Redirect{Kind: RedirectAsk, Slot: slot, Shard: peer}
	case importing && multi && missing > 0:
		return &Redirect{Kind: RedirectTryAgain, Slot: slot, Shard: -1, Multi: true}
	}
	return nil
}

// checkUnit decides a unit as a whole: a unit is applied entirely or not at
// all (an EXEC must not half-apply because one of its keys moved). It
// returns nil, or one reply per command: the redirect of each command that
// must go elsewhere, TRYAGAIN for the others. The ASKING marker, if any, is
// unit[0] and is answered OK.
func (m *machine) checkUnit(u Unit) []engine.Reply {
	mg := m.mig
	if mg == nil || mg.special == 0 {
		return nil
	}
	asking := len(u) > 0 && isAsking(u[0])
	var out []engine.Reply
	for j, argv := range u {
		if j == 0 && asking {
			continue
		}
		if rd := mg.check(m.eng, m.keysOf, argv, asking); rd != nil {
			if out == nil {
				out = make([]engine.Reply, len(u))
			}
			out[j] = rd.Reply()
		}
	}
	if out == nil {
		return nil
	}
	for j := range out {
		switch {
		case j == 0 && asking:
			out[j] = engine.OK
		case out[j] == nil:
			out[j] = Redirect{Kind: RedirectTryAgain, Slot: -1, Shard: -1}.Reply()
		}
	}
	return out
}

// Checker decides, inside a read (Shard.ReadChecked), whether a command
// may be served here at the state the read sees: nil, or the redirect
// reply (AsRedirect).
type Checker func(argv [][]byte, asking bool) engine.Reply

// checker is m's Checker; m.mu must be held (read) while it is used.
func (m *machine) checker() Checker {
	return func(argv [][]byte, asking bool) engine.Reply {
		if rd := m.mig.check(m.eng, m.keysOf, argv, asking); rd != nil {
			return rd.Reply()
		}
		return nil
	}
}

// slotLogCommand runs argv if it is a slot-move command: a unit's ASKING
// marker (replies OK) or RSSLOTS. m.mu is held. Other commands cost one
// length comparison: their names are not 6 or 7 bytes long, or not these.
func (m *machine) slotLogCommand(argv [][]byte) (engine.Reply, bool) {
	if len(argv) == 0 || len(argv[0]) != len("ASKING") && len(argv[0]) != len("RSSLOTS") {
		return nil, false
	}
	switch {
	case isAsking(argv):
		return engine.OK, true
	case len(argv) >= 2 && engine.EqFold(argv[0], "RSSLOTS"):
		return m.slotCommand(argv[1:]), true
	}
	return nil, false
}

// slotCommand runs an RSSLOTS command. m.mu is held.
func (m *machine) slotCommand(args [][]byte) engine.Reply {
	if len(args) < 2 {
		return engine.Errorf("ERR RSSLOTS: missing arguments")
	}
	sub := engine.Lower(args[0])
	move, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil || move == 0 {
		return engine.Errorf("ERR RSSLOTS %s: bad move id %q", sub, args[1])
	}
	rest := args[2:]
	if m.mig == nil {
		m.mig = newMigration()
	}
	switch sub {
	case "importing", "migrating", "migrated", "done", "imported":
		r, peer, er := rangeArgs(sub, rest)
		if er != nil {
			return er
		}
		return m.slotRange(sub, move, r, peer)
	case "export":
		return m.export(move, rest)
	case "exported":
		return m.exported(move, rest)
	case "put":
		return m.put(move, rest)
	case "chunk":
		return m.chunk(move, rest)
	case "commit":
		return m.commit(move, rest)
	}
	return engine.Errorf("ERR RSSLOTS: unknown subcommand %q", sub)
}

// rangeArgs parses "first last [peer]" (peer for IMPORTING and MIGRATING).
func rangeArgs(sub string, args [][]byte) (slots.Range, int, *engine.Error) {
	want := 2
	if sub == "importing" || sub == "migrating" {
		want = 3
	}
	if len(args) != want {
		return slots.Range{}, 0, engine.Errorf("ERR RSSLOTS %s: wrong number of arguments", sub)
	}
	n := make([]int, want)
	for i, a := range args {
		v, err := strconv.Atoi(string(a))
		if err != nil || v < 0 {
			return slots.Range{}, 0, engine.Errorf("ERR RSSLOTS %s: bad number %q", sub, a)
		}
		n[i] = v
	}
	r := slots.Range{First: n[0], Last: n[1]}
	if r.Last < r.First || r.Last >= slots.Count {
		return slots.Range{}, 0, engine.Errorf("ERR RSSLOTS %s: bad slot range %d-%d", sub, r.First, r.Last)
	}
	peer := -1
	if want == 3 {
		peer = n[2]
	}
	return r, peer, nil
}

// slotRange changes the mode of every slot of r for move; all or nothing.
// Repeating a step already taken for the same move replies OK; a slot in
// another move's state is an error.
func (m *machine) slotRange(sub string, move uint64, r slots.Range, peer int) engine.Reply {
	mg := m.mig
	// Check every slot first, then change them all.
	for s := r.First; s <= r.Last; s++ {
		mode, in := mg.mode[s], mg.info[uint16(s)]
		same := mode != slotOwned && in.move == move
		ok := false
		switch sub {
		case "importing":
			ok = mode == slotOwned || mode == slotGone || (mode == slotImporting && same) || mg.imported[move]
		case "migrating":
			ok = mode == slotOwned || (same && mode != slotImporting)
			if ok && m.keysOf == nil {
				return engine.Errorf("ERR RSSLOTS migrating: this replica cannot tell a command's keys")
			}
		case "migrated":
			ok = same && (mode == slotMigrating || mode == slotMigrated || mode == slotGone)
			if ok && mode == slotMigrating && m.eng.CountKeysInSlot(s) > 0 {
				return engine.Errorf("ERR RSSLOTS migrated: slot %d still has %d keys", s, m.eng.CountKeysInSlot(s))
			}
		case "done":
			ok = same && (mode == slotMigrated || mode == slotGone)
		case "imported":
			ok = (same && mode == slotImporting) || mg.imported[move]
		}
		if !ok {
			return engine.Errorf("ERR RSSLOTS %s move %d: slot %d is %s (move %d)", sub, move, s, slotModeNames[mode], in.move)
		}
	}
	if sub == "migrated" {
		for k, mv := range mg.transit {
			if mv == move {
				return engine.Errorf("ERR RSSLOTS migrated: key %q is still in transit", k)
			}
		}
	}
	for s := r.First; s <= r.Last; s++ {
		mode, in := mg.mode[s], mg.info[uint16(s)]
		switch sub {
		case "importing":
			if !mg.imported[move] {
				mg.set(s, slotImporting, move, peer)
			}
		case "migrating":
			if mode == slotOwned {
				mg.set(s, slotMigrating, move, peer)
			}
		case "migrated":
			if mode == slotMigrating {
				mg.set(s, slotMigrated, move, in.peer)
			}
		case "done":
			mg.set(s, slotGone, move, in.peer)
		case "imported":
			if mode == slotImporting && in.move == move {
				mg.set(s, slotOwned, 0, 0)
			}
		}
	}
	if sub == "imported" {
		mg.imported[move] = true
		for k := range mg.staged {
			if k.move == move {
				delete(mg.staged, k)
			}
		}
	}
	return engine.OK
}

// slotOf returns key's slot mode and info.
func (mg *migration) slotOf(key []byte) (uint8, slotInfo) {
	s := slots.Of(key)
	return mg.mode[s], mg.info[uint16(s)]
}

// export marks the given keys of move's migrating slots in transit (those
// that exist); it replies the keys in transit among them.
func (m *machine) export(move uint64, keys [][]byte) engine.Reply {
	mg := m.mig
	out := engine.Array{}
	for _, k := range keys {
		mode, in := mg.slotOf(k)
		if mode != slotMigrating || in.move != move || !m.eng.Exists(k) {
			continue
		}
		mg.transit[string(k)] = move
		out = append(out, engine.BulkString(slices.Clone(k)))
	}
	return out
}

// exported deletes the given keys of move that are in transit (B has
// them); it replies how many.
func (m *machine) exported(move uint64, keys [][]byte) engine.Reply {
	mg := m.mig
	n := 0
	for _, k := range keys {
		if mv, ok := mg.transit[string(k)]; !ok || mv != move {
			continue
		}
		delete(mg.transit, string(k))
		m.eng.Exec(0, [][]byte{[]byte("DEL"), k}) // signals blocked readers: they are redirected
		n++
	}
	return engine.Integer(n)
}

// importable checks that key belongs to a slot importing for move.
func (mg *migration) importable(move uint64, key []byte) *engine.Error {
	mode, in := mg.slotOf(key)
	if mode != slotImporting || in.move != move {
		return engine.Errorf("ERR RSSLOTS: slot %d of key %q is not importing move %d", slots.Of(key), key, move)
	}
	return nil
}

// put stores whole keys; a key already here is left as it is ("exists").
func (m *machine) put(move uint64, args [][]byte) engine.Reply {
	if len(args) == 0 || len(args)%2 != 0 {
		return engine.Errorf("ERR RSSLOTS put: wrong number of arguments")
	}
	out := make(engine.Array, 0, len(args)/2)
	for i := 0; i < len(args); i += 2 {
		out = append(out, m.install(move, args[i], args[i+1]))
	}
	return out
}

// install restores one key's encoding unless the key exists here.
func (m *machine) install(move uint64, key, data []byte) engine.Reply {
	if m.eng.Exists(key) || m.mig.imported[move] {
		return engine.SimpleString("exists")
	}
	if er := m.mig.importable(move, key); er != nil {
		return er
	}
	got, err := m.eng.RestoreKey(data)
	if err != nil {
		return engine.Errorf("ERR RSSLOTS: key %q: %v", key, err)
	}
	if got != string(key) {
		// Cannot happen with our driver; undo rather than keep a stray key.
		m.eng.Exec(0, [][]byte{[]byte("DEL"), []byte(got)})
		return engine.Errorf("ERR RSSLOTS: encoding of %q holds key %q", key, got)
	}
	return engine.SimpleString("ok")
}

// chunk stages bytes [offset, offset+len(data)) of a key's encoding of
// total bytes. A chunk at the staged length appends; at 0 it starts over;
// anything else is refused with the staged length, where the driver
// resumes. It replies the bytes staged.
func (m *machine) chunk(move uint64, args [][]byte) engine.Reply {
	if len(args) != 4 {
		return engine.Errorf("ERR RSSLOTS chunk: wrong number of arguments")
	}
	key := args[0]
	total, err1 := strconv.Atoi(string(args[1]))
	off, err2 := strconv.Atoi(string(args[2]))
	if err1 != nil || err2 != nil || total < 0 || off < 0 || off+len(args[3]) > total {
		return engine.Errorf("ERR RSSLOTS chunk: bad offsets")
	}
	if m.eng.Exists(key) || m.mig.imported[move] {
		return engine.Integer(total)
	}
	if er := m.mig.importable(move, key); er != nil {
		return er
	}
	sk := stageKey{move, string(key)}
	have := m.mig.staged[sk]
	switch off {
	case len(have):
	case 0:
		have = nil
	default:
		return engine.Integer(len(have))
	}
	have = append(have, args[3]...)
	m.mig.staged[sk] = have
	return engine.Integer(len(have))
}

// commit installs a key staged whole (its CRC-32C matching), unless it
// exists here.
func (m *machine) commit(move uint64, args [][]byte) engine.Reply {
	if len(args) != 3 {
		return engine.Errorf("ERR RSSLOTS commit: wrong number of arguments")
	}
	key := args[0]
	if m.eng.Exists(key) || m.mig.imported[move] {
		return engine.SimpleString("exists")
	}
	sk := stageKey{move, string(key)}
	data := m.mig.staged[sk]
	total, err1 := strconv.Atoi(string(args[1]))
	crc, err2 := strconv.ParseUint(string(args[2]), 10, 32)
	if err1 != nil || err2 != nil || len(data) != total || crc32.Checksum(data, castagnoli) != uint32(crc) {
		delete(m.mig.staged, sk)
		return engine.Errorf("ERR RSSLOTS commit: key %q staged %d bytes, not the %d sent (start over)", key, len(data), total)
	}
	delete(m.mig.staged, sk)
	return m.install(move, key, data)
}

// SlotState is one slot's mode in a shard's log, for the driver and
// RAFTSTREAM SLOTS STATUS: owned, importing, migrating, migrated or gone,
// with the move and the other shard.
type SlotState struct {
	Mode string
	Move uint64
	Peer int
}

// SlotStates reports the mode of every slot of r (read under the lock of
// a read, e.g. inside ReadChecked, or on the apply goroutine).
func (m *machine) slotStates(r slots.Range) []SlotState {
	out := make([]SlotState, 0, r.Len())
	for s := r.First; s <= r.Last; s++ {
		st := SlotState{Mode: "owned"}
		if m.mig != nil {
			in := m.mig.info[uint16(s)]
			st = SlotState{Mode: slotModeNames[m.mig.mode[s]], Move: in.move, Peer: in.peer}
		}
		out = append(out, st)
	}
	return out
}

// TransitKeys lists the keys of move in transit, sorted.
func (m *machine) transitKeys(move uint64) []string {
	if m.mig == nil {
		return nil
	}
	var out []string
	for k, mv := range m.mig.transit {
		if mv == move {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// clone copies mg for a snapshot (staged bytes are shared: they are only
// ever appended to beyond what the copy sees, or replaced).
func (mg *migration) clone() *migration {
	if mg == nil {
		return nil
	}
	c := &migration{mode: mg.mode, special: mg.special, info: make(map[uint16]slotInfo, len(mg.info)),
		transit: make(map[string]uint64, len(mg.transit)), staged: make(map[stageKey][]byte, len(mg.staged)),
		imported: make(map[uint64]bool, len(mg.imported))}
	for k, v := range mg.info {
		c.info[k] = v
	}
	for k, v := range mg.transit {
		c.transit[k] = v
	}
	for k, v := range mg.staged {
		c.staged[k] = v[:len(v):len(v)]
	}
	for k, v := range mg.imported {
		c.imported[k] = v
	}
	return c
}

// Snapshot encoding of the slot-move state (snapshot version 2, after the
// header's engine fields), deterministic (sorted), integers uvarint:
//
//	migration = 0                       none
//	          | 1 slots transit staged imported
//	slots     = n {slot mode move peer}             ascending slot, not owned
//	transit   = n {keylen key move}                 ascending key
//	staged    = n {move keylen key datalen data}    ascending (move, key)
//	imported  = n {move}                            ascending
func appendMigration(dst []byte, mg *migration) []byte {
	if mg == nil {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	var ss []int
	for s := range mg.info {
		ss = append(ss, int(s))
	}
	slices.Sort(ss)
	dst = binary.AppendUvarint(dst, uint64(len(ss)))
	for _, s := range ss {
		in := mg.info[uint16(s)]
		dst = binary.AppendUvarint(dst, uint64(s))
		dst = append(dst, mg.mode[s])
		dst = binary.AppendUvarint(dst, in.move)
		dst = binary.AppendUvarint(dst, uint64(in.peer))
	}
	keys := make([]string, 0, len(mg.transit))
	for k := range mg.transit {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	for _, k := range keys {
		dst = appendString(dst, k)
		dst = binary.AppendUvarint(dst, mg.transit[k])
	}
	sks := make([]stageKey, 0, len(mg.staged))
	for k := range mg.staged {
		sks = append(sks, k)
	}
	slices.SortFunc(sks, func(a, b stageKey) int {
		if a.move != b.move {
			return cmp.Compare(a.move, b.move)
		}
		return strings.Compare(a.key, b.key)
	})
	dst = binary.AppendUvarint(dst, uint64(len(sks)))
	for _, k := range sks {
		dst = binary.AppendUvarint(dst, k.move)
		dst = appendString(dst, k.key)
		dst = appendString(dst, string(mg.staged[k]))
	}
	var done []uint64
	for mv := range mg.imported {
		done = append(done, mv)
	}
	slices.Sort(done)
	dst = binary.AppendUvarint(dst, uint64(len(done)))
	for _, mv := range done {
		dst = binary.AppendUvarint(dst, mv)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// readMigration decodes appendMigration's output.
func readMigration(br *bufio.Reader) (*migration, error) {
	present, err := br.ReadByte()
	if err != nil || present > 1 {
		return nil, fmt.Errorf("migration: %v", err)
	}
	if present == 0 {
		return nil, nil
	}
	mg := newMigration()
	uv := func() uint64 {
		v, e := binary.ReadUvarint(br)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	str := func() string {
		n := uv()
		if err != nil || n > 1<<40 {
			if err == nil {
				err = errors.New("string length")
			}
			return ""
		}
		b := make([]byte, n)
		if _, e := io.ReadFull(br, b); e != nil && err == nil {
			err = e
		}
		return string(b)
	}
	for n := uv(); n > 0 && err == nil; n-- {
		s := uv()
		mode, e := br.ReadByte()
		if e != nil || s >= slots.Count || mode == slotOwned || mode > slotGone {
			return nil, fmt.Errorf("migration: slot entry")
		}
		mv, peer := uv(), uv()
		mg.set(int(s), mode, mv, int(peer))
	}
	for n := uv(); n > 0 && err == nil; n-- {
		k := str()
		mg.transit[k] = uv()
	}
	for n := uv(); n > 0 && err == nil; n-- {
		mv := uv()
		k := str()
		mg.staged[stageKey{mv, k}] = []byte(str())
	}
	for n := uv(); n > 0 && err == nil; n-- {
		mg.imported[uv()] = true
	}
	if err != nil {
		return nil, fmt.Errorf("migration: %v", err)
	}
	return mg, nil
}

// ReadChecked is Read for commands: fn also gets a Checker that says, at
// the state fn sees, whether a command's keys are served here (slot
// moves). Same contract as Read.
func (s *Shard) ReadChecked(ctx context.Context, fn func(e *engine.Engine, check Checker)) error {
	return s.Read(ctx, func(e *engine.Engine) { fn(e, s.m.checker()) })
}

// StaleReadChecked is StaleRead with a Checker (READONLY connections).
func (s *Shard) StaleReadChecked(fn func(e *engine.Engine, check Checker)) {
	s.m.view(func(e *engine.Engine) { fn(e, s.m.checker()) })
}

// SlotStates reports this replica's mode of every slot of r (its applied
// state, no read fence).
func (s *Shard) SlotStates(r slots.Range) []SlotState {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	return s.m.slotStates(r)
}

// TransitKeys lists the keys of move this replica has in transit, sorted
// (its applied state, no read fence).
func (s *Shard) TransitKeys(move uint64) []string {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	return s.m.transitKeys(move)
}

// SlotRun is a run of consecutive slots in one mode of one move.
type SlotRun struct {
	First, Last int
	SlotState
}

// SlotRuns lists this replica's slots that are not simply owned, as runs
// in slot order (its applied state).
func (s *Shard) SlotRuns() []SlotRun {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	mg := s.m.mig
	if mg == nil || mg.special == 0 {
		return nil
	}
	var out []SlotRun
	for sl := 0; sl < slots.Count; sl++ {
		mode := mg.mode[sl]
		if mode == slotOwned {
			continue
		}
		in := mg.info[uint16(sl)]
		st := SlotState{Mode: slotModeNames[mode], Move: in.move, Peer: in.peer}
		if k := len(out) - 1; k >= 0 && out[k].Last == sl-1 && out[k].SlotState == st {
			out[k].Last = sl
			continue
		}
		out = append(out, SlotRun{First: sl, Last: sl, SlotState: st})
	}
	return out
}

// Imported reports whether this replica's log has completed the import of
// move (IMPORTED applied).
func (s *Shard) Imported(move uint64) bool {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	return s.m.mig != nil && s.m.mig.imported[move]
}
