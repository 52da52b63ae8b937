package rules

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

type want struct {
	agent, state, kind, rule string
	question                 string
	options                  []string
	detail                   string // substring
	resets                   string // when a usage limit resets, as the screen says
}

// expectations covers every capture under monitor/testdata/captures; a
// capture without one fails TestEveryCaptureHasExpectation.
var expectations = map[string]want{
	"claude/api_error_500.txt":                 {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_error"},
	"claude/api_error_retry_attempt2.txt":      {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_retry"},
	"claude/api_error_retry_attempt3.txt":      {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_retry"},
	"claude/api_error_retry_attempt4.txt":      {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_retry"},
	"claude/api_error_retry_in_flight.txt":     {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_retry"},
	"claude/api_overloaded_final.txt":          {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_error"},
	"claude/api_overloaded_retry.txt":          {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_retry"},
	"claude/auth_error.txt":                    {agent: "claude", state: "error", kind: "auth", rule: "claude.auth"},
	"claude/compacted.txt":                     {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/compacting.txt":                    {agent: "claude", state: "working", kind: "compacting", rule: "claude.compacting"},
	"claude/error_tool_failures.txt":           {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/error_tool_failures_working.txt":   {agent: "claude", state: "working", rule: "claude.working_footer"},
	"claude/exit_pending_ctrl_c.txt":           {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/exited_shell.txt":                  {agent: "claude", state: "exited", kind: "process_gone", rule: "claude.exited"},
	"claude/exited_shell_ctrl_c.txt":           {agent: "claude", state: "exited", kind: "process_gone", rule: "claude.exited"},
	"claude/idle.ansi.txt":                     {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/idle.txt":                          {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/idle_200x50.txt":                   {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/idle_80x24.txt":                    {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/idle_after_turn.txt":               {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/idle_plan_mode.txt":                {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/idle_tasks.txt":                    {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/interrupted.txt":                   {agent: "claude", state: "idle", kind: "interrupted", rule: "claude.interrupted"},
	"claude/interrupted_permission.txt":        {agent: "claude", state: "idle", kind: "interrupted", rule: "claude.interrupted"},
	"claude/permission_bash.ansi.txt":          {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", options: []string{"Yes", "Yes, and don’t ask again for: ./deploy.sh *", "Yes, and switch to auto mode · auto mode handles these prompts for you", "No"}, detail: "./deploy.sh --prod"},
	"claude/permission_bash.txt":               {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", options: []string{"Yes", "Yes, and don’t ask again for: ./deploy.sh *", "Yes, and switch to auto mode · auto mode handles these prompts for you", "No"}, detail: "Bash command"},
	"claude/permission_bash_200x50.txt":        {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", detail: "./deploy.sh --prod"},
	"claude/permission_bash_tasks.txt":         {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", detail: "./deploy.sh --prod", options: []string{"Yes", "Yes, and don’t ask again for: ./deploy.sh *", "Yes, and switch to auto mode · auto mode handles these prompts for you", "No"}},
	"claude/permission_bash_80x24.txt":         {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", detail: "./deploy.sh --prod"},
	"claude/permission_edit.txt":               {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to make this edit to notes.txt?", detail: "Edit file"},
	"claude/permission_fetch.txt":              {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to allow Claude to fetch this content?", options: []string{"Yes", "Yes, and don't ask again for example.com", "No, and tell Claude what to do differently (esc)"}, detail: "Fetch · Claude wants to fetch content from example.com"},
	"claude/permission_write.txt":              {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to create hello.go?", detail: "hello.go"},
	"claude/plan_approval.txt":                 {agent: "claude", state: "awaiting_input", kind: "plan", rule: "claude.plan", question: "Would you like to proceed?", options: []string{"Yes, and use auto mode", "Yes, manually approve edits", "Tell Claude what to change"}},
	"claude/plan_exit_no_plan_file.txt":        {agent: "claude", state: "awaiting_input", kind: "plan", rule: "claude.plan", question: "Exit plan mode?", options: []string{"Yes, and switch to default (ask each time) for this session", "No"}},
	"claude/question_multi_select.txt":         {agent: "claude", state: "awaiting_input", kind: "question", rule: "claude.question", question: "Which features do you want?", options: []string{"Login", "Search", "Export", "Type something", "Chat about this"}},
	"claude/question_multiple_choice.ansi.txt": {agent: "claude", state: "awaiting_input", kind: "question", rule: "claude.question", question: "Which database should we use?", options: []string{"Postgres", "SQLite", "Redis", "Type something.", "Chat about this"}},
	"claude/question_multiple_choice.txt":      {agent: "claude", state: "awaiting_input", kind: "question", rule: "claude.question", question: "Which database should we use?", options: []string{"Postgres", "SQLite", "Redis", "Type something.", "Chat about this"}},
	"claude/question_review.txt":               {agent: "claude", state: "awaiting_input", kind: "question", rule: "claude.question_review", question: "Review your answers", options: []string{"Submit answers", "Cancel"}},
	"claude/rate_limited.ansi.txt":             {agent: "claude", state: "error", kind: "rate_limited", rule: "claude.rate_limited"},
	"claude/rate_limited_5h.txt":               {agent: "claude", state: "rate_limited", kind: "auto_resume", rule: "claude.usage_limit_waiting", detail: "You've hit your 5-hour limit · resets 2am (UTC)", resets: "2am (UTC)"},
	"claude/idle_after_limit.txt":              {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/rate_limited_cancelled.txt":        {agent: "claude", state: "rate_limited", rule: "claude.usage_limit", detail: "You've hit your 5-hour limit · resets 2am (UTC)", resets: "2am (UTC)"},
	"claude/awaiting_input_limit_options.txt":  {agent: "claude", state: "awaiting_input", kind: "other", rule: "claude.limit_options", question: "What do you want to do?", options: []string{"Stop and wait for limit to reset", "Wait here, then continue automatically at 2am", "Upgrade your plan"}},
	"claude/rate_limited.txt":                  {agent: "claude", state: "error", kind: "rate_limited", rule: "claude.rate_limited"},
	"claude/trust_declined_shell.txt":          {agent: "claude", state: "exited", kind: "process_gone", rule: "claude.exited"},
	"claude/trust_dialog.ansi.txt":             {agent: "claude", state: "awaiting_input", kind: "trust", rule: "claude.trust", question: "Is this a project you created or one you trust?", options: []string{"No, exit", "Yes, I trust this folder"}},
	"claude/trust_dialog.txt":                  {agent: "claude", state: "awaiting_input", kind: "trust", rule: "claude.trust", question: "Is this a project you created or one you trust?", options: []string{"No, exit", "Yes, I trust this folder"}},
	"claude/working_spinner.ansi.txt":          {agent: "claude", state: "working", rule: "claude.working_footer"},
	"claude/working_spinner_late.txt":          {agent: "claude", state: "working", rule: "claude.working_footer"},
	"claude/working_spinner_start.txt":         {agent: "claude", state: "working", rule: "claude.working_footer"},
	"claude/working_spinner_streaming.txt":     {agent: "claude", state: "working", rule: "claude.working_footer"},
	"claude/working_tasks.txt":                 {agent: "claude", state: "working", rule: "claude.working_footer"},
	"claude/working_tool_running.txt":          {agent: "claude", state: "working", rule: "claude.working_footer"},

	// Claude Code 2.1.329, the previous pin: its screens stay explained.
	"claude/2.1.329/api_error_500.txt":                 {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_error"},
	"claude/2.1.329/api_error_retry_attempt2.txt":      {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_retry"},
	"claude/2.1.329/api_error_retry_attempt3.txt":      {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_retry"},
	"claude/2.1.329/api_error_retry_attempt4.txt":      {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_retry"},
	"claude/2.1.329/api_error_retry_in_flight.txt":     {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_retry"},
	"claude/2.1.329/api_overloaded_final.txt":          {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_error"},
	"claude/2.1.329/api_overloaded_retry.txt":          {agent: "claude", state: "error", kind: "api_error", rule: "claude.api_retry"},
	"claude/2.1.329/auth_error.txt":                    {agent: "claude", state: "error", kind: "auth", rule: "claude.auth"},
	"claude/2.1.329/compacted.txt":                     {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/2.1.329/compacting.txt":                    {agent: "claude", state: "working", kind: "compacting", rule: "claude.compacting"},
	"claude/2.1.329/error_tool_failures.txt":           {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/2.1.329/error_tool_failures_working.txt":   {agent: "claude", state: "working", rule: "claude.working_footer"},
	"claude/2.1.329/exit_pending_ctrl_c.txt":           {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/2.1.329/exited_shell.txt":                  {agent: "claude", state: "exited", kind: "process_gone", rule: "claude.exited"},
	"claude/2.1.329/exited_shell_ctrl_c.txt":           {agent: "claude", state: "exited", kind: "process_gone", rule: "claude.exited"},
	"claude/2.1.329/idle.ansi.txt":                     {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/2.1.329/idle.txt":                          {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/2.1.329/idle_200x50.txt":                   {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/2.1.329/idle_80x24.txt":                    {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/2.1.329/idle_after_turn.txt":               {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/2.1.329/idle_plan_mode.txt":                {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/2.1.329/idle_tasks.txt":                    {agent: "claude", state: "idle", rule: "claude.idle"},
	"claude/2.1.329/interrupted.txt":                   {agent: "claude", state: "idle", kind: "interrupted", rule: "claude.interrupted"},
	"claude/2.1.329/interrupted_permission.txt":        {agent: "claude", state: "idle", kind: "interrupted", rule: "claude.interrupted"},
	"claude/2.1.329/permission_bash.ansi.txt":          {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", options: []string{"Yes", "Yes, and don’t ask again for: ./deploy.sh *", "Yes, and switch to auto mode · auto mode handles these prompts for you", "No"}, detail: "./deploy.sh --prod"},
	"claude/2.1.329/permission_bash.txt":               {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", options: []string{"Yes", "Yes, and don’t ask again for: ./deploy.sh *", "Yes, and switch to auto mode · auto mode handles these prompts for you", "No"}, detail: "Bash command"},
	"claude/2.1.329/permission_bash_200x50.txt":        {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", detail: "./deploy.sh --prod"},
	"claude/2.1.329/permission_bash_tasks.txt":         {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", detail: "./deploy.sh --prod", options: []string{"Yes", "Yes, and don’t ask again for: ./deploy.sh *", "Yes, and switch to auto mode · auto mode handles these prompts for you", "No"}},
	"claude/2.1.329/permission_bash_80x24.txt":         {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to proceed?", detail: "./deploy.sh --prod"},
	"claude/2.1.329/permission_edit.txt":               {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to make this edit to notes.txt?", detail: "Edit file"},
	"claude/2.1.329/permission_write.txt":              {agent: "claude", state: "awaiting_input", kind: "permission", rule: "claude.permission", question: "Do you want to create hello.go?", detail: "hello.go"},
	"claude/2.1.329/plan_approval.txt":                 {agent: "claude", state: "awaiting_input", kind: "plan", rule: "claude.plan", question: "Would you like to proceed?", options: []string{"Yes, and use auto mode", "Yes, manually approve edits", "Tell Claude what to change"}},
	"claude/2.1.329/plan_exit_no_plan_file.txt":        {agent: "claude", state: "awaiting_input", kind: "plan", rule: "claude.plan", question: "Exit plan mode?", options: []string{"Yes, and switch to default (ask each time) for this session", "No"}},
	"claude/2.1.329/question_multi_select.txt":         {agent: "claude", state: "awaiting_input", kind: "question", rule: "claude.question", question: "Which features do you want?", options: []string{"Login", "Search", "Export", "Type something", "Chat about this"}},
	"claude/2.1.329/question_multiple_choice.ansi.txt": {agent: "claude", state: "awaiting_input", kind: "question", rule: "claude.question", question: "Which database should we use?", options: []string{"Postgres", "SQLite", "Redis", "Type something.", "Chat about this"}},
	"claude/2.1.329/question_multiple_choice.txt":      {agent: "claude", state: "awaiting_input", kind: "question", rule: "claude.question", question: "Which database should we use?", options: []string{"Postgres", "SQLite", "Redis", "Type something.", "Chat about this"}},
	"claude/2.1.329/question_review.txt":               {agent: "claude", state: "awaiting_input", kind: "question", rule: "claude.question_review", question: "Review your answers", options: []string{"Submit answers", "Cancel"}},
	"claude/2.1.329/rate_limited.ansi.txt":             {agent: "claude", state: "error", kind: "rate_limited", rule: "claude.rate_limited"},
	"claude/2.1.329/rate_limited.txt":                  {agent: "claude", state: "error", kind: "rate_limited", rule: "claude.rate_limited"},
	"claude/2.1.329/trust_declined_shell.txt":          {agent: "claude", state: "exited", kind: "process_gone", rule: "claude.exited"},
	"claude/2.1.329/trust_dialog.ansi.txt":             {agent: "claude", state: "awaiting_input", kind: "trust", rule: "claude.trust", question: "Is this a project you created or one you trust?", options: []string{"No, exit", "Yes, I trust this folder"}},
	"claude/2.1.329/trust_dialog.txt":                  {agent: "claude", state: "awaiting_input", kind: "trust", rule: "claude.trust", question: "Is this a project you created or one you trust?", options: []string{"No, exit", "Yes, I trust this folder"}},
	"claude/2.1.329/working_spinner.ansi.txt":          {agent: "claude", state: "working", rule: "claude.working_footer"},
	"claude/2.1.329/working_spinner_late.txt":          {agent: "claude", state: "working", rule: "claude.working_footer"},
	"claude/2.1.329/working_spinner_start.txt":         {agent: "claude", state: "working", rule: "claude.working_footer"},
	"claude/2.1.329/working_spinner_streaming.txt":     {agent: "claude", state: "working", rule: "claude.working_footer"},
	"claude/2.1.329/working_tasks.txt":                 {agent: "claude", state: "working", rule: "claude.working_footer"},
	"claude/2.1.329/working_tool_running.txt":          {agent: "claude", state: "working", rule: "claude.working_footer"},

	"codex/model_notice.txt":                    {agent: "codex", state: "awaiting_input", kind: "other", rule: "codex.model_notice", question: "Meet GPT-6 Sol", options: []string{"Try new model", "Use existing model"}},
	"codex/api_error_500.txt":                   {agent: "codex", state: "error", kind: "api_error", rule: "codex.api_error"},
	"codex/api_error_500_after_retries.txt":     {agent: "codex", state: "error", kind: "api_error", rule: "codex.api_error"},
	"codex/api_error_retry.txt":                 {agent: "codex", state: "error", kind: "api_error", rule: "codex.api_retry"},
	"codex/api_error_retry_attempt3.txt":        {agent: "codex", state: "error", kind: "api_error", rule: "codex.api_retry"},
	"codex/auth_error.txt":                      {agent: "codex", state: "error", kind: "auth", rule: "codex.auth"},
	"codex/exited_daemon.txt":                   {agent: "codex", state: "exited", kind: "process_gone", rule: "codex.exited"},
	"codex/exited_shell.txt":                    {agent: "codex", state: "exited", kind: "process_gone", rule: "codex.exited"},
	"codex/exited_shell_ctrl_c.txt":             {agent: "codex", state: "exited", kind: "process_gone", rule: "codex.exited"},
	"codex/idle.txt":                            {agent: "codex", state: "idle", rule: "codex.idle"},
	"codex/idle_after_turn.txt":                 {agent: "codex", state: "idle", rule: "codex.idle"},
	"codex/idle_plan_mode.txt":                  {agent: "codex", state: "idle", rule: "codex.idle"},
	"codex/interrupted.txt":                     {agent: "codex", state: "idle", kind: "interrupted", rule: "codex.interrupted"},
	"codex/interrupted_permission.txt":          {agent: "codex", state: "idle", kind: "interrupted", rule: "codex.interrupted"},
	"codex/permission_edit.txt":                 {agent: "codex", state: "awaiting_input", kind: "permission", rule: "codex.permission", question: "Would you like to make the following edits?", options: []string{"Yes, proceed (y)", "Yes, and don't ask again for these files (a)", "No, and tell Codex what to do differently (esc)"}, detail: "Edited notes.txt"},
	"codex/permission_exec.ansi.txt":            {agent: "codex", state: "awaiting_input", kind: "permission", rule: "codex.permission", question: "Would you like to run the following command?", options: []string{"Yes, proceed (y)", "Yes, and don't ask again for commands that start with `./deploy.sh --prod` (p)", "No, and tell Codex what to do differently (esc)"}, detail: "Running ./deploy.sh --prod"},
	"codex/permission_exec.txt":                 {agent: "codex", state: "awaiting_input", kind: "permission", rule: "codex.permission", question: "Would you like to run the following command?", options: []string{"Yes, proceed (y)", "Yes, and don't ask again for commands that start with `./deploy.sh --prod` (p)", "No, and tell Codex what to do differently (esc)"}, detail: "Running ./deploy.sh --prod"},
	"codex/question.txt":                        {agent: "codex", state: "awaiting_input", kind: "question", rule: "codex.question", question: "Which database should we use?", options: []string{"Postgres (Recommended)", "SQLite", "None of the above"}},
	"codex/rate_limited.txt":                    {agent: "codex", state: "error", kind: "rate_limited", rule: "codex.rate_limited"},
	"codex/rate_limited_usage.txt":              {agent: "codex", state: "rate_limited", rule: "codex.usage_limit", detail: "You’ve hit your usage limit. Try again at 10:01 PM.", resets: "10:01 PM"},
	"codex/rate_limited_usage_tomorrow.txt":     {agent: "codex", state: "rate_limited", rule: "codex.usage_limit", detail: "You’ve hit your usage limit. Try again at Nov 30th, 2026 1:01 AM.", resets: "Nov 30th, 2026 1:01 AM"},
	"codex/trust_dialog.txt":                    {agent: "codex", state: "awaiting_input", kind: "trust", rule: "codex.trust", question: "Trust this folder?", options: []string{"Trust and continue", "Back to Agent Command Center"}},
	"codex/unreachable_retry.txt":               {agent: "codex", state: "error", kind: "api_error", rule: "codex.api_retry"},
	"codex/working_spinner.txt":                 {agent: "codex", state: "working", rule: "codex.working"},
	"codex/working_streaming.txt":               {agent: "codex", state: "working", rule: "codex.streaming"},
	"codex/working_tool_running.txt":            {agent: "codex", state: "working", rule: "codex.working"},
	"gemini/idle_after_limit.txt":               {agent: "gemini", state: "idle", rule: "gemini.idle"},
	"gemini/api_error_loop.txt":                 {agent: "gemini", state: "error", kind: "auth", rule: "gemini.auth"},
	"gemini/api_error_retrying.txt":             {agent: "gemini", state: "working", rule: "gemini.working"},
	"gemini/api_error_retrying_long.txt":        {agent: "gemini", state: "working", rule: "gemini.working_silent"},
	"gemini/api_error_unreachable.txt":          {agent: "gemini", state: "error", kind: "api_error", rule: "gemini.api_error"},
	"gemini/api_error_unreachable_retrying.txt": {agent: "gemini", state: "working", rule: "gemini.working"},
	"gemini/auth_error.txt":                     {agent: "gemini", state: "error", kind: "auth", rule: "gemini.auth"},
	"gemini/exit_pending_ctrl_c.txt":            {agent: "gemini", state: "idle", rule: "gemini.idle"},
	"gemini/exited_shell.txt":                   {agent: "gemini", state: "exited", kind: "process_gone", rule: "gemini.exited"},
	"gemini/exited_shell_ctrl_c.txt":            {agent: "gemini", state: "exited", kind: "process_gone", rule: "gemini.exited"},
	"gemini/first_start.txt":                    {agent: "gemini", state: "awaiting_input", kind: "trust", rule: "gemini.trust", question: "Do you trust the files in this folder?", options: []string{"Trust folder (project)", "Trust parent folder (firstrun)", "Don't trust"}},
	"gemini/first_start_auth.txt":               {agent: "gemini", state: "awaiting_input", kind: "other", rule: "gemini.auth_dialog", question: "How would you like to authenticate for this project?", options: []string{"Sign in with Google", "Use Gemini API Key", "Vertex AI"}},
	"gemini/idle.txt":                           {agent: "gemini", state: "idle", rule: "gemini.idle"},
	"gemini/idle_after_turn.txt":                {agent: "gemini", state: "idle", rule: "gemini.idle"},
	"gemini/idle_yolo.txt":                      {agent: "gemini", state: "idle", rule: "gemini.idle"},
	"gemini/idle_yolo_after_turn.txt":           {agent: "gemini", state: "idle", rule: "gemini.idle"},
	"gemini/interrupted.txt":                    {agent: "gemini", state: "idle", kind: "interrupted", rule: "gemini.interrupted"},
	"gemini/interrupted_permission.txt":         {agent: "gemini", state: "idle", kind: "interrupted", rule: "gemini.interrupted"},
	"gemini/permission_edit.txt":                {agent: "gemini", state: "awaiting_input", kind: "permission", rule: "gemini.permission", question: "Apply this change?", options: []string{"Allow once", "Allow for this session", "Modify with external editor", "No, suggest changes (esc)"}, detail: "notes.txt"},
	"gemini/permission_shell.txt":               {agent: "gemini", state: "awaiting_input", kind: "permission", rule: "gemini.permission", question: "Allow execution of [Shell]?", options: []string{"Allow once", "Allow for this session", "No, suggest changes (esc)"}, detail: "./deploy.sh --prod"},
	"gemini/permission_write.txt":               {agent: "gemini", state: "awaiting_input", kind: "permission", rule: "gemini.permission", question: "Apply this change?", options: []string{"Allow once", "Allow for this session", "Modify with external editor", "No, suggest changes (esc)"}, detail: "hello.go"},
	"gemini/question.txt":                       {agent: "gemini", state: "awaiting_input", kind: "question", rule: "gemini.question", question: "Which database should we use?", options: []string{"Postgres", "SQLite", "Enter a custom value"}},
	"gemini/rate_limited_retrying.txt":          {agent: "gemini", state: "working", rule: "gemini.working"},
	"gemini/rate_limited_daily.txt":             {agent: "gemini", state: "error", kind: "rate_limited", rule: "gemini.rate_limited"},
	"gemini/rate_limited_usage.txt":             {agent: "gemini", state: "rate_limited", rule: "gemini.usage_limit", detail: "Resource has been exhausted", resets: "3600s"},
	"gemini/usage_limit_dialog_daily.txt":       {agent: "gemini", state: "awaiting_input", kind: "other", rule: "gemini.usage_limit_dialog", question: "Usage limit reached for gemini-3.8-flash.", options: []string{"Keep trying", "Stop"}},
	"gemini/usage_limit_dialog_usage.txt":       {agent: "gemini", state: "awaiting_input", kind: "other", rule: "gemini.usage_limit_dialog", question: "Usage limit reached for gemini-3.8-flash.", options: []string{"Keep trying", "Stop"}},
	"gemini/trust_dialog.txt":                   {agent: "gemini", state: "awaiting_input", kind: "trust", rule: "gemini.trust", question: "Do you trust the files in this folder?", options: []string{"Trust folder (project)", "Trust parent folder (trust)", "Don't trust"}},
	"gemini/working_streaming.txt":              {agent: "gemini", state: "working", rule: "gemini.working"},
	"gemini/working_streaming_late.txt":         {agent: "gemini", state: "working", rule: "gemini.working"},
	"gemini/working_thinking.txt":               {agent: "gemini", state: "working", rule: "gemini.working"},
	"gemini/working_hook.txt":                   {agent: "gemini", state: "working", rule: "gemini.working"},
	"gemini/working_tool_running.txt":           {agent: "gemini", state: "working", kind: "tool", rule: "gemini.tool_running"},

	// Real screens of opencode 1.18.33, Qwen Code 0.24.4 and Cline 3.0.65,
	// most saved by internal/testsupport/chattest's TestRealStates. Cline's
	// idle_after_turn.txt and working_tool_running.txt were read as Claude
	// Code idle before Cline was known (its input box looks like Claude
	// Code's, and a tool's output line "⎿ …" like Claude Code's).
	"opencode/api_error_retrying.txt":    {agent: "opencode", state: "error", kind: "api_error", rule: "opencode.api_retry"},
	"opencode/auth_error.txt":            {agent: "opencode", state: "error", kind: "auth", rule: "opencode.auth"},
	"opencode/exited_shell.txt":          {agent: "opencode", state: "exited", kind: "process_gone", rule: "opencode.exited"},
	"opencode/idle.txt":                  {agent: "opencode", state: "idle", rule: "opencode.idle"},
	"opencode/idle_tip.txt":              {agent: "opencode", state: "idle", rule: "opencode.idle"},
	"opencode/idle_after_turn.txt":       {agent: "opencode", state: "idle", rule: "opencode.idle"},
	"opencode/interrupted.txt":           {agent: "opencode", state: "idle", kind: "interrupted", rule: "opencode.interrupted"},
	"opencode/permission_edit.txt":       {agent: "opencode", state: "awaiting_input", kind: "permission", rule: "opencode.permission", question: "Permission required", options: []string{"Allow once", "Allow always", "Reject"}, detail: "→ Edit notes.txt · 1 - alpha · 1 + BETA"},
	"opencode/permission_exec.txt":       {agent: "opencode", state: "awaiting_input", kind: "permission", rule: "opencode.permission", question: "Permission required", options: []string{"Allow once", "Allow always", "Reject"}, detail: "# Shell command · $ ./deploy.sh --prod"},
	"opencode/permission_fetch.txt":      {agent: "opencode", state: "awaiting_input", kind: "permission", rule: "opencode.permission", question: "Permission required", options: []string{"Allow once", "Allow always", "Reject"}, detail: "% WebFetch http://127.0.0.1:9/docs · URL: http://127.0.0.1:9/docs"},
	"opencode/question.txt":              {agent: "opencode", state: "awaiting_input", kind: "question", rule: "opencode.question", question: "Which database should we use?", options: []string{"Postgres", "SQLite", "Type your own answer"}},
	"opencode/rate_limited_retrying.txt": {agent: "opencode", state: "error", kind: "rate_limited", rule: "opencode.rate_limit_retry"},
	"opencode/rate_limited_waiting.txt":  {agent: "opencode", state: "rate_limited", kind: "auto_resume", rule: "opencode.usage_limit_waiting", resets: "in 59m 59s"},
	// The turn of the prompt "fail-401 now" before its error shows: it was
	// read as error/auth when any "401" in a box counted.
	"opencode/working_after_prompt_401.txt": {agent: "opencode", state: "working", rule: "opencode.working"},
	"opencode/working_streaming.txt":        {agent: "opencode", state: "working", rule: "opencode.working"},
	"opencode/working_tool_running.txt":     {agent: "opencode", state: "working", rule: "opencode.working"},
	"qwen/api_error_500.txt":                {agent: "qwen", state: "error", kind: "api_error", rule: "qwen.api_error"},
	"qwen/api_error_exit_pending.txt":       {agent: "qwen", state: "error", kind: "api_error", rule: "qwen.api_error"},
	"qwen/auth_error.txt":                   {agent: "qwen", state: "error", kind: "auth", rule: "qwen.auth"},
	"qwen/exited_shell.txt":                 {agent: "qwen", state: "exited", kind: "process_gone", rule: "qwen.exited"},
	"qwen/idle.txt":                         {agent: "qwen", state: "idle", rule: "qwen.idle"},
	"qwen/idle_after_turn.txt":              {agent: "qwen", state: "idle", rule: "qwen.idle"},
	"qwen/idle_after_limit.txt":             {agent: "qwen", state: "idle", rule: "qwen.idle"},
	"qwen/interrupted.txt":                  {agent: "qwen", state: "idle", kind: "interrupted", rule: "qwen.interrupted"},
	"qwen/permission_edit.txt":              {agent: "qwen", state: "awaiting_input", kind: "permission", rule: "qwen.permission", question: "Apply this change?", options: []string{"Yes, allow once", "Yes, allow always", "No, suggest changes (esc)"}, detail: "WriteFile Writing to hello.go · 1 BETA"},
	"qwen/permission_exec.txt":              {agent: "qwen", state: "awaiting_input", kind: "permission", rule: "qwen.permission", question: "Allow execution of: 'deploy.sh'?", options: []string{"Yes, allow once", "Always allow run './deploy.sh *' commands in this project", "Always allow run './deploy.sh *' commands for this user", "No, suggest changes (esc)"}, detail: "Shell ./deploy.sh --prod (Deploy to production) · ./deploy.sh --prod"},
	"qwen/question.txt":                     {agent: "qwen", state: "awaiting_input", kind: "question", rule: "qwen.question", question: "Which database should we use?", options: []string{"Postgres", "SQLite", "Type something..."}},
	"qwen/rate_limited_usage.txt":           {agent: "qwen", state: "rate_limited", rule: "qwen.usage_limit", detail: "Quota exhausted: Quota exceeded: your daily quota has been exhausted", resets: "2026-11-30 00:00:00 UTC"},
	"qwen/working_retrying_500.txt":         {agent: "qwen", state: "working", rule: "qwen.working"},
	"qwen/working_streaming.txt":            {agent: "qwen", state: "working", rule: "qwen.working"},
	"qwen/working_tool_running.txt":         {agent: "qwen", state: "working", rule: "qwen.working"},
	"qwen/working_rate_limited.txt":         {agent: "qwen", state: "working", rule: "qwen.working"},
	"cline/auth_error.txt":                  {agent: "cline", state: "error", kind: "auth", rule: "cline.auth"},
	"cline/exited_shell.txt":                {agent: "cline", state: "exited", kind: "process_gone", rule: "cline.exited"},
	"cline/idle.txt":                        {agent: "cline", state: "idle", rule: "cline.idle"},
	// The model's own answer begins "Error:": drawn as an API error is, but
	// in another colour, so only the APIs' phrases make an error.
	"cline/idle_answer_says_error.txt": {agent: "cline", state: "idle", rule: "cline.idle"},
	"cline/idle_after_turn.txt":        {agent: "cline", state: "idle", rule: "cline.idle"},
	"cline/idle_after_limit.txt":       {agent: "cline", state: "idle", rule: "cline.idle"},
	"cline/interrupted.txt":            {agent: "cline", state: "idle", rule: "cline.idle"},
	"cline/permission_edit.txt":        {agent: "cline", state: "awaiting_input", kind: "permission", rule: "cline.permission", question: "Approve tool call?", options: []string{"Approve", "Deny"}, detail: "editor · /tmp/system3-chat-captures/cline/project/notes.txt"},
	"cline/permission_exec.txt":        {agent: "cline", state: "awaiting_input", kind: "permission", rule: "cline.permission", question: "Approve tool call?", options: []string{"Approve", "Deny"}, detail: "run_commands · $ ./deploy.sh --prod"},
	"cline/question.txt":               {agent: "cline", state: "awaiting_input", kind: "question", rule: "cline.question", question: "Which database should we use?", options: []string{"Postgres", "SQLite", "Type a response..."}},
	"cline/rate_limited.txt":           {agent: "cline", state: "error", kind: "rate_limited", rule: "cline.rate_limited"},
	"cline/rate_limited_quota.txt":     {agent: "cline", state: "error", kind: "rate_limited", rule: "cline.rate_limited"},
	"cline/rate_limited_usage.txt":     {agent: "cline", state: "rate_limited", rule: "cline.usage_limit", detail: "requests per day (RPD)", resets: "in 1h0m0s"},
	"cline/working_streaming.txt":      {agent: "cline", state: "working", rule: "cline.working"},
	"cline/working_tool_running.txt":   {agent: "cline", state: "working", rule: "cline.working"},
	"copilot/api_error.txt":            {agent: "copilot", state: "error", kind: "api_error", rule: "copilot.api_error"},
	"copilot/api_retry.txt":            {agent: "copilot", state: "error", kind: "api_error", rule: "copilot.api_retry"},
	"copilot/auth_error.txt":           {agent: "copilot", state: "error", kind: "auth", rule: "copilot.auth"},
	"copilot/exited_shell.txt":         {agent: "copilot", state: "exited", kind: "process_gone", rule: "copilot.exited"},
	"copilot/idle.txt":                 {agent: "copilot", state: "idle", rule: "copilot.idle"},
	"copilot/idle_after_turn.txt":      {agent: "copilot", state: "idle", rule: "copilot.idle"},
	"copilot/idle_after_limit.txt":     {agent: "copilot", state: "idle", rule: "copilot.idle"},
	"copilot/interrupted.txt":          {agent: "copilot", state: "idle", kind: "interrupted", rule: "copilot.interrupted"},
	"copilot/permission_edit.txt": {agent: "copilot", state: "awaiting_input", kind: "permission", rule: "copilot.permission", question: "Do you want to edit /tmp/system3-chat-captures/copilot/project/notes.txt?",
		options: []string{"Yes", "Yes, and don't ask again for file operations when in this directory (~/project)", "No, and tell Copilot what to do differently (Esc to stop)"}, detail: "Edit file · notes.txt +1 -1"},
	"copilot/permission_exec.txt": {agent: "copilot", state: "awaiting_input", kind: "permission", rule: "copilot.permission", question: "Do you want to run this command?",
		options: []string{"Yes", "Yes, and don't ask again for `./deploy.sh` in this directory (~/project)", "No, and tell Copilot what to do differently (Esc to stop)"}, detail: "Deploy to production · ./deploy.sh --prod"},
	"copilot/question.txt":           {agent: "copilot", state: "awaiting_input", kind: "question", rule: "copilot.question", question: "Which database should we use?", options: []string{"Postgres", "SQLite", "Other (type your answer)"}},
	"copilot/rate_limited_usage.txt": {agent: "copilot", state: "rate_limited", rule: "copilot.usage_limit", detail: "429 Rate limit reached for fake-model", resets: "in 1h0m0s"},
	"copilot/rate_limited_quota.txt": {agent: "copilot", state: "error", kind: "rate_limited", rule: "copilot.rate_limited"},
	"copilot/trust.txt": {agent: "copilot", state: "awaiting_input", kind: "trust", rule: "copilot.trust", question: "Do you trust the files in this folder?",
		options: []string{"Yes", "Yes, and remember this folder for future sessions", "No (Esc)"}},
	"copilot/working_streaming.txt":    {agent: "copilot", state: "working", rule: "copilot.working"},
	"copilot/working_tool_running.txt": {agent: "copilot", state: "working", rule: "copilot.working"},

	"aider/confirm.txt": {agent: "aider", state: "awaiting_input", kind: "permission", rule: "aider.confirm", question: "Add file to the chat?", options: []string{"Yes", "No", "Don't ask again"}},
	"aider/idle.txt":    {agent: "aider", state: "idle", rule: "aider.idle"},
	"shell/prompt.txt":  {agent: "shell", state: "idle", rule: "shell.prompt"},
	// Saved by system3 rules capture from real bash and sh panes: the
	// header says what the pane ran.
	"shell/idle_bash.txt":    {agent: "shell", state: "idle", rule: "shell.prompt"},
	"shell/working_bash.txt": {agent: "shell", state: "working", rule: api.RuleShellJob},
	"shell/working_sh.txt":   {agent: "shell", state: "working", rule: api.RuleShellJob},
	"shell/error_bash.txt":   {agent: "shell", state: "error", kind: "command", rule: "shell.failed"},
	"shell/error_sh.txt":     {agent: "shell", state: "error", kind: "command", rule: "shell.failed"},
	"shell/exited_dead.txt":  {agent: "shell", state: "exited", kind: "dead", rule: api.RulePaneDead},
	// A real less paging Claude Code's permission prompt: no agent.
	"viewer/unknown_less.txt": {agent: "", state: "unknown", kind: "viewer", rule: api.RuleNoMatch},
}

// processFor gives the non-Claude fixtures the process a live pane would
// show, so they are classified as in production; Claude captures are
// classified from the screen alone, as `system3 classify FILE` does.
var processFor = map[string]string{"shell": "bash"}

func engine(t testing.TB) *Engine {
	t.Helper()
	e, err := New(Builtin())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestCaptures(t *testing.T) {
	e := engine(t)
	for name, w := range expectations {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "testdata", "captures", name))
			if err != nil {
				t.Fatal(err)
			}
			c, err := ParseCapture(name, data)
			if err != nil {
				t.Fatal(err)
			}
			// A capture saved by `system3 rules capture` says which
			// processes the pane ran; without that header, processFor.
			in := c.Input()
			if p, ok := processFor[filepath.Dir(name)]; ok && c.Process == "" {
				in.Processes = []string{p}
			}
			got := e.Classify(in)
			if got.Agent != w.agent || string(got.State) != w.state || got.Kind != w.kind || got.Rule != w.rule {
				t.Fatalf("got %s %s/%s by %s (evidence %q), want %s %s/%s by %s",
					got.Agent, got.State, got.Kind, got.Rule, got.Evidence, w.agent, w.state, w.kind, w.rule)
			}
			if len(got.Evidence) == 0 {
				t.Errorf("no evidence")
			}
			if got.Question != w.question {
				t.Errorf("question = %q, want %q", got.Question, w.question)
			}
			if w.options != nil && !slices.Equal(got.Options, w.options) {
				t.Errorf("options = %q, want %q", got.Options, w.options)
			}
			if w.state == "awaiting_input" && len(got.Options) == 0 {
				t.Errorf("a prompt without options: %+v", got)
			}
			if !strings.Contains(got.Detail, w.detail) {
				t.Errorf("detail = %q, want it to contain %q", got.Detail, w.detail)
			}
			if got.Resets != w.resets {
				t.Errorf("resets = %q, want %q", got.Resets, w.resets)
			}
			if w.state == "rate_limited" {
				if _, ok := ParseReset(got.Resets, time.Now(), time.UTC); !ok {
					t.Errorf("the reset %q does not parse", got.Resets)
				}
			}
		})
	}
}

// processOf is a process name of each agent with real captures, as a live
// pane would list it.
var processOf = map[string]string{"claude": "claude", "codex": "codex", "gemini": "gemini", "qwen": "qwen", "opencode": "opencode", "cline": "cline", "copilot": "copilot", "aider": "aider"}

// No agent's screen is ever taken for another agent's: read from the
// screen alone, a capture of agent A is A's or no agent's; with A's process
// in the pane it is A's; with another agent B's process it is B's, and no
// rule of A decides it.
func TestNoAgentIsTakenForAnother(t *testing.T) {
	e := engine(t)
	for _, a := range e.Agents() {
		if a.Shell || a.Viewer {
			continue
		}
		if p, ok := processOf[a.Name]; !ok || !e.IsProcessOf(a.Name, p) {
			t.Errorf("processOf has no process name of %s that its rules recognise", a.Name)
		}
	}
	root := filepath.Join("..", "testdata", "captures")
	for _, p := range captureFiles(t) {
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		owner, _, _ := strings.Cut(rel, "/")
		if _, ok := processOf[owner]; !ok {
			continue // shells and viewers: the process decides what they are
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseCapture(rel, data)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Classify(Input{Screen: c.Screen}); got.Agent != owner && got.Agent != "" {
			t.Errorf("%s: from the screen alone it is %s's (%s by %s, evidence %q)", rel, got.Agent, got.State, got.Rule, got.Evidence)
		}
		if got := e.Classify(Input{Screen: c.Screen, Processes: []string{"bash", processOf[owner]}}); got.Agent != owner || got.AgentBy != "process" {
			t.Errorf("%s: with %s in the pane it is %q by %s", rel, processOf[owner], got.Agent, got.AgentBy)
		}
		for other, proc := range processOf {
			if other == owner {
				continue
			}
			got := e.Classify(Input{Screen: c.Screen, Processes: []string{proc}})
			if got.Agent != other || strings.HasPrefix(got.Rule, owner+".") {
				t.Errorf("%s: with %s in the pane it is %q (%s by %s)", rel, proc, got.Agent, got.State, got.Rule)
			}
		}
	}
}

func TestEveryCaptureHasExpectation(t *testing.T) {
	root := filepath.Join("..", "testdata", "captures")
	for _, p := range captureFiles(t) {
		rel, _ := filepath.Rel(root, p)
		if _, ok := expectations[filepath.ToSlash(rel)]; !ok {
			t.Errorf("capture %s has no expectation in rules_test.go", rel)
		}
	}
}

// captureFiles lists every capture under monitor/testdata/captures, those
// of earlier agent versions in their version folders included.
func captureFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join("..", "testdata", "captures"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".txt" {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// trimRightBlank trims what strings.TrimRight(l, " \t\r\u00a0") trims, on
// every combination of blanks, other characters and bytes around them.
func TestTrimRightBlankIsTrimRight(t *testing.T) {
	parts := []string{"", " ", "\t", "\r", "\u00a0", "a", "é", "\u00c2", "\u0100", "─", "\u00a0x", "ſ", "\u2000"}
	n := 0
	for _, a := range parts {
		for _, b := range parts {
			for _, c := range parts {
				for _, d := range parts {
					l := a + b + c + d
					if got, want := trimRightBlank(l), strings.TrimRight(l, " \t\r\u00a0"); got != want {
						t.Fatalf("trimRightBlank(%q) = %q, want %q", l, got, want)
					}
					n++
				}
			}
		}
	}
	if n != len(parts)*len(parts)*len(parts)*len(parts) {
		t.Fatalf("checked %d lines", n)
	}
}

// TestTypedInputIsNotATurn: text typed in the Gemini CLI's input line
// (" > continue", below the last rule) looks like a submitted prompt, but
// the turn is what is above the rule: a usage limit or an error of the
// last turn stays what it is while a person or system3 types, and a new
// turn below the old error is not that error.
func TestTypedInputIsNotATurn(t *testing.T) {
	e := engine(t)
	for _, tc := range []struct {
		capture, typed, state, rule string
	}{
		{"gemini/rate_limited_usage.txt", " > continue", "rate_limited", "gemini.usage_limit"},
		{"gemini/rate_limited_daily.txt", " > try again", "error", "gemini.rate_limited"},
		{"gemini/auth_error.txt", " > hello", "error", "gemini.auth"},
		{"gemini/api_error_unreachable.txt", " > again please", "error", "gemini.api_error"},
		{"gemini/idle_after_limit.txt", " > more", "idle", "gemini.idle"},
	} {
		t.Run(tc.capture, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "testdata", "captures", tc.capture))
			if err != nil {
				t.Fatal(err)
			}
			screen := strings.Replace(string(data), " >   Type your message or @path/to/file", tc.typed, 1)
			if screen == string(data) {
				t.Fatal("the capture has no empty input line")
			}
			c, err := ParseCapture(tc.capture, []byte(screen))
			if err != nil {
				t.Fatal(err)
			}
			in := c.Input()
			in.Processes = []string{"gemini"}
			if got := e.Classify(in); string(got.State) != tc.state || got.Rule != tc.rule {
				t.Fatalf("with %q typed: %s by %s (evidence %q), want %s by %s", tc.typed, got.State, got.Rule, got.Evidence, tc.state, tc.rule)
			}
		})
	}
}
