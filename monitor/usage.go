package monitor

import (
	"encoding/json"
	"maps"
	"math"
	"slices"

	"github.com/system3-dev/system3/internal/api"
)

// Claude Code records every API response in its transcript: an assistant
// entry whose message holds the model and the response's usage. A response
// with several content blocks is written as several entries that repeat
// the same message id and usage, so entries are counted once per id.

// recentIDs is how many message ids a tally remembers: the entries of one
// response are written one after another.
const recentIDs = 64

// usageTally adds up a transcript's usage as its lines are read.
type usageTally struct {
	byModel   map[string]api.Tokens
	responses int
	// recent are the last message ids counted, with what was counted.
	recent []countedMessage
}

type countedMessage struct {
	id, model string
	tokens    api.Tokens
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
	tok := api.Tokens{Input: max(0, u.Input), Output: max(0, u.Output), CacheWrite: max(0, u.CacheWrite), CacheRead: max(0, u.CacheRead)}
	if t.byModel == nil {
		t.byModel = map[string]api.Tokens{}
	}
	if i := slices.IndexFunc(t.recent, func(c countedMessage) bool { return c.id != "" && c.id == l.Message.ID }); i >= 0 {
		old := t.recent[i]
		t.byModel[old.model] = t.byModel[old.model].Minus(old.tokens)
		t.recent[i] = countedMessage{id: l.Message.ID, model: l.Message.Model, tokens: tok}
	} else {
		t.responses++
		t.recent = append(t.recent, countedMessage{id: l.Message.ID, model: l.Message.Model, tokens: tok})
		if len(t.recent) > recentIDs {
			t.recent = slices.Delete(t.recent, 0, len(t.recent)-recentIDs)
		}
	}
	t.byModel[l.Message.Model] = t.byModel[l.Message.Model].Plus(tok)
}

// usage is the tally so far, priced with prices (nil: no prices), or nil
// when nothing was counted.
func (t *usageTally) usage(prices func(model string) (api.Price, bool)) *api.Usage {
	if t.responses == 0 {
		return nil
	}
	u := &api.Usage{ByModel: maps.Clone(t.byModel), Responses: t.responses}
	for _, m := range slices.Sorted(maps.Keys(t.byModel)) {
		tok := t.byModel[m]
		u.Tokens = u.Tokens.Plus(tok)
		p, ok := api.Price{}, false
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
