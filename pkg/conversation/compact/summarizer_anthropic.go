package compact

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/parley-dev/parley/pkg/conversation"
)

const (
	// anthropicMessagesPath is the path of Anthropic's Messages API.
	anthropicMessagesPath = "/v1/messages"
	// anthropicSDKPath is the path the SDK appends to its base URL.
	anthropicSDKPath = "v1/messages"
	// anthropicDefaultMaxTokens is sent when the caller gives no bound: the API requires one.
	anthropicDefaultMaxTokens = 1024
)

// anthropicCompleter calls the Anthropic Messages API.
type anthropicCompleter struct {
	model    string
	cfg      HTTPConfig
	provider provider
	service  anthropic.MessageService
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
	// The service, not anthropic.NewClient: the client adds ANTHROPIC_API_KEY,
	// ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL and profile files from the manager's environment,
	// which must not reach a user's endpoint. No OpenTelemetry: the SDK traces every call with
	// the global tracer provider, and ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content in
	// the environment would put the conversation in the spans.
	opts := []option.RequestOption{
		option.WithBaseURL(sdkBase(endpoint, anthropicSDKPath)),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(cfg.MaxAttempts - 1),
		option.WithAPIKey(cfg.APIKey),
		option.WithoutOpenTelemetry(),
	}
	for k, vs := range endpoint.Query() {
		for _, v := range vs {
			opts = append(opts, option.WithQueryAdd(k, v))
		}
	}
	return &anthropicCompleter{
		model: cfg.Model, cfg: cfg, service: anthropic.NewMessageService(opts...),
		provider: provider{name: ProviderAnthropic, endpoint: endpoint, decodeError: decodeAnthropicError},
	}, nil
}

func (c *anthropicCompleter) complete(ctx context.Context, system, user string, maxTokens int) (Summary, error) {
	if maxTokens <= 0 {
		maxTokens = anthropicDefaultMaxTokens
	}
	params := anthropic.MessageNewParams{
		Model:     c.model,
		MaxTokens: int64(maxTokens),
		System:    []anthropic.TextBlockParam{{Text: system}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(user))},
	}
	call := newCall(&c.cfg)
	resp, err := c.service.New(ctx, params, option.WithMiddleware(call.middleware))
	if err != nil {
		return Summary{}, c.provider.callError(ctx, call, err)
	}
	if call.status < 200 || call.status >= 300 {
		return Summary{}, c.provider.answerError(call, "unexpected answer")
	}
	if resp == nil { // the SDK decodes a body of null to no answer and no error
		return Summary{}, c.provider.answerError(call, "no summary: a response of null")
	}
	var text strings.Builder
	for _, block := range resp.Content {
		if block.Type == "text" && isJSONString(block.JSON.Text.Raw()) {
			text.WriteString(block.Text)
		}
	}
	summary := strings.TrimSpace(text.String())
	if summary == "" {
		return Summary{}, c.provider.answerError(call, "no summary: no text content (stop_reason "+quoteOrNone(string(resp.StopReason))+")")
	}
	return Summary{Text: summary, Usage: anthropicUsage(resp)}, nil
}

func anthropicUsage(resp *anthropic.Message) conversation.Usage {
	u := resp.Usage
	return conversation.Usage{
		Input: u.InputTokens, Output: u.OutputTokens,
		CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens,
	}
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
