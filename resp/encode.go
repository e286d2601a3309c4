package resp

import (
	"math"
	"strconv"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/wire"
)

// AppendReply appends the RESP encoding of r to b: RESP2 when proto is 2,
// RESP3 when it is 3. It allocates nothing beyond growing b.
func AppendReply(b []byte, r engine.Reply, proto int) []byte {
	switch v := r.(type) {
	case engine.SimpleString:
		return wire.AppendSimple(b, string(v))
	case engine.BulkString:
		return wire.AppendBulk(b, v)
	case engine.Integer:
		return wire.AppendInt(b, int64(v))
	case engine.Array:
		b = wire.AppendLen(b, '*', len(v))
		for _, e := range v {
			b = AppendReply(b, e, proto)
		}
		return b
	case *engine.EntryReply:
		// [id, [field, value, ...]], as the nested Arrays would be.
		var idb [48]byte
		b = wire.AppendLen(b, '*', 2)
		b = wire.AppendBulk(b, v.ID.Append(idb[:0]))
		b = wire.AppendLen(b, '*', v.N)
		return append(b, v.Enc...)
	case engine.Map:
		if proto >= 3 {
			b = wire.AppendLen(b, '%', len(v)/2)
		} else {
			b = wire.AppendLen(b, '*', len(v))
		}
		for _, e := range v {
			b = AppendReply(b, e, proto)
		}
		return b
	case engine.PairMap:
		if proto >= 3 {
			b = wire.AppendLen(b, '%', len(v)/2)
			for _, e := range v {
				b = AppendReply(b, e, proto)
			}
			return b
		}
		b = wire.AppendLen(b, '*', len(v)/2)
		for i := 0; i+1 < len(v); i += 2 {
			b = append(b, "*2\r\n"...)
			b = AppendReply(b, v[i], proto)
			b = AppendReply(b, v[i+1], proto)
		}
		return b
	case engine.Set:
		if proto >= 3 {
			b = wire.AppendLen(b, '~', len(v))
		} else {
			b = wire.AppendLen(b, '*', len(v))
		}
		for _, e := range v {
			b = AppendReply(b, e, proto)
		}
		return b
	case engine.NullBulk:
		if proto >= 3 {
			return append(b, '_', '\r', '\n')
		}
		return append(b, "$-1\r\n"...)
	case engine.NullArray:
		if proto >= 3 {
			return append(b, '_', '\r', '\n')
		}
		return append(b, "*-1\r\n"...)
	case engine.Double:
		if proto >= 3 {
			b = append(b, ',')
			b = appendDouble(b, float64(v))
			return append(b, '\r', '\n')
		}
		return wire.AppendBulk(b, appendDouble(nil, float64(v)))
	case *engine.Error:
		return wire.AppendError(b, v.Msg)
	case nil:
		return AppendReply(b, engine.NullBulk{}, proto)
	}
	panic("resp: unknown reply type")
}

// appendDouble formats like Redis's addReplyDouble (%.17g, inf/-inf/nan).
func appendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	return strconv.AppendFloat(b, f, 'g', 17, 64)
}
