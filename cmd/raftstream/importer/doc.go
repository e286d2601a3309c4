// Package importer is `raftstream import`: it copies streams from a running
// redis-server or Redis Cluster into raftstream.
package importer
