package api

import (
	"maps"
	"path"
	"slices"
)

// Tokens counts the tokens of one session (or of one model in it).
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheWrite int64 `json:"cache_write"`
	CacheRead  int64 `json:"cache_read"`
}

// Total is every token counted.
func (t Tokens) Total() int64 { return t.Input + t.Output + t.CacheWrite + t.CacheRead }

// Plus is the sum of two counts.
func (t Tokens) Plus(o Tokens) Tokens {
	return Tokens{t.Input + o.Input, t.Output + o.Output, t.CacheWrite + o.CacheWrite, t.CacheRead + o.CacheRead}
}

// Minus is t less o.
func (t Tokens) Minus(o Tokens) Tokens {
	return Tokens{t.Input - o.Input, t.Output - o.Output, t.CacheWrite - o.CacheWrite, t.CacheRead - o.CacheRead}
}

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input      float64 `json:"input" yaml:"input"`
	Output     float64 `json:"output" yaml:"output"`
	CacheWrite float64 `json:"cache_write" yaml:"cache_write"`
	CacheRead  float64 `json:"cache_read" yaml:"cache_read"`
}

// Cost is what t costs at p, in US dollars.
func (p Price) Cost(t Tokens) float64 {
	return (float64(t.Input)*p.Input + float64(t.Output)*p.Output + float64(t.CacheWrite)*p.CacheWrite + float64(t.CacheRead)*p.CacheRead) / 1e6
}

// PriceRule prices the models whose id matches Model, a glob
// ("claude-opus-*").
type PriceRule struct {
	Model string `json:"model" yaml:"model"`
	Price `yaml:",inline"`
}

// PriceTable finds a model's price: the first rule whose glob matches.
type PriceTable []PriceRule

// Lookup returns the price of model.
func (pt PriceTable) Lookup(model string) (Price, bool) {
	for _, r := range pt {
		if ok, _ := path.Match(r.Model, model); ok {
			return r.Price, true
		}
	}
	return Price{}, false
}

// Usage is what an agent's session used so far, from its transcript.
type Usage struct {
	Tokens
	// ByModel splits the tokens by model id.
	ByModel map[string]Tokens `json:"by_model"`
	// Responses is how many API responses were counted.
	Responses int `json:"responses"`
	// CostUSD is the estimated cost of the models that have a price;
	// Unpriced lists the models that have none (their tokens are not in
	// the cost).
	CostUSD  float64  `json:"cost_usd"`
	Unpriced []string `json:"unpriced_models,omitempty"`
}

// Equal reports whether two usages (either may be nil) are the same.
func (u *Usage) Equal(o *Usage) bool {
	if u == nil || o == nil {
		return u == o
	}
	return u.Tokens == o.Tokens && u.Responses == o.Responses && u.CostUSD == o.CostUSD && maps.Equal(u.ByModel, o.ByModel)
}

// Clone returns a copy of u that shares no map or slice with it.
func (u *Usage) Clone() *Usage {
	if u == nil {
		return nil
	}
	c := *u
	c.ByModel = maps.Clone(u.ByModel)
	c.Unpriced = slices.Clone(u.Unpriced)
	return &c
}
