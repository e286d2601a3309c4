// Package slots maps keys to Redis Cluster hash slots and slots to shards.
//
// A key's slot is CRC16 (XMODEM: poly 0x1021, init 0, no reflection) of the
// key, or of its hash tag, modulo 16384 — exactly Redis Cluster's
// keyHashSlot. The hash tag is the part between the first '{' and the first
// '}' after it, when that part is non-empty; otherwise the whole key is
// hashed. So {user1000}.following and {user1000}.followers share a slot,
// foo{}{bar} hashes the whole key and foo{{bar}}zap hashes "{bar".
//
// A Map assigns every slot to one shard. A new cluster of n shards starts
// with contiguous ranges (NewMap, Ranges): shard i owns
// [i*16384/n, (i+1)*16384/n - 1]; slots then move between shards
// (Map.Assign), so a shard may own several ranges or none. The map itself
// is replicated by the cluster's controller (cluster/slotmap.go); this
// package has no network and no state.
package slots
