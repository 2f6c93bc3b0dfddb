// Package all names every agent sessionfs hosts, each registered by one line of Agents, and answers for all of
// them at once: which one a name or a folder is, their conversations in a session, who holds one.
package all

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/codex"
	"github.com/sessionfs/sessionfs/agents/copilot"
	"github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/agents/kimi"
	"github.com/sessionfs/sessionfs/agents/opencode"
	"github.com/sessionfs/sessionfs/agents/pi"
	"github.com/sessionfs/sessionfs/agents/qwen"
	"github.com/sessionfs/sessionfs/layout"
)

// Agents lists the agents, Claude first.
var Agents = []*agents.Agent{
	claude.Agent,
	codex.Agent,
	gemini.Agent,
	qwen.Agent,
	opencode.Agent,
	pi.Agent,
	kimi.Agent,
	copilot.Agent,
}

// Names is the list --agent takes.
func Names() []string {
	out := make([]string, len(Agents))
	for i, a := range Agents {
		out[i] = a.Name
	}
	return out
}

// ByName returns the agent called name ("" is Claude).
func ByName(name string) (*agents.Agent, error) {
	if name == "" {
		return claude.Agent, nil
	}
	for _, a := range Agents {
		if a.Name == name {
			return a, nil
		}
	}
	return nil, fmt.Errorf("unknown agent %q (want %s)", name, strings.Join(Names(), ", "))
}

// ByDir returns the agent whose folder in a session is dir (".qwen"), or nil.
func ByDir(dir string) *agents.Agent {
	for _, a := range Agents {
		if a.Dir == dir {
			return a
		}
	}
	return nil
}

// SessionConversations lists every agent's conversations in the session open as sess, newest first.
func SessionConversations(sess *layout.Dir) ([]agents.Conversation, error) {
	return agents.SessionConversations(sess, Agents)
}

// CountConversations counts each agent's conversations in the session without reading them (ls lists thousands
// of sessions): agents with none are left out.
func CountConversations(sess *layout.Dir) map[string]int {
	out := map[string]int{}
	for _, a := range Agents {
		if n := a.CountConversations(sess); n > 0 {
			out[a.Name] = n
		}
	}
	return out
}

// Holders returns every session whose agents other than Claude hold conversation id, the owner first (Claude's
// owners are claude.Holders').
func Holders(store *layout.Store, id string) ([]agents.Holder, error) {
	return agents.Holders(store, id, Agents)
}

// HoldersAmong is Holders looking only in sessions ids.
func HoldersAmong(store *layout.Store, id string, ids []string) ([]agents.Holder, error) {
	return agents.HoldersAmong(store, id, Agents, ids)
}

// FileOf names the agent and the short conversation id of a conversation file of an agent other than Claude, rel
// being its path beneath the session folder; ok is false for every other file.
func FileOf(rel string) (a *agents.Agent, conv string, ok bool) {
	return agents.FileOf(Agents, rel)
}

// ChildVars are every agent's marks on the processes it starts (agents.Agent.ChildVars).
func ChildVars() []string {
	var out []string
	for _, a := range Agents {
		out = append(out, a.ChildVars...)
	}
	return out
}

// WithoutChildVars is env without any agent's marks on its children: an agent started with it is a session of its
// own, whichever agent's shell started sessionfs (exec typed in Claude Code's terminal, a tool's command).
func WithoutChildVars(env []string) []string {
	marks := ChildVars()
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(marks, k)
	})
}
