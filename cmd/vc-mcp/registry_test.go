package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validateServerJSON validates doc against the MCP Registry's server.json
// schema vendored under testdata/registry.
func validateServerJSON(doc []byte) error {
	schemaPath := filepath.Join("..", "..", "testdata", "registry", "server.schema.json")
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	schemaDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json"
	if err := c.AddResource(url, schemaDoc); err != nil {
		return err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("compile schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	return sch.Validate(inst)
}
