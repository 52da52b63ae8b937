package claudefake

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/system3-dev/system3/internal/fakehttp"
)

// reply answers with an assistant message built from st, streamed or not as
// the request asked.
func (f *API) reply(w http.ResponseWriter, req messagesRequest, st Step, toolID string) int {
	text := st.Text
	if text == "" && st.Tool == nil {
		text = "OK."
	}
	model := req.Model
	if model == "" {
		model = "claude-fake"
	}
	f.mu.Lock()
	f.nextID++
	msgID := fmt.Sprintf("msg_fake%06d", f.nextID)
	f.mu.Unlock()

	stop := "end_turn"
	if st.Tool != nil {
		stop = "tool_use"
	}
	input := json.RawMessage(`{}`)
	if st.Tool != nil && len(st.Tool.Input) > 0 {
		input = st.Tool.Input
	}
	usage := map[string]int{"input_tokens": 100, "output_tokens": max(1, len(text)/4)}

	if !req.Stream {
		var blocks []any
		if text != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": text})
		}
		if st.Tool != nil {
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": toolID, "name": st.Tool.Name, "input": input})
		}
		return fakehttp.WriteJSON(w, http.StatusOK, map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("request-id", "req_"+msgID)
	w.WriteHeader(http.StatusOK)
	s := fakehttp.SSE{W: w, Closed: f.http.Closed()}
	s.Event("message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": 100, "output_tokens": 1},
		},
	})
	idx := 0
	if text != "" {
		s.Event("content_block_start", map[string]any{
			"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "text", "text": ""},
		})
		for _, chunk := range fakehttp.SplitChunks(text, st.Chunks) {
			if !s.Sleep(st.ChunkDelay) {
				return http.StatusOK
			}
			s.Event("content_block_delta", map[string]any{
				"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "text_delta", "text": chunk},
			})
		}
		s.Event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	if st.Tool != nil {
		s.Event("content_block_start", map[string]any{
			"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": toolID, "name": st.Tool.Name, "input": map[string]any{}},
		})
		for _, chunk := range fakehttp.SplitChunks(string(input), 2) {
			s.Event("content_block_delta", map[string]any{
				"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": chunk},
			})
		}
		s.Event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
	}
	s.Event("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": usage["output_tokens"]},
	})
	s.Event("message_stop", map[string]any{"type": "message_stop"})
	return http.StatusOK
}

func (f *API) writeError(w http.ResponseWriter, e APIError) int {
	f.http.Sleep(e.Delay)
	return writeError(w, e)
}

func writeError(w http.ResponseWriter, e APIError) int {
	e.fill()
	for k, vs := range e.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("request-id", "req_fake_error")
	return fakehttp.WriteJSON(w, e.Status, map[string]any{
		"type":  "error",
		"error": map[string]string{"type": e.Type, "message": e.Message},
	})
}

// ErrorStatus returns the usual Anthropic error for an HTTP status.
func ErrorStatus(status int) APIError {
	e := APIError{Status: status}
	e.fill()
	return e
}

func (e *APIError) fill() {
	if e.Type == "" {
		switch e.Status {
		case http.StatusBadRequest:
			e.Type = "invalid_request_error"
		case http.StatusUnauthorized:
			e.Type = "authentication_error"
		case http.StatusForbidden:
			e.Type = "permission_error"
		case http.StatusNotFound:
			e.Type = "not_found_error"
		case http.StatusRequestEntityTooLarge:
			e.Type = "request_too_large"
		case http.StatusTooManyRequests:
			e.Type = "rate_limit_error"
		case 529:
			e.Type = "overloaded_error"
		default:
			e.Type = "api_error"
		}
	}
	if e.Message == "" {
		switch e.Type {
		case "authentication_error":
			e.Message = "invalid x-api-key"
		case "rate_limit_error":
			e.Message = "Number of requests has exceeded your rate limit. Please try again later."
		case "overloaded_error":
			e.Message = "Overloaded"
		case "api_error":
			e.Message = "Internal server error"
		default:
			e.Message = http.StatusText(e.Status)
		}
	}
}
