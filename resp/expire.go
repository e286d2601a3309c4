package resp

import (
	"context"
	"math/big"

	"github.com/raftstream/raftstream/engine"
)

// keyspaceInfo sums INFO keyspace's counts over the shards whose keys this
// node serves (localShards, as DBSIZE): keys and expires exactly, avg_ttl
// as the mean of the shards' means weighted by their expires (each shard's
// is exact to the millisecond). Every shard is read at its own time
// (engine.ReadTime), after its read fence.
func (s *Server) keyspaceInfo(c *client) (engine.KeyspaceInfo, reply) {
	var out engine.KeyspaceInfo
	ttl := new(big.Int)
	for _, sh := range s.localShards(c) {
		var ki engine.KeyspaceInfo
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
		err := s.be.Read(ctx, sh, c != nil && c.readonly, func(e *engine.Engine) { ki = e.Keyspace(e.ReadTime(nowMs())) })
		cancel()
		if err != nil {
			return out, s.mapReadError(err, -1)
		}
		out.Keys += ki.Keys
		out.Expires += ki.Expires
		ttl.Add(ttl, new(big.Int).Mul(big.NewInt(ki.AvgTTL), big.NewInt(ki.Expires)))
	}
	if out.Expires > 0 {
		out.AvgTTL = ttl.Div(ttl, big.NewInt(out.Expires)).Int64()
	}
	return out, nil
}
