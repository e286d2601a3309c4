//go:build !race

package testkit

// Race reports whether this binary was built with -race.
const Race = false
