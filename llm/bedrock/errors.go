package bedrock

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/orca-agent/orca/llm"
)

// classify turns a failure of a call into the error Generate returns: one
// wrapping ctx.Err() once ctx is done, an *llm.Error otherwise (see the
// package documentation).
func classify(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("bedrock: %w", ctxErr)
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		var signing *v4.SigningError
		if msg := err.Error(); errors.As(err, &signing) || strings.Contains(msg, "get identity: ") || strings.Contains(msg, "sign request: ") {
			// The credentials (or the API key) could not be had: another
			// try would fail the same way.
			return &llm.Error{Kind: llm.KindAuthentication, Message: err.Error(), Err: err}
		}
		// No answer from Bedrock, or a stream cut short: worth another try.
		return &llm.Error{Kind: llm.KindServer, Message: err.Error(), Err: err}
	}
	out := &llm.Error{Message: strings.TrimSpace(api.ErrorMessage()), Err: err}
	var header http.Header
	if re := (*smithyhttp.ResponseError)(nil); errors.As(err, &re) && re.Response != nil {
		out.StatusCode = re.HTTPStatusCode()
		header = re.Response.Header
	}
	code := api.ErrorCode()
	if out.Message == "" {
		out.Message = cmpOr(code, http.StatusText(out.StatusCode))
	} else if code != "" {
		out.Message = code + ": " + out.Message
	}
	status := out.StatusCode
	tooLong := (code == "ValidationException" || status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge) &&
		promptTooLong(api.ErrorMessage())
	// Bedrock's exceptions first (ModelNotReadyException comes with a
	// 429), then the status of an answer that names none Bedrock has.
	switch {
	case code == "ThrottlingException" || code == "ServiceQuotaExceededException":
		out.Kind = llm.KindRateLimited
	case code == "ServiceUnavailableException" || code == "ModelNotReadyException":
		out.Kind = llm.KindOverloaded
	case tooLong:
		out.Kind = llm.KindPromptTooLong
	case authentication(code):
		out.Kind = llm.KindAuthentication
	case code == "InternalServerException" || code == "ModelStreamErrorException" || code == "ModelTimeoutException" || code == "ModelErrorException":
		out.Kind = llm.KindServer
	case code == "ValidationException" || code == "ResourceNotFoundException" || code == "ConflictException":
		out.Kind = llm.KindInvalidRequest
	case status == http.StatusTooManyRequests:
		out.Kind = llm.KindRateLimited
	case status == http.StatusServiceUnavailable:
		out.Kind = llm.KindOverloaded
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		out.Kind = llm.KindAuthentication
	case status >= 500 || status == http.StatusRequestTimeout || status == 0:
		// status 0: an exception inside the stream that Bedrock's model
		// does not name; the stream broke.
		out.Kind = llm.KindServer
	default:
		out.Kind = llm.KindInvalidRequest
	}
	if out.Kind == llm.KindRateLimited && header != nil {
		out.RetryAfter = llm.RetryAfter(header, time.Now())
	}
	return out
}

// authentication reports whether an error code says the request's
// credentials were refused: AWS's common errors for a signature or a
// token, and Bedrock's AccessDeniedException.
func authentication(code string) bool {
	switch strings.TrimSuffix(code, "Exception") {
	case "AccessDenied", "UnrecognizedClient", "ExpiredToken", "InvalidSignature", "IncompleteSignature",
		"MissingAuthenticationToken", "InvalidClientTokenId", "NotAuthorized", "SignatureDoesNotMatch":
		return true
	}
	return false
}

// promptTooLong reports whether a ValidationException says the input does
// not fit the model: Bedrock's "Input is too long for requested model.",
// Claude's "prompt is too long: 215000 tokens > 200000 maximum" and
// "input length and `max_tokens` exceed context limit", and the
// "maximum context length is N tokens" of OpenAI's models and others.
func promptTooLong(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"input is too long", "prompt is too long", "exceed context limit", "too many input tokens", "maximum context length"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
