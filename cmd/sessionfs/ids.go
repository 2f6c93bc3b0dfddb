package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/internal/lazyregexp"
	"github.com/sessionfs/sessionfs/layout"
)

// maxCandidates bounds the ids an ambiguous prefix's error names.
const maxCandidates = 8

// generatedID is the shape of the ids sessionfs makes (layout.NewID): only those are taken by a prefix, as docker
// takes prefixes of its hex ids and never of names: a name a person chose ("web") is not the start of another
// ("web-old").
var generatedID = lazyregexp.New(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$`)

// resolveID turns what was typed for a session into its id: the id itself when such a session exists, else the
// one generated id that begins with it, which it names on stderr. An ambiguous prefix is an error naming the
// candidates; no match is ErrNotFound. Commands that change or remove a session take whole ids (exactID).
func (a *app) resolveID(arg string) (string, error) {
	id, matches, err := a.lookupID(arg)
	if err != nil || id != "" {
		return id, err
	}
	var generated []string
	for _, m := range matches {
		if generatedID.MatchString(m) {
			generated = append(generated, m)
		}
	}
	switch len(generated) {
	case 0:
		return "", a.notFound(arg, matches)
	case 1:
		fmt.Fprintf(os.Stderr, "sessionfs: %s is session %s\n", arg, generated[0])
		return generated[0], nil
	}
	named := generated
	more := ""
	if len(named) > maxCandidates {
		named, more = named[:maxCandidates], fmt.Sprintf(" and %d more", len(generated)-maxCandidates)
	}
	return "", fmt.Errorf("%q is the start of %d sessions: %s%s; type more of the id", arg, len(generated), strings.Join(named, ", "), more)
}

// exactID is arg when a session of that id exists: rm, rename, label and trash restore act on no guess.
func (a *app) exactID(arg string) (string, error) {
	id, matches, err := a.lookupID(arg)
	if err != nil || id != "" {
		return id, err
	}
	return "", a.notFound(arg, matches)
}

// session opens the store and reads session arg (an id, or an unambiguous start of a generated one: resolveID).
func (a *app) session(arg string) (*layout.Store, *layout.Meta, error) {
	id, err := a.resolveID(arg)
	if err != nil {
		return nil, nil, err
	}
	m, err := a.store.Get(id)
	return a.store, m, repairHint(a.store, id, err)
}

// repairHint adds to a damaged session's error what to do about it: repair its session.json, or remove it.
func repairHint(s *layout.Store, id string, err error) error {
	if !errors.Is(err, layout.ErrDamaged) {
		return err
	}
	return fmt.Errorf("%w; repair %s (JSON, as another session's), or move the session to the trash: sessionfs rm %s",
		err, filepath.Join(s.Dir(id), "session.json"), id)
}

// exactSession is session for commands that change it: arg is taken whole (exactID).
func (a *app) exactSession(arg string) (*layout.Store, *layout.Meta, error) {
	id, err := a.exactID(arg)
	if err != nil {
		return nil, nil, err
	}
	m, err := a.store.Get(id)
	return a.store, m, repairHint(a.store, id, err)
}

// lookupID returns arg if a session of that id exists, else the ids that begin with it.
func (a *app) lookupID(arg string) (id string, matches []string, err error) {
	s, err := a.openStore()
	if err != nil {
		return "", nil, err
	}
	if err := layout.ValidateID(arg); err != nil {
		return "", nil, err
	}
	if s.Exists(arg) {
		return arg, nil, nil
	}
	ids, err := s.IDs()
	if err != nil {
		return "", nil, err
	}
	for _, id := range ids {
		if strings.HasPrefix(id, arg) {
			matches = append(matches, id)
		}
	}
	return "", matches, nil
}

// notFound says no session is arg, naming the sessions whose ids begin with it, else those close to it (another
// case, or a letter or two off: "scrach" for "scratch"), as a person who mistyped wants.
func (a *app) notFound(arg string, matches []string) error {
	err := &layout.Error{Op: "open", ID: arg, Kind: layout.ErrNotFound}
	hint := " a name is taken whole"
	if len(matches) == 0 {
		ids, _ := a.store.IDs()
		matches, hint = closeIDs(arg, ids), ""
	}
	if len(matches) == 0 {
		return err
	}
	if len(matches) > maxCandidates {
		matches = append(matches[:maxCandidates:maxCandidates], "...")
	}
	return fmt.Errorf("%w (did you mean %s?%s)", err, strings.Join(matches, ", "), hint)
}

// closeIDs are the ids of ids close to arg, closest first: the same but for case, beginning with it but for case,
// or within a small edit distance (1 for up to 4 characters, else 2).
func closeIDs(arg string, ids []string) []string {
	type near struct {
		id   string
		dist int
	}
	low := strings.ToLower(arg)
	limit := 1
	if len([]rune(arg)) > 4 {
		limit = 2
	}
	var found []near
	for _, id := range ids {
		lid := strings.ToLower(id)
		switch d := editDistance(low, lid); {
		case d <= limit:
			found = append(found, near{id, d})
		case len(low) >= 3 && strings.HasPrefix(lid, low):
			found = append(found, near{id, limit + 1})
		}
	}
	slices.SortStableFunc(found, func(x, y near) int { return x.dist - y.dist })
	out := make([]string, len(found))
	for i, n := range found {
		out[i] = n.id
	}
	return out
}

// editDistance is the distance of a and b in runes, a swap of two neighbours counting one edit as an insertion,
// a deletion or a change does (optimal string alignment): "dmeo" is one edit from "demo", not two.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	before, prev, cur := make([]int, len(rb)+1), make([]int, len(rb)+1), make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], before[j-2]+1)
			}
		}
		before, prev, cur = prev, cur, before
	}
	return prev[len(rb)]
}

// minConversationPrefix is the shortest start of a conversation id taken for the whole (watch prints 8; of an
// opencode id, the 8 after "ses_").
const minConversationPrefix = 4

// expandConversation turns an unambiguous start of a conversation id (of any agent, in any session) into the
// whole id, naming it on stderr. What matches nothing is returned as given (the caller reports it); a start that
// matches several is an error naming them.
func expandConversation(s *layout.Store, arg string) (string, error) {
	if len(arg) < minConversationPrefix || layout.ValidateID(arg) != nil {
		return arg, nil
	}
	found, err := conversationIDs(s, mayBeConversation(arg), func(c agents.Conversation) bool { return startsConversation(c, arg) })
	if err != nil {
		return "", err
	}
	return pickPrefix(arg, found, "conversation")
}

// conversationIDs are the ids of the conversations (of any agent, in any session) that keep takes, sorted, each
// once. It looks only in the sessions the store's index says may hold one whose id may accepts (every session when
// the index cannot be read).
func conversationIDs(s *layout.Store, may func(conv string) bool, keep func(agents.Conversation) bool) ([]string, error) {
	ids, err := s.ConversationCandidates(may)
	if err != nil {
		if ids, err = s.IDs(); err != nil {
			return nil, err
		}
	}
	found := map[string]bool{}
	for _, id := range ids {
		sess, err := s.OpenSession(id)
		if err != nil {
			continue
		}
		cs, _ := all.SessionConversations(sess)
		sess.Close()
		for _, c := range cs {
			if keep(c) {
				found[c.ID] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(found)), nil
}

// startsConversation reports whether arg starts conversation c's id, or its id without the prefix every id of its
// agent has (opencode's "ses_": watch prints what follows).
func startsConversation(c agents.Conversation, arg string) bool {
	id, arg := strings.ToLower(c.ID), strings.ToLower(arg)
	if strings.HasPrefix(id, arg) {
		return true
	}
	a, err := all.ByName(c.Agent)
	return err == nil && a.IDPrefix != "" && strings.HasPrefix(id, strings.ToLower(a.IDPrefix)+arg)
}

// pickPrefix is the one of matches that arg starts, said on stderr; arg itself when nothing matches.
func pickPrefix(arg string, matches []string, what string) (string, error) {
	switch len(matches) {
	case 0:
		return arg, nil
	case 1:
		if matches[0] != arg {
			fmt.Fprintf(os.Stderr, "sessionfs: %s is %s %s\n", arg, what, matches[0])
		}
		return matches[0], nil
	}
	if slices.Contains(matches, arg) {
		return arg, nil
	}
	n, more := len(matches), ""
	if n > maxCandidates {
		matches, more = matches[:maxCandidates], fmt.Sprintf(" and %d more", n-maxCandidates)
	}
	return "", fmt.Errorf("%q is the start of %d %ss: %s%s; type more of the id", arg, n, what, strings.Join(matches, ", "), more)
}

// anyHolders is conversationHolders for a conversation of any agent: Claude's first, then the others' (a uuid
// is one agent's). It returns the agent's name.
func anyHolders(s *layout.Store, uuid string) ([]agents.Holder, string, error) {
	holders, err := conversationHolders(s, uuid)
	if !errors.Is(err, claude.ErrNoConversation) {
		return holders, claude.Agent.Name, err
	}
	others, aerr := all.Holders(s, uuid)
	if aerr != nil || len(others) == 0 {
		return nil, "", err
	}
	warnOtherHolders(uuid, others, "file")
	return others, others[0].Agent, nil
}

// conversationHolders returns the sessions holding Claude conversation uuid, the owner first, and names the
// others on stderr: a uuid in two sessions is never resolved silently.
func conversationHolders(s *layout.Store, uuid string) ([]agents.Holder, error) {
	holders, err := claude.Holders(s, uuid)
	if err != nil {
		return nil, err
	}
	if len(holders) == 0 {
		return nil, fmt.Errorf("conversation %s: %w", uuid, claude.ErrNoConversation)
	}
	warnOtherHolders(uuid, holders, "transcript")
	return holders, nil
}

// warnOtherHolders names on stderr the sessions holding conversation uuid besides its owner, holders[0], whose
// file (what) was made first.
func warnOtherHolders(uuid string, holders []agents.Holder, what string) {
	if len(holders) > 1 {
		warnf("conversation %s is also in session(s) %s; using %s, whose %s was made first (sessionfs resume %s %s carries on another's)",
			uuid, strings.Join(holderIDs(holders[1:]), ", "), holders[0].ID, what, holders[1].ID, uuid)
	}
}

// holderIDs are the ids of the sessions holders names ([] for none).
func holderIDs(holders []agents.Holder) []string {
	ids := []string{}
	for _, h := range holders {
		ids = append(ids, h.ID)
	}
	return ids
}

// suggestion is " (did you mean X?)" naming the sessions close to arg (closeIDs), or "": for the commands that
// say in words of their own that no session is arg (log, resume, search --session).
func (a *app) suggestion(arg string) string {
	s, err := a.openStore()
	if err != nil {
		return ""
	}
	ids, _ := s.IDs()
	matches := closeIDs(arg, ids)
	if len(matches) == 0 {
		return ""
	}
	if len(matches) > maxCandidates {
		matches = append(matches[:maxCandidates:maxCandidates], "...")
	}
	return fmt.Sprintf(" (did you mean %s?)", strings.Join(matches, ", "))
}
