// Package testkit is what tests need to reach servers over sockets and
// processes: free loopback ports, redis-server for differential tests, a
// raw RESP connection that returns each reply's exact bytes, throwaway TLS
// certificates, and raftstream itself, built once per test binary and run
// as real processes.
//
//   - FreePort hands out loopback ports below the kernel's ephemeral range,
//     never the same one twice in a test binary.
//   - StartRedis starts redis-server; Dial and Conn speak raw RESP (a
//     wire.Client that bounds every exchange).
//   - WriteTLSFiles writes a CA, a server and a client certificate.
//   - Main and Server build cmd/raftstream once per test binary (with -race
//     when asked) and remove it afterwards; a package that starts nodes
//     calls Main from its TestMain.
//   - StartNode, StartCluster and NewNode/NewCluster with StartAll start
//     raftstream nodes on free ports with data directories under
//     t.TempDir(); Node kills, stops, restarts them by PID, and kills them
//     at cleanup even when the test failed.
//
// Processes are jepsen/local.Nodes, the same type the fault-injection
// runner starts, kills and restarts: starting and stopping a server process
// is written once, there. The kit adds what a test needs on top of it
// (testing.TB, cleanup, the raftstream command line).
//
// The kit reaches the system only through processes and sockets, so any
// package's tests may import it; it never ships in a server binary.
package testkit
