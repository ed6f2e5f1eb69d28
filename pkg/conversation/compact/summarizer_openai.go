package compact

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/parley-dev/parley/pkg/conversation"
)

const (
	// openAIChatPath is the path of OpenAI's Chat Completions API.
	openAIChatPath = "/v1/chat/completions"
	// openAISDKPath is the path the SDK appends to its base URL.
	openAISDKPath = "chat/completions"
)

// openAICompleter calls an OpenAI-compatible /v1/chat/completions endpoint.
type openAICompleter struct {
	model    string
	cfg      HTTPConfig
	provider provider
	service  openai.ChatCompletionService
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
	// The service, not openai.NewClient: the client adds OPENAI_API_KEY, OPENAI_BASE_URL,
	// OPENAI_ORG_ID … from the manager's environment, which must not reach a user's endpoint.
	opts := []option.RequestOption{
		option.WithBaseURL(sdkBase(endpoint, openAISDKPath)),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(cfg.MaxAttempts - 1),
		option.WithMaxRetryDelay(cfg.MaxRetryWait),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	for k, vs := range endpoint.Query() {
		for _, v := range vs {
			opts = append(opts, option.WithQueryAdd(k, v))
		}
	}
	return &openAICompleter{
		model: cfg.Model, cfg: cfg, service: openai.NewChatCompletionService(opts...),
		provider: provider{name: ProviderOpenAI, endpoint: endpoint, decodeError: decodeOpenAIError},
	}, nil
}

func (c *openAICompleter) complete(ctx context.Context, system, user string, maxTokens int) (Summary, error) {
	params := openai.ChatCompletionNewParams{
		Model:    c.model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage(user)},
	}
	if maxTokens > 0 {
		// max_completion_tokens replaces the deprecated max_tokens, which reasoning models reject.
		params.MaxCompletionTokens = openai.Int(int64(maxTokens))
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
	if len(resp.Choices) == 0 {
		return Summary{}, c.provider.answerError(call, "no summary: no choices in response")
	}
	choice := resp.Choices[0]
	if choice.Message.Refusal != "" {
		return Summary{}, c.provider.answerError(call, "no summary: the model refused")
	}
	text := strings.TrimSpace(choice.Message.Content)
	if !isJSONString(choice.Message.JSON.Content.Raw()) || text == "" {
		return Summary{}, c.provider.answerError(call, "no summary: empty content (finish_reason "+quoteOrNone(choice.FinishReason)+")")
	}
	return Summary{Text: text, Usage: openAIUsage(resp)}, nil
}

// isJSONString tells a JSON string from what the SDK's lenient decoding turns into one
// (a number, an object).
func isJSONString(raw string) bool { return strings.HasPrefix(raw, `"`) }

// openAIUsage maps usage as OpenAI reports it (prompt_tokens includes the cached ones) to
// conversation.Usage (Input excludes them).
func openAIUsage(resp *openai.ChatCompletion) conversation.Usage {
	u := resp.Usage
	if !u.JSON.PromptTokens.Valid() && !u.JSON.CompletionTokens.Valid() {
		return conversation.Usage{}
	}
	cached := u.PromptTokensDetails.CachedTokens
	return conversation.Usage{Input: max(u.PromptTokens-cached, 0), Output: u.CompletionTokens, CacheRead: cached}
}

// decodeOpenAIError reads {"error": {"type", "code", "message"}}, the shape OpenAI, LiteLLM and
// recent vLLM send; {"error": "message"}, as Ollama sends; or {"object": "error", "type",
// "message"} at the top, as older vLLM sends.
func decodeOpenAIError(body []byte) (typ, msg string) {
	var shaped struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &shaped) != nil {
		return "", ""
	}
	var plain string
	switch {
	case len(shaped.Error) == 0:
		return openAIErrorDetail(body)
	case json.Unmarshal(shaped.Error, &plain) == nil:
		return "", plain
	default:
		return openAIErrorDetail(shaped.Error)
	}
}

// openAIErrorDetail reads {"type", "code", "message"}; code may be a string or a number.
func openAIErrorDetail(raw []byte) (typ, msg string) {
	var detail struct {
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(raw, &detail) != nil {
		return "", ""
	}
	typ = detail.Type
	var code string
	if json.Unmarshal(detail.Code, &code) == nil && code != "" && code != typ {
		typ = strings.TrimPrefix(typ+"/"+code, "/")
	}
	return typ, detail.Message
}
