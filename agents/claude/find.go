package claude

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// ErrNoConversation is returned by Find when no session holds the conversation.
var ErrNoConversation = errors.New("no session holds that conversation")

// Which session owns a conversation is decided by the store, not by what any session writes: the session whose
// transcript file was born first (agents.Less). by-claude-id, find and resume all follow this rule, and find
// lists the others. Before birth comes the fork rule (ordered): a fork's copies never take a conversation from
// the session it was forked from.

// Holders returns every session that holds conversation uuid, in any of its transcript folders (folded or not),
// the owner first. It reads the store beneath each session's descriptor, following no symlink.
func Holders(store *layout.Store, uuid string) ([]agents.Holder, error) {
	if layout.ValidateID(uuid) != nil {
		return nil, fmt.Errorf("%q: %w", uuid, ErrNoConversation)
	}
	ids, err := store.IDs()
	if err != nil {
		return nil, err
	}
	return HoldersAmong(store, uuid, ids)
}

// HoldersAmong is Holders looking only in sessions ids (those the store's index says may hold it).
func HoldersAmong(store *layout.Store, uuid string, ids []string) ([]agents.Holder, error) {
	if layout.ValidateID(uuid) != nil {
		return nil, fmt.Errorf("%q: %w", uuid, ErrNoConversation)
	}
	var out []agents.Holder
	for _, id := range ids {
		sess, err := store.OpenSession(id)
		if err != nil {
			continue
		}
		for _, folder := range projectFolders(sess) {
			rel := folder + "/" + uuid + ".jsonl"
			if born, ok := sess.Born(rel); ok {
				out = append(out, agents.Holder{ID: id, Rel: rel, Born: born, Agent: name})
			}
		}
		sess.Close()
	}
	return ordered(out, forkedFrom(store)), nil
}

// forkedFrom returns a function that reads which session a session was forked from, each session.json once.
func forkedFrom(store *layout.Store) func(id string) string {
	memo := map[string]string{}
	return func(id string) string {
		p, ok := memo[id]
		if !ok {
			if m, err := store.Get(id); err == nil {
				p = m.ForkedFrom
			}
			memo[id] = p
		}
		return p
	}
}

// ordered sorts the holders of one conversation, the owner first. A session forked from another holder comes
// after it, a fork of that fork after both (the depth of its fork chain among the holders), then birth decides:
// so the origin keeps its conversations whatever the filesystem says of birth times (where there are none, the
// change time of an appended transcript moves). forked_from is read from each fork's own session.json, so a
// session can only give a conversation away by it, never take one.
func ordered(hs []agents.Holder, forkedFrom func(id string) string) []agents.Holder {
	if len(hs) < 2 {
		return hs
	}
	parent := map[string]string{}
	for _, h := range hs {
		parent[h.ID] = forkedFrom(h.ID)
	}
	depth := func(id string) int {
		d, seen := 0, map[string]bool{id: true}
		for {
			p := parent[id]
			if _, holds := parent[p]; !holds || seen[p] {
				return d
			}
			id, d = p, d+1
			seen[id] = true
		}
	}
	depths := map[string]int{}
	for id := range parent {
		depths[id] = depth(id)
	}
	sort.Slice(hs, func(i, j int) bool {
		if di, dj := depths[hs[i].ID], depths[hs[j].ID]; di != dj {
			return di < dj
		}
		return agents.Less(hs[i], hs[j])
	})
	return hs
}

// Find returns the session that owns conversation uuid (see Holders).
func Find(store *layout.Store, uuid string) (string, error) {
	h, err := Holders(store, uuid)
	if err != nil {
		return "", err
	}
	if len(h) == 0 {
		return "", fmt.Errorf("conversation %s: %w", uuid, ErrNoConversation)
	}
	return h[0].ID, nil
}

// Index maps every conversation in the store to its owner (see Holders).
func Index(store *layout.Store) (map[string]agents.Holder, error) {
	ids, err := store.IDs()
	if err != nil {
		return nil, err
	}
	index := map[string]agents.Holder{}
	dups := map[string][]agents.Holder{} // conversations held by several sessions, for ordered
	for _, id := range ids {
		sess, err := store.OpenSession(id)
		if err != nil {
			continue
		}
		for _, folder := range projectFolders(sess) {
			ents, _ := sess.ReadDir(folder)
			for _, e := range ents {
				uuid, ok := strings.CutSuffix(e.Name(), ".jsonl")
				if !ok || !e.Type().IsRegular() || layout.ValidateID(uuid) != nil {
					continue
				}
				rel := folder + "/" + e.Name()
				born, ok := sess.Born(rel)
				if !ok {
					continue
				}
				h := agents.Holder{ID: id, Rel: rel, Born: born, Agent: name}
				if cur, dup := index[uuid]; dup {
					if dups[uuid] == nil {
						dups[uuid] = []agents.Holder{cur}
					}
					dups[uuid] = append(dups[uuid], h)
					continue
				}
				index[uuid] = h
			}
		}
		sess.Close()
	}
	parents := forkedFrom(store)
	for uuid, hs := range dups {
		index[uuid] = ordered(hs, parents)[0]
	}
	return index, nil
}

// Holds reports whether h's transcript is still in its session.
func Holds(store *layout.Store, h agents.Holder) bool {
	sess, err := store.OpenSession(h.ID)
	if err != nil {
		return false
	}
	defer sess.Close()
	_, ok := sess.Born(h.Rel)
	return ok
}

// projectFolders lists the session's transcript folders: the canonical one first, then those not yet folded
// into it. Only real folders count (a symlink is never followed).
func projectFolders(sess *layout.Dir) []string {
	canonical := layout.ProjectsDir + "/" + layout.CanonicalProject
	out := []string{canonical}
	ents, _ := sess.ReadDir(layout.ProjectsDir)
	for _, e := range ents {
		if e.IsDir() && e.Name() != layout.CanonicalProject {
			out = append(out, layout.ProjectsDir+"/"+e.Name())
		}
	}
	return out
}
