//go:build !race

package fsm

const raceEnabled = false
