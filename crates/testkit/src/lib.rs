//! Scripted test LLM (in-process and as an OpenAI/Anthropic-compatible HTTP server).
