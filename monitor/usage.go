package monitor

import (
	"encoding/json"
	"maps"
	"math"
	"path"
	"slices"
)

// Claude Code records every API response in its transcript: an assistant
// entry whose message holds the model and the response's usage. A response
// with several content blocks is written as several entries that repeat
// the same message id and usage, so entries are counted once per id.

// Tokens counts the tokens of one session (or of one model in it).
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheWrite int64 `json:"cache_write"`
	CacheRead  int64 `json:"cache_read"`
}

// Total is every token counted.
func (t Tokens) Total() int64 { return t.Input + t.Output + t.CacheWrite + t.CacheRead }

func (t Tokens) plus(o Tokens) Tokens {
	return Tokens{t.Input + o.Input, t.Output + o.Output, t.CacheWrite + o.CacheWrite, t.CacheRead + o.CacheRead}
}

func (t Tokens) minus(o Tokens) Tokens {
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

func (u *Usage) equal(o *Usage) bool {
	if u == nil || o == nil {
		return u == o
	}
	return u.Tokens == o.Tokens && u.Responses == o.Responses && u.CostUSD == o.CostUSD && maps.Equal(u.ByModel, o.ByModel)
}

func (u *Usage) clone() *Usage {
	if u == nil {
		return nil
	}
	c := *u
	c.ByModel = maps.Clone(u.ByModel)
	c.Unpriced = slices.Clone(u.Unpriced)
	return &c
}

// recentIDs is how many message ids a tally remembers: the entries of one
// response are written one after another.
const recentIDs = 64

// usageTally adds up a transcript's usage as its lines are read.
type usageTally struct {
	byModel   map[string]Tokens
	responses int
	// recent are the last message ids counted, with what was counted.
	recent []countedMessage
}

type countedMessage struct {
	id, model string
	tokens    Tokens
}

// usageLine is the part of an assistant entry that carries usage.
type usageLine struct {
	Type    string `json:"type"`
	Message struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Usage *struct {
			Input      int64 `json:"input_tokens"`
			Output     int64 `json:"output_tokens"`
			CacheWrite int64 `json:"cache_creation_input_tokens"`
			CacheRead  int64 `json:"cache_read_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
}

// add counts one transcript line, if it reports usage. A repeated message
// id replaces what was counted for it (the last entry of a response
// carries its final usage).
func (t *usageTally) add(line []byte) {
	var l usageLine
	if json.Unmarshal(line, &l) != nil || l.Type != "assistant" || l.Message.Usage == nil || l.Message.Model == "" || l.Message.Model == "<synthetic>" {
		return
	}
	u := l.Message.Usage
	tok := Tokens{Input: max(0, u.Input), Output: max(0, u.Output), CacheWrite: max(0, u.CacheWrite), CacheRead: max(0, u.CacheRead)}
	if t.byModel == nil {
		t.byModel = map[string]Tokens{}
	}
	if i := slices.IndexFunc(t.recent, func(c countedMessage) bool { return c.id != "" && c.id == l.Message.ID }); i >= 0 {
		old := t.recent[i]
		t.byModel[old.model] = t.byModel[old.model].minus(old.tokens)
		t.recent[i] = countedMessage{id: l.Message.ID, model: l.Message.Model, tokens: tok}
	} else {
		t.responses++
		t.recent = append(t.recent, countedMessage{id: l.Message.ID, model: l.Message.Model, tokens: tok})
		if len(t.recent) > recentIDs {
			t.recent = slices.Delete(t.recent, 0, len(t.recent)-recentIDs)
		}
	}
	t.byModel[l.Message.Model] = t.byModel[l.Message.Model].plus(tok)
}

// usage is the tally so far, priced with prices (nil: no prices), or nil
// when nothing was counted.
func (t *usageTally) usage(prices func(model string) (Price, bool)) *Usage {
	if t.responses == 0 {
		return nil
	}
	u := &Usage{ByModel: maps.Clone(t.byModel), Responses: t.responses}
	for _, m := range slices.Sorted(maps.Keys(t.byModel)) {
		tok := t.byModel[m]
		u.Tokens = u.Tokens.plus(tok)
		p, ok := Price{}, false
		if prices != nil {
			p, ok = prices(m)
		}
		if !ok {
			u.Unpriced = append(u.Unpriced, m)
			continue
		}
		u.CostUSD += p.Cost(tok)
	}
	u.CostUSD = math.Round(u.CostUSD*1e6) / 1e6
	return u
}
