package event

import (
	"encoding/json"
	"strconv"
)

// JSON is e as GET /v1/events's data and a NATS event message's body
// carry it: {"topic": "<topic>"} followed by the fields of e's own JSON.
// An event that does not encode (none of the catalogue's can fail) is its
// topic alone.
func JSON(e Event) []byte {
	data, err := json.Marshal(e)
	if err != nil {
		data = []byte(`{}`)
	}
	head := `{"topic":` + strconv.Quote(e.Topic())
	if len(data) > 2 {
		return append([]byte(head+","), data[1:]...)
	}
	return []byte(head + "}")
}
