package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/dustin/go-humanize"

	safetext "github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/internal/lazyregexp"
)

// printJSON prints v as indented JSON: what --json prints.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// orEmpty makes a nil list an empty one, so --json prints [] rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

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

// unknownField is text/template's error for a field the item does not have.
var unknownField = lazyregexp.New(`can't evaluate field (\w+) in type`)

// printFormatted prints one item through tmpl, on its own line.
func printFormatted(w io.Writer, tmpl *template.Template, item any) error {
	var b strings.Builder
	if err := tmpl.Execute(&b, item); err != nil {
		if m := unknownField.FindStringSubmatch(err.Error()); m != nil { // not Go's type names: the fields --help lists
			return usageError(fmt.Sprintf("--format: no field %s (the fields are --json's, Go-cased: --help lists them)", m[1]))
		}
		return fmt.Errorf("--format: %v", err)
	}
	_, err := fmt.Fprintln(w, b.String())
	return err
}

// warnf prints a warning on stderr: what went wrong beside a command that goes on.
func warnf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "sessionfs: warning: "+format+"\n", args...)
}

// oneLine keeps a text to one line, whatever the input held: what a session wrote (session.json's runs, labels,
// a first prompt, a settings key) reaches a person's terminal through it, so a control character (an escape
// sequence would retitle the window or write the clipboard) is shown as \xNN, never sent, and a character that
// reorders or hides text (a bidi override) as \uNNNN (text.OneLine).
func oneLine(s string) string { return safetext.OneLine(s, 0) }

// truncate keeps s to one line of at most n characters, an ellipsis marking a cut.
func truncate(s string, n int) string {
	r := []rune(oneLine(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// plural writes n things: "1 session", "3 sessions".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// entries writes n entries: "1 entry", "3 entries".
func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

// ago writes how long ago t was ("3 hours ago"), "-" for the zero time.
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return humanize.Time(t)
}

// orZero is the time t points to, or the zero time.
func orZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// labelText writes labels as ls and show print them: key=value, sorted, comma-separated.
func labelText(m map[string]string) string {
	kvs := make([]string, 0, len(m))
	for k, v := range m {
		kvs = append(kvs, k+"="+v)
	}
	sort.Strings(kvs)
	return oneLine(strings.Join(kvs, ",")) // session.json is the session's to write
}

// warnEach says each of warnings on stderr, as warnf does.
func warnEach(warnings []string) {
	for _, w := range warnings {
		warnf("%s", w)
	}
}

// fmtDuration writes a duration as a user would: 1h, not 1h0m0s.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
