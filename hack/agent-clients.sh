#!/usr/bin/env bash
# agent-clients.sh FRAMEWORKS CLIENTS_DIR SDK
# Compiles the TypeScript Session API client and the agent framework adapters that depend on
# it (CLIENTS_DIR/{session-api-typescript,openai-agents-session,langgraph-checkpoint-saver,
# claude-agent-sdk-session-store}) into their dist/ folders with the pinned TypeScript of
# FRAMEWORKS (what hack/agent-frameworks.sh installed). CLIENTS_DIR/node_modules is made of
# links: every package of FRAMEWORKS/node_modules, the Claude Agent SDK of SDK/node_modules
# (what hack/claude-agent-sdk.sh installed), and @parley-dev/session-api to the client beside
# the adapters, which is how npm's file: dependency installs it.
set -euo pipefail
frameworks=$1 clients=$(cd "$2" && pwd) sdk=$3
modules=$clients/node_modules
[ -d "$frameworks/node_modules" ] || { echo "agent-clients: no node_modules in $frameworks (run make agent-frameworks)" >&2; exit 1; }
[ -d "$sdk/node_modules/@anthropic-ai" ] || { echo "agent-clients: no Claude Agent SDK in $sdk (run make claude-agent-sdk)" >&2; exit 1; }
frameworks=$(cd "$frameworks" && pwd -P)
sdk=$(cd "$sdk" && pwd -P)

rm -rf "$modules"
mkdir -p "$modules/@parley-dev"
for entry in "$frameworks"/node_modules/* "$frameworks"/node_modules/.bin; do
  [ -e "$entry" ] && ln -s "$entry" "$modules/$(basename "$entry")"
done
# The SDK's own dependencies resolve from where it is installed.
ln -s "$sdk/node_modules/@anthropic-ai" "$modules/@anthropic-ai"
ln -s ../../session-api-typescript "$modules/@parley-dev/session-api"

# The client first: the adapters compile against its declarations.
for pkg in ${AGENT_CLIENTS_ONLY:-session-api-typescript openai-agents-session langgraph-checkpoint-saver claude-agent-sdk-session-store}; do
  (cd "$clients/$pkg" && node "$modules/typescript/bin/tsc" -p .)
done
