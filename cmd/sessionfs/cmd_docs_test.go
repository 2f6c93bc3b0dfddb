//go:build !nobackends

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocsUpToDate fails when the checked-in CLI reference (docs/cli) or man pages (man) differ from what the
// commands say now: a help text changed without "make docs".
func TestDocsUpToDate(t *testing.T) {
	for k, v := range docsEnv {
		t.Setenv(k, v)
	}
	fresh := t.TempDir()
	require.NoError(t, writeDocs(fresh))
	repo := filepath.Join("..", "..")
	for _, sub := range []struct{ dir, glob string }{{docsMarkdownDir, "sessionfs*.md"}, {docsManDir, "sessionfs*.1"}} {
		want := pages(t, filepath.Join(fresh, sub.dir), sub.glob)
		have := pages(t, filepath.Join(repo, sub.dir), sub.glob)
		require.NotEmpty(t, want, "the generator wrote no page in %s", sub.dir)
		var stale []string
		for name, text := range want {
			if have[name] != text {
				stale = append(stale, filepath.Join(sub.dir, name))
			}
		}
		for name := range have {
			if _, ok := want[name]; !ok {
				stale = append(stale, filepath.Join(sub.dir, name)+" (its command is gone)")
			}
		}
		slices.Sort(stale)
		assert.Empty(t, stale, "stale pages: run `make docs` and commit %s", sub.dir)
	}
}

// pages are the files of dir matching glob, by name.
func pages(t *testing.T, dir, glob string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, glob))
	require.NoError(t, err)
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		out[filepath.Base(f)] = string(b)
	}
	return out
}

// The pages do not change by the day, nor by who generates them.
func TestDocsReproducible(t *testing.T) {
	for k, v := range docsEnv {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	require.NoError(t, writeDocs(dir))
	for _, glob := range []string{"docs/cli/*.md", "man/*.1"} {
		files, _ := filepath.Glob(filepath.Join(dir, glob))
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			assert.NotContains(t, string(b), "Auto generated", f)
		}
	}
	exec, err := os.ReadFile(filepath.Join(dir, "man", "sessionfs-exec.1"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(exec), `.nh`+"\n"+`.TH "SESSIONFS-EXEC" "1" "" "sessionfs" "sessionfs manual"`), "%.200s", exec)
}

func TestPlainToMarkdown(t *testing.T) {
	in := "run starts CMD with <id>'s *files*:\n\n  local   on this host\n  docker  in a container\n\nThe exit code\n- is CMD's."
	want := "run starts CMD with \\<id\\>'s \\*files\\*:\n\n```\n  local   on this host\n  docker  in a container\n```\n\nThe exit code\n\\- is CMD's."
	assert.Equal(t, want, plainToMarkdown(in))
	long := strings.Repeat("wrapped ", 12) + "up to here.\nand on."
	assert.Equal(t, long, plainToMarkdown(long), "a line filled by wrapping goes on in the same paragraph")
	assert.Equal(t, "a short one.\n\nIt ends its paragraph.", plainToMarkdown("a short one.\nIt ends its paragraph."))
	assert.Equal(t, `1\. a \_b\_ \[c\]`, mdEscape("1. a _b_ [c]"))
}

// The root's pages list the commands with their summaries and say the exit status (issue 50: man sessionfs had
// neither).
func TestRootPagesIndexAndExitStatus(t *testing.T) {
	page, err := os.ReadFile("../../man/sessionfs.1")
	require.NoError(t, err)
	assert.Contains(t, string(page), ".SH EXIT STATUS")
	assert.Contains(t, string(page), "125 when sessionfs itself failed")
	assert.Regexp(t, `search +Find conversations of any agent`, string(page))
	md, err := os.ReadFile("../../docs/cli/sessionfs.md")
	require.NoError(t, err)
	assert.Contains(t, string(md), "Exit status: 0 when the command succeeded")
}
