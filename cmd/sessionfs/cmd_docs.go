//go:build !nobackends

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/sessionfs/sessionfs/internal/lazyregexp"
)

// The CLI reference (docs/cli/*.md, one page per command, sessionfs.md the index) and the man pages (man/*.1) are
// generated from the commands by "make docs", which runs the hidden "sessionfs __docs DIR"; TestDocsUpToDate fails
// when the checked-in ones differ from what the commands say now.

// docsDirs are where the pages go, beneath the repository's root.
const (
	docsMarkdownDir = "docs/cli"
	docsManDir      = "man"
)

// docsEnv is the environment the pages are generated in: defaults taken from the environment (the home folder,
// $XDG_*, this host's name) read the same for everyone, so the output does not depend on who ran make docs.
var docsEnv = map[string]string{
	"HOME": "~", "XDG_STATE_HOME": "", "XDG_DATA_HOME": "", "XDG_CONFIG_HOME": "", "NODE_ID": "$(hostname)",
	"CSI_ENDPOINT": "", "SESSIONFS_STORE": "", "SESSIONFS_CONFINE": "", "SESSIONFS_SECCOMP": "",
}

func docsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    docsCommand + " DIR",
		Short:  "Write the CLI reference and man pages beneath DIR (make docs)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			for k, v := range docsEnv {
				os.Setenv(k, v)
			}
			return writeDocs(args[0])
		},
	}
}

// writeDocs replaces the pages beneath root (docs/cli/sessionfs*.md, man/sessionfs*.1) with those of the commands
// as they are: a page of a command that is gone goes too.
func writeDocs(root string) error {
	md, man := filepath.Join(root, docsMarkdownDir), filepath.Join(root, docsManDir)
	for _, d := range []string{md, man} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, pattern := range []string{filepath.Join(md, "sessionfs*.md"), filepath.Join(man, "sessionfs*.1")} {
		old, _ := filepath.Glob(pattern)
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	if err := doc.GenMarkdownTree(docsTree(false), md); err != nil {
		return fmt.Errorf("docs: %w", err)
	}
	return writeManTree(docsTree(true), man)
}

// docsTree is the command tree as the pages show it: help texts written for a terminal made Markdown (a man page's
// flags are Markdown too, a reference page's are shown as written), with no generator's date.
func docsTree(man bool) *cobra.Command {
	root := newRootCmd()
	root.InitDefaultCompletionCmd()
	root.Long += "\n\n" + commandIndex(root)
	if !man { // the man page gives it its own section (writeManTree)
		root.Long += "\n\n" + exitStatus
	}
	escaped := map[*pflag.Flag]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		c.Short = mdEscape(c.Short)
		c.Long = plainToMarkdown(c.Long)
		if man {
			for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
				fs.VisitAll(func(f *pflag.Flag) {
					if !escaped[f] {
						escaped[f] = true
						f.Usage = mdEscape(f.Usage)
					}
				})
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}

// commandIndex lists the commands with their one-line summaries, for the pages of the root command (cobra's
// SEE ALSO names them only).
func commandIndex(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString("Commands:\n")
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() && !c.IsAdditionalHelpTopicCommand() {
			fmt.Fprintf(&b, "\n  %-11s %s", c.Name(), c.Short)
		}
	}
	return b.String()
}

// exitStatus is the EXIT STATUS the pages of the root command give: docker's rule, and grep's for search.
const exitStatus = `Exit status: 0 when the command succeeded. 125 when sessionfs itself failed: bad usage, a session that does
not exist, an engine it cannot reach, a turn the session did not record. exec, run and resume exit with the status
of the command they ran, as docker run does: 126 when it cannot be executed, 127 when it is not found. search
exits as grep does: 1 when nothing matched, 2 for a query it cannot read.`

// manDate is the date cobra writes in each page's .TH line, taken out again (the pages must not change by the day).
var manDate = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// writeManTree writes a page per available command, sessionfs-<command>-<subcommand>.1, as cobra's GenManTree
// does, with the .TH line's date left empty.
func writeManTree(c *cobra.Command, dir string) error {
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			if err := writeManTree(sub, dir); err != nil {
				return err
			}
		}
	}
	var b bytes.Buffer
	date := manDate
	header := &doc.GenManHeader{Section: "1", Date: &date, Source: "sessionfs", Manual: "sessionfs manual"}
	if err := doc.GenMan(c, header, &b); err != nil {
		return fmt.Errorf("man page of %s: %w", c.CommandPath(), err)
	}
	page := strings.Replace(b.String(), `"`+manDate.Format("Jan 2006")+`"`, `""`, 1)
	if !c.HasParent() {
		page = strings.Replace(page, ".SH OPTIONS", ".SH EXIT STATUS\n.PP\n"+strings.TrimPrefix(strings.ReplaceAll(exitStatus, "\n", " "), "Exit status: ")+"\n\n.SH OPTIONS", 1)
	}
	name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
	return os.WriteFile(filepath.Join(dir, name), []byte(page), 0o644)
}

// mdLineStart is what, at a line's start, Markdown (or go-md2man's reader of it) would take for a list item, a
// heading, a heading's rule or a definition.
var mdLineStart = lazyregexp.New(`^([-+*] |[-+*]$|\d+[.)]( |$)|#|:|[-=]+$)`)

// mdEscape makes plain text read as itself in Markdown: the characters of markup and HTML escaped, except * and _
// inside a word (DOCKER_HOST), which Markdown leaves alone.
func mdEscape(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		var b strings.Builder
		r := []rune(line)
		for j, c := range r {
			switch c {
			case '*', '_':
				if j > 0 && j+1 < len(r) && isWordRune(r[j-1]) && isWordRune(r[j+1]) {
					break
				}
				b.WriteByte('\\')
			case '\\', '`', '[', ']', '<', '>', '~':
				b.WriteByte('\\')
			}
			b.WriteRune(c)
		}
		line = b.String()
		if m := mdLineStart.FindStringIndex(line); m != nil {
			k := strings.IndexAny(line[:m[1]], "-+*.)#:=")
			line = line[:k] + `\` + line[k:]
		}
		lines[i] = line
	}
	return strings.Join(lines, "\n")
}

// isWordRune reports whether r is a letter or a digit: what makes a * or _ intraword.
func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// shortLine is the length under which a line of a help text ending in "." was not filled by wrapping (they are
// wrapped at 105 to 120 columns).
const shortLine = 80

// plainToMarkdown turns a help text written for a terminal into Markdown: its prose escaped (wrapped lines join,
// as a man page reflows them), and its indented blocks (a table of backends, a YAML example, a list) kept as
// written in a code block.
func plainToMarkdown(s string) string {
	var out []string
	inBlock := false
	for _, line := range strings.Split(s, "\n") {
		indented := strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
		switch {
		case indented && !inBlock:
			if len(out) > 0 && out[len(out)-1] != "" {
				out = append(out, "")
			}
			out = append(out, "```", line)
			inBlock = true
		case indented:
			out = append(out, line)
		case inBlock:
			out = append(out, "```", "")
			inBlock = false
			fallthrough
		default:
			// A short line that ends a sentence ends its paragraph: the text goes on on a new line, not where
			// wrapping put it.
			if prev := len(out) - 1; line != "" && prev >= 0 && strings.HasSuffix(out[prev], ".") && len(out[prev]) < shortLine {
				out = append(out, "")
			}
			if line != "" || len(out) == 0 || out[len(out)-1] != "" {
				out = append(out, mdEscape(line))
			}
		}
	}
	if inBlock {
		out = append(out, "```")
	}
	return strings.Join(out, "\n")
}
