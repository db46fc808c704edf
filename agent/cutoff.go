package agent

import "fmt"

// cutAt is the output token limit the last response was cut off at (see
// turn.cutOff), or 0; -1 when the provider said so without a limit being
// asked for.
type cutAt struct {
	cut int
}

// limitText names the output token limit the last response was cut off at.
func (c *cutAt) limitText() string {
	switch c.cut {
	case -1:
		return "the provider's output token limit"
	case 1:
		return "the output token limit (1 token)"
	}
	return fmt.Sprintf("the output token limit (%d tokens)", c.cut)
}
