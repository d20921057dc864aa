package event

import (
	"encoding/json"
	"strconv"
)

// JSON is e as GET /v1/events's data and a NATS event message's body
// carry it: {"topic": "<topic>"} followed by the fields of e's own JSON.
// An event that does not encode (none of the catalogue's can fail) is its
// topic alone. It is built in one buffer of its final size.
func JSON(e Event) []byte {
	data, err := json.Marshal(e)
	if err != nil || len(data) < 2 {
		data = []byte(`{}`)
	}
	topic := e.Topic()
	out := make([]byte, 0, len(`{"topic":"",`)+len(topic)+len(data))
	out = append(out, `{"topic":`...)
	out = strconv.AppendQuote(out, topic)
	if len(data) > 2 {
		out = append(out, ',')
		return append(out, data[1:]...)
	}
	return append(out, '}')
}
