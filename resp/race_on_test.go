//go:build race

package resp

// raceEnabled: the test binary runs with -race, under which sync.Pool drops
// a share of what it is given at random.
const raceEnabled = true
