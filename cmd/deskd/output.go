package main

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/deskd/deskd/desk/termsafe"
)

// printJSON prints v as indented JSON, with the characters that could act
// on a terminal escaped (termsafe.JSON): still JSON, of the same value.
func printJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termsafe.JSON(b.Bytes()))
	return err
}
