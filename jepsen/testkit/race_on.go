//go:build race

package testkit

// Race reports whether this binary was built with -race: a test binary run
// with -race passes it to Main so that the server under test has the race
// detector too.
const Race = true
