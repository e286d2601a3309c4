package engine

import "unsafe"

// MEMORY USAGE: bytes a key takes in this engine, counted from the real
// structures (capacities of the listpacks and slices, struct sizes), with
// Redis's sampling for streams: the first `samples` listpacks are measured
// and their average stands for all nodes but the last, which is measured
// exactly. SAMPLES 0 measures every node.

func init() {
	register("memory", cmdMemory)
}

// memorySamplesDefault is OBJ_COMPUTE_SIZE_DEF_SAMPLES.
const memorySamplesDefault = 5

// Fixed costs, from the Go structures.
const (
	mapEntryOverhead = 8 + 16 + 8 // map slot: tophash + string header + *Value
	valueSize        = int(unsafe.Sizeof(Value{}))
	streamSize       = int(unsafe.Sizeof(Stream{}))
	nodeHeaderSize   = int(unsafe.Sizeof(node{}))
	groupSize        = int(unsafe.Sizeof(Group{}))
	consumerSize     = int(unsafe.Sizeof(Consumer{}))
	nackSize         = int(unsafe.Sizeof(NACK{}))
)

// memoryHelp is Redis 7.0's MEMORY HELP text for the subcommands the
// engine answers.
var memoryHelp = []string{
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
}

func cmdMemory(e *Engine, now int64, argv [][]byte) Reply {
	if len(argv) < 2 {
		return WrongArity("memory")
	}
	if EqFold(argv[1], "HELP") && len(argv) == 2 {
		return HelpReply(argv[0], memoryHelp)
	}
	if !EqFold(argv[1], "USAGE") {
		return Errorf("ERR unknown subcommand '%s'. Try MEMORY HELP.", argv[1])
	}
	if len(argv) < 3 {
		return WrongArity("memory|usage")
	}
	samples := int64(memorySamplesDefault)
	for j := 3; j < len(argv); j++ {
		if EqFold(argv[j], "SAMPLES") && j+1 < len(argv) {
			v, err := intArg(argv[j+1], "")
			if err != nil {
				return err
			}
			if v < 0 {
				return ErrSyntax
			}
			if v == 0 {
				v = 1<<63 - 1
			}
			samples = v
			j++
		} else {
			return ErrSyntax
		}
	}
	v := e.get(argv[2], now)
	if v == nil {
		return NullBulk{}
	}
	return Integer(int64(len(argv[2])+mapEntryOverhead) + v.memoryUsage(samples))
}

// memoryUsage is objectComputeSize for this engine.
func (v *Value) memoryUsage(samples int64) int64 {
	n := int64(valueSize)
	if v.Kind == KindString {
		return n + int64(cap(v.Str))
	}
	return n + v.Stream.memoryUsage(samples)
}

// memoryUsage estimates the bytes of s (see the file comment).
func (s *Stream) memoryUsage(samples int64) int64 {
	n := int64(streamSize) + int64(cap(s.rax.nodes)*nodeHeaderSize)
	nodes := s.rax.nodes
	var lpsize, taken int64
	for i := 0; i < len(nodes) && taken < samples; i++ {
		lpsize += int64(cap(nodes[i].lp))
		taken++
	}
	if int64(len(nodes)) <= taken {
		n += lpsize
	} else {
		if taken > 0 {
			lpsize /= taken
		}
		n += lpsize*int64(len(nodes)-1) + int64(cap(nodes[len(nodes)-1].lp))
	}
	n += int64(cap(s.Groups) * 8)
	for _, g := range s.Groups {
		n += int64(groupSize + len(g.Name))
		if g.PEL != nil {
			n += int64(g.PEL.Len() * (nackSize + 8))
		}
		for _, c := range g.Consumers {
			n += int64(consumerSize + len(c.Name) + 8)
		}
	}
	return n
}
