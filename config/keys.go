package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The keys orca reads, by where they are in a settings file.
var (
	settingsKeys = []string{"$schema", "a2aAgents", "apiKeyHelper", "base_url", "disableAllHooks", "disabledMcpjsonServers", "enableAllProjectMcpServers",
		"enabledMcpjsonServers", "enabledPlugins", "env", "extensions", "fallbackModel", "hooks", "lspServers", "maxParallelTools", "mcpLogLevel", "mcpServers", "model", "modelAliases",
		"models", "permissions", "prices", "provider", "sandbox", "store", "verify"}
	permissionsKeys = []string{"allow", "ask", "defaultMode", "deny", "disableBypassPermissionsMode", "additionalDirectories"}
	sandboxKeys     = []string{"enabled", "autoAllowBashIfSandboxed", "excludedCommands", "allowedEnvVars", "network", "filesystem"}
	networkKeys     = []string{"allowAllUnixSockets", "allowedDomains"}
	filesystemKeys  = []string{"allowWrite", "denyWrite", "denyRead"}
)

// The keys Claude Code documents (its settings schema:
// config/testdata/claude-code-settings.schema.json) that orca does not
// read: how Claude Code looks, its accounts, its managed settings, its
// features orca has not. A file that sets one is not warned about it —
// settings files are shared with Claude Code — and `orca doctor` lists
// them (Settings.Ignored).
var (
	claudeKeys = []string{"advisorModel", "agent", "agentPushNotifEnabled", "allowAllClaudeAiMcps", "allowManagedHooksOnly",
		"allowManagedMcpServersOnly", "allowManagedPermissionRulesOnly", "allowedChannelPlugins", "allowedHttpHookUrls", "allowedMcpServers",
		"alwaysThinkingEnabled", "askUserQuestionTimeout", "attribution", "autoCompactEnabled", "autoConnectIde", "autoInstallIdeExtension",
		"autoMemoryDirectory", "autoMemoryEnabled", "autoMode", "autoScrollEnabled", "autoUpdatesChannel", "availableModels",
		"awaySummaryEnabled", "awsAuthRefresh", "awsCredentialExport", "axScreenReader", "blockedMarketplaces", "browserExternalPageTools",
		"channelsEnabled", "claudeMd", "claudeMdExcludes", "cleanupPeriodDays", "companyAnnouncements", "defaultShell", "deniedMcpServers",
		"diffTool", "disableAgentView", "disableArtifact", "disableAutoMode", "disableBrowserExternalNavigation", "disableBundledSkills",
		"disableClaudeAiConnectors", "disableDeepLinkRegistration", "disableMobileSimulatorTools", "disableRemoteControl",
		"disableSideloadFlags", "disableSkillShellExecution", "disableWorkflows", "editorMode", "effortLevel", "emojiCompletionEnabled",
		"enableArtifact", "enforceAvailableModels", "externalEditorContext", "extraKnownMarketplaces", "fastMode",
		"fastModePerSessionOptIn", "feedbackSurveyRate", "fileCheckpointingEnabled", "fileSuggestion", "footerLinksRegexes",
		"forceLoginGatewayUrl", "forceLoginMethod", "forceLoginOrgUUID", "forceRemoteSettingsRefresh", "gcpAuthRefresh",
		"httpHookAllowedEnvVars", "includeCoAuthoredBy", "includeGitInstructions", "inputNeededNotifEnabled", "language",
		"managedMcpServers", "minimumVersion", "modelOverrides", "otelHeadersHelper", "outputStyle", "parentSettingsBehavior",
		"permissionExplainerEnabled", "plansDirectory", "pluginConfigs", "pluginSuggestionMarketplaces", "pluginTrustMessage",
		"policyHelper", "prUrlTemplate", "preferredNotifChannel", "prefersReducedMotion", "processWrapper", "remoteControlAtStartup",
		"requireCoworkFullVmSandbox", "requiredMaximumVersion", "requiredMinimumVersion", "respectGitignore", "respondToBashCommands",
		"showClearContextOnPlanAccept", "showThinkingSummaries", "showTurnDuration", "skillListingBudgetFraction",
		"skillListingMaxDescChars", "skillOverrides", "skipDangerousModePermissionPrompt", "skipWebFetchPreflight", "skippedMarketplaces",
		"skippedPlugins", "spinnerTipsEnabled", "spinnerTipsOverride", "spinnerVerbs", "sshConfigs", "sshHostAllowlist", "statusLine",
		"strictKnownMarketplaces", "strictPluginOnlyCustomization", "subagentStatusLine", "syntaxHighlightingDisabled",
		"teammateDefaultModel", "teammateMode", "terminalProgressBarEnabled", "theme", "tui", "useAutoModeDuringPlan", "verbose",
		"viewMode", "vimInsertModeRemaps", "voice", "voiceEnabled", "wheelScrollAccelerationEnabled", "workflowKeywordTriggerEnabled",
		"workflowSizeGuideline", "worktree", "wslInheritsWindowsSettings"}
	claudePermissionsKeys = []string{"disableAutoMode"}
	claudeSandboxKeys     = []string{"allowAppleEvents", "allowUnsandboxedCommands", "bwrapPath", "credentials", "enableWeakerNestedSandbox",
		"enableWeakerNetworkIsolation", "enabledPlatforms", "failIfUnavailable", "ignoreViolations", "ripgrep", "socatPath"}
	claudeNetworkKeys = []string{"allowLocalBinding", "allowMachLookup", "allowManagedDomainsOnly", "allowUnixSockets", "deniedDomains",
		"httpProxyPort", "socksProxyPort", "strictAllowlist", "tlsTerminate"}
	claudeFilesystemKeys = []string{"allowManagedReadPathsOnly", "allowRead", "disabled"}
)

// checkKeys looks at the keys of obj, an object of a settings file at
// prefix ("" for the top, "permissions.", "sandbox.network.", …): it
// returns a warning for each key that neither orca nor Claude Code reads —
// a misspelling loses what the key meant, and the run would go on
// without it — with the key orca reads that it is nearest to, and the
// keys that only Claude Code reads.
func checkKeys(prefix string, obj map[string]json.RawMessage, read, claude []string) (warns, ignored []string) {
	var keys []string
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case slices.Contains(read, k):
		case slices.Contains(claude, k):
			ignored = append(ignored, prefix+k)
		default:
			w := fmt.Sprintf("%s%s: not a setting orca or Claude Code reads; it is ignored", prefix, k)
			if near := nearest(k, read); near != "" {
				w += fmt.Sprintf(" (did you mean %q?)", prefix+near)
			}
			warns = append(warns, w)
		}
	}
	return warns, ignored
}

// nearest returns the word of words that s is a likely misspelling of —
// the same but for case, or within an edit or two — or "".
func nearest(s string, words []string) string {
	best, bestD := "", 3
	for _, w := range words {
		if strings.EqualFold(s, w) {
			return w
		}
		limit := 2
		if len(w) <= 4 {
			limit = 1
		}
		if d := editDistance(strings.ToLower(s), strings.ToLower(w)); d <= limit && d < bestD {
			best, bestD = w, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment) between a and b, by bytes: insertions, deletions,
// substitutions and swaps of neighbours.
func editDistance(a, b string) int {
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
