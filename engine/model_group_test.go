package engine

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkGroupInvariants verifies the structural invariants of every group of
// s: each NACK is in exactly one consumer PEL (its owner's) and in the group
// PEL; consumer PEL sizes add up to the group PEL size; delivery counts are
// >= 1 (no RETRYCOUNT 0 is used by the model test); consumers are sorted and
// unique; groups are sorted and unique.
func checkGroupInvariants(t *testing.T, s *Stream, ctx string) {
	t.Helper()
	for i, g := range s.Groups {
		if i > 0 && s.Groups[i-1].Name >= g.Name {
			t.Fatalf("%s: groups out of order %q %q", ctx, s.Groups[i-1].Name, g.Name)
		}
		total := 0
		for j, c := range g.Consumers {
			if j > 0 && g.Consumers[j-1].Name >= c.Name {
				t.Fatalf("%s: consumers out of order", ctx)
			}
			total += c.PEL.Len()
			c.PEL.Ascend(MinID, MaxID, func(nk *NACK) bool {
				if nk.Consumer != c {
					t.Fatalf("%s: NACK %v in %s's PEL owned by %v", ctx, nk.ID, c.Name, nk.Consumer)
				}
				if gn, ok := g.PEL.Get(nk.ID); !ok || gn != nk {
					t.Fatalf("%s: NACK %v of %s missing from group PEL", ctx, nk.ID, c.Name)
				}
				return true
			})
		}
		owned := 0
		g.PEL.Ascend(MinID, MaxID, func(nk *NACK) bool {
			if nk.Consumer == nil { // released by XNACK: in the NACK zone
				if nk.nackSeq == 0 || nk.nackSeq > g.nackSeq || nk.DeliveryTime != 0 {
					t.Fatalf("%s: owner-less NACK %v: seq %d (group %d), delivery time %d",
						ctx, nk.ID, nk.nackSeq, g.nackSeq, nk.DeliveryTime)
				}
				return true
			}
			owned++
			if nk.nackSeq != 0 {
				t.Fatalf("%s: owned NACK %v keeps NACK-zone seq %d", ctx, nk.ID, nk.nackSeq)
			}
			if g.findConsumer([]byte(nk.Consumer.Name)) != nk.Consumer {
				t.Fatalf("%s: NACK %v has unknown owner", ctx, nk.ID)
			}
			if cn, ok := nk.Consumer.PEL.Get(nk.ID); !ok || cn != nk {
				t.Fatalf("%s: NACK %v missing from owner PEL", ctx, nk.ID)
			}
			if nk.DeliveryCount < 1 {
				t.Fatalf("%s: NACK %v delivery count %d", ctx, nk.ID, nk.DeliveryCount)
			}
			return true
		})
		if total != owned {
			t.Fatalf("%s: consumer PELs hold %d, group PEL %d owned", ctx, total, owned)
		}
	}
}

// refNACK and refGroup are the reference model: plain maps and sorted
// scans, deliberately simple.
type refNACK struct {
	owner string // "" once released by XNACK
	time  int64
	count uint64
	seq   uint64 // NACK-zone order while owner is ""
}

type refGroup struct {
	last      ID
	setByUser bool // last-delivered-id set explicitly (SETID), may exceed the stream
	pel       map[ID]*refNACK
	consumers map[string]bool
	seq       uint64 // last NACK-zone seq handed out
}

type refModel struct {
	entries []ID // live entries, sorted
	lastID  ID
	groups  map[string]*refGroup
}

// replaySeed is a model test's seed: env's value when set (to replay a
// run), else the clock; logged either way.
func replaySeed(t *testing.T, env string) int64 {
	t.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv(env); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (replay with %s=%d)", seed, env, seed)
	return seed
}

// pickID returns a live entry's ID three times in four, else an ID below
// nextMs+2 that may or may not exist.
func (m *refModel) pickID(rng *rand.Rand, nextMs uint64) ID {
	if len(m.entries) > 0 && rng.Intn(4) > 0 {
		return m.entries[rng.Intn(len(m.entries))]
	}
	return ID{uint64(rng.Int63n(int64(nextMs) + 2)), 0}
}

// deliverNew models XREADGROUP '>' by cname: up to count (0 = all) entries
// after g's last-delivered-id, added to the PEL unless noack.
func (m *refModel) deliverNew(g *refGroup, cname string, count int, noack bool, now int64) {
	n := 0
	for _, id := range m.entries {
		if !g.last.Less(id) {
			continue
		}
		if count > 0 && n == count {
			break
		}
		n++
		g.last = id
		g.setByUser = false
		if !noack {
			g.pel[id] = &refNACK{owner: cname, time: now, count: 1}
		}
	}
}

func (m *refModel) live(id ID) bool {
	i := sort.Search(len(m.entries), func(i int) bool { return !m.entries[i].Less(id) })
	return i < len(m.entries) && m.entries[i] == id
}

func (m *refModel) sortedPEL(g *refGroup, owner string) []ID {
	var ids []ID
	for id, nk := range g.pel {
		if owner == "" || nk.owner == owner {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].Less(ids[j]) })
	return ids
}

// TestGroupModel runs random group commands against the engine and a
// reference model, comparing replies' visible effects (PEL contents, owners,
// delivery counts and times, last-delivered-id) and checking invariants
// after every operation. GROUP_MODEL_SEED replays a seed.
func TestGroupModel(t *testing.T) {
	seed := replaySeed(t, "GROUP_MODEL_SEED")
	for round := 0; round < 4; round++ {
		runGroupModel(t, seed+int64(round), 1500)
	}
}

func runGroupModel(t *testing.T, seed int64, ops int) {
	rng := rand.New(rand.NewSource(seed))
	e := New(DefaultConfig())
	m := &refModel{groups: map[string]*refGroup{}}
	groups := []string{"g1", "g2"}
	consumers := []string{"a", "b", "c"}
	now := int64(1000)
	nextMs := uint64(1)
	fail := func(op int, format string, args ...any) {
		t.Fatalf("seed %d op %d: %s", seed, op, fmt.Sprintf(format, args...))
	}
	for op := 0; op < ops; op++ {
		now += int64(rng.Intn(50))
		gname := groups[rng.Intn(len(groups))]
		cname := consumers[rng.Intn(len(consumers))]
		g := m.groups[gname]
		var cmd string
		switch k := rng.Intn(10); {
		case k <= 2: // add entries
			id := ID{nextMs, 0}
			nextMs++
			cmd = "XADD s " + id.String() + " f v"
			m.entries = append(m.entries, id)
			m.lastID = id
		case k == 3 && rng.Intn(3) == 0: // trim
			keep := rng.Intn(8)
			cmd = fmt.Sprintf("XTRIM s MAXLEN %d", keep)
			if len(m.entries) > keep {
				m.entries = append([]ID(nil), m.entries[len(m.entries)-keep:]...)
			}
		case k == 3: // delete an entry (XDEL)
			if len(m.entries) == 0 {
				continue
			}
			i := rng.Intn(len(m.entries))
			cmd = "XDEL s " + m.entries[i].String()
			m.entries = append(m.entries[:i:i], m.entries[i+1:]...)
		case k == 4 && g == nil:
			if _, ok := e.keys["s"]; !ok {
				continue
			}
			cmd = "XGROUP CREATE s " + gname + " 0"
			m.groups[gname] = &refGroup{pel: map[ID]*refNACK{}, consumers: map[string]bool{}}
		case g == nil:
			continue
		case k == 4: // read new entries
			count := rng.Intn(4)
			noack := rng.Intn(5) == 0
			cmd = fmt.Sprintf("XREADGROUP GROUP %s %s COUNT %d", gname, cname, count)
			if noack {
				cmd += " NOACK"
			}
			cmd += " STREAMS s >"
			g.consumers[cname] = true
			m.deliverNew(g, cname, count, noack, now)
		case k == 5: // history read
			cmd = fmt.Sprintf("XREADGROUP GROUP %s %s STREAMS s 0", gname, cname)
			g.consumers[cname] = true
			for _, id := range m.sortedPEL(g, cname) {
				if m.live(id) {
					g.pel[id].time = now
					g.pel[id].count++
				}
			}
		case k == 6: // ack
			id := m.pickID(rng, nextMs)
			cmd = "XACK s " + gname + " " + id.String()
			delete(g.pel, id)
		case k == 7: // claim
			id := m.pickID(rng, nextMs)
			minIdle := []int64{0, 30, 100}[rng.Intn(3)]
			cmd = fmt.Sprintf("XCLAIM s %s %s %d %s JUSTID", gname, cname, minIdle, id)
			g.consumers[cname] = true
			if nk, ok := g.pel[id]; ok {
				if !m.live(id) {
					delete(g.pel, id)
				} else if minIdle == 0 || now-nk.time >= minIdle {
					nk.owner, nk.time = cname, now
				}
			}
		case k == 8: // autoclaim
			cmd = fmt.Sprintf("XAUTOCLAIM s %s %s 20 0 COUNT 3", gname, cname)
			g.consumers[cname] = true
			count, attempts := 3, 30
			for _, id := range m.sortedPEL(g, "") {
				if attempts == 0 || count == 0 {
					break
				}
				attempts--
				nk := g.pel[id]
				if !m.live(id) {
					delete(g.pel, id)
					count--
					continue
				}
				if now-nk.time < 20 {
					continue
				}
				nk.owner, nk.time = cname, now
				nk.count++
				count--
			}
		case k == 9: // setid or delconsumer
			if rng.Intn(2) == 0 {
				id := m.pickID(rng, nextMs)
				cmd = "XGROUP SETID s " + gname + " " + id.String()
				g.last = id
				g.setByUser = true
			} else {
				cmd = "XGROUP DELCONSUMER s " + gname + " " + cname
				if g.consumers[cname] {
					delete(g.consumers, cname)
					for id, nk := range g.pel {
						if nk.owner == cname {
							delete(g.pel, id)
						}
					}
				}
			}
		}
		if r := run(e, now, cmd); len(r) > 0 && r[0] == '-' {
			fail(op, "%s: %s", cmd, r)
		}
		v, ok := e.keys["s"]
		if !ok {
			continue // XTRIM/XDEL before the first XADD
		}
		s := v.Stream
		checkGroupInvariants(t, s, fmt.Sprintf("seed %d op %d %q", seed, op, cmd))
		for name, rg := range m.groups {
			eg := s.lookupGroup([]byte(name))
			if eg == nil {
				fail(op, "group %s missing", name)
			}
			if eg.LastID != rg.last {
				fail(op, "%s: group %s last-delivered-id %v, model %v", cmd, name, eg.LastID, rg.last)
			}
			if !rg.setByUser && m.lastID.Less(eg.LastID) {
				fail(op, "group %s last-delivered-id %v beyond stream %v", name, eg.LastID, m.lastID)
			}
			if eg.PEL.Len() != len(rg.pel) {
				fail(op, "%s: group %s PEL %d, model %d", cmd, name, eg.PEL.Len(), len(rg.pel))
			}
			for id, rn := range rg.pel {
				nk, ok := eg.PEL.Get(id)
				if !ok || nk.Consumer.Name != rn.owner || nk.DeliveryTime != rn.time || nk.DeliveryCount != rn.count {
					fail(op, "%s: group %s NACK %v = %+v, model %+v", cmd, name, id, nk, rn)
				}
			}
			names := make([]string, 0, len(rg.consumers))
			for c := range rg.consumers {
				names = append(names, c)
			}
			sort.Strings(names)
			if len(names) != len(eg.Consumers) {
				fail(op, "%s: group %s consumers %d, model %v", cmd, name, len(eg.Consumers), names)
			}
			for i, c := range eg.Consumers {
				if c.Name != names[i] {
					fail(op, "group %s consumer %d = %s, model %s", name, i, c.Name, names[i])
				}
			}
		}
	}
}

// FuzzGroupExec runs fuzzed command lines (one command per line, arguments
// separated by spaces) on a stream with a group: no command may panic, and
// the group invariants must hold after each one.
func FuzzGroupExec(f *testing.F) {
	for _, lines := range groupFuzzSeeds {
		f.Add(lines)
	}
	f.Fuzz(func(t *testing.T, in string) {
		e := newTestEngine(5)
		run(e, 1, "XGROUP CREATE s g 0")
		for i, line := range strings.Split(in, "\n") {
			if i == 50 {
				break
			}
			f := strings.Fields(line)
			if len(f) == 0 || !isGroupFuzzCommand(f[0]) {
				continue
			}
			argv := make([][]byte, len(f))
			for j, x := range f {
				argv[j] = []byte(x)
			}
			e.Exec(int64(1000+i), argv)
			if v, ok := e.keys["s"]; ok && v.Kind == KindStream {
				checkGroupInvariantsLoose(t, v.Stream)
			}
		}
	})
}

// isGroupFuzzCommand keeps the fuzzer on stream and group commands.
func isGroupFuzzCommand(name string) bool {
	switch strings.ToUpper(name) {
	case "XGROUP", "XREADGROUP", "XACK", "XPENDING", "XCLAIM", "XAUTOCLAIM", "XINFO", "XADD", "XDEL", "XTRIM", "XSETID":
		return true
	}
	return false
}

// checkGroupInvariantsLoose is checkGroupInvariants without the delivery
// count rule (XCLAIM RETRYCOUNT 0 may set it to 0).
func checkGroupInvariantsLoose(t *testing.T, s *Stream) {
	t.Helper()
	for _, g := range s.Groups {
		total := 0
		for _, c := range g.Consumers {
			total += c.PEL.Len()
			c.PEL.Ascend(MinID, MaxID, func(nk *NACK) bool {
				if gn, ok := g.PEL.Get(nk.ID); !ok || gn != nk || nk.Consumer != c {
					t.Fatalf("NACK %v of %s inconsistent", nk.ID, c.Name)
				}
				return true
			})
		}
		g.PEL.Ascend(MinID, MaxID, func(nk *NACK) bool {
			if nk.Consumer == nil {
				total++ // released by XNACK
			}
			return true
		})
		if total != g.PEL.Len() {
			t.Fatalf("consumer PELs %d, group PEL %d", total, g.PEL.Len())
		}
	}
}

var groupFuzzSeeds = []string{
	"XREADGROUP GROUP g a COUNT 2 STREAMS s >\nXCLAIM s g b 0 1-1 2-1 FORCE RETRYCOUNT 0\nXACK s g 1-1",
	"XGROUP SETID s g 0\nXREADGROUP GROUP g b STREAMS s >\nXDEL s 3-1\nXAUTOCLAIM s g c 0 0 COUNT 2",
	"XREADGROUP GROUP g a STREAMS s >\nXGROUP DELCONSUMER s g a\nXPENDING s g IDLE 1 - + 10 a",
	"XINFO STREAM s FULL COUNT 1\nXGROUP CREATE s g2 $ MKSTREAM ENTRIESREAD 3\nXTRIM s MAXLEN 1",
}
