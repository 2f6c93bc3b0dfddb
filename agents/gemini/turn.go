package gemini

import "github.com/sessionfs/sessionfs/agents"

// PromptAsked: gemini -p (--prompt), and Qwen Code's, which has Gemini CLI's flags: a prompt, unattended.
func PromptAsked(args []string) bool {
	return !agents.HelpOnly(args) && agents.TurnArgs(args, "-p", "--prompt")
}
