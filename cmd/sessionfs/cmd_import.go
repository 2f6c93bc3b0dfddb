package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/session"
	"github.com/sessionfs/sessionfs/travel"
)

// importOptions are import's flags: an agent's conversations, or (--archive) a session from an export.
type importOptions struct {
	conversations agents.ImportOptions
	agent         string
	json          bool
	archive       string
	maxBytes      string
	restore       travel.ImportOptions // --archive's
}

func (a *app) importCmd() *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import [--agent AGENT] [--from ~/.claude] [--project PATH] [--into ID] [--dry-run] | --archive FILE [--as ID]",
		Short: "Adopt existing Claude Code history, or restore a session from an export (--archive)",
		Long: `import copies each conversation (projects/<folder>/<uuid>.jsonl with its <uuid>/ folder) of a Claude Code
config dir into a session's transcript folder, keeping modification times, and records the cwds it ran in.
Each conversation gets a session named by its uuid, or all go into one with --into. The originals are only
read. Running it again copies only what is new or has grown. Files that are not transcripts are reported and
skipped.

--agent codex|gemini|qwen|pi imports that agent's conversations instead, from its folder (default: its
variable's, else ~/.codex, ~/.gemini, ~/.qwen, ~/.pi/agent): Codex's rollouts by date as they were, Gemini's,
Qwen's and pi's chats into the folder of /session/workspace. --project keeps those run in PATH or below
(Gemini's: filed under PATH's folder).

--agent opencode imports from opencode's database (--from: the database file, or the folder holding
opencode.db; default $XDG_DATA_HOME/opencode, else ~/.local/share/opencode), read from a private copy (an
opencode running meanwhile is not disturbed): each conversation with its subagents' sessions, messages, parts,
events and project, never a login (the account, credential and control_account tables) nor a share's secret.
A session with no opencode database gets one holding only what was imported; into one it has, the rows are
merged in one transaction, refused if it is another opencode version's (its schema differs). A conversation
is copied again only when the source has it newer than the session. Its cwd stays as it was: each launch
moves it to the cwd opencode starts in.

With --archive, import restores a session written by "sessionfs export" (FILE, or - for stdin), as --as ID
or under its own id. A damaged or hostile archive (absolute names, "..", links leading out of the session,
device files, more than --max-bytes of content or --max-files entries) is refused and leaves nothing behind.`,
		Example: `  sessionfs import                              # all of ~/.claude
  sessionfs import --project ~/src/webapp --into webapp
  sessionfs import --from /backup/.claude --dry-run
  sessionfs import --agent codex --project ~/src/webapp --into webapp
  sessionfs import --agent opencode --project ~/src/webapp
  sessionfs import --archive fix-login.tar.zst --as fix-login-2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(cmd.Flags().Changed("agent")); err != nil {
				return err
			}
			if o.archive != "" {
				return a.importArchive(cmd.OutOrStdout(), o.archive, o.restore)
			}
			return a.importConversations(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.conversations.From, "from", "", "the Claude Code config dir to read (default ~/.claude), or the agent's folder (opencode's: its database or the folder holding it)")
	f.StringVar(&o.conversations.Project, "project", "", "only conversations of this project folder")
	f.StringVar(&o.conversations.Into, "into", "", "gather the conversations into this session")
	f.BoolVarP(&o.conversations.DryRun, "dry-run", "n", false, "say what would be imported, change nothing")
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	agentFlag(cmd, &o.agent, "whose history to import (claude, codex, gemini, qwen, opencode, pi, kimi, copilot)")
	f.StringVar(&o.archive, "archive", "", "restore a session from an archive of sessionfs export (- for stdin)")
	f.StringVar(&o.restore.As, "as", "", "the restored session's id (default: the archive's)")
	f.StringVar(&o.maxBytes, "max-bytes", humanize.IBytes(travel.DefaultMaxBytes), "refuse an archive holding more content")
	f.IntVar(&o.restore.MaxFiles, "max-files", travel.DefaultMaxFiles, "refuse an archive holding more entries")
	return cmd
}

// check refuses flags of one kind of import given to the other (agentSet: --agent was given), and reads
// --max-bytes.
func (o *importOptions) check(agentSet bool) error {
	if o.archive == "" {
		if o.restore.As != "" {
			return usageError("import: --as goes with --archive (--into gathers conversations)")
		}
		return nil
	}
	c := o.conversations
	if agentSet || c.From != "" || c.Project != "" || c.Into != "" || c.DryRun || o.json {
		return usageError("import: --archive takes only --as, --max-bytes and --max-files")
	}
	n, err := humanize.ParseBytes(o.maxBytes)
	if err != nil || n > 1<<62 {
		return usageError(fmt.Sprintf("import: --max-bytes %q: want a size such as 64GiB", o.maxBytes))
	}
	o.restore.MaxBytes = int64(n)
	return nil
}

// importConversations is import without --archive: the conversations of Claude Code, or of --agent.
func (a *app) importConversations(w io.Writer, o importOptions) error {
	ag, err := checkAgent(o.agent)
	if err != nil {
		return err
	}
	s, err := a.createStore()
	if err != nil {
		return err
	}
	opts := o.conversations
	opts.Sessions = session.Maker{Store: s, Mountpoint: mountpoint(s)} // seeded as every session is
	if ag != claude.Agent {
		return importAgent(w, s, ag, opts, o.json)
	}
	if opts.From == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return err
		}
		opts.From = filepath.Join(home, ".claude")
	}
	var finish func()
	opts.Progress, finish = countBar("importing", o.json)
	defer finish()
	rep, err := claude.Import(s, opts)
	if err != nil {
		return err
	}
	return printImportReport(w, rep, opts.DryRun, "conversation", o.json)
}

// importAgent is "import --agent": agent a's conversations, reported as Claude's are.
func importAgent(w io.Writer, s *layout.Store, a *agents.Agent, opts agents.ImportOptions, asJSON bool) error {
	opts.Agent = a
	run := a.Import // an agent of its own kind (opencode's database); its own default --from
	if run == nil {
		run = agents.Import
		if opts.From == "" {
			home, err := a.Home()
			if err != nil {
				return err
			}
			opts.From = home
		}
	}
	rep, err := run(s, opts)
	if err != nil {
		return err
	}
	return printImportReport(w, rep, opts.DryRun, a.Name+" conversation", asJSON)
}

// printImportReport prints what an import of conversations (what: "conversation", "codex conversation") did,
// or would do (dryRun): the files it skipped on stderr, one line each.
func printImportReport(w io.Writer, rep agents.ImportReport, dryRun bool, what string, asJSON bool) error {
	if asJSON {
		rep.Sessions, rep.Imported = orEmpty(rep.Sessions), orEmpty(rep.Imported)
		rep.Unchanged, rep.Malformed = orEmpty(rep.Unchanged), orEmpty(rep.Malformed)
		return printJSON(w, rep)
	}
	for _, m := range rep.Malformed {
		fmt.Fprintf(os.Stderr, "sessionfs: skipped %s\n", oneLine(m))
	}
	verb := "imported"
	if dryRun {
		verb = "would import"
	}
	fmt.Fprintf(w, "%s %s (%d unchanged) into %s; %s skipped\n", verb, plural(len(rep.Imported), what),
		len(rep.Unchanged), plural(len(rep.Sessions), "new session"), plural(len(rep.Malformed), "file"))
	return nil
}

// importArchive is "import --archive FILE": a session restored from an export.
func (a *app) importArchive(w io.Writer, file string, opts travel.ImportOptions) error {
	s, err := a.createStore()
	if err != nil {
		return err
	}
	var r io.Reader = os.Stdin
	var total int64 = -1
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			total = st.Size()
		}
		r = f
	}
	// The bar follows the archive read (its size is known); the description counts what is restored.
	read := &countingReader{r: r}
	bar := newBar("importing")
	opts.Progress = func(done travel.Counts) { bar.updateRead(read.n, total, done) }
	ctx, stop := interruptible()
	defer stop()
	start := time.Now()
	id, done, err := travel.Import(ctx, s, read, opts)
	bar.finish()
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("import %s: interrupted; nothing was imported", file)
	}
	if err != nil {
		if errors.Is(err, travel.ErrRefused) {
			return fmt.Errorf("import %s: %w; nothing was imported", file, err)
		}
		if errors.Is(err, layout.ErrExists) {
			return fmt.Errorf("%w (--as NEW imports it under another id)", err)
		}
		return fmt.Errorf("import %s: %w", file, err)
	}
	fmt.Fprintf(w, "imported %s: %s, %s in %s\n", id, entries(done.Files),
		humanize.IBytes(uint64(done.Bytes)), time.Since(start).Round(time.Millisecond))
	return nil
}
