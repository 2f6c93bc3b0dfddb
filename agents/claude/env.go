package claude

import "github.com/sessionfs/sessionfs/layout"

// ProjectDirName is the value sessionfs gives agents.EnvClaudeProjectDirName: the canonical transcript folder.
const ProjectDirName = layout.CanonicalProject
