package command

import "time"

// SetCloseWait sets how long a Notifier's Close waits for running entries,
// until the test ends.
func SetCloseWait(d time.Duration) (restore func()) {
	old := closeWait
	closeWait = d
	return func() { closeWait = old }
}
