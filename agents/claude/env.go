package claude

import (
	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// EnvProjectDirName is agents.EnvClaudeProjectDirName (the e2e tests name it so).
const EnvProjectDirName = agents.EnvClaudeProjectDirName

// ProjectDirName is the value sessionfs gives agents.EnvClaudeProjectDirName: the canonical transcript folder.
const ProjectDirName = layout.CanonicalProject
