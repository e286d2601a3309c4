//go:build race

package fsm

// raceEnabled: the test binary runs with -race, whose instrumentation can
// add an allocation where the plain build has none.
const raceEnabled = true
