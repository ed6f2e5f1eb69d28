package compact

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// anthropicMessagesPath is the path of Anthropic's Messages API.
const anthropicMessagesPath = "/v1/messages"

// anthropicDefaultMaxTokens is sent when the caller gives no bound: the API requires one.
const anthropicDefaultMaxTokens = 1024

// anthropicCompleter calls the Anthropic Messages API.
type anthropicCompleter struct {
	model  string
	caller *httpCaller
}

func newAnthropicCompleter(cfg HTTPConfig) (*anthropicCompleter, error) {
	cfg = cfg.withDefaults()
	if cfg.Model == "" {
		return nil, errors.New("summarizer anthropic: model is required")
	}
	if cfg.APIKey == "" {
		return nil, errors.New("summarizer anthropic: API key is required")
	}
	endpoint, err := resolveEndpoint(cfg.Endpoint, anthropicMessagesPath)
	if err != nil {
		return nil, errors.New("summarizer anthropic: " + err.Error())
	}
	headers := http.Header{
		"Content-Type":      {"application/json"},
		"Accept":            {"application/json"},
		"X-Api-Key":         {cfg.APIKey},
		"Anthropic-Version": {cfg.AnthropicVersion},
	}
	return &anthropicCompleter{model: cfg.Model, caller: &httpCaller{
		provider: "anthropic", endpoint: endpoint, headers: headers, cfg: cfg,
		decodeError: decodeAnthropicError, sleep: sleepContext,
	}}, nil
}

type anthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	System    string             `json:"system,omitempty"`
	Messages  []anthropicMessage `json:"messages"`
}

type anthropicMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type anthropicResponse struct {
	Type    string `json:"type"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
}

func (c *anthropicCompleter) complete(ctx context.Context, system, user string, maxTokens int) (string, error) {
	if maxTokens <= 0 {
		maxTokens = anthropicDefaultMaxTokens
	}
	body, err := json.Marshal(anthropicRequest{
		Model: c.model, MaxTokens: maxTokens, System: system,
		Messages: []anthropicMessage{{Role: "user", Content: user}},
	})
	if err != nil {
		return "", err
	}
	var resp anthropicResponse
	answer, err := c.caller.post(ctx, body, &resp)
	if err != nil {
		return "", err
	}
	var text strings.Builder
	for _, block := range resp.Content {
		if block.Type == "text" {
			text.WriteString(block.Text)
		}
	}
	summary := strings.TrimSpace(text.String())
	if summary == "" {
		return "", c.caller.answerError(answer, "no summary: no text content (stop_reason "+quoteOrNone(resp.StopReason)+")")
	}
	return summary, nil
}

// decodeAnthropicError reads {"type": "error", "error": {"type", "message"}}.
func decodeAnthropicError(body []byte) (typ, msg string) {
	var shaped struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &shaped) != nil {
		return "", ""
	}
	return shaped.Error.Type, shaped.Error.Message
}
