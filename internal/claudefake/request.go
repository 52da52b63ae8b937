package claudefake

import (
	"encoding/json"
	"strings"
)

// messagesRequest is the part of a Messages API request body the fake reads.
type messagesRequest struct {
	Model     string            `json:"model"`
	MaxTokens int               `json:"max_tokens"`
	Stream    bool              `json:"stream"`
	Messages  []message         `json:"messages"`
	Tools     []json.RawMessage `json:"tools"`
}

type message struct {
	Role    string  `json:"role"`
	Content content `json:"content"`
}

// content is a message's content: a plain string or a list of blocks.
type content []block

func (c *content) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*c = content{{Type: "text", Text: s}}
		return nil
	}
	var blocks []block
	if err := json.Unmarshal(b, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

type block struct {
	Type      string  `json:"type"`
	Text      string  `json:"text,omitempty"`
	ToolUseID string  `json:"tool_use_id,omitempty"`
	Content   content `json:"content,omitempty"`
	IsError   bool    `json:"is_error,omitempty"`
}

// latestUserTurn returns the last block of the last user message, system
// reminders skipped: the text the user typed last (the CLI merges prompts that
// got no answer into one message), or a tool result's text. toolUseID is set
// when that block is a tool result.
func latestUserTurn(msgs []message) (text, toolUseID string) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		blocks := msgs[i].Content
		for j := len(blocks) - 1; j >= 0; j-- {
			b := blocks[j]
			switch b.Type {
			case "text":
				if t := stripReminders(b.Text); t != "" {
					return t, ""
				}
			case "tool_result":
				var parts []string
				for _, c := range b.Content {
					if c.Type == "text" && c.Text != "" {
						parts = append(parts, c.Text)
					}
				}
				return strings.Join(parts, "\n"), b.ToolUseID
			}
		}
		return "", ""
	}
	return "", ""
}

// stripReminders drops the <system-reminder> blocks the CLI adds to user
// turns. A turn that is only a reminder holding a <task-notification> (a
// background task completed) is that notification.
func stripReminders(s string) string {
	if t := withoutReminders(s); t != "" {
		return t
	}
	const open, end = "<task-notification>", "</task-notification>"
	if i := strings.Index(s, open); i >= 0 {
		if j := strings.Index(s[i:], end); j >= 0 {
			return s[i : i+j+len(end)]
		}
	}
	return ""
}

func withoutReminders(s string) string {
	const open, end = "<system-reminder>", "</system-reminder>"
	for {
		i := strings.Index(s, open)
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], end)
		if j < 0 {
			s = s[:i]
			break
		}
		s = s[:i] + s[i+j+len(end):]
	}
	return strings.TrimSpace(s)
}
