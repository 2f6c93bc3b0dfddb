package main

import (
	"fmt"
	"strings"

	"github.com/sessionfs/sessionfs/layout"
)

// maxCandidates bounds the ids an ambiguous prefix's error names.
const maxCandidates = 8

// resolveID turns what was typed for a session into its id: the id itself when such a session exists, else the
// one session whose id begins with it, as docker takes container ids. An ambiguous prefix is an error naming
// the candidates; no match is ErrNotFound.
func (a *app) resolveID(arg string) (string, error) {
	s, err := a.openStore()
	if err != nil {
		return "", err
	}
	if err := layout.ValidateID(arg); err != nil {
		return "", err
	}
	if s.Exists(arg) {
		return arg, nil
	}
	ids, err := s.IDs()
	if err != nil {
		return "", err
	}
	var matches []string
	for _, id := range ids {
		if strings.HasPrefix(id, arg) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return "", &layout.Error{Op: "open", ID: arg, Kind: layout.ErrNotFound}
	case 1:
		return matches[0], nil
	}
	named := matches
	more := ""
	if len(named) > maxCandidates {
		named, more = named[:maxCandidates], fmt.Sprintf(" and %d more", len(matches)-maxCandidates)
	}
	return "", fmt.Errorf("%q is the start of %d sessions: %s%s; type more of the id", arg, len(matches), strings.Join(named, ", "), more)
}
