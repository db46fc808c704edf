package agent

import "github.com/orca-agent/orca/budget"

// priceCache is the price of the last model the turn priced.
type priceCache struct {
	model string
	ok    bool
	price budget.Price
}

// of returns model's price in prices, looked up once per turn per model
// (the table's prefix search scans it).
func (c *priceCache) of(prices budget.Prices, model string) budget.Price {
	if model != c.model || !c.ok {
		c.model, c.ok = model, true
		c.price, _ = prices.Lookup(model)
	}
	return c.price
}
