package ui

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/internal/lazyregexp"
	"github.com/sessionfs/sessionfs/layout"
)

// sessionPage is one session: its conversations, what resumes them, its runs.
type sessionPage struct {
	page
	ID, Created, ForkedFrom, Damaged, Workspace string
	Labels                                      []string
	Conversations                               []convRow
	ConversationsErr                            string
	Resume                                      []resumeBlock
	Runs                                        []runRow
}

type convRow struct {
	Agent, ID, Href, Title, Last, LastISO, Size string
	Messages, Subagents                         int
}

type resumeBlock struct {
	Agent, Conversation string
	Commands            []resumeCommand
}

type resumeCommand struct{ Where, Line string }

type runRow struct {
	N                                              int
	Backend, Host, Start, StartISO, Duration, Exit string
	Command                                        string
}

// openSession opens session id of the request, answering 404 (and returning nil) when there is none.
func (s *Server) openSession(w http.ResponseWriter, id string) *layout.Dir {
	if layout.ValidateID(id) != nil || !s.o.Store.Exists(id) {
		s.errorPage(w, http.StatusNotFound, "no session is called "+one(id, maxName))
		return nil
	}
	sess, err := s.o.Store.OpenSession(id)
	if err != nil {
		s.errorPage(w, http.StatusNotFound, "session "+id+" could not be opened: "+one(err.Error(), maxLine))
		return nil
	}
	return sess
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sess := s.openSession(w, id)
	if sess == nil {
		return
	}
	defer sess.Close()
	m, err := s.o.Store.Get(id)
	damaged := ""
	if err != nil { // its conversations and workspace still show
		m, damaged = &layout.Meta{ID: id}, one(err.Error(), maxLine)
	}
	p := sessionPage{page: page{Title: "Session " + id}, ID: id, Created: when(m.Created), Damaged: damaged,
		ForkedFrom: one(m.ForkedFrom, maxName), Labels: labelList(m.Labels), Workspace: href("s", id, "w") + "/"}
	convs, err := all.SessionConversations(sess)
	if err != nil {
		p.ConversationsErr = "Some conversations could not be read: " + one(err.Error(), maxLine)
	}
	for _, c := range convs {
		p.Conversations = append(p.Conversations, convRow{Agent: c.Agent, ID: one(c.ID, maxName),
			Href: href("s", id, "c", c.Agent, c.ID), Title: one(c.FirstPrompt, maxTitle), Last: when(c.Last),
			LastISO: iso(c.Last), Size: size(c.Size), Messages: c.Messages, Subagents: c.Subagents})
		p.Resume = append(p.Resume, resumeBlock{Agent: c.Agent, Conversation: one(c.ID, maxName),
			Commands: s.resumeCommands(id, c)})
	}
	running := len(m.Runs) > 0 && s.o.Store.Running(id)
	for i, run := range m.Runs {
		p.Runs = append(p.Runs, runRowOf(m, i, run, running && i == len(m.Runs)-1))
	}
	s.render(w, http.StatusOK, "session", p)
}

func runRowOf(m *layout.Meta, i int, run layout.Run, running bool) runRow {
	row := runRow{N: m.RunNumber(i), Backend: one(run.Backend, maxName), Host: one(run.Host, maxName),
		Start: when(run.Start), StartISO: iso(run.Start), Command: one(strings.Join(run.Command, " "), maxLine)}
	switch {
	case !run.End.IsZero():
		row.Duration = run.End.Sub(run.Start).Round(time.Second).String()
		row.Exit = strconv.Itoa(run.ExitCode)
		if run.Error != "" {
			row.Exit += " (" + one(run.Error, maxName) + ")"
		}
	case running:
		row.Duration, row.Exit = "running for "+time.Since(run.Start).Round(time.Second).String(), "-"
	default:
		row.Duration, row.Exit = "unfinished", "-"
	}
	if run.Imported {
		row.Exit += " (imported)"
	}
	return row
}

// resumeCommands are the commands that resume conversation c of session id, as sessionfs resume takes them: on
// this host, in a container, and (Claude's, which runs without a terminal there) on Modal, those two only where
// the set-up can (Options.Docker, Options.Modal). Every word from the
// session is quoted for a shell: a conversation's id is the session's own writing.
func (s *Server) resumeCommands(id string, c agents.Conversation) []resumeCommand {
	if one(c.ID, maxName) != c.ID || one(id, maxName) != id {
		return nil // an id with a control character: nothing a terminal should be given to paste
	}
	conv := shellWord(c.ID)
	// The session is named: a fork's or an import's copy of a conversation is resumed where it is shown.
	held := shellWord(id) + " " + conv
	out := []resumeCommand{{"host", s.o.Command + " resume " + held}}
	if s.o.Docker != "" {
		out = append(out, resumeCommand{"docker", s.o.Command + " resume " + held + " --backend docker " + s.o.Docker})
	}
	if a, err := all.ByName(c.Agent); err == nil && a.Name == "claude" && s.o.Modal {
		argv := a.Resume(c.ID)
		for i := range argv {
			argv[i] = shellWord(argv[i])
		}
		out = append(out, resumeCommand{"Modal", s.o.Command + " run --backend modal " + shellWord(id) + " " +
			strings.Join(argv, " ") + " -p 'carry on'"})
	}
	return out
}

var plainWord = lazyregexp.New(`^[A-Za-z0-9._:/=@%+-]+$`)

// shellWord is s as one word for a POSIX shell: as is when plain, else single-quoted.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellWord is shellWord for cmd/sessionfs (the store's path in resume commands).
func ShellWord(s string) string { return shellWord(s) }
