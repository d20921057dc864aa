package router

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// cannedStream is an HTTP transport that answers every request with the
// same event stream at once, in process: a benchmark of it measures the
// client's reading of the answer, not a network.
type cannedStream []byte

func (c cannedStream) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:    io.NopCloser(bytes.NewReader(c)),
		Request: r, ContentLength: int64(len(c))}, nil
}

// sseBody frames events as a service sends them.
func sseBody(events []string) cannedStream {
	return cannedStream(strings.Join(events, "\n\n") + "\n\n")
}

// BenchmarkStreamDecode: one call of each client whose answer streams a
// reply of 100 text deltas (then a tool call, for OpenAI, and the usage),
// answered in process (cannedStream): the reading and decoding of the
// stream, with the request's body and the HTTP client's own work around
// it. allocs/op and B/op are the figures to watch.
func BenchmarkStreamDecode(b *testing.B) {
	const deltas = 100
	var oai, ant []string
	oai = append(oai, oaiDelta(`{"role":"assistant","content":"","refusal":null}`, ""))
	ant = append(ant, antStart, antTextStart)
	for i := range deltas {
		word := fmt.Sprintf(" word%d", i)
		oai = append(oai, oaiDelta(`{"content":"`+word+`"}`, ""))
		ant = append(ant, antText(0, word))
	}
	oai = append(oai, oaiDelta(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"note","arguments":"{\"text\":\"x\"}"}}]}`, ""),
		oaiDelta(`{}`, "tool_calls"), oaiUsage, "data: [DONE]")
	ant = append(ant, antStop0, antDelta("end_turn", 100), antMsgStop)
	for _, c := range []struct {
		name   string
		events []string
		make   func(ClientOptions) (Provider, error)
	}{
		{"openai", oai, func(o ClientOptions) (Provider, error) { return NewOpenAI(o) }},
		{"anthropic", ant, func(o ClientOptions) (Provider, error) { return NewAnthropic(o) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			p, err := c.make(ClientOptions{BaseURL: "http://model.invalid/v1", Model: "m", APIKey: "k",
				HTTPClient: &http.Client{Transport: sseBody(c.events)}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := p.Complete(b.Context(), buyINFY)
				if err != nil {
					b.Fatal(err)
				}
				if !strings.HasSuffix(resp.Text, fmt.Sprintf(" word%d", deltas-1)) {
					b.Fatalf("reply %q", resp.Text)
				}
			}
		})
	}
}
