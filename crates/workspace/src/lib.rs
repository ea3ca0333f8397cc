//! Workspaces: local directory and remote agent-server workspace.
