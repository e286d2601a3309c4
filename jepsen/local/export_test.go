package local

// Ping is ping, for the external tests.
var Ping = ping

// ReopenAfterKillAll lets Nodes start again after KillAll, so that one test
// of KillAll leaves the package's other tests able to start theirs.
func ReopenAfterKillAll() {
	running.mu.Lock()
	running.closed = false
	running.mu.Unlock()
}
