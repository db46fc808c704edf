package bedrock_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/orca-agent/orca/llm/llmtest"
)

// The real Bedrock exchanges others recorded (charm.land/fantasy's
// providertests, Apache-2.0; see llmtest.RecordingsEnv) are InvokeModel
// calls with Anthropic's Messages body (/invoke, /invoke-with-response-stream),
// not Converse: there is no ConverseStream answer among them to replay
// through this client (recorded_test.go replays Pydantic AI's recorded
// ConverseStream answers). What they do hold is Bedrock's event-stream
// framing, which ConverseStream shares: the fake API frames its events as
// these recordings show Bedrock does — the same headers, in the same
// order, of the same types, and the padding field ("p", a prefix of the
// alphabet) in every payload — so that the client is tested against
// Bedrock's bytes, not only against the SDK's idea of them.
func TestFakeFramesAsBedrock(t *testing.T) {
	var fake []eventstream.Message
	for _, ev := range eventsOf(textAnswer("hi").resp) {
		fake = append(fake, frame(ev))
	}
	for _, path := range []string{
		"TestBedrockCommon/bedrock-anthropic-claude-sonnet-4-5/simple_streaming.yaml",
		"TestBedrockCommon/bedrock-anthropic-claude-sonnet-4-5/tool_streaming.yaml",
		"TestBedrockCommon/bedrock-anthropic-claude-opus-4-6/tool_streaming.yaml",
		"TestBedrockCommon/bedrock-anthropic-claude-haiku-4-5/tool_streaming.yaml",
		"TestBedrockBasicAuth/simple_streaming.yaml",
	} {
		t.Run(path, func(t *testing.T) {
			for i, ex := range llmtest.Recorded(t, path) {
				u, err := url.Parse(ex.URL)
				if err != nil || !strings.HasSuffix(u.Path, "/invoke-with-response-stream") {
					t.Fatalf("exchange %d: %s %s, not the InvokeModelWithResponseStream this test knows", i+1, ex.Method, ex.URL)
				}
				if ct := ex.Header.Get("Content-Type"); ct != "application/vnd.amazon.eventstream" {
					t.Errorf("exchange %d: Content-Type %q", i+1, ct)
				}
				r := bytes.NewReader(ex.ResponseBody)
				dec := eventstream.NewDecoder()
				n := 0
				for ; r.Len() > 0; n++ {
					msg, err := dec.Decode(r, nil)
					if err != nil {
						t.Fatalf("exchange %d, message %d: %v", i+1, n+1, err)
					}
					if got, want := shape(t, msg), shape(t, fake[n%len(fake)]); !reflect.DeepEqual(got, want) {
						t.Errorf("exchange %d, message %d: Bedrock framed %v, the fake %v", i+1, n+1, got, want)
					}
				}
				if n == 0 {
					t.Errorf("exchange %d: no message", i+1)
				}
			}
		})
	}
}

// shape is what the framing of msg is made of, but the event's name and
// its content: its headers' names, types and values (the event type left
// out), and whether the payload is a JSON object padded with "p".
func shape(t *testing.T, msg eventstream.Message) []string {
	t.Helper()
	var out []string
	for _, h := range msg.Headers {
		v := h.Value.String()
		if h.Name == ":event-type" {
			v = "…"
		}
		out = append(out, h.Name+" "+typeOf(h.Value)+" "+v)
	}
	var payload map[string]any
	if err := json.Unmarshal(msg.Payload, &payload); err != nil {
		t.Fatalf("a payload that is not a JSON object: %s", msg.Payload)
	}
	p, _ := payload["p"].(string)
	out = append(out, "padded "+boolString(p != "" && strings.HasPrefix("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", p)))
	return out
}

func typeOf(v eventstream.Value) string {
	if _, ok := v.(eventstream.StringValue); ok {
		return "string"
	}
	return "other"
}

func boolString(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
