//! Built-in tools: terminal, file editor, task tracker, grep, glob, apply_patch; default presets.
