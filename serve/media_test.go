package serve_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/serve"
)

// A message's attachments (base64 images and PDFs) reach the model with
// its text, which names them; bad ones are 400s naming them, a body over
// the message cap a 413, and none of them starts a turn.
func TestMessageAttachments(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{MaxMessageBody: 256 << 10})
	f.model.Script("s", script.Text("A grey button."))
	f.json("POST", "/v1/sessions", `{"id": "s"}`, 201)
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 30, 20))); err != nil {
		t.Fatal(err)
	}
	data := base64.StdEncoding.EncodeToString(b.Bytes())
	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{`{"text": "hi", "attachments": [{"data": "bm90IGFuIGltYWdl", "name": "x.png"}]}`, 400, `"field":"attachments[0]"`},
		{`{"text": "hi", "attachments": [{"media_type": "image/png"}]}`, 400, "data is empty"},
		{`{"text": "hi", "attachments": [{"data": "%%%"}]}`, 400, "base64"},
		{`{"text": "hi", "attachments": [{"data": "` + strings.Repeat("A", 300<<10) + `"}]}`, 413, "too_large"},
	} {
		if code, body := f.do("POST", "/v1/sessions/s/messages", tc.body); code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%.60s: %d %s", tc.body, code, body)
		}
	}
	if n := len(f.model.CallsTo("s")); n != 0 {
		t.Fatalf("a refused message reached the model: %d calls", n)
	}
	turn := f.json("POST", "/v1/sessions/s/messages", `{"text": "Why is it grey?", "attachments": [{"media_type": "image/jpeg", "data": "`+data+`", "name": "shot.png"}]}`, 202)["turn_id"].(string)
	f.events("/v1/sessions/s/turns/"+turn+"/events", "", completed)
	calls := f.model.CallsTo("s")
	if len(calls) != 1 {
		t.Fatalf("%d model calls", len(calls))
	}
	in := calls[0].Messages[len(calls[0].Messages)-1]
	var img *llm.Media
	for _, bl := range in.Content {
		if bl.Type == llm.BlockImage {
			img = bl.Media
		}
	}
	if img == nil || !bytes.Equal(img.Data, b.Bytes()) || img.MediaType != llm.MediaPNG ||
		!strings.Contains(in.Text(), "Attached: image/png 30×20") || !strings.Contains(in.Text(), "Sent as image/jpeg, it is image/png") {
		t.Errorf("the model was sent %+v", in)
	}
	// The turn's events name it, without its bytes; the API gives the
	// bytes by its digest, as an image, in a sandbox.
	evs := f.events("/v1/sessions/s/turns/"+turn+"/events", "", completed)
	var digest string
	for _, e := range evs {
		if e.name == "turn_started" {
			if as, _ := e.data["attachments"].([]any); len(as) == 1 {
				a := as[0].(map[string]any)
				digest, _ = a["digest"].(string)
				if a["media_type"] != "image/png" || a["width"] != 30.0 || a["name"] != "shot.png" {
					t.Errorf("turn_started's attachment %v", a)
				}
			}
		}
		if raw, _ := json.Marshal(e.data); bytes.Contains(raw, []byte(data[:40])) {
			t.Errorf("event %s carries the bytes", e.name)
		}
	}
	if digest == "" {
		t.Fatalf("no attachment in turn_started: %v", evs)
	}
	code, body := f.do("GET", "/v1/sessions/s/attachments/"+digest, "")
	if code != 200 || body != b.String() {
		t.Errorf("GET attachment: %d, %d bytes", code, len(body))
	}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", f.http.URL+"/v1/sessions/s/attachments/"+digest, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "image/png" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v", resp.Header)
	}
	for _, p := range []string{"/v1/sessions/s/attachments/sha256:00", "/v1/sessions/nope/attachments/" + digest} {
		if code, _ := f.do("GET", p, ""); code != 404 {
			t.Errorf("GET %s: %d", p, code)
		}
	}
}
