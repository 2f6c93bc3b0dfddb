package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/template"
)

// formatHelp is a --format flag's help: a Go template, as docker's --format, with an example of the command's
// own fields and one Go-cased field.
func formatHelp(example, goCased string) string {
	return "print each item through a Go template, e.g. '" + example + "' (fields as in --json, Go-cased: " + goCased +
		"; {{json .}} prints an item as JSON)"
}

// parseFormat compiles a --format template; what it prints ends with a newline per item.
func parseFormat(cmdName, text string) (*template.Template, error) {
	tmpl, err := template.New("format").Funcs(template.FuncMap{
		"json": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
		"join": strings.Join,
	}).Parse(text)
	if err != nil {
		return nil, usageError(fmt.Sprintf("%s --format: %v", cmdName, err))
	}
	return tmpl, nil
}

// printFormatted prints one item through tmpl, on its own line.
func printFormatted(w io.Writer, tmpl *template.Template, item any) error {
	var b strings.Builder
	if err := tmpl.Execute(&b, item); err != nil {
		return fmt.Errorf("--format: %v", err)
	}
	_, err := fmt.Fprintln(w, b.String())
	return err
}
