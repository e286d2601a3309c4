//go:build race

package main

// raceEnabled: the test binary runs with -race, so the server under test is
// built with -race too.
const raceEnabled = true
