// Package deploy holds raftstream's deployment files and their static
// checks; it has no code that ships.
//
//	Dockerfile, build-image.sh       the FROM-scratch image of cmd/raftstream
//	docker-compose.yml               a 3-node cluster on one Docker host
//	docker-compose.5node.yml         override: the same, 5 nodes
//	local-cluster.sh                 N local processes on 127.0.0.1:7001…
//	compose-test.sh                  the real compose test (private dockerd)
//	k8s/raftstream.yaml              StatefulSet + headless and client Services
//
// The package's tests parse the manifests and the compose files and check
// them against the server's own flag definitions (cmd/raftstream/*.go):
// every argument and RAFTSTREAM_* variable names a flag the server has,
// ports agree between flags, containers, services and published ports,
// published ports are on 127.0.0.1 only, and data lives on named volumes
// or claim templates. They are static: no Docker, no Kubernetes.
// deploy/README.md is the operator's manual.
package deploy
