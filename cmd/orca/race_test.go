//go:build race

package main

// raceEnabled: the race detector slows every process start down; tests
// that start orca many times start it fewer times then.
const raceEnabled = true
