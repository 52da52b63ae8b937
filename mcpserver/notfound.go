package mcpserver

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
)

// A system3 URI that names nothing (a session, task list or pattern that
// does not exist) is answered "resource not found" (-32002; -32602 from
// protocol 2026-07-28 on). mcp-go sends that code only for a URI no
// resource or template matches, and reports any error of a handler as an
// internal error (-32603), with no hook for either. So markMissing makes
// such a URI match nothing by appending missingMark and the reason, and
// the transports' writers (stdio, Streamable HTTP) turn mcp-go's
// "handler not found for resource URI '<uri><mark><why>': resource not
// found" into "<uri>: <why>", the URI as the client sent it. A client
// that knows the code (mcp-go's says "resource not found: ") adds the
// words for it.
//
// The mark is a control character: a reason (every name in it quoted
// with %q) never holds one, so the last mark in the message is ours even
// when a client sends one in its URI.
const missingMark = "\x1f"

// notFoundMessage is mcp-go's -32002 answer to a marked URI, as
// encoding/json writes it: anchored on the error object's code, which
// text inside a JSON string (a screen, a tool's result) cannot forge, as
// its quotes there are escaped.
var notFoundMessage = regexp.MustCompile(`("code":-(?:32002|32602),"message":")handler not found for resource URI '((?:[^"\\]|\\.)*)\\u001f((?:[^"\\]|\\.)*)': resource not found"`)

// explainNotFound rewrites every marked not-found answer in p (one
// JSON-RPC message, a line of stdio or an SSE event) to name the URI and
// then why.
func explainNotFound(p []byte) []byte {
	if !bytes.Contains(p, []byte(`\u001f`)) {
		return p
	}
	return notFoundMessage.ReplaceAll(p, []byte(`${1}${2}: ${3}"`))
}

// notFoundWriter explains not-found answers written to stdio.
type notFoundWriter struct{ w io.Writer }

func (w notFoundWriter) Write(p []byte) (int, error) {
	if _, err := w.w.Write(explainNotFound(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// notFoundResponseWriter explains not-found answers written over
// Streamable HTTP (a JSON body or an SSE event); it keeps Flush and the
// ResponseController working. mcp-go sets no Content-Length.
type notFoundResponseWriter struct{ http.ResponseWriter }

func (w notFoundResponseWriter) Write(p []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(explainNotFound(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w notFoundResponseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w notFoundResponseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
