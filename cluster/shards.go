package cluster

import "fmt"

// ctrlShards handles the shard requests of the slots RPC on the controller
// leader (add-shard, remove-shard).
func (n *Node) ctrlShards(req *slotRPC) ([]string, error) {
	return nil, fmt.Errorf("unknown slots op %q", req.Op)
}
