package main

import "github.com/deskd/deskd/desk/httpapi"

// renderOpenAPI renders docs/openapi.json: the OpenAPI 3.1 description
// of the HTTP API that GET /v1/openapi.json serves (httpapi.OpenAPI),
// built from the code, so root is not read.
func renderOpenAPI(string) ([]byte, error) { return httpapi.OpenAPI() }
