package mcp

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// strictTemplates makes each template's handler see only URIs the template
// really matches. mcp-go routes a read to a template whose regular
// expression matches the URI, which lets through query parameters the
// template does not name ("requests?page=2") or names twice
// ("domains?conversation=a&conversation=b"); it then fills in no variable
// at all, and the handler answered as if none had been given (the default
// conversation, or a misleading "is empty"). Such a read now gets an error
// that names what is wrong and the template's form.
func strictTemplates(ts ...mcpserver.ServerResourceTemplate) []mcpserver.ServerResourceTemplate {
	out := make([]mcpserver.ServerResourceTemplate, len(ts))
	for i, t := range ts {
		tpl, next := t.Template, t.Handler
		t.Handler = func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
			if err := checkTemplateMatch(tpl, req.Params.URI); err != nil {
				return nil, err
			}
			return next(ctx, req)
		}
		out[i] = t
	}
	return out
}

// queryVars finds a template's query expansion ("{?cursor,limit}").
var queryVars = regexp.MustCompile(`\{\?([^}]*)\}`)

// checkTemplateMatch returns an error when uri's query does not fit tpl
// (mcp-go matched its path): a parameter the template does not take, one
// given twice, or a query that does not parse.
func checkTemplateMatch(tpl mcpgo.ResourceTemplate, uri string) error {
	_, query, ok := strings.Cut(uri, "?")
	if !ok || tpl.URITemplate == nil {
		return nil
	}
	form := tpl.URITemplate.Raw()
	var allowed []string
	if m := queryVars.FindStringSubmatch(form); m != nil {
		allowed = strings.Split(m[1], ",")
	}
	values, err := url.ParseQuery(query)
	if err != nil {
		return fmt.Errorf("%s: invalid argument: its query does not parse (%v); the form is %s", uri, err, form)
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		switch {
		case !slices.Contains(allowed, name):
			takes := "no query parameters"
			if len(allowed) > 0 {
				takes = "only " + strings.Join(allowed, ", ")
			}
			return fmt.Errorf("%s: invalid argument: unknown query parameter %q (this resource takes %s; the form is %s)", uri, name, takes, form)
		case len(values[name]) > 1:
			return fmt.Errorf("%s: invalid argument: query parameter %q is given %d times; give it once (the form is %s)", uri, name, len(values[name]), form)
		}
	}
	return nil
}
