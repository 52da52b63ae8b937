package mcpserver

import (
	"encoding/json"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// lastAnswer is a read tool's most recent answer, its document and that
// document's JSON. A call whose document equals the last one answers with
// the same bytes: a document is encoded once per change of what it
// reports, not once per call.
type lastAnswer[D any] struct {
	last atomic.Pointer[encodedAnswer[D]]
	// equal reports whether two documents encode to the same JSON.
	equal func(a, b *D) bool
}

// encodedAnswer is a document and its JSON; neither changes once made.
type encodedAnswer[D any] struct {
	doc  D
	raw  json.RawMessage
	text string
}

func newLastAnswer[D any](equal func(a, b *D) bool) *lastAnswer[D] {
	return &lastAnswer[D]{equal: equal}
}

// result is the answer whose document is doc, which the caller no longer
// changes.
func (l *lastAnswer[D]) result(doc D) (*mcp.CallToolResult, error) {
	if c := l.last.Load(); c != nil && l.equal(&c.doc, &doc) {
		return rawResult(c.raw, c.text), nil
	}
	raw, err := encodeResult(doc)
	if err != nil {
		return nil, err
	}
	c := &encodedAnswer[D]{doc: doc, raw: raw, text: string(raw)}
	l.last.Store(c)
	return rawResult(c.raw, c.text), nil
}
