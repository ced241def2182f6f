//! Prompts: synthetic with exact token counts, or read from a JSONL file.
