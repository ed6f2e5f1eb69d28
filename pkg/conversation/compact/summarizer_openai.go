package compact

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// openAIChatPath is the path of OpenAI's Chat Completions API.
const openAIChatPath = "/v1/chat/completions"

// openAICompleter calls an OpenAI-compatible /v1/chat/completions endpoint.
type openAICompleter struct {
	model  string
	caller *httpCaller
}

func newOpenAICompleter(cfg HTTPConfig) (*openAICompleter, error) {
	cfg = cfg.withDefaults()
	if cfg.Model == "" {
		return nil, errors.New("summarizer openai: model is required")
	}
	endpoint, err := resolveEndpoint(cfg.Endpoint, openAIChatPath)
	if err != nil {
		return nil, errors.New("summarizer openai: " + err.Error())
	}
	headers := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	if cfg.APIKey != "" {
		headers.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	return &openAICompleter{model: cfg.Model, caller: &httpCaller{
		provider: "openai", endpoint: endpoint, headers: headers, cfg: cfg,
		decodeError: decodeOpenAIError, sleep: sleepContext,
	}}, nil
}

type openAIChatRequest struct {
	Model    string              `json:"model"`
	Messages []openAIChatMessage `json:"messages"`
	// MaxCompletionTokens replaces the deprecated max_tokens, which reasoning models reject.
	MaxCompletionTokens int `json:"max_completion_tokens,omitempty"`
}

type openAIChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type openAIChatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

func (c *openAICompleter) complete(ctx context.Context, system, user string, maxTokens int) (string, error) {
	body, err := json.Marshal(openAIChatRequest{
		Model:               c.model,
		Messages:            []openAIChatMessage{{Role: "system", Content: system}, {Role: "user", Content: user}},
		MaxCompletionTokens: maxTokens,
	})
	if err != nil {
		return "", err
	}
	var resp openAIChatResponse
	answer, err := c.caller.post(ctx, body, &resp)
	if err != nil {
		return "", err
	}
	if len(resp.Choices) == 0 {
		return "", c.caller.answerError(answer, "no summary: no choices in response")
	}
	choice := resp.Choices[0]
	if choice.Message.Refusal != nil && *choice.Message.Refusal != "" {
		return "", c.caller.answerError(answer, "no summary: the model refused")
	}
	if choice.Message.Content == nil || strings.TrimSpace(*choice.Message.Content) == "" {
		return "", c.caller.answerError(answer, "no summary: empty content (finish_reason "+quoteOrNone(choice.FinishReason)+")")
	}
	return strings.TrimSpace(*choice.Message.Content), nil
}

// decodeOpenAIError reads {"error": {"type", "code", "message"}}, the shape OpenAI and most
// compatible servers use, or {"error": "message"} as some compatible servers send.
func decodeOpenAIError(body []byte) (typ, msg string) {
	var shaped struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &shaped) != nil || len(shaped.Error) == 0 {
		return "", ""
	}
	var detail struct {
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(shaped.Error, &detail) == nil {
		typ = detail.Type
		var code string
		if json.Unmarshal(detail.Code, &code) == nil && code != "" && code != typ {
			typ = strings.TrimPrefix(typ+"/"+code, "/")
		}
		return typ, detail.Message
	}
	var plain string
	if json.Unmarshal(shaped.Error, &plain) == nil {
		return "", plain
	}
	return "", ""
}

func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
